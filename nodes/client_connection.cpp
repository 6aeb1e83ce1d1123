#include "nodes/client_connection.hpp"

#include <pthread.h>

#include <iostream>

#include "graph/errors.hpp"
#include "graph/printable.hpp"

namespace tessera {

ClientConnection::ClientConnection(std::string address, RemoteOptions options, Handlers handlers)
    : address_(std::move(address)), options_(std::move(options)), handlers_(std::move(handlers)) {
  connection_ = std::make_shared<transport::Connection>(connection_options(options_.handshake_timeout));
  thread_ = std::thread([this] {
    ::pthread_setname_np(::pthread_self(), "tessera-client");
    run();
  });
}

ClientConnection::~ClientConnection() {
  stop();
}

void ClientConnection::stop() {
  {
    std::lock_guard lock(link_mutex_);
    if (stopping_) return;
    stopping_ = true;
  }
  link_changed_.notify_all();
  thread_.join();
  std::lock_guard lock(link_mutex_);
  if (phase_ != Phase::up) return;
  // Goodbye: the scheduler releases what this client held now instead of after its grace period.
  transport::Outgoing goodbye;
  goodbye.envelope().setShutdown();
  connection_->set_linger(std::chrono::milliseconds(200));
  connection_->send(goodbye);
}

transport::ConnectionOptions ClientConnection::connection_options(std::chrono::milliseconds handshake,
                                                                  std::string resume) const {
  return transport::ConnectionOptions{.address = address_,
                                      .role = wire::Role::CLIENT,
                                      .name = options_.name,
                                      .curve = options_.curve,
                                      .server_public_key = options_.server_public_key,
                                      .handshake_timeout = handshake,
                                      .resume = std::move(resume)};
}

void ClientConnection::post(transport::Outgoing& message) {
  std::lock_guard lock(link_mutex_);
  if (phase_ == Phase::lost) throw ConnectionLost(lost_reason_);
  connection_->post(message);
}

bool ClientConnection::with_connection(
    const std::function<void(transport::Connection&, std::uint64_t)>& use) {
  std::lock_guard lock(link_mutex_);
  if (phase_ == Phase::lost) return false;
  use(*connection_, epoch_);
  return true;
}

std::optional<std::string> ClientConnection::lost_reason() {
  std::lock_guard lock(link_mutex_);
  if (phase_ != Phase::lost) return std::nullopt;
  return lost_reason_;
}

void ClientConnection::expect(std::uint64_t id, std::function<void(transport::Received&)> handler) {
  std::lock_guard lock(waiters_mutex_);
  expected_[id] = std::move(handler);
}

void ClientConnection::forget_waiter(wire::Envelope::Which answer, std::uint64_t id, std::uint64_t token) {
  std::lock_guard lock(waiters_mutex_);
  const auto* row = wire::find_client_answer(answer);
  if (row && row->match == wire::Match::in_order)
    std::erase_if(in_order_[answer], [token](const auto& waiter) { return waiter.first == token; });
  else
    by_id_.erase(id);
}

transport::Received ClientConnection::ask(wire::Envelope::Which answer_kind, std::uint64_t id,
                                          const Fill& fill, const std::string& what,
                                          std::optional<std::chrono::milliseconds> timeout,
                                          std::function<void(transport::Received&)> on_answer) {
  const auto* row = wire::find_client_answer(answer_kind);
  if (!row || (row->match != wire::Match::request_id && row->match != wire::Match::in_order))
    throw std::logic_error("'" + wire::kind_name(answer_kind) + "' is not an answer a client waits for");
  const std::uint64_t token = next_id();
  std::future<transport::Received> answer;
  {
    std::lock_guard lock(waiters_mutex_);
    if (row->match == wire::Match::in_order) {
      answer =
          in_order_[answer_kind].emplace_back(token, std::promise<transport::Received>()).second.get_future();
    } else {
      auto& waiter = by_id_[id];
      waiter.on_answer = std::move(on_answer);
      answer = waiter.answer.get_future();
    }
  }
  try {
    std::uint64_t sent_epoch = 0;
    auto deadline = Clock::time_point::max();
    for (;;) {
      {
        std::unique_lock lock(link_mutex_);
        if (phase_ == Phase::lost) throw ConnectionLost(lost_reason_);
        if (phase_ == Phase::up && sent_epoch != epoch_) {
          transport::Outgoing message;
          fill(message);
          connection_->post(message);
          sent_epoch = epoch_;
          if (timeout) deadline = Clock::now() + *timeout;
        } else if (phase_ != Phase::up && timeout) {
          deadline = Clock::now() + *timeout;  // reconnect_timeout bounds this wait
        }
      }
      if (answer.wait_for(std::chrono::milliseconds(20)) == std::future_status::ready) return answer.get();
      if (Clock::now() >= deadline)
        throw ConnectionError("the scheduler at " + address_ + " did not answer " + what + " within " +
                              std::to_string(timeout->count() / 1000) + " s");
    }
  } catch (...) {
    forget_waiter(answer_kind, id, token);
    throw;
  }
}

void ClientConnection::route(transport::Received& message) {
  auto envelope = message.envelope();
  const auto* row = wire::find_client_answer(envelope.which());
  if (!row) {
    std::cerr << "[tessera client] dropped a '" << wire::kind_name(envelope.which())
              << "' from the scheduler: a client is never sent one" << std::endl;
    return;
  }
  switch (row->match) {
    case wire::Match::connection:
      return;  // a heartbeat: that it came is what counts (run)
    case wire::Match::event:
      if (handlers_.event) handlers_.event(message);
      return;
    case wire::Match::in_order: {
      std::promise<transport::Received> waiting;
      {
        std::lock_guard lock(waiters_mutex_);
        auto& waiters = in_order_[envelope.which()];
        if (waiters.empty()) return;  // its waiter gave up
        waiting = std::move(waiters.front().second);
        waiters.pop_front();
      }
      waiting.set_value(std::move(message));
      return;
    }
    case wire::Match::request_id: {
      const auto id = wire::answer_request_id(envelope);
      if (!id) return;
      std::function<void(transport::Received&)> expected;
      Waiter waiter;
      bool found = false;
      {
        std::lock_guard lock(waiters_mutex_);
        if (auto it = expected_.find(*id); it != expected_.end()) {
          expected = std::move(it->second);
          expected_.erase(it);
        } else if (auto w = by_id_.find(*id); w != by_id_.end()) {
          waiter = std::move(w->second);
          by_id_.erase(w);
          found = true;
        }
      }
      if (expected) return expected(message);
      if (!found) return;  // its waiter gave up
      if (waiter.on_answer) waiter.on_answer(message);
      waiter.answer.set_value(std::move(message));
      return;
    }
  }
}

void ClientConnection::run() {
  auto last_heard = Clock::now();
  auto next_heartbeat = last_heard;
  for (;;) {
    std::shared_ptr<transport::Connection> connection;
    {
      std::unique_lock lock(link_mutex_);
      if (stopping_) return;
      if (phase_ == Phase::lost) {
        link_changed_.wait(lock, [&] { return stopping_; });
        return;
      }
      connection = connection_;
    }
    const auto now = Clock::now();
    // Heartbeats tell the scheduler this client is still there while it only waits; its answers tell the
    // client the scheduler is.
    if (now >= next_heartbeat) {
      transport::Outgoing heartbeat;
      heartbeat.envelope().initHeartbeat();
      connection->post(heartbeat);
      next_heartbeat = now + options_.heartbeat_interval;
    }
    std::optional<transport::Received> message;
    try {
      message = connection->pump(std::chrono::milliseconds(20));
    } catch (const std::exception& e) {
      std::cerr << "[tessera client] dropped a malformed message from the scheduler: " << e.what()
                << std::endl;
      continue;
    }
    if (!message) {
      if (Clock::now() - last_heard > options_.heartbeat_timeout) {
        // Bytes still arriving: the scheduler is there, its answers queued behind data on a slow link.
        // Reconnecting would only send everything again over that link (no ZMTP heartbeats for this:
        // ZeroMQ answers them itself, so they would keep a hung scheduler looking alive).
        if (const auto quiet = connection->since_bytes_arrived();
            quiet && *quiet < options_.heartbeat_timeout)
          continue;
        reconnect("it sent nothing for " + std::to_string(options_.heartbeat_timeout.count()) + " ms");
        last_heard = next_heartbeat = Clock::now();
      }
      continue;
    }
    last_heard = Clock::now();
    if (message->envelope().isRefuse()) {
      // A scheduler that restarted does not know this connection.
      reconnect("it refused this connection (" +
                printable(std::string(message->envelope().getRefuse().getReason()), 200) + ")");
      last_heard = next_heartbeat = Clock::now();
      continue;
    }
    try {
      route(*message);
    } catch (const std::exception& e) {
      std::cerr << "[tessera client] dropped a message from the scheduler: " << e.what() << std::endl;
    } catch (const kj::Exception& e) {
      std::cerr << "[tessera client] dropped a malformed message from the scheduler: "
                << e.getDescription().cStr() << std::endl;
    }
  }
}

// On the I/O thread: connects again with backoff until reconnect_timeout, then gives up for good.
void ClientConnection::reconnect(const std::string& cause) {
  const auto since = Clock::now();
  const auto deadline = since + options_.reconnect_timeout;
  {
    std::lock_guard lock(link_mutex_);
    phase_ = Phase::reconnecting;
  }
  std::cerr << "[tessera client] lost the scheduler at " << address_ << ": " << cause
            << "; reconnecting for up to " << options_.reconnect_timeout.count() / 1000.0 << " s"
            << std::endl;
  auto backoff = std::chrono::milliseconds(50);
  std::string last_error = cause;
  // The same scheduler still holds this client's session for client_grace: the new connection takes it
  // over, and only what was lost with the old one goes again (replay). A restarted one starts a new one.
  const std::string session = connection_->session();
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) break;
    try {
      auto fresh = std::make_shared<transport::Connection>(
          connection_options(std::min<std::chrono::milliseconds>(left, std::chrono::seconds(2)), session));
      std::lock_guard lock(link_mutex_);
      if (stopping_) return;
      connection_ = fresh;
      epoch_ += 1;
      if (handlers_.replay) handlers_.replay(*fresh, epoch_);
      phase_ = Phase::up;
      std::cerr << "[tessera client] reconnected to the scheduler at " << address_ << " after "
                << std::chrono::duration<double>(Clock::now() - since).count() << " s"
                << (fresh->resumed() ? " (its session resumed: only what was lost goes again)"
                                     : " (a new session: everything with results to come goes again)")
                << std::endl;
      return;
    } catch (const std::exception& e) {
      last_error = e.what();
    }
    std::unique_lock lock(link_mutex_);
    // The pause between attempts, not a test's sleep: a stop ends it.
    if (link_changed_.wait_for(lock, std::min(backoff, left), [&] { return stopping_; })) return;
    backoff = std::min<std::chrono::milliseconds>(2 * backoff, std::chrono::seconds(2));
  }
  const std::string reason = "lost the connection to the scheduler at " + address_ + " (" + cause +
                             ") and could not connect again within " +
                             std::to_string(options_.reconnect_timeout.count() / 1000.0).substr(0, 5) +
                             " s (reconnect_timeout): " + printable(last_error, 300);
  std::cerr << "[tessera client] " << reason << std::endl;
  lose_everything(reason);
}

// The scheduler is gone for good: every waiting and later call fails with `reason`.
void ClientConnection::lose_everything(const std::string& reason) {
  {
    std::lock_guard lock(link_mutex_);
    phase_ = Phase::lost;
    lost_reason_ = reason;
  }
  link_changed_.notify_all();
  if (handlers_.lost) handlers_.lost(reason);
}

}  // namespace tessera

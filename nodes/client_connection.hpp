// ClientConnection: a client's connection to a scheduler node, below what the client asks of it. One I/O
// thread reads what the scheduler sends and hands each message where the client protocol's rows say
// (nodes/client_protocol.hpp): an answer to the request with its id, or to the oldest request of its kind,
// an event to the client's handler, a heartbeat to the liveness check. It sends heartbeats, reconnects
// with backoff to a scheduler that went silent or no longer knows it, has the client replay what the
// scheduler must know again, and asks again the requests still waiting. A scheduler gone past
// reconnect_timeout fails every waiting and later call with ConnectionLost, naming the address and the wait.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>

#include "nodes/client_protocol.hpp"
#include "nodes/remote_backend.hpp"
#include "nodes/transport.hpp"

namespace tessera {

class ClientConnection {
 public:
  struct Handlers {
    // Match::event rows (a table's results, a stream's progress, an error), on the I/O thread.
    std::function<void(transport::Received&)> event;
    // On a new connection after a reconnect, before anything else goes on it: what the scheduler must know
    // again, posted to `fresh` (under the connection's lock: no other send interleaves).
    // `epoch` counts the connections made so far (with_connection's).
    std::function<void(transport::Connection& fresh, std::uint64_t epoch)> replay;
    // The scheduler is gone for good: what waits on the client's side fails with `reason`.
    std::function<void(const std::string& reason)> lost;
  };
  using Fill = std::function<void(transport::Outgoing&)>;
  using Clock = std::chrono::steady_clock;

  // Connects and shakes hands (transport::ConnectionRefused naming the reason), then starts the I/O thread.
  ClientConnection(std::string address, RemoteOptions options, Handlers handlers);
  // Stops the I/O thread (no handler runs after) and says goodbye, so the scheduler releases what this
  // client held at once. Once; the destructor does it too.
  void stop();
  ~ClientConnection();
  ClientConnection(const ClientConnection&) = delete;
  ClientConnection& operator=(const ClientConnection&) = delete;

  const std::string& address() const { return address_; }
  // A fresh id: for requests, and for what the client numbers itself (result tables).
  std::uint64_t next_id() { return next_id_++; }

  // Sends on the current connection; ConnectionLost once the scheduler is gone for good. While reconnecting
  // it goes to the old connection and is lost with it: the replay sends again what matters.
  void post(transport::Outgoing& message);
  // Runs `use(connection, epoch)` under the connection's lock (epoch: connections made so far), so that what
  // it sends and records cannot interleave with a replay; false, without running it, once lost.
  bool with_connection(const std::function<void(transport::Connection&, std::uint64_t epoch)>& use);
  // Why the scheduler is gone for good, or nullopt while it is not.
  std::optional<std::string> lost_reason();

  // Sends the request `fill` writes and waits for its answer, of kind `answer` (a request-id row: the one
  // with `id`; an in-order row: the oldest waiting of its kind). Asks again after a reconnect. `on_answer`,
  // when given, runs on the I/O thread with the answer before the caller wakes (to register what the answer
  // opens before anything that follows it is read). ConnectionError when the scheduler is there but does
  // not answer within `timeout` (counted while connected; nullopt: no limit), ConnectionLost when it is
  // gone for good.
  transport::Received ask(wire::Envelope::Which answer, std::uint64_t id, const Fill& fill,
                          const std::string& what, std::optional<std::chrono::milliseconds> timeout,
                          std::function<void(transport::Received&)> on_answer = {});
  // An answer with `id` that no thread waits for: `handler` runs on the I/O thread when it comes (a
  // stream's attach, sent by the replay).
  void expect(std::uint64_t id, std::function<void(transport::Received&)> handler);

 private:
  enum class Phase { up, reconnecting, lost };
  struct Waiter {
    std::promise<transport::Received> answer;
    std::function<void(transport::Received&)> on_answer;
  };

  transport::ConnectionOptions connection_options(std::chrono::milliseconds handshake,
                                                  std::string resume = {}) const;
  void run();
  void reconnect(const std::string& cause);
  void lose_everything(const std::string& reason);
  // Hands a message to what waits for it, by its row.
  void route(transport::Received& message);
  void forget_waiter(wire::Envelope::Which answer, std::uint64_t id, std::uint64_t token);

  const std::string address_;
  const RemoteOptions options_;
  const Handlers handlers_;
  std::atomic<std::uint64_t> next_id_{1};

  // Lock order: link_mutex_, then waiters_mutex_.
  std::mutex link_mutex_;
  std::condition_variable link_changed_;
  std::shared_ptr<transport::Connection> connection_;  // replaced on a reconnect (I/O thread)
  Phase phase_ = Phase::up;
  std::uint64_t epoch_ = 1;  // connections made so far
  std::string lost_reason_;
  bool stopping_ = false;

  std::mutex waiters_mutex_;
  std::unordered_map<std::uint64_t, Waiter> by_id_;  // request-id answers
  std::unordered_map<std::uint64_t, std::function<void(transport::Received&)>> expected_;
  // In-order answers, oldest first, with the token their waiter forgets them by.
  std::map<wire::Envelope::Which, std::deque<std::pair<std::uint64_t, std::promise<transport::Received>>>>
      in_order_;

  std::thread thread_;
};

}  // namespace tessera

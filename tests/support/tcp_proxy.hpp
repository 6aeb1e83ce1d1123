// A TCP forwarder on 127.0.0.1 between a client and a server, for tests of what a lost connection costs:
// it can swallow what the server sends on the connections open now, as a link that fails one way does (the
// server's kernel takes the bytes, the client never sees them), while new connections go through.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace tessera::testing {

class TcpProxy {
 public:
  // Forwards connections to 127.0.0.1:`server_port`.
  explicit TcpProxy(int server_port) : server_port_(server_port) {
    listener_ = ::socket(AF_INET, SOCK_STREAM, 0);
    if (listener_ < 0) throw std::runtime_error("TcpProxy: socket failed");
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t size = sizeof address;
    if (::bind(listener_, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
        ::listen(listener_, 16) != 0 ||
        ::getsockname(listener_, reinterpret_cast<sockaddr*>(&address), &size) != 0)
      throw std::runtime_error("TcpProxy: cannot listen on 127.0.0.1");
    port_ = ntohs(address.sin_port);
    acceptor_ = std::thread([this] { accept_loop(); });
  }
  ~TcpProxy() {
    stopping_ = true;
    acceptor_.join();
    std::lock_guard lock(mutex_);
    for (auto& pair : pairs_) {
      pair->thread.join();
      ::close(pair->client);
      ::close(pair->server);
    }
    ::close(listener_);
  }
  TcpProxy(const TcpProxy&) = delete;
  TcpProxy& operator=(const TcpProxy&) = delete;

  int port() const { return port_; }
  // From now on, what the server sends on the connections open now is read and dropped.
  void swallow_what_the_server_sends() {
    std::lock_guard lock(mutex_);
    for (auto& pair : pairs_) pair->swallow = true;
  }
  // Bytes dropped so far.
  std::uint64_t swallowed() const { return swallowed_.load(); }

 private:
  struct Pair {
    int client = -1, server = -1;
    std::atomic<bool> swallow{false};
    std::thread thread;
  };

  void accept_loop() {
    while (!stopping_) {
      pollfd item{listener_, POLLIN, 0};
      if (::poll(&item, 1, 50) <= 0) continue;
      const int client = ::accept(listener_, nullptr, nullptr);
      if (client < 0) continue;
      const int server = ::socket(AF_INET, SOCK_STREAM, 0);
      sockaddr_in address{};
      address.sin_family = AF_INET;
      address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      address.sin_port = htons(static_cast<std::uint16_t>(server_port_));
      if (server < 0 || ::connect(server, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
        ::close(client);
        if (server >= 0) ::close(server);
        continue;
      }
      auto pair = std::make_unique<Pair>();
      pair->client = client;
      pair->server = server;
      Pair* raw = pair.get();
      std::lock_guard lock(mutex_);
      pair->thread = std::thread([this, raw] { forward(*raw); });
      pairs_.push_back(std::move(pair));
    }
  }

  // Both directions on one thread, until either side closes or the proxy stops.
  void forward(Pair& pair) {
    char buffer[65536];
    while (!stopping_) {
      pollfd items[] = {{pair.client, POLLIN, 0}, {pair.server, POLLIN, 0}};
      if (::poll(items, 2, 50) <= 0) continue;
      for (int side = 0; side < 2; ++side) {
        if (!(items[side].revents & (POLLIN | POLLHUP | POLLERR))) continue;
        const ssize_t got = ::read(items[side].fd, buffer, sizeof buffer);
        if (got <= 0) {
          ::shutdown(pair.client, SHUT_RDWR);
          ::shutdown(pair.server, SHUT_RDWR);
          return;
        }
        if (side == 1 && pair.swallow) {
          swallowed_ += static_cast<std::uint64_t>(got);
          continue;
        }
        const int to = side == 0 ? pair.server : pair.client;
        for (ssize_t sent = 0; sent < got;) {
          const ssize_t n = ::send(to, buffer + sent, static_cast<std::size_t>(got - sent), MSG_NOSIGNAL);
          if (n <= 0) return;
          sent += n;
        }
      }
    }
  }

  const int server_port_;
  int listener_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<std::uint64_t> swallowed_{0};
  std::mutex mutex_;
  std::vector<std::unique_ptr<Pair>> pairs_;
  std::thread acceptor_;
};

}  // namespace tessera::testing

// A CLI command's connection to a scheduler: one request, one answer, and a goodbye so the scheduler
// does not keep the CLI as a client until its grace period ends.
#pragma once

#include <chrono>
#include <stdexcept>
#include <string>

#include "nodes/transport.hpp"

namespace tessera::cli {

class Session {
 public:
  explicit Session(const std::string& scheduler)
      : scheduler_(scheduler),
        connection_(transport::ConnectionOptions{.address = scheduler, .name = "tessera-cli"}) {}
  ~Session() {
    transport::Outgoing goodbye;
    goodbye.envelope().setShutdown();
    connection_.set_linger(std::chrono::milliseconds(200));
    connection_.send(goodbye);
  }
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  transport::Received ask(transport::Outgoing& request, const char* what,
                          std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    connection_.send(request);
    auto answer = connection_.receive(timeout);
    if (!answer) throw std::runtime_error(scheduler_ + " did not answer with " + what);
    return std::move(*answer);
  }

 private:
  std::string scheduler_;
  transport::Connection connection_;
};

}  // namespace tessera::cli

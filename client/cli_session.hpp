// A CLI command's connection to a scheduler: one request, one answer, and a goodbye so the scheduler
// does not keep the CLI as a client until its grace period ends. With CURVE keys in the options it
// connects encrypted, as the client library does.
#pragma once

#include <chrono>
#include <optional>
#include <stdexcept>
#include <string>
#include <tessera/client.hpp>

#include "nodes/transport.hpp"

namespace tessera::cli {

class Session {
 public:
  // `timeout` bounds the handshake and each answer: a node that never answers (a wrong address, a CURVE
  // node reached without keys) is an error after it, not a hang.
  Session(const std::string& scheduler, const ConnectOptions& options, std::chrono::milliseconds timeout)
      : scheduler_(scheduler),
        timeout_(timeout),
        connection_(connection_options(scheduler, options, timeout)) {}
  ~Session() {
    transport::Outgoing goodbye;
    goodbye.envelope().setShutdown();
    connection_.set_linger(std::chrono::milliseconds(200));
    connection_.send(goodbye);
  }
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  transport::Received ask(transport::Outgoing& request, const char* what) {
    connection_.send(request);
    auto answer = connection_.receive(timeout_);
    if (!answer) throw std::runtime_error(scheduler_ + " did not answer with " + what);
    return std::move(*answer);
  }

 private:
  static transport::ConnectionOptions connection_options(const std::string& scheduler,
                                                         const ConnectOptions& options,
                                                         std::chrono::milliseconds timeout) {
    transport::ConnectionOptions out{.address = scheduler, .name = options.name};
    if (!options.secret_key.empty()) out.curve = transport::CurveKeys{options.public_key, options.secret_key};
    out.server_public_key = options.scheduler_public_key;
    out.handshake_timeout = timeout;
    return out;
  }

  std::string scheduler_;
  std::chrono::milliseconds timeout_;
  transport::Connection connection_;
};

}  // namespace tessera::cli

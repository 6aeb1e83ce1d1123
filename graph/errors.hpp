// The error types Tessera throws; each message names what was wrong and where.
#pragma once

#include <stdexcept>
#include <string>

namespace tessera {

// A value of the wrong kind reached a typed conversion.
class TypeError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// A graph or call was rejected before anything ran: unknown function, wrong arity, cycle, missing key.
class SubmissionError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// A scheduler node could not be reached, or refused the connection (another protocol version, a CURVE
// key it does not accept).
class ConnectionError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The connection to a scheduler node was lost and could not be made again within reconnect_timeout; the
// message names the address and how long the client waited.
class ConnectionLost : public ConnectionError {
 public:
  using ConnectionError::ConnectionError;
};
// The function a result slot failed by a lost connection names (its TaskFailed); asking the slot for its
// value throws ConnectionLost instead.
inline constexpr const char* kLostConnectionFunction = "(connection)";

// A task failed (its function threw) or was cancelled because a task it depends on failed.
class TaskFailed : public std::runtime_error {
 public:
  TaskFailed(std::string function, std::string key, std::string message, bool cancelled)
      : std::runtime_error(render(function, key, message, cancelled)),
        function_(std::move(function)),
        key_(std::move(key)),
        message_(std::move(message)),
        cancelled_(cancelled) {}

  const std::string& function() const { return function_; }
  const std::string& key() const { return key_; }
  const std::string& message() const { return message_; }
  bool cancelled() const { return cancelled_; }

 private:
  static std::string render(const std::string& function, const std::string& key, const std::string& message,
                            bool cancelled) {
    return (cancelled ? "task " + key + " (" + function + ") was cancelled: "
                      : "task " + key + " (" + function + ") failed: ") +
           message;
  }
  std::string function_, key_, message_;
  bool cancelled_;
};

}  // namespace tessera

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

// A push stopped by Stream::interrupt (tessera stream push on SIGINT): the set was not pushed.
class StreamInterrupted : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
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
// The same for a submission the scheduler refused whole, and for a stream's failed parameter set (its id
// in place of the key).
inline constexpr const char* kRefusedSubmissionFunction = "(submission)";
inline constexpr const char* kSimulationFunction = "(simulation)";

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
  // What a person reads: "task 3a9f.. (square) failed: ...", and for the stand-in names, what happened.
  static std::string render(const std::string& function, const std::string& key, const std::string& message,
                            bool cancelled) {
    if (function == kRefusedSubmissionFunction) return "the scheduler refused the submission: " + message;
    if (function == kLostConnectionFunction) return "the connection to the scheduler was lost: " + message;
    if (function == kSimulationFunction) return "parameter set " + key + " failed: " + message;
    const std::string task = key.empty() ? "a task of " + function : "task " + key + " (" + function + ")";
    return task + (cancelled ? " was cancelled: " : " failed: ") + message;
  }
  std::string function_, key_, message_;
  bool cancelled_;
};

}  // namespace tessera

// One run of a program: started without a shell in a session (and process group) of its own, its stdout
// and stderr read into bounded tails while it runs, ended as a whole tree when asked (SIGTERM to the
// group, SIGKILL after a grace period, then every process that still carries the run's token in its
// environment, which finds daemons that left the group).
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::programs {

// The last `capacity` bytes written to it, whatever was written in all.
class OutputTail {
 public:
  explicit OutputTail(std::size_t capacity) : capacity_(capacity) {}
  void append(std::string_view bytes);
  const std::string& text() const { return text_; }
  std::uint64_t total() const { return total_; }
  // The last `bytes` of the tail.
  std::string last(std::size_t bytes) const;

 private:
  std::size_t capacity_;
  std::string text_;
  std::uint64_t total_ = 0;
};

// Why a program could not start: the errno and what failed.
class StartError : public std::runtime_error {
 public:
  StartError(std::string message, int error) : std::runtime_error(std::move(message)), error_(error) {}
  int error() const { return error_; }

 private:
  int error_;
};

struct LaunchRequest {
  std::vector<std::string> argv;         // argv[0] is looked up on PATH when it has no '/'
  std::vector<std::string> environment;  // "NAME=value", the whole environment
  std::string directory;                 // where it starts
  std::size_t stdout_capacity = 64 * 1024;
  std::size_t stderr_capacity = 4 * 1024;
  double grace_seconds = 5;  // between SIGTERM and SIGKILL
};

struct Exit {
  bool signaled = false;
  int code = 0;              // the exit status, or the signal's number
  bool interrupted = false;  // ended by interrupt(): code is whatever the tree died of
  double seconds = 0;        // wall time
  OutputTail out{0}, err{0};
};

// An interrupter, shared by the thread that runs programs one at a time and any thread that may end the
// run in progress.
class Interrupter {
 public:
  Interrupter();
  ~Interrupter();
  Interrupter(const Interrupter&) = delete;
  Interrupter& operator=(const Interrupter&) = delete;
  void interrupt();
  // Called before each run: an interrupt meant for an earlier run is forgotten.
  void reset();
  bool interrupted() const { return flag_.load(std::memory_order_acquire); }
  int fd() const { return fd_; }

 private:
  int fd_ = -1;
  std::atomic<bool> flag_{false};
};

// Runs `request` to its end (or to an interrupt, after which the whole tree is ended). Throws StartError
// when the program could not be started (not found, not executable, no such directory, no pipes).
Exit run_program(const LaunchRequest& request, Interrupter& interrupter);

// "SIGSEGV" for 11, "signal 77" for a number without a name.
std::string signal_name(int signal);

// The processes whose environment holds `token` ("NAME=value"), found in /proc.
std::vector<int> processes_with_token(std::string_view token);

}  // namespace tessera::programs

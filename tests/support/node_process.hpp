// The one launcher of real tessera-node processes, for tests and benchmarks. NodeProcess: a node started
// from a TOML config (written to a scratch directory of its own); the first line it prints names its
// endpoint; stopped with SIGTERM at the end (or killed with SIGKILL by kill_hard). NodeRun: a node started
// with any command line, its stdout and stderr in files of a given directory, no endpoint expected (it may
// well refuse to start): a test waits for it to print something or to exit, and reads what it wrote.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include "../test_util.hpp"
#include "commands.hpp"
#include "files.hpp"
#include "scratch_dir.hpp"

namespace tessera::testing {

namespace fs = std::filesystem;

// The build's tessera-node, for tests that define TESSERA_NODE_BINARY; others name the program they run.
inline std::string default_node_binary() {
#ifdef TESSERA_NODE_BINARY
  return TESSERA_NODE_BINARY;
#else
  return {};
#endif
}

namespace detail {

// Where a started node's standard output and error go; what is left unset stays this process's.
struct NodeOutput {
  int stdout_fd = -1;    // made the child's stdout (a pipe's write end)
  int close_fd = -1;     // closed in the child (that pipe's read end)
  fs::path stdout_file;  // made (or emptied) for the child's stdout
  fs::path stderr_file;  // made (or emptied) for the child's stderr
};

// Starts `binary` with `args` in a child process; its pid. All the child needs is made before the fork.
inline pid_t spawn_node(const std::string& binary, const std::vector<std::string>& args,
                        const NodeOutput& output) {
  std::vector<char*> argv{const_cast<char*>(binary.c_str())};
  for (const auto& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    if (output.stdout_fd >= 0) dup2(output.stdout_fd, STDOUT_FILENO);
    if (!output.stdout_file.empty()) {
      const int fd = open(output.stdout_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (fd >= 0) dup2(fd, STDOUT_FILENO);
    }
    if (!output.stderr_file.empty()) {
      const int fd = open(output.stderr_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (fd >= 0) dup2(fd, STDERR_FILENO);
    }
    if (output.close_fd >= 0) close(output.close_fd);
    execv(argv[0], argv.data());
    _exit(127);
  }
  return pid;
}

}  // namespace detail

// Starts tessera-node with a config and reads the endpoint it prints; stops it (SIGTERM) at the end.
class NodeProcess {
 public:
  // With `capture_log`, what the node writes to stderr goes to a file that log() reads. `binary`: another
  // tessera-node program (an installed one) than the build's.
  explicit NodeProcess(const std::string& config_text, bool capture_log = false,
                       const std::string& binary = default_node_binary())
      : dir_("tessera-node-test") {
    const fs::path config = dir_.write("node.toml", config_text);
    if (capture_log) log_path_ = dir_ / "stderr.log";
    int out[2];
    if (pipe(out) != 0) throw std::runtime_error("pipe");
    detail::NodeOutput output;
    output.stdout_fd = out[1];
    output.close_fd = out[0];
    output.stderr_file = log_path_;
    pid_ = detail::spawn_node(binary, {"--config", config.string()}, output);
    close(out[1]);
    stdout_ = fdopen(out[0], "r");
    char line[512];
    // The first line names the endpoint; fgets returns when the node has printed it (or exited).
    if (!fgets(line, sizeof line, stdout_)) {
      abandon();
      throw std::runtime_error("tessera-node printed nothing");
    }
    first_line_ = line;
    const auto at = first_line_.find("tcp://");
    if (at == std::string::npos) {
      abandon();
      throw std::runtime_error("unexpected first line: " + first_line_);
    }
    endpoint_ = first_line_.substr(at, first_line_.find_first_of(" ;\n", at) - at);
  }
  ~NodeProcess() {
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      int status = 0;
      waitpid(pid_, &status, 0);
    }
    if (stdout_) fclose(stdout_);
  }
  NodeProcess(const NodeProcess&) = delete;
  NodeProcess& operator=(const NodeProcess&) = delete;

  // Stops the node and returns its exit code.
  int stop() {
    kill(pid_, SIGTERM);
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  // kill -9: no chance to say goodbye.
  void kill_hard() {
    kill(pid_, SIGKILL);
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
  }
  // Whether the node has exited, without waiting (then reaped; its wait status in `status`).
  bool exited(int* status = nullptr) {
    if (pid_ <= 0) return true;
    int got = 0;
    if (waitpid(pid_, &got, WNOHANG) != pid_) return false;
    pid_ = -1;
    if (status) *status = got;
    return true;
  }
  const std::string& endpoint() const { return endpoint_; }
  pid_t pid() const { return pid_; }
  // What the node wrote to stderr so far (with capture_log).
  std::string log() const { return read_file(log_path_); }
  const std::string& first_line() const { return first_line_; }
  // The next line the node prints on stdout (blocks until it does); empty once it closed stdout.
  std::string next_line() {
    char line[512];
    return fgets(line, sizeof line, stdout_) ? std::string(line) : std::string();
  }

 private:
  // A node that did not start as it should: killed, so that a failed constructor leaves nothing running.
  void abandon() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    pid_ = -1;
    if (stdout_) fclose(stdout_);
    stdout_ = nullptr;
  }

  ScratchDir dir_;  // the config and the log; removed after the node has stopped
  fs::path log_path_;
  pid_t pid_ = -1;
  FILE* stdout_ = nullptr;
  std::string first_line_, endpoint_;
};

// One tessera-node process started with `args`, its stdout and stderr in the files "stdout" and "stderr"
// of `dir`. Killed (SIGKILL) at the end if it still runs.
class NodeRun {
 public:
  NodeRun(const fs::path& dir, const std::vector<std::string>& args,
          const std::string& binary = default_node_binary())
      : out_(dir / "stdout"), err_(dir / "stderr") {
    detail::NodeOutput output;
    output.stdout_file = out_;
    output.stderr_file = err_;
    pid_ = detail::spawn_node(binary, args, output);
  }
  ~NodeRun() {
    if (running()) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  NodeRun(const NodeRun&) = delete;
  NodeRun& operator=(const NodeRun&) = delete;

  // True once the process has exited within `timeout`; exit_code() then tells how (128 + N: signal N).
  bool wait_exit(std::chrono::milliseconds timeout) {
    return eventually([&] { return !running(); }, timeout);
  }
  // True once the process has printed `text` on stdout within `timeout` (false as soon as it exits without).
  bool wait_stdout(const std::string& text, std::chrono::milliseconds timeout) {
    return eventually([&] { return out().find(text) != std::string::npos || !running(); }, timeout) &&
           out().find(text) != std::string::npos;
  }
  void signal(int number) { kill(pid_, number); }
  int exit_code() const { return exit_code_; }
  pid_t pid() const { return pid_; }
  std::string out() const { return read_file(out_); }
  std::string err() const { return read_file(err_); }

 private:
  // Reaps the process once it has exited.
  bool running() {
    int status = 0;
    if (exit_code_ < 0 && waitpid(pid_, &status, WNOHANG) == pid_)
      exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return exit_code_ < 0;
  }

  fs::path out_, err_;
  pid_t pid_ = -1;
  int exit_code_ = -1;
};

}  // namespace tessera::testing

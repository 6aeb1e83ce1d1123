// NodeProcess: a real tessera-node started from a TOML config (written to a temporary directory); the
// first line it prints names its endpoint. Stopped with SIGTERM (or killed with SIGKILL) by the test.
#pragma once

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>

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

// Starts tessera-node with a config and reads the endpoint it prints; stops it (SIGTERM) at the end.
class NodeProcess {
 public:
  // With `capture_log`, what the node writes to stderr goes to a file that log() reads. `binary`: another
  // tessera-node program (an installed one) than the build's.
  explicit NodeProcess(const std::string& config_text, bool capture_log = false,
                       const std::string& binary = default_node_binary()) {
    static int instances = 0;
    dir_ = fs::temp_directory_path() /
           ("tessera-node-test-" + std::to_string(getpid()) + "-" + std::to_string(++instances));
    fs::create_directories(dir_);
    const fs::path config = dir_ / "node.toml";
    std::ofstream(config) << config_text;
    int out[2];
    if (pipe(out) != 0) throw std::runtime_error("pipe");
    pid_ = fork();
    const fs::path log_path = dir_ / "stderr.log";
    if (capture_log) log_path_ = log_path;
    if (pid_ == 0) {
      dup2(out[1], STDOUT_FILENO);
      if (capture_log) {
        if (FILE* log = fopen(log_path.c_str(), "w")) dup2(fileno(log), STDERR_FILENO);
      }
      close(out[0]);
      execl(binary.c_str(), binary.c_str(), "--config", config.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    close(out[1]);
    stdout_ = fdopen(out[0], "r");
    char line[512];
    // The first line names the endpoint; fgets returns when the node has printed it (or exited).
    if (!fgets(line, sizeof line, stdout_)) throw std::runtime_error("tessera-node printed nothing");
    first_line_ = line;
    const auto at = first_line_.find("tcp://");
    if (at == std::string::npos) throw std::runtime_error("unexpected first line: " + first_line_);
    endpoint_ = first_line_.substr(at, first_line_.find_first_of(" ;\n", at) - at);
  }
  ~NodeProcess() {
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      int status = 0;
      waitpid(pid_, &status, 0);
    }
    if (stdout_) fclose(stdout_);
    fs::remove_all(dir_);
  }
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
  const std::string& endpoint() const { return endpoint_; }
  pid_t pid() const { return pid_; }
  // What the node wrote to stderr so far (with capture_log).
  std::string log() const {
    std::ifstream in(log_path_);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  const std::string& first_line() const { return first_line_; }
  // The next line the node prints on stdout (blocks until it does); empty once it closed stdout.
  std::string next_line() {
    char line[512];
    return fgets(line, sizeof line, stdout_) ? std::string(line) : std::string();
  }

 private:
  fs::path dir_, log_path_;
  pid_t pid_ = -1;
  FILE* stdout_ = nullptr;
  std::string first_line_, endpoint_;
};

// Runs a shell command; its standard output and error, and its exit code in `code`.
inline std::string run_command(const std::string& command, int& code) {
  std::string out;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  char buffer[4096];
  while (std::size_t n = fread(buffer, 1, sizeof buffer, pipe)) out.append(buffer, n);
  code = WEXITSTATUS(pclose(pipe));
  return out;
}

#ifdef TESSERA_CLI_BINARY
// `tessera ARGS` against a scheduler; its output (a nonzero exit fails the test).
inline std::string cli(const std::string& scheduler, const std::string& args) {
  int code = 0;
  auto out = run_command(std::string(TESSERA_CLI_BINARY) + " --scheduler " + scheduler + " " + args, code);
  EXPECT_EQ(code, 0) << out;
  return out;
}

// A number in `tessera status --json`; ~0 when absent.
inline std::uint64_t status_field(const std::string& scheduler, const std::string& field) {
  const auto json = cli(scheduler, "status --json");
  const auto at = json.find("\"" + field + "\":");
  if (at == std::string::npos) return ~std::uint64_t{0};
  return std::stoull(json.substr(at + field.size() + 3));
}
#endif

}  // namespace tessera::testing

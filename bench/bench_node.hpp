// A tessera-node child process of a benchmark, started from a generated config; the first line it prints
// names its endpoint. Stopped with SIGTERM when dropped, or killed with SIGKILL (kill_hard).
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

namespace tessera::bench {

class Node {
 public:
  Node(const std::string& binary, const std::string& config_text) {
    static int instances = 0;
    config_ = std::filesystem::temp_directory_path() / ("tessera-bench-node-" + std::to_string(getpid()) +
                                                        "-" + std::to_string(++instances) + ".toml");
    std::ofstream(config_) << config_text;
    int out[2];
    if (pipe(out) != 0) throw std::runtime_error("pipe failed");
    pid_ = fork();
    if (pid_ == 0) {
      dup2(out[1], STDOUT_FILENO);
      execl(binary.c_str(), binary.c_str(), "--config", config_.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    close(out[1]);
    stdout_ = fdopen(out[0], "r");
    char line[512];
    if (!fgets(line, sizeof line, stdout_)) throw std::runtime_error("tessera-node did not start");
    const std::string text = line;
    const auto at = text.find("tcp://");
    if (at == std::string::npos) throw std::runtime_error("tessera-node printed: " + text);
    endpoint_ = text.substr(at, text.find_first_of(" ;\n", at) - at);
  }
  ~Node() {
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      int status = 0;
      waitpid(pid_, &status, 0);
    }
    fclose(stdout_);
    std::filesystem::remove(config_);
  }
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;
  const std::string& endpoint() const { return endpoint_; }
  // kill -9: no chance to say goodbye.
  void kill_hard() {
    kill(pid_, SIGKILL);
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
  }

 private:
  std::filesystem::path config_;
  pid_t pid_ = -1;
  FILE* stdout_ = nullptr;
  std::string endpoint_;
};

}  // namespace tessera::bench

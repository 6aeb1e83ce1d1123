// Shell commands run by tests: run() keeps a command's stdout and stderr apart and times it; run_command()
// gives them together. Where a test defines TESSERA_CLI_BINARY, cli() and status_field(): `tessera`
// against a scheduler.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>

#include "files.hpp"

#ifdef TESSERA_CLI_BINARY
#include <gtest/gtest.h>
#endif

namespace tessera::testing {

// What a command did: its standard output and error, its exit code (-1: it did not exit by itself) and
// how long it took.
struct Outcome {
  std::string out, err;
  int code = -1;
  double seconds = 0;
};

// Runs a shell command line in `cwd`; stdout and stderr apart, with the exit code and the time taken.
inline Outcome run(const std::string& command,
                   const std::filesystem::path& cwd = std::filesystem::temp_directory_path()) {
  static std::atomic<int> calls{0};
  const std::filesystem::path err =
      std::filesystem::temp_directory_path() /
      ("tessera-test-stderr-" + std::to_string(getpid()) + "-" + std::to_string(++calls));
  Outcome outcome;
  const auto start = std::chrono::steady_clock::now();
  FILE* pipe = popen(("cd '" + cwd.string() + "' && " + command + " 2>" + err.string()).c_str(), "r");
  char buffer[4096];
  while (std::size_t n = fread(buffer, 1, sizeof buffer, pipe)) outcome.out.append(buffer, n);
  const int status = pclose(pipe);
  outcome.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  outcome.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  outcome.err = read_file(err);
  std::filesystem::remove(err);
  return outcome;
}

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

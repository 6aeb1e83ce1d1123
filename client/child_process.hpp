// Programs a launcher starts and watches (tessera slurm: srun steps, the user's command): started with
// the signals the launcher blocks unblocked again, polled without blocking, stopped with a deadline.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace tessera::cli {

class SpawnError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

using Environment = std::vector<std::pair<std::string, std::string>>;

// Starts argv[0] (looked up in PATH when it has no '/') with this process's environment plus `extra`;
// a SpawnError names the program when it cannot start.
pid_t spawn(const std::vector<std::string>& argv, const Environment& extra = {});

// The child's exit status once it has ended (128 + the signal when a signal ended it), else nullopt.
std::optional<int> poll_exit(pid_t child);

// SIGTERM, then SIGKILL if it has not ended within `grace`; its exit status.
int stop_child(pid_t child, std::chrono::milliseconds grace);

// Runs a program to its end within `timeout` and returns what it printed on stdout; a SpawnError names
// the program and quotes its stderr when it fails or outlasts the timeout.
std::string capture_output(const std::vector<std::string>& argv, std::chrono::milliseconds timeout);

// The folder this program's executable is in (/proc/self/exe): where its sibling programs are.
std::string own_directory();

}  // namespace tessera::cli

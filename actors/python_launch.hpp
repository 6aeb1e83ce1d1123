// Starting a Python interpreter of the worker's (`python3 -m tessera._worker MODE ... -- MODULES`) from a
// threaded process: the command is made before the fork, the child only moves descriptors and execs.
#pragma once

#include <sys/types.h>

#include <span>
#include <string>
#include <vector>

#include "graph/python_definition.hpp"

namespace tessera {

// A command line and environment as execve takes them.
struct PythonCommand {
  std::vector<std::string> argv_text, env_text;
  std::vector<char*> argv, envp;
};

// `python -m tessera._worker ARGUMENTS... -- MODULES...`, with this process's environment and the
// package path first on PYTHONPATH.
PythonCommand python_command(const PythonEnvironment& environment, const std::vector<std::string>& arguments);

// In the child of a fork of a threaded process (async-signal-safe calls only): dies with the thread that
// forked it, puts `descriptors` at 3, 4, ..., closes every other past stdio, resets signals and execs.
// Exits 127 when the interpreter cannot be run.
[[noreturn]] void exec_python(const PythonCommand& command, std::span<const int> descriptors, pid_t parent);

}  // namespace tessera

// Python code a node was told to run ([plugins] python, ClusterOptions::python_modules): the interpreter
// and modules that define it, and for each name what the node learned of it when it imported them. The
// code itself runs only in interpreter processes of the worker's (actors/simulation_process.hpp), never in
// a node's own process.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace tessera {

// The task functions that run Python code a client sent (python:call/N: the pickled function, then N
// arguments), registered by every process that can run Python (actors/python_modules.hpp).
inline constexpr std::string_view kClientCodePrefix = "python:call/";
// A simulation class and a generator object sent by a client (actors/python_modules.hpp).
inline constexpr std::string_view kClientClassSimulation = "python:class";
inline constexpr std::string_view kClientGenerator = "python:generator";

struct PythonEnvironment {
  std::string executable;            // the interpreter
  std::string package_path;          // put first on PYTHONPATH: where this build's `tessera` package is
  std::vector<std::string> modules;  // files (absolute paths) or importable module names, imported in order
  // The largest result one set or task may give: a larger one fails it, named, instead of leaving the
  // interpreter (a node sets its limits.max_message_size: a result must cross to the scheduler whole).
  std::uint64_t max_result_bytes = kUnboundedResultBytes;
  static constexpr std::uint64_t kUnboundedResultBytes = std::uint64_t{1} << 33;
};

struct PythonDefinition {
  std::shared_ptr<const PythonEnvironment> environment;
  std::string module, qualname;         // where it is defined, for messages
  std::vector<std::string> parameters;  // a simulation's declared parameter names, if any
  std::vector<std::string> outputs;     // a simulation's declared output names, if any
  // What its interpreter serves: one simulation's instances, the module set's task functions, or one
  // generator (suggest/ingest requests, its state pickled).
  enum class Kind : std::uint8_t { simulation, tasks, generator };
  Kind kind = Kind::simulation;
};

}  // namespace tessera

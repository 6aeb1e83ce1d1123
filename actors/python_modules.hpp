// Python modules a node runs code from ([plugins] python, ClusterOptions::python_modules,
// LocalCluster(python=)): they are imported once, in a short-lived interpreter, to learn what they
// register (@tessera.task, @tessera.simulation, @tessera.generator); each name is then registered in this
// process's registries as a compiled one is, so that clients, streams and the CLI use it by name. Their
// code runs only in the workers' interpreter processes (actors/python_task_pool.hpp for task functions,
// actors/simulation_process.hpp for simulations), never in the node's own process.
#pragma once

#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "graph/python_definition.hpp"

namespace tessera {

// A module that cannot be imported, a name already taken, no interpreter: the message names the module
// and the Python exception.
class PythonModuleError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// This build's interpreter ($TESSERA_PYTHON when set) and the `tessera` package beside it (the build
// tree's, else the installed one), with `modules` (files are made absolute against `base_directory`).
PythonEnvironment python_environment(const std::vector<std::string>& modules,
                                     const std::string& base_directory = "");

struct PythonRegistration {
  std::vector<std::string> tasks, simulations, generators;
};

// Imports the modules in an interpreter of `environment` (for at most `deadline`) and registers what they
// define. A name registered before by the same definition (the same module, name and source) is kept;
// by another, refused. Throws PythonModuleError.
//
// With no modules no interpreter is started. Either way, with `client_code`, the task functions that run
// Python code a client sends (python:call/N, N arguments after the pickled function: tessera's Python
// client submits a callable as one), its simulation class and generator are registered too, once per
// process, running in the same interpreters as the modules' tasks. A node whose security.allow_client_code
// is off registers none of them: a scheduler refuses them by name, and a worker cannot run them whatever
// names them.
PythonRegistration register_python_modules(std::shared_ptr<const PythonEnvironment> environment,
                                           std::chrono::seconds deadline = std::chrono::seconds(120),
                                           bool client_code = true);

// The most arguments the client-code task functions take after the function (kClientCodePrefix).
inline constexpr std::size_t kMaxClientCodeArguments = 16;
// A simulation class and a generator object sent by a client: the stream's config (the generator's
// config) carries the pickle under kClientCodeKey, as [python, cloudpickle, bytes], and a class's declared
// outputs under kClientOutputsKey.
// (kClientClassSimulation and kClientGenerator: graph/python_definition.hpp.)
inline constexpr std::string_view kClientCodeKey = "tessera.python_code";
inline constexpr std::string_view kClientOutputsKey = "tessera.outputs";
inline constexpr std::string_view kClientParametersKey = "tessera.parameters";

// The names a Python simulation's results are stored under: its class's declared outputs (for a class a
// client sent, those its config carries); empty for any other simulation.
struct SimulationType;
class Config;
std::vector<std::string> python_outputs(const SimulationType& type, const Config* config);
// Its parameters' names, the same way (a class's declared parameters).
std::vector<std::string> python_parameters(const SimulationType& type, const Config* config);

// Whether this build can run Python code at all (it was built with TESSERA_PYTHON).
bool python_supported();

}  // namespace tessera

#include "actors/python_modules.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <sstream>

#include "actors/python_generator.hpp"
#include "actors/python_launch.hpp"
#include "actors/python_task_pool.hpp"
#include "graph/generator.hpp"
#include "graph/registry.hpp"
#include "graph/simulation.hpp"

namespace tessera {

namespace {

namespace fs = std::filesystem;

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> out;
  std::string field;
  std::istringstream in(text);
  while (std::getline(in, field, separator)) out.push_back(field);
  if (!text.empty() && text.back() == separator) out.emplace_back();
  return out;
}

std::string module_list(const PythonEnvironment& environment) {
  std::string out;
  for (const auto& module : environment.modules) out += (out.empty() ? "" : ", ") + module;
  return out;
}

// Runs `python -m tessera._worker --describe -- MODULES` and gives back what it wrote to descriptor 3.
std::string run_describe(const PythonEnvironment& environment, std::chrono::seconds deadline) {
  const PythonCommand command = python_command(environment, {"--describe"});
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0)
    throw PythonModuleError(std::string("no pipe to a Python interpreter: ") + std::strerror(errno));
  const pid_t parent = ::getpid();
  const pid_t child = ::fork();
  if (child < 0) {
    const int error = errno;
    ::close(pipe_fds[0]);
    ::close(pipe_fds[1]);
    throw PythonModuleError(std::string("no Python interpreter could be started: ") + std::strerror(error));
  }
  if (child == 0) {
    const int descriptors[] = {pipe_fds[1]};
    exec_python(command, descriptors, parent);
  }
  ::close(pipe_fds[1]);
  std::string output;
  const auto until = std::chrono::steady_clock::now() + deadline;
  bool timed_out = false;
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    pollfd watched{pipe_fds[0], POLLIN, 0};
    const int ready = ::poll(&watched, 1, static_cast<int>(std::min<long long>(left.count(), 1000)));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) continue;
    char buffer[4096];
    const ssize_t got = ::read(pipe_fds[0], buffer, sizeof buffer);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    output.append(buffer, static_cast<std::size_t>(got));
    if (output.size() > (std::size_t{64} << 20)) break;  // a module set does not register 64 MiB of names
  }
  ::close(pipe_fds[0]);
  if (timed_out) ::kill(child, SIGKILL);
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out)
    throw PythonModuleError("importing the Python modules " + module_list(environment) +
                            " took longer than " + std::to_string(deadline.count()) +
                            " s; the interpreter was killed");
  if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
    throw PythonModuleError("the Python interpreter '" + environment.executable + "' could not be run");
  for (const auto& line : split(output, '\n'))
    if (line.starts_with("error\t")) {
      std::string text = line.substr(6);
      for (char& c : text)
        if (c == '\x1f') c = '\n';
      throw PythonModuleError(text);
    }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw PythonModuleError("the Python interpreter '" + environment.executable + "' importing " +
                            module_list(environment) + " " +
                            (WIFSIGNALED(status)
                                 ? "was killed by signal " + std::to_string(WTERMSIG(status))
                                 : "exited with status " + std::to_string(WEXITSTATUS(status))) +
                            " (is this build's tessera package on its path?)");
  return output;
}

// A describe line's count field, when it is a decimal integer in [least, most].
std::optional<std::uint32_t> bounded_count(const std::string& field, std::uint32_t least,
                                           std::uint32_t most) {
  std::uint32_t value = 0;
  const auto [end, error] = std::from_chars(field.data(), field.data() + field.size(), value);
  if (error != std::errc() || end != field.data() + field.size() || value < least || value > most)
    return std::nullopt;
  return value;
}

std::vector<std::string> names_field(const std::string& field) {
  return field.empty() ? std::vector<std::string>{} : split(field, ',');
}

bool accepts_any(const Value&) {
  return true;
}

// A pickled function from a client: [python version, cloudpickle version, the pickle's bytes].
bool accepts_client_function(const Value& v) {
  if (v.kind() != ValueKind::list) return false;
  const auto& parts = v.as_list();
  return parts.size() == 3 && parts[0].kind() == ValueKind::string && parts[1].kind() == ValueKind::string &&
         parts[2].kind() == ValueKind::bytes;
}

// A generator that runs in an interpreter of its own (`--serve-generator NAME`), its process described as
// a simulation process's is.
void register_python_generator(const std::shared_ptr<const PythonEnvironment>& environment,
                               const std::string& name, const std::string& identity,
                               const std::string& module, const std::string& qualname) {
  auto definition = std::make_shared<PythonDefinition>();
  definition->environment = environment;
  definition->kind = PythonDefinition::Kind::generator;
  definition->module = module;
  definition->qualname = qualname;
  auto process_type = std::make_shared<SimulationType>();
  process_type->name = name;
  process_type->identity = identity;
  process_type->python = std::move(definition);
  GeneratorType type;
  type.name = name;
  type.parameter_type = "any";
  type.result_type = "any";
  type.can_save = true;
  type.make = [process_type](const Config& config) -> std::unique_ptr<Generator> {
    return std::make_unique<PythonGenerator>(*process_type, config);
  };
  GeneratorRegistry::global().add(std::move(type));
}

// The simulation and generator that run a class or a generator object a client sent.
void register_client_classes(const std::shared_ptr<const PythonEnvironment>& environment) {
  const std::string identity = "python code sent by a client (cloudpickle)";
  if (!SimulationRegistry::global().find(kClientClassSimulation)) {
    auto definition = std::make_shared<PythonDefinition>();
    definition->environment = environment;
    SimulationType type;
    type.name = std::string(kClientClassSimulation);
    type.parameter_type = "any";
    type.result_type = "any";
    type.identity = identity;
    type.python = std::move(definition);
    type.make = [](const Config&) -> std::unique_ptr<Simulation> {
      throw std::logic_error("a Python class runs in an interpreter process only");
    };
    SimulationRegistry::global().add(std::move(type));
  }
  if (!GeneratorRegistry::global().find(kClientGenerator))
    register_python_generator(environment, std::string(kClientGenerator), identity, {}, {});
}

std::vector<std::string> names_in(const Config* config, std::string_view key) {
  std::vector<std::string> names;
  if (!config) return names;
  const auto& entries = config->entries();
  const auto it = entries.find(std::string(key));
  if (it == entries.end() || it->second.kind() != ValueKind::list) return names;
  for (const auto& name : it->second.as_list())
    if (name.kind() == ValueKind::string) names.push_back(name.as_string());
  return names;
}

void register_client_code(const std::shared_ptr<PythonTaskPool>& pool) {
  for (std::size_t n = 0; n <= kMaxClientCodeArguments; ++n) {
    const std::string name = std::string(kClientCodePrefix) + std::to_string(n);
    if (Registry::global().find(name)) continue;
    TaskFunction fn;
    fn.name = name;
    fn.argument_types.push_back("python function");
    fn.argument_accepts.push_back(&accepts_client_function);
    fn.argument_types.insert(fn.argument_types.end(), n, "any");
    fn.argument_accepts.insert(fn.argument_accepts.end(), n, &accepts_any);
    fn.result_type = "any";
    fn.identity = "python code sent by a client (cloudpickle)";
    fn.invoke = [pool, name](std::span<const Value> arguments) { return pool->call(name, arguments); };
    fn.invoke_batch = [pool, name](std::span<const std::vector<Value>> calls) {
      return pool->call_batch(name, calls);
    };
    Registry::global().add(std::move(fn), 0);
  }
}

}  // namespace

std::vector<std::string> python_outputs(const SimulationType& type, const Config* config) {
  if (!type.python) return {};
  if (type.name != kClientClassSimulation) return type.python->outputs;
  return names_in(config, kClientOutputsKey);
}

std::vector<std::string> python_parameters(const SimulationType& type, const Config* config) {
  if (!type.python) return {};
  if (type.name != kClientClassSimulation) return type.python->parameters;
  return names_in(config, kClientParametersKey);
}

bool python_supported() {
#ifdef TESSERA_PYTHON_EXECUTABLE
  return true;
#else
  return false;
#endif
}

PythonEnvironment python_environment(const std::vector<std::string>& modules,
                                     const std::string& base_directory) {
  PythonEnvironment environment;
#ifdef TESSERA_PYTHON_EXECUTABLE
  environment.executable = TESSERA_PYTHON_EXECUTABLE;
  // The build tree's package while it exists (tests, a build used in place), else the installed one.
  std::error_code error;
  environment.package_path = fs::exists(fs::path(TESSERA_PYTHON_BUILD_PATH) / "tessera" / "_worker.py", error)
                                 ? TESSERA_PYTHON_BUILD_PATH
                                 : TESSERA_PYTHON_INSTALLED_PATH;
#endif
  if (const char* chosen = std::getenv("TESSERA_PYTHON"); chosen && *chosen) environment.executable = chosen;
  for (const auto& module : modules) {
    const bool is_file = module.ends_with(".py") || module.find('/') != std::string::npos;
    if (is_file && !base_directory.empty() && fs::path(module).is_relative())
      environment.modules.push_back((fs::path(base_directory) / module).lexically_normal().string());
    else if (is_file)
      environment.modules.push_back(fs::absolute(module).lexically_normal().string());
    else
      environment.modules.push_back(module);
  }
  return environment;
}

PythonRegistration register_python_modules(std::shared_ptr<const PythonEnvironment> environment,
                                           std::chrono::seconds deadline, bool client_code) {
  if (environment->executable.empty())
    throw PythonModuleError(
        "this build of Tessera runs no Python code (it was built with TESSERA_PYTHON=OFF); "
        "set TESSERA_PYTHON to an interpreter that has the tessera package");
  PythonRegistration registered;
  auto pool = std::make_shared<PythonTaskPool>(environment);
  // Not registered, nothing can name them: not a submission, nor a bag, fused or array task that calls
  // a function by a name it was given (or computed).
  if (client_code) {
    register_client_code(pool);
    register_client_classes(environment);
  }
  if (environment->modules.empty()) return registered;
  const std::string output = run_describe(*environment, deadline);
  for (const auto& line : split(output, '\n')) {
    if (line.empty()) continue;
    const auto fields = split(line, '\t');
    const auto bad_line = [&] {
      return PythonModuleError("the interpreter described " + module_list(*environment) +
                               " in a line this node cannot read: " + line.substr(0, 200));
    };
    if (fields[0] == "task") {
      if (fields.size() != 6) throw bad_line();
      const std::string& name = fields[1];
      const auto counted = bounded_count(fields[2], 0, 65535);
      if (!counted) throw bad_line();
      const std::size_t arity = *counted;
      if (const TaskFunction* known = Registry::global().find(name)) {
        if (known->identity == fields[3]) {
          registered.tasks.push_back(name);
          continue;
        }
        throw PythonModuleError("task '" + name + "' of " + fields[4] + " (" + fields[3] +
                                ") is already registered here by " + known->identity);
      }
      TaskFunction fn;
      fn.name = name;
      fn.argument_types.assign(arity, "any");
      fn.argument_accepts.assign(arity, &accepts_any);
      fn.result_type = "any";
      fn.identity = fields[3];
      fn.invoke = [pool, name](std::span<const Value> arguments) { return pool->call(name, arguments); };
      fn.invoke_batch = [pool, name](std::span<const std::vector<Value>> calls) {
        return pool->call_batch(name, calls);
      };
      Registry::global().add(std::move(fn), 0);
      registered.tasks.push_back(name);
    } else if (fields[0] == "simulation") {
      if (fields.size() != 9) throw bad_line();
      const std::string& name = fields[1];
      if (const SimulationType* known = SimulationRegistry::global().find(name)) {
        if (known->identity == fields[4]) {
          registered.simulations.push_back(name);
          continue;
        }
        throw PythonModuleError("simulation '" + name + "' of " + fields[5] + " (" + fields[4] +
                                ") is already registered here by " + known->identity);
      }
      auto definition = std::make_shared<PythonDefinition>();
      definition->environment = environment;
      definition->parameters = names_field(fields[2]);
      definition->outputs = names_field(fields[3]);
      definition->module = fields[5];
      definition->qualname = fields[6];
      SimulationType type;
      type.name = name;
      type.parameter_type = "any";
      type.result_type = "any";
      if (!definition->parameters.empty()) type.arity = definition->parameters.size();
      type.identity = fields[4];
      // Checked by the describing interpreter; a line that says otherwise is not one of ours.
      const auto threads = bounded_count(fields[7], 1, SimulationType::kMaxThreads);
      const auto gpus = bounded_count(fields[8], 0, SimulationType::kMaxGpus);
      if (!threads || !gpus) throw bad_line();
      type.threads = *threads;
      type.gpus = *gpus;
      type.python = std::move(definition);
      type.make = [name](const Config&) -> std::unique_ptr<Simulation> {
        throw std::logic_error("python simulation '" + name + "' runs in an interpreter process only");
      };
      SimulationRegistry::global().add(std::move(type));
      registered.simulations.push_back(name);
    } else if (fields[0] == "generator") {
      if (fields.size() != 5) throw bad_line();
      const std::string& name = fields[1];
      if (!GeneratorRegistry::global().find(name))
        register_python_generator(environment, name, fields[2], fields[3], fields[4]);
      registered.generators.push_back(name);
    } else {
      throw bad_line();
    }
  }
  return registered;
}

}  // namespace tessera

#include "graph/simulation.hpp"

#include "graph/definition_identity.hpp"
#include "graph/program_spec.hpp"

#include <cmath>
#include <mutex>

namespace tessera {
namespace {

std::mutex& registry_mutex() {
  static std::mutex m;
  return m;
}

std::optional<std::size_t> length_of(const Value& v) {
  switch (v.kind()) {
    case ValueKind::doubles:
      return v.as_doubles().size();
    case ValueKind::vector:
      return static_cast<std::size_t>(v.as_vector().size());
    case ValueKind::list:
      return v.as_list().size();
    default:
      return std::nullopt;
  }
}

}  // namespace

std::string SimulationType::check(const Value& parameters) const {
  if (program) {
    // A program takes numbers it can print: every element finite.
    std::vector<double> numbers;
    try {
      numbers = program_parameters(parameters);
    } catch (const std::exception& e) {
      return "simulation '" + name + "': " + e.what();
    }
    if (numbers.size() != program->parameters.size())
      return "simulation '" + name + "' takes " + std::to_string(program->parameters.size()) +
             " parameters, got " + std::to_string(numbers.size());
    for (std::size_t i = 0; i < numbers.size(); ++i)
      if (!std::isfinite(numbers[i]))
        return "simulation '" + name + "': parameter '" + program->parameters[i] + "' is " +
               render_number(numbers[i]) + "; a program takes finite numbers";
    return {};
  }
  if (!arity) return {};
  const auto length = length_of(parameters);
  if (!length) return {};
  if (*length != *arity)
    return "simulation '" + name + "' takes " + std::to_string(*arity) + " parameters, got " +
           std::to_string(*length);
  return {};
}

SimulationInfo describe(const SimulationType& type) {
  SimulationInfo out;
  out.name = type.name;
  out.arity = type.arity;
  out.parameter_type = type.parameter_type;
  out.result_type = type.result_type;
  out.threads = type.threads;
  out.gpus = type.gpus;
  out.identity = type.identity;
  if (const ProgramSpec* program = type.program.get()) {
    out.program = true;
    out.parameters = program->parameters;
    out.outputs = program->result.outputs;
    out.command = program->launcher_prefix();
    out.command.insert(out.command.end(), program->command.begin(), program->command.end());
  }
  if (const PythonDefinition* python = type.python.get()) {
    out.parameters = python->parameters;
    out.outputs = python->outputs;
  }
  return out;
}

SimulationRegistry& SimulationRegistry::global() {
  static SimulationRegistry registry;
  return registry;
}

const SimulationType& SimulationRegistry::add(SimulationType type) {
  std::lock_guard lock(registry_mutex());
  auto it = types_.find(type.name);
  if (it != types_.end()) {
    // The same class registered twice (a header included in two places) is harmless.
    const bool same_program = (!it->second->program && !type.program) ||
                              (it->second->program && type.program && *it->second->program == *type.program);
    if (it->second->parameter_type == type.parameter_type && it->second->result_type == type.result_type &&
        same_program)
      return *it->second;
    if (it->second->program || type.program)
      throw SubmissionError("simulation '" + type.name + "' is already declared (" +
                            (it->second->program ? "a program" : "a compiled class") +
                            "); a name is declared once per process");
    throw SubmissionError("simulation '" + type.name + "' is registered twice with different types");
  }
  if (type.identity.empty())
    type.identity =
        type.program
            ? type.name + " (a program, declaration " + program_spec_digest(*type.program).substr(0, 16) + ")"
            : definition_identity(type.name + "(" + type.parameter_type + ") -> " + type.result_type,
                                  type.defined_at, type.version);
  auto owned = std::make_unique<SimulationType>(std::move(type));
  auto& out = *owned;
  types_.emplace(out.name, std::move(owned));
  return out;
}

const SimulationType* SimulationRegistry::find(std::string_view name) const {
  std::lock_guard lock(registry_mutex());
  auto it = types_.find(name);
  return it == types_.end() ? nullptr : it->second.get();
}

const SimulationType& SimulationRegistry::get(std::string_view name) const {
  if (const auto* type = find(name)) return *type;
  std::string known;
  for (const auto& n : names()) known += (known.empty() ? "" : ", ") + n;
  throw SubmissionError("unknown simulation '" + std::string(name) +
                        "' (registered: " + (known.empty() ? "none" : known) + ")");
}

std::vector<std::string> SimulationRegistry::names() const {
  std::lock_guard lock(registry_mutex());
  std::vector<std::string> out;
  for (const auto& [name, type] : types_) out.push_back(name);
  return out;
}

}  // namespace tessera

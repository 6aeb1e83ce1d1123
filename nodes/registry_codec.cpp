#include "nodes/registry_codec.hpp"

#include "graph/printable.hpp"
#include "graph/program_spec.hpp"
#include "messages/wire_codec.hpp"

namespace tessera::wire {
namespace {

constexpr std::size_t kMostEntries = 1u << 16, kMostTexts = 4096, kNameBytes = 256, kTextBytes = 1024;

std::string text(capnp::Text::Reader in, std::size_t bytes) {
  return printable(std::string_view(in.cStr(), in.size()), bytes);
}

void set_texts(capnp::List<capnp::Text>::Builder out, const std::vector<std::string>& from) {
  for (std::size_t i = 0; i < from.size(); ++i) out.set(static_cast<unsigned>(i), from[i]);
}

std::vector<std::string> texts(capnp::List<capnp::Text>::Reader in, const std::string& where,
                               std::size_t bytes) {
  if (in.size() > kMostTexts)
    throw WireError(where + ": " + std::to_string(in.size()) + " entries exceed the limit of " +
                    std::to_string(kMostTexts));
  std::vector<std::string> out;
  out.reserve(in.size());
  for (auto t : in) out.push_back(text(t, bytes));
  return out;
}

void check_count(std::size_t count, const char* what) {
  if (count > kMostEntries)
    throw WireError(std::to_string(count) + " " + what + " exceed the limit of " +
                    std::to_string(kMostEntries));
}

}  // namespace

void encode(const FunctionInfo& function, FunctionEntry::Builder out) {
  out.setName(function.name);
  set_texts(out.initArgumentTypes(static_cast<unsigned>(function.argument_types.size())),
            function.argument_types);
  out.setResultType(function.result_type);
  out.setIdentity(function.identity);
}

void encode(const SimulationInfo& simulation, SimulationEntry::Builder out) {
  out.setName(simulation.name);
  out.setProgram(simulation.program);
  set_texts(out.initParameters(static_cast<unsigned>(simulation.parameters.size())), simulation.parameters);
  set_texts(out.initOutputs(static_cast<unsigned>(simulation.outputs.size())), simulation.outputs);
  out.setArity(simulation.arity ? static_cast<std::int32_t>(*simulation.arity) : -1);
  out.setParameterType(simulation.parameter_type);
  out.setResultType(simulation.result_type);
  out.setThreads(simulation.threads);
  out.setGpus(simulation.gpus);
  set_texts(out.initCommand(static_cast<unsigned>(simulation.command.size())), simulation.command);
  out.setIdentity(simulation.identity);
}

std::vector<FunctionInfo> decode(capnp::List<FunctionEntry>::Reader in) {
  check_count(in.size(), "functions");
  std::vector<FunctionInfo> out;
  out.reserve(in.size());
  for (auto entry : in) {
    FunctionInfo function;
    function.name = text(entry.getName(), kNameBytes);
    function.argument_types = texts(entry.getArgumentTypes(), "function '" + function.name + "'", kNameBytes);
    function.result_type = text(entry.getResultType(), kNameBytes);
    function.identity = text(entry.getIdentity(), kTextBytes);
    out.push_back(std::move(function));
  }
  return out;
}

std::vector<SimulationInfo> decode(capnp::List<SimulationEntry>::Reader in) {
  check_count(in.size(), "simulations");
  std::vector<SimulationInfo> out;
  out.reserve(in.size());
  for (auto entry : in) {
    SimulationInfo simulation;
    simulation.name = text(entry.getName(), kNameBytes);
    const std::string where = "simulation '" + simulation.name + "'";
    simulation.program = entry.getProgram();
    simulation.parameters = texts(entry.getParameters(), where, kNameBytes);
    simulation.outputs = texts(entry.getOutputs(), where, kNameBytes);
    if (entry.getArity() >= 0) simulation.arity = static_cast<std::size_t>(entry.getArity());
    simulation.parameter_type = text(entry.getParameterType(), kNameBytes);
    simulation.result_type = text(entry.getResultType(), kNameBytes);
    simulation.threads = entry.getThreads();
    simulation.gpus = entry.getGpus();
    simulation.command = texts(entry.getCommand(), where, kTextBytes);
    simulation.identity = text(entry.getIdentity(), kTextBytes);
    out.push_back(std::move(simulation));
  }
  return out;
}

}  // namespace tessera::wire

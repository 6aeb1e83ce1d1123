// Simulations: user classes registered by name whose instances live between parameter sets. A class is
// constructed once per simulation actor from a Config (load tables, warm caches), then `run(params)` is
// called for each parameter set routed to that actor. Parameters and results are anything with a Codec
// (a vector of doubles, a tuple, a record).
//
//   struct CostlySimulation {
//     explicit CostlySimulation(const tessera::Config& config);
//     double run(const std::vector<double>& params);
//     static constexpr std::size_t arity = 4;  // optional: parameter sets of another length are refused
//     static constexpr std::uint32_t threads = 8;  // optional: compute threads one instance occupies (1)
//     static constexpr std::uint32_t gpus = 1;     // optional: GPU devices one instance owns (0)
//   };
//   TESSERA_SIMULATION(CostlySimulation, "costly_simulation");
//
// A worker runs as many instances at once as its compute threads allow (threads / `threads`, at least
// one) and, for a GPU simulation, as its devices allow (devices / `gpus`; none at all when it has fewer
// than `gpus`). Each instance's Config holds what it was given: "tessera.threads" (an integer),
// and for a GPU simulation "tessera.device" (its first device's CUDA ordinal) and "tessera.devices"
// (every ordinal it owns, a list of numbers), the same for the instance's whole life.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <typeinfo>
#include <vector>

#include "graph/codec.hpp"
#include "graph/errors.hpp"
#include "graph/program_spec.hpp"
#include "graph/python_definition.hpp"
#include "graph/stream_record.hpp"

namespace tessera {

// Named settings a simulation is built from (from a stream's options or a node's config).
class Config {
 public:
  Config() = default;
  Config& set(std::string key, Value value) {
    entries_[std::move(key)] = std::move(value);
    return *this;
  }
  bool has(std::string_view key) const { return entries_.find(std::string(key)) != entries_.end(); }
  template <class T>
  T get(std::string_view key, T fallback) const {
    auto it = entries_.find(std::string(key));
    return it == entries_.end() ? fallback : from_value<T>(it->second);
  }
  const std::map<std::string, Value>& entries() const { return entries_; }

 private:
  std::map<std::string, Value> entries_;
};

// Which set a run is for, for simulations that need to know (a program's working directory), and where a
// program records how its process ended (whether the run returns or throws).
struct SetContext {
  std::uint64_t stream = 0;
  std::uint64_t id = 0;
  std::shared_ptr<const ProgramOutcome>* outcome = nullptr;
};

// Thrown by a run whose process died of a signal: the set failed as a crash, not an error.
class SimulationCrashed : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Thrown by a run that cannot start on this worker at all, whatever its parameters (a program's executable
// is missing here, its working directory cannot be made): the set goes back to its stream unrun, and the
// stream sends this worker no more of its sets.
class SimulationUnavailable : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// One simulation instance, type-erased.
class Simulation {
 public:
  virtual ~Simulation() = default;
  // Throws what the user's run throws; a TypeError when the parameters do not decode.
  virtual Value run(const Value& parameters) = 0;
  // The run of one set of a stream; simulations that do not care which set it is run `run`.
  virtual Value run_set(const Value& parameters, const SetContext&) { return run(parameters); }
  // Ends the run in progress early, from another thread (a timeout, a cancellation, a shutdown); that
  // run then throws. False when this simulation's runs cannot be interrupted (the default).
  virtual bool interrupt() { return false; }
};

struct SimulationType {
  std::string name;
  std::string parameter_type, result_type;
  std::optional<std::size_t> arity;  // parameter sets must have this many elements, when known
  std::uint32_t threads = 1;         // compute threads one instance occupies, in [1, kMaxThreads]
  std::uint32_t gpus = 0;            // GPU devices one instance owns, at most kMaxGpus
  static constexpr std::uint32_t kMaxThreads = 4096, kMaxGpus = 64;
  std::function<std::unique_ptr<Simulation>(const Config&)> make;
  // Set for a program simulation (register_program, a node's [simulations.NAME]): its declaration,
  // which travels to workers with each stream's setup.
  std::shared_ptr<const ProgramSpec> program{};
  // Set for a Python simulation ([plugins] python): its instances run in interpreter processes.
  std::shared_ptr<const PythonDefinition> python{};
  // As a task function's (graph/registry.hpp): where it was defined, its declared version (a class's
  // `static constexpr const char* version`), and from them, at add(), the identity a client, the
  // scheduler and each worker compare. A program's is its declaration's digest.
  const void* defined_at = nullptr;
  std::string version;
  std::string identity;
  // A clear error naming the simulation when `parameters` cannot be its input; empty when it can.
  std::string check(const Value& parameters) const;
};

// What a process says of one simulation a stream may name (Client::simulations, `tessera simulations`).
struct SimulationInfo {
  std::string name;
  bool program = false;                 // declared as a program ([simulations.NAME], register_program)
  std::vector<std::string> parameters;  // a program's parameter names
  std::vector<std::string> outputs;     // a program's result names
  std::optional<std::size_t> arity{};   // elements of a parameter set, when it says
  std::string parameter_type, result_type;
  std::uint32_t threads = 1;  // cores one set occupies (ranks x threads for a program)
  std::uint32_t gpus = 0;
  std::vector<std::string> command;  // a program's argv, launcher first, placeholders unrendered
  std::string identity;
};
SimulationInfo describe(const SimulationType& type);

class SimulationRegistry {
 public:
  static SimulationRegistry& global();
  const SimulationType& add(SimulationType type);
  const SimulationType* find(std::string_view name) const;
  // Throws SubmissionError naming the simulation and the known ones.
  const SimulationType& get(std::string_view name) const;
  std::vector<std::string> names() const;

 private:
  SimulationRegistry() = default;
  std::map<std::string, std::unique_ptr<SimulationType>, std::less<>> types_;
};

namespace detail {

template <class M>
struct run_traits;
template <class C, class R, class P>
struct run_traits<R (C::*)(P)> {
  using parameters = std::remove_cvref_t<P>;
  using result = R;
};
template <class C, class R, class P>
struct run_traits<R (C::*)(P) const> : run_traits<R (C::*)(P)> {};

template <class S>
class SimulationAdapter final : public Simulation {
 public:
  explicit SimulationAdapter(const Config& config) : instance_(config) {}
  Value run(const Value& parameters) override {
    using Traits = run_traits<decltype(&S::run)>;
    using P = typename Traits::parameters;
    // A row of one number (a CSV column) is a scalar parameter.
    if constexpr (std::is_arithmetic_v<P>)
      if (parameters.kind() == ValueKind::doubles && parameters.as_doubles().size() == 1)
        return to_value(instance_.run(static_cast<P>(parameters.as_doubles()[0])));
    return to_value(instance_.run(from_value<P>(parameters)));
  }

 private:
  S instance_;
};

template <class S>
concept HasArity = requires {
  S::arity;
};
template <class S>
concept HasThreads = requires {
  S::threads;
};
template <class S>
concept HasGpus = requires {
  S::gpus;
};
template <class S>
concept HasVersion = requires {
  std::string(S::version);
};

}  // namespace detail

template <class S>
const SimulationType& register_simulation(std::string name) {
  using Traits = detail::run_traits<decltype(&S::run)>;
  SimulationType type;
  type.name = std::move(name);
  type.parameter_type = Codec<typename Traits::parameters>::type_name();
  type.result_type = Codec<typename Traits::result>::type_name();
  if constexpr (detail::HasArity<S>) type.arity = S::arity;
  if constexpr (detail::HasThreads<S>) {
    static_assert(S::threads >= 1 && S::threads <= SimulationType::kMaxThreads,
                  "a simulation's threads must be in [1, 4096]");
    type.threads = S::threads;
  }
  if constexpr (detail::HasGpus<S>) {
    static_assert(S::gpus <= SimulationType::kMaxGpus, "a simulation's gpus must be at most 64");
    type.gpus = S::gpus;
  }
  if constexpr (detail::HasVersion<S>) type.version = std::string(S::version);
  type.defined_at = &typeid(S);  // emitted where the class's first virtual function is defined
  type.make = [](const Config& config) -> std::unique_ptr<Simulation> {
    return std::make_unique<detail::SimulationAdapter<S>>(config);
  };
  return SimulationRegistry::global().add(std::move(type));
}

}  // namespace tessera

#define TESSERA_SIMULATION_CONCAT2(a, b) a##b
#define TESSERA_SIMULATION_CONCAT(a, b) TESSERA_SIMULATION_CONCAT2(a, b)
// Registers a simulation class under a name, at load time (also from a plugin a node loads).
#define TESSERA_SIMULATION(Class, name)                                               \
  [[maybe_unused]] static const ::tessera::SimulationType& TESSERA_SIMULATION_CONCAT( \
      tessera_simulation_, __LINE__) = ::tessera::register_simulation<Class>(name)

// Generators: user classes registered by name that propose parameter sets and read their results — an
// adaptive ensemble (a local search, a surrogate model, a bisection) instead of a fixed list. A generator
// runs as an actor beside its stream (actors/generator_actor.hpp): it is asked for as many new sets as
// the stream has free slots, told each result once it is durable, and the stream ends when it says it is
// done or its budget of sets is spent.
//
//   struct Bisection {
//     explicit Bisection(const tessera::Config& config);
//     // Up to `n` new parameter sets; fewer, or none, while it waits for results. The k-th set asked for
//     // over the whole run (counting from 0) gets id k.
//     std::vector<std::vector<double>> ask(std::size_t n);
//     // The result of set `id` (nullopt when it failed: error says why).
//     void tell(std::uint64_t id, const std::vector<double>& parameters, const std::optional<double>& result,
//               const std::string& error);
//     bool done() const;
//     // Optional, both or neither: its state as bytes, and back. A generator with them resumes where it
//     // was after the scheduler node restarts; one without finishes the sets already accepted.
//     std::string save() const;
//     void load(const std::string& state);
//   };
//   TESSERA_GENERATOR(Bisection, "bisection");
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "graph/codec.hpp"
#include "graph/errors.hpp"
#include "graph/simulation.hpp"

namespace tessera {

// One generator instance, type-erased.
class Generator {
 public:
  virtual ~Generator() = default;
  virtual std::vector<Value> ask(std::size_t n) = 0;
  // `result` is null when the set failed. Throws what the user's tell throws; a TypeError when the
  // result does not decode as the generator's result type.
  virtual void tell(std::uint64_t id, const Value& parameters, const Value* result,
                    const std::string& error) = 0;
  virtual bool done() const = 0;
  virtual bool can_save() const = 0;
  virtual std::string save() const = 0;
  virtual void load(const std::string& state) = 0;
};

struct GeneratorType {
  std::string name;
  std::string parameter_type, result_type;
  bool can_save = false;
  std::function<std::unique_ptr<Generator>(const Config&)> make;
};

class GeneratorRegistry {
 public:
  // Holds the generators Tessera ships ("aposmm", added by generators/builtin.hpp when a cluster starts)
  // and those registered with TESSERA_GENERATOR.
  static GeneratorRegistry& global();
  const GeneratorType& add(GeneratorType type);
  const GeneratorType* find(std::string_view name) const;
  // Throws SubmissionError naming the generator and the known ones.
  const GeneratorType& get(std::string_view name) const;
  std::vector<std::string> names() const;

 private:
  GeneratorRegistry() = default;
  std::map<std::string, std::unique_ptr<GeneratorType>, std::less<>> types_;
};

namespace detail {

template <class M>
struct tell_traits;
template <class C, class P, class R, class E>
struct tell_traits<void (C::*)(std::uint64_t, P, const std::optional<R>&, E)> {
  using parameters = std::remove_cvref_t<P>;
  using result = R;
};

template <class G>
concept SavesState = requires(const G& g, G& h, const std::string& s) {
  { g.save() } -> std::convertible_to<std::string>;
  h.load(s);
};

template <class G>
class GeneratorAdapter final : public Generator {
  using Traits = tell_traits<decltype(&G::tell)>;
  using P = typename Traits::parameters;
  using R = typename Traits::result;

 public:
  explicit GeneratorAdapter(const Config& config) : instance_(config) {}
  std::vector<Value> ask(std::size_t n) override {
    std::vector<Value> out;
    for (auto& p : instance_.ask(n)) out.push_back(to_value(p));
    return out;
  }
  void tell(std::uint64_t id, const Value& parameters, const Value* result,
            const std::string& error) override {
    std::optional<R> typed;
    if (result) typed = from_value<R>(*result);
    instance_.tell(id, from_value<P>(parameters), typed, error);
  }
  bool done() const override { return instance_.done(); }
  bool can_save() const override { return SavesState<G>; }
  std::string save() const override {
    if constexpr (SavesState<G>) return instance_.save();
    return {};
  }
  void load(const std::string& state) override {
    if constexpr (SavesState<G>) instance_.load(state);
  }

 private:
  G instance_;
};

}  // namespace detail

template <class G>
GeneratorType generator_type(std::string name) {
  using Traits = detail::tell_traits<decltype(&G::tell)>;
  GeneratorType type;
  type.name = std::move(name);
  type.parameter_type = Codec<typename Traits::parameters>::type_name();
  type.result_type = Codec<typename Traits::result>::type_name();
  type.can_save = detail::SavesState<G>;
  type.make = [](const Config& config) -> std::unique_ptr<Generator> {
    return std::make_unique<detail::GeneratorAdapter<G>>(config);
  };
  return type;
}

template <class G>
const GeneratorType& register_generator(std::string name) {
  return GeneratorRegistry::global().add(generator_type<G>(std::move(name)));
}

}  // namespace tessera

// Registers a generator class under a name, at load time (also from a plugin a node loads).
#define TESSERA_GENERATOR(Class, name)                                               \
  [[maybe_unused]] static const ::tessera::GeneratorType& TESSERA_SIMULATION_CONCAT( \
      tessera_generator_, __LINE__) = ::tessera::register_generator<Class>(name)

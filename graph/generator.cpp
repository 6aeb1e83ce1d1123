#include "graph/generator.hpp"

#include <mutex>

namespace tessera {
namespace {

std::mutex& registry_mutex() {
  static std::mutex m;
  return m;
}

}  // namespace

GeneratorRegistry& GeneratorRegistry::global() {
  static GeneratorRegistry registry;
  return registry;
}

const GeneratorType& GeneratorRegistry::add(GeneratorType type) {
  std::lock_guard lock(registry_mutex());
  auto it = types_.find(type.name);
  if (it != types_.end()) {
    if (it->second->parameter_type == type.parameter_type && it->second->result_type == type.result_type)
      return *it->second;
    throw SubmissionError("generator '" + type.name + "' is registered twice with different types");
  }
  auto owned = std::make_unique<GeneratorType>(std::move(type));
  auto& out = *owned;
  types_.emplace(out.name, std::move(owned));
  return out;
}

const GeneratorType* GeneratorRegistry::find(std::string_view name) const {
  std::lock_guard lock(registry_mutex());
  auto it = types_.find(name);
  return it == types_.end() ? nullptr : it->second.get();
}

const GeneratorType& GeneratorRegistry::get(std::string_view name) const {
  if (const auto* type = find(name)) return *type;
  std::string known;
  for (const auto& n : names()) known += (known.empty() ? "" : ", ") + n;
  throw SubmissionError("no generator is registered as '" + std::string(name) + "' (known: " + known + ")");
}

std::vector<std::string> GeneratorRegistry::names() const {
  std::lock_guard lock(registry_mutex());
  std::vector<std::string> out;
  for (const auto& [name, type] : types_) out.push_back(name);
  return out;
}

}  // namespace tessera

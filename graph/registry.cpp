#include "graph/registry.hpp"

#include "graph/array_tasks.hpp"
#include "graph/bag_tasks.hpp"
#include "graph/fetch_task.hpp"
#include "graph/fused_task.hpp"

#include <algorithm>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>

namespace tessera {

std::string TaskFunction::signature() const {
  std::string out = name + "(";
  for (std::size_t i = 0; i < argument_types.size(); ++i) out += (i ? ", " : "") + argument_types[i];
  return out + ") -> " + result_type;
}

struct Registry::Impl {
  mutable std::shared_mutex mutex;
  // unique_ptr keeps each TaskFunction's address stable: operations hold raw pointers to them.
  std::unordered_map<std::string, std::unique_ptr<TaskFunction>> by_name;
  std::unordered_map<std::uintptr_t, const TaskFunction*> by_identity;
};

Registry& Registry::global() {
  static Registry registry;
  // Built-ins are there in every process, before any user registration.
  [[maybe_unused]] static const bool builtins =
      (register_bag_tasks(registry), register_array_tasks(registry), register_fetch_task(registry),
       register_fused_tasks(registry), true);
  return registry;
}

// global() is a function-local static, so registration from other files' static initialisers is safe.
Registry::Registry() : impl_(std::make_shared<Impl>()) {}

const TaskFunction& Registry::add(TaskFunction fn, std::uintptr_t identity) {
  auto& state = impl();
  std::unique_lock lock(state.mutex);
  if (auto it = state.by_name.find(fn.name); it != state.by_name.end()) {
    if (identity != 0) {
      auto known = state.by_identity.find(identity);
      if (known != state.by_identity.end() && known->second == it->second.get()) return *it->second;
    }
    throw SubmissionError("task function '" + fn.name + "' is already registered as " +
                          it->second->signature());
  }
  auto owned = std::make_unique<TaskFunction>(std::move(fn));
  const TaskFunction* raw = owned.get();
  state.by_name.emplace(raw->name, std::move(owned));
  if (identity != 0) state.by_identity.emplace(identity, raw);
  return *raw;
}

const TaskFunction* Registry::find(std::string_view name) const {
  auto& state = impl();
  std::shared_lock lock(state.mutex);
  auto it = state.by_name.find(std::string(name));
  return it == state.by_name.end() ? nullptr : it->second.get();
}

const TaskFunction& Registry::get(std::string_view name) const {
  if (const TaskFunction* fn = find(name)) return *fn;
  throw SubmissionError("unknown task function '" + std::string(name) +
                        "': register it with TESSERA_TASK or tessera::register_task");
}

const TaskFunction* Registry::find_by_identity(std::uintptr_t identity) const {
  auto& state = impl();
  std::shared_lock lock(state.mutex);
  auto it = state.by_identity.find(identity);
  return it == state.by_identity.end() ? nullptr : it->second;
}

std::vector<std::string> Registry::names() const {
  auto& state = impl();
  std::shared_lock lock(state.mutex);
  std::vector<std::string> out;
  for (const auto& [name, fn] : state.by_name) out.push_back(name);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace tessera

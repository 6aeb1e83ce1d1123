#include "graph/registry.hpp"

#include "graph/array_tasks.hpp"
#include "graph/bag_tasks.hpp"
#include "graph/definition_identity.hpp"
#include "graph/fetch_task.hpp"
#include "graph/fused_task.hpp"

#include <algorithm>
#include <cstdint>
#include <mutex>
#include <shared_mutex>
#include <stdexcept>
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
  if (fn.identity.empty()) fn.identity = definition_identity(fn.signature(), fn.defined_at, fn.version);
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

std::vector<FunctionInfo> Registry::functions() const {
  auto& state = impl();
  std::shared_lock lock(state.mutex);
  std::vector<FunctionInfo> out;
  out.reserve(state.by_name.size());
  for (const auto& [name, fn] : state.by_name)
    out.push_back(FunctionInfo{fn->name, fn->argument_types, fn->result_type, fn->identity});
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  return out;
}

namespace {

bool accepts_anything(const Value&) {
  return true;
}

// The literal check of a type a codec names; a type Tessera does not know is checked where it runs.
using Accepts = bool (*)(const Value&);
Accepts accepts_for(std::string_view type) {
  static const std::unordered_map<std::string_view, Accepts> known = {
      {"Value", &value_accepts<Value>},
      {"int", &value_accepts<std::int64_t>},
      {"double", &value_accepts<double>},
      {"bool", &value_accepts<bool>},
      {"string", &value_accepts<std::string>},
      {"bytes", &value_accepts<Bytes>},
      {"vector<double>", &value_accepts<std::vector<double>>},
  };
  auto it = known.find(type);
  return it == known.end() ? &accepts_anything : it->second;
}

// Stand-ins live as long as the process: operations hold raw pointers to their functions.
struct StandIns {
  std::mutex mutex;
  std::unordered_map<std::string, std::unique_ptr<TaskFunction>> by_key;
  static constexpr std::size_t kMost = 4096;

  const TaskFunction& keep(const std::string& key, const std::function<TaskFunction()>& make) {
    std::lock_guard lock(mutex);
    if (auto it = by_key.find(key); it != by_key.end()) return *it->second;
    if (by_key.size() >= kMost)
      throw SubmissionError("more than " + std::to_string(kMost) +
                            " task functions described by peers in one process");
    auto owned = std::make_unique<TaskFunction>(make());
    return *by_key.emplace(key, std::move(owned)).first->second;
  }
};

StandIns& stand_ins() {
  static StandIns* kept = new StandIns;  // never destroyed: operations may outlive static destruction
  return *kept;
}

}  // namespace

const TaskFunction& cluster_function(const FunctionInfo& described) {
  return stand_ins().keep("cluster " + described.identity, [&] {
    TaskFunction fn;
    fn.name = described.name;
    fn.argument_types = described.argument_types;
    fn.result_type = described.result_type;
    for (const auto& type : described.argument_types) fn.argument_accepts.push_back(accepts_for(type));
    fn.identity = described.identity;
    fn.invoke = [name = described.name](std::span<const Value>) -> Value {
      throw SubmissionError("task function '" + name +
                            "' is the cluster's: it runs there, not in this process");
    };
    return fn;
  });
}

const TaskFunction& failing_function(const std::string& name, std::size_t arity, const std::string& reason) {
  return stand_ins().keep("failing " + name + "/" + std::to_string(arity) + " " + reason, [&] {
    TaskFunction fn;
    fn.name = name;
    fn.argument_types.assign(arity, "any");
    fn.argument_accepts.assign(arity, &accepts_anything);
    fn.result_type = "none";
    fn.identity = reason;
    fn.invoke = [reason](std::span<const Value>) -> Value { throw std::runtime_error(reason); };
    return fn;
  });
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

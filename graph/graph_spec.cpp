#include "graph/graph_spec.hpp"

#include <algorithm>

#include "graph/errors.hpp"

namespace tessera {

GraphSpec& GraphSpec::add(std::string key, std::string function, std::vector<SpecArg> args) {
  tasks_[std::move(key)] = TaskSpec{std::move(function), std::move(args)};
  return *this;
}

namespace {

// Finds one cycle among the tasks Kahn's algorithm could not order, and names its keys in order.
std::string describe_cycle(const std::map<std::string, TaskSpec>& tasks,
                           const std::map<std::string, int>& indegree) {
  std::string start;
  for (const auto& [key, deg] : indegree)
    if (deg > 0) {
      start = key;
      break;
    }
  // Walk dependencies that are themselves unordered until a key repeats.
  std::vector<std::string> path;
  std::map<std::string, std::size_t> seen;
  std::string current = start;
  while (!seen.count(current)) {
    seen[current] = path.size();
    path.push_back(current);
    for (const auto& arg : tasks.at(current).args) {
      if (const Key* k = std::get_if<Key>(&arg); k && indegree.at(k->name) > 0) {
        current = k->name;
        break;
      }
    }
  }
  std::string out;
  for (std::size_t i = seen[current]; i < path.size(); ++i) out += path[i] + " -> ";
  return out + current;
}

}  // namespace

LoweredGraph lower(const GraphSpec& spec, const FunctionResolver& resolve) {
  const auto& tasks = spec.tasks();
  // Each name resolved once: a resolver may ask the cluster.
  std::map<std::string, const TaskFunction*> resolved;
  auto function_of = [&](const std::string& key, const std::string& name) -> const TaskFunction* {
    if (auto it = resolved.find(name); it != resolved.end()) return it->second;
    const TaskFunction* fn = nullptr;
    try {
      fn = resolve ? resolve(name) : Registry::global().find(name);
    } catch (const SubmissionError& e) {
      throw SubmissionError("task '" + key + "': " + e.what());
    }
    return resolved[name] = fn;
  };
  // Validate names and dependencies first, so errors name the key.
  std::map<std::string, int> indegree;  // number of unresolved dependencies
  std::map<std::string, std::vector<std::string>> dependents;
  for (const auto& [key, task] : tasks) {
    const TaskFunction* fn = function_of(key, task.function);
    if (!fn)
      throw SubmissionError("task '" + key + "': unknown task function '" + task.function +
                            "': register it with TESSERA_TASK or tessera::register_task");
    if (task.args.size() != fn->arity())
      throw SubmissionError("task '" + key + "': " + fn->signature() + " takes " +
                            std::to_string(fn->arity()) + " arguments, got " +
                            std::to_string(task.args.size()));
    int deps = 0;
    for (std::size_t j = 0; j < task.args.size(); ++j) {
      if (const Key* k = std::get_if<Key>(&task.args[j])) {
        if (!tasks.count(k->name))
          throw SubmissionError("task '" + key + "': argument " + std::to_string(j) +
                                " depends on missing key '" + k->name + "'");
        ++deps;
        dependents[k->name].push_back(key);
      } else if (!fn->argument_accepts[j](std::get<Value>(task.args[j]))) {
        const Value& v = std::get<Value>(task.args[j]);
        throw SubmissionError("task '" + key + "': " + fn->name + " argument " + std::to_string(j) +
                              " expects " + fn->argument_types[j] + ", got " +
                              std::string(kind_name(v.kind())) + " " + v.to_string(40));
      }
    }
    indegree[key] = deps;
  }
  // Kahn's algorithm: what cannot be ordered lies on or behind a cycle.
  std::vector<std::string> order, frontier;
  for (const auto& [key, deg] : indegree)
    if (deg == 0) frontier.push_back(key);
  while (!frontier.empty()) {
    std::string key = std::move(frontier.back());
    frontier.pop_back();
    order.push_back(key);
    for (const auto& d : dependents[key])
      if (--indegree[d] == 0) frontier.push_back(d);
  }
  if (order.size() != tasks.size())
    throw SubmissionError("graph has a cycle: " + describe_cycle(tasks, indegree));

  // One operation per function; ids are fixed before building columns so references can point forward.
  struct Group {
    const TaskFunction* fn;
    std::vector<std::string> keys;
  };
  std::map<std::string, Group> groups;
  LoweredGraph out;
  for (const auto& key : order) {
    const TaskSpec& task = tasks.at(key);
    auto& group = groups[task.function];
    group.fn = resolved.at(task.function);
    out.refs[key] = TaskRef{0, static_cast<std::uint32_t>(group.keys.size())};
    group.keys.push_back(key);
  }
  // Groups may reference each other in both directions, so ids are reserved before any is built.
  std::map<std::string, OpId> ids;
  for (auto& [name, group] : groups) ids[name] = next_op_id();
  for (auto& [name, group] : groups) {
    std::vector<std::vector<Arg>> columns(group.fn->arity());
    for (auto& c : columns) c.reserve(group.keys.size());
    for (const auto& key : group.keys) {
      const TaskSpec& task = tasks.at(key);
      for (std::size_t j = 0; j < task.args.size(); ++j) {
        if (const Key* k = std::get_if<Key>(&task.args[j])) {
          TaskRef ref = out.refs.at(k->name);
          ref.op = ids.at(tasks.at(k->name).function);
          columns[j].emplace_back(ref);
        } else {
          columns[j].emplace_back(std::get<Value>(task.args[j]));
        }
      }
    }
    std::vector<Column> packed;
    for (auto& c : columns) packed.push_back(Column::per_task(std::move(c)));
    out.operations.push_back(
        std::make_shared<Operation>(*group.fn, group.keys, std::move(packed), ids.at(name)));
  }
  for (auto& [key, ref] : out.refs) ref.op = ids.at(tasks.at(key).function);
  return out;
}

}  // namespace tessera

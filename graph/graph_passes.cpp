#include "graph/graph_passes.hpp"

#include <map>
#include <unordered_map>
#include <unordered_set>

#include "graph/errors.hpp"
#include "graph/fused_task.hpp"

namespace tessera {

GraphSpec cull(const GraphSpec& graph, const std::vector<std::string>& keys) {
  const auto& tasks = graph.tasks();
  GraphSpec kept;
  std::unordered_set<std::string> seen;
  std::vector<const std::string*> frontier;
  for (const auto& key : keys) {
    if (!tasks.count(key)) throw SubmissionError("get: key '" + key + "' is not in the graph");
    if (seen.insert(key).second) frontier.push_back(&key);
  }
  // Depth first without recursion: a graph may be a chain of millions.
  while (!frontier.empty()) {
    const std::string& key = *frontier.back();
    frontier.pop_back();
    const auto it = tasks.find(key);
    if (it == tasks.end()) continue;  // a missing dependency: lower() names it
    kept.add(key, it->second.function, it->second.args);
    for (const auto& arg : it->second.args)
      if (const Key* dependency = std::get_if<Key>(&arg); dependency && seen.insert(dependency->name).second)
        frontier.push_back(&dependency->name);
  }
  return kept;
}

namespace {

// Whether lower() would accept the task as it stands (so fusing it hides no error).
bool acceptable(const TaskSpec& task, const TaskFunction* fn, const std::map<std::string, TaskSpec>& tasks) {
  if (!fn || task.args.size() != fn->arity()) return false;
  for (std::size_t j = 0; j < task.args.size(); ++j) {
    if (const Key* k = std::get_if<Key>(&task.args[j])) {
      if (!tasks.count(k->name)) return false;
    } else if (!fn->argument_accepts[j](std::get<Value>(task.args[j]))) {
      return false;
    }
  }
  return true;
}

}  // namespace

GraphSpec fuse(const GraphSpec& graph, const std::vector<std::string>& keys, const FusionLimits& limits) {
  const auto& tasks = graph.tasks();
  // Topological order (Kahn); with a cycle nothing is fused and lower() names it.
  std::unordered_map<std::string, std::size_t> unresolved;
  std::unordered_map<std::string, std::vector<const std::string*>> readers;
  std::vector<const std::string*> order, ready;
  order.reserve(tasks.size());
  for (const auto& [key, task] : tasks) {
    std::size_t deps = 0;
    for (const auto& arg : task.args)
      if (const Key* k = std::get_if<Key>(&arg); k && tasks.count(k->name)) {
        ++deps;
        readers[k->name].push_back(&key);
      }
    unresolved[key] = deps;
    if (deps == 0) ready.push_back(&key);
  }
  while (!ready.empty()) {
    const std::string* key = ready.back();
    ready.pop_back();
    order.push_back(key);
    for (const std::string* reader : readers[*key])
      if (--unresolved[*reader] == 0) ready.push_back(reader);
  }
  if (order.size() != tasks.size()) return graph;

  std::unordered_map<std::string, std::int64_t> index_of;
  for (std::size_t i = 0; i < order.size(); ++i) index_of[*order[i]] = static_cast<std::int64_t>(i);
  const std::unordered_set<std::string> wanted(keys.begin(), keys.end());
  FusionGraph plan_input;
  std::vector<const TaskFunction*> functions(order.size());
  for (std::size_t i = 0; i < order.size(); ++i) {
    const TaskSpec& task = tasks.at(*order[i]);
    functions[i] = Registry::global().find(task.function);
    for (const auto& arg : task.args) {
      const Key* k = std::get_if<Key>(&arg);
      const auto it = k ? index_of.find(k->name) : index_of.end();
      plan_input.args.push_back(it == index_of.end() ? -1 : it->second);
    }
    plan_input.end_task(
        wanted.count(*order[i]) > 0,
        acceptable(task, functions[i], tasks) &&
            fusible_call(*functions[i], task.args.empty() ? nullptr : std::get_if<Value>(&task.args[0])));
  }
  const auto groups = plan_fusion(plan_input, limits);
  if (groups.empty()) return graph;

  std::vector<bool> fused(order.size(), false);
  GraphSpec out;
  for (const auto& group : groups) {
    for (std::uint32_t member : group) fused[member] = true;
    auto call = make_fused_call<SpecArg>(
        plan_input, group,
        [&](std::uint32_t t) -> const std::vector<SpecArg>& { return tasks.at(*order[t]).args; },
        [&](std::uint32_t t) { return functions[t]; });
    out.add(*order[group.back()], call.function->name, std::move(call.args));
  }
  for (std::size_t i = 0; i < order.size(); ++i)
    if (!fused[i]) out.add(*order[i], tasks.at(*order[i]).function, tasks.at(*order[i]).args);
  return out;
}

}  // namespace tessera

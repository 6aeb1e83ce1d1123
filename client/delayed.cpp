#include "tessera/delayed.hpp"

#include <unordered_map>

#include "client/lower_delayed.hpp"
#include "graph/fused_task.hpp"

namespace tessera {

DelayedNode::~DelayedNode() {
  // Take over children that only this node keeps alive, so each is destroyed here, not recursively.
  std::vector<DelayedNodePtr> orphans;
  auto adopt = [&](std::vector<DelayedArg>& args) {
    for (auto& arg : args)
      if (auto* child = std::get_if<DelayedNodePtr>(&arg); child && *child && child->use_count() == 1)
        orphans.push_back(std::move(*child));
  };
  adopt(args);
  while (!orphans.empty()) {
    DelayedNodePtr node = std::move(orphans.back());
    orphans.pop_back();
    adopt(const_cast<DelayedNode&>(*node).args);
  }
}

namespace detail {

LoweredDelayed lower_delayed(const std::vector<const DelayedNode*>& roots, const FusionLimits* fusion) {
  // Post-order walk without recursion: a node is listed after every node it depends on.
  std::vector<const DelayedNode*> order;
  std::unordered_map<const DelayedNode*, std::uint32_t> index_of;
  std::vector<std::pair<const DelayedNode*, bool>> stack;
  for (const DelayedNode* root : roots) {
    stack.emplace_back(root, false);
    while (!stack.empty()) {
      auto [node, expanded] = stack.back();
      if (index_of.count(node)) {
        stack.pop_back();
        continue;
      }
      if (!expanded) {
        stack.back().second = true;
        for (const auto& arg : node->args)
          if (auto* child = std::get_if<DelayedNodePtr>(&arg); child && !index_of.count(child->get()))
            stack.emplace_back(child->get(), false);
        continue;
      }
      stack.pop_back();
      index_of.emplace(node, static_cast<std::uint32_t>(order.size()));
      order.push_back(node);
    }
  }
  // Each argument's source: the index of the node it reads, or -1 (a literal or a future).
  FusionGraph sources;
  sources.args.reserve(order.size());
  for (const DelayedNode* node : order) {
    for (const auto& arg : node->args) {
      const auto* child = std::get_if<DelayedNodePtr>(&arg);
      sources.args.push_back(child ? static_cast<std::int64_t>(index_of.at(child->get())) : -1);
    }
    sources.first_arg.push_back(static_cast<std::uint32_t>(sources.args.size()));
  }

  // What each node becomes: its own task, a step inside the fused task of its group's last node, or
  // (the last node of a group) the fused task itself, with the program and the group's inputs.
  std::vector<bool> inside(order.size(), false);
  std::unordered_map<std::uint32_t, std::pair<const TaskFunction*, std::vector<DelayedArg>>> fused;
  if (fusion) {
    sources.wanted.assign(order.size(), 0);
    sources.fusible.resize(order.size());
    for (const DelayedNode* root : roots) sources.wanted[index_of.at(root)] = 1;
    for (std::size_t i = 0; i < order.size(); ++i) {
      const auto& args = order[i]->args;
      sources.fusible[i] =
          fusible_call(*order[i]->function, args.empty() ? nullptr : std::get_if<Value>(&args[0]));
    }
    for (const auto& group : plan_fusion(sources, *fusion)) {
      for (std::uint32_t member : group) inside[member] = true;
      inside[group.back()] = false;
      auto call = make_fused_call<DelayedArg>(
          sources, group, [&](std::uint32_t t) -> const std::vector<DelayedArg>& { return order[t]->args; },
          [&](std::uint32_t t) { return order[t]->function; });
      fused.emplace(group.back(), std::pair{call.function, std::move(call.args)});
    }
  }
  auto function_of = [&](std::uint32_t i) {
    if (fused.empty()) return order[i]->function;
    const auto it = fused.find(i);
    return it == fused.end() ? order[i]->function : it->second.first;
  };

  // One operation per task function; ids are reserved first so that references can be made in one pass.
  struct Group {
    OpId id;
    std::vector<std::uint32_t> nodes;
  };
  std::vector<std::pair<const TaskFunction*, Group>> groups;
  std::unordered_map<const TaskFunction*, std::size_t> group_of;
  std::vector<TaskRef> placed(order.size());
  for (std::uint32_t i = 0; i < order.size(); ++i) {
    if (inside[i]) continue;
    const TaskFunction* function = function_of(i);
    auto [it, fresh] = group_of.emplace(function, groups.size());
    if (fresh) groups.push_back({function, Group{next_op_id(), {}}});
    Group& group = groups[it->second].second;
    placed[i] = TaskRef{group.id, static_cast<std::uint32_t>(group.nodes.size())};
    group.nodes.push_back(i);
  }

  LoweredDelayed out;
  for (auto& [function, group] : groups) {
    std::vector<std::vector<Arg>> columns(function->arity());
    for (auto& column : columns) column.reserve(group.nodes.size());
    for (std::uint32_t i : group.nodes) {
      const auto found = fused.empty() ? fused.end() : fused.find(i);
      const bool is_fused = found != fused.end();
      const auto& args = is_fused ? found->second.second : order[i]->args;
      for (std::size_t j = 0; j < args.size(); ++j) {
        const DelayedArg& arg = args[j];
        if (const Value* literal = std::get_if<Value>(&arg)) {
          columns[j].emplace_back(*literal);
        } else if (std::holds_alternative<DelayedNodePtr>(arg)) {
          // A fused task's inputs are other nodes' args: look their index up; a node's own are in sources.
          const std::int64_t source =
              is_fused ? static_cast<std::int64_t>(index_of.at(std::get<DelayedNodePtr>(arg).get()))
                       : sources.args[sources.first_arg[i] + j];
          columns[j].emplace_back(placed[static_cast<std::size_t>(source)]);
        } else {
          columns[j].emplace_back(std::get<ResultHandle>(arg).task());
        }
      }
    }
    std::vector<Column> packed;
    for (auto& column : columns) packed.push_back(Column::per_task(std::move(column)));
    out.operations.push_back(std::make_shared<Operation>(*function,
                                                         static_cast<std::uint32_t>(group.nodes.size()),
                                                         std::move(packed), std::string{}, group.id));
  }
  out.roots.reserve(roots.size());
  for (const DelayedNode* root : roots) out.roots.push_back(placed[index_of.at(root)]);
  return out;
}

}  // namespace detail

}  // namespace tessera

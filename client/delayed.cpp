#include "tessera/delayed.hpp"

#include <unordered_map>

#include "client/lower_delayed.hpp"

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

LoweredDelayed lower_delayed(const std::vector<const DelayedNode*>& roots) {
  struct Group {
    const TaskFunction* function;
    OpId id;
    std::vector<const DelayedNode*> nodes;
  };
  std::vector<Group> groups;
  std::unordered_map<const TaskFunction*, std::size_t> group_of;
  std::unordered_map<const DelayedNode*, TaskRef> placed;

  // Post-order walk without recursion: a node is placed after every node it depends on.
  std::vector<std::pair<const DelayedNode*, bool>> stack;
  for (const DelayedNode* root : roots) {
    stack.emplace_back(root, false);
    while (!stack.empty()) {
      auto [node, expanded] = stack.back();
      if (placed.count(node)) {
        stack.pop_back();
        continue;
      }
      if (!expanded) {
        stack.back().second = true;
        for (const auto& arg : node->args)
          if (auto* child = std::get_if<DelayedNodePtr>(&arg); child && !placed.count(child->get()))
            stack.emplace_back(child->get(), false);
        continue;
      }
      stack.pop_back();
      auto [it, fresh] = group_of.emplace(node->function, groups.size());
      if (fresh) groups.push_back(Group{node->function, next_op_id(), {}});
      Group& group = groups[it->second];
      placed.emplace(node, TaskRef{group.id, static_cast<std::uint32_t>(group.nodes.size())});
      group.nodes.push_back(node);
    }
  }

  LoweredDelayed out;
  for (auto& group : groups) {
    std::vector<std::vector<Arg>> columns(group.function->arity());
    for (auto& column : columns) column.reserve(group.nodes.size());
    for (const DelayedNode* node : group.nodes) {
      for (std::size_t j = 0; j < node->args.size(); ++j) {
        const DelayedArg& arg = node->args[j];
        if (const Value* literal = std::get_if<Value>(&arg)) {
          columns[j].emplace_back(*literal);
        } else if (const auto* child = std::get_if<DelayedNodePtr>(&arg)) {
          columns[j].emplace_back(placed.at(child->get()));
        } else {
          columns[j].emplace_back(std::get<ResultHandle>(arg).task());
        }
      }
    }
    std::vector<Column> packed;
    for (auto& column : columns) packed.push_back(Column::per_task(std::move(column)));
    out.operations.push_back(std::make_shared<Operation>(*group.function,
                                                         static_cast<std::uint32_t>(group.nodes.size()),
                                                         std::move(packed), std::string{}, group.id));
  }
  out.roots.reserve(roots.size());
  for (const DelayedNode* root : roots) out.roots.push_back(placed.at(root));
  return out;
}

}  // namespace detail

}  // namespace tessera

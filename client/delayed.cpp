#include "tessera/delayed.hpp"

#include <unordered_map>

#include "client/lower_delayed.hpp"
#include "client/pointer_index.hpp"
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

namespace {

// The operations a lowering builds: one per task function, in the order of first use, each task's
// arguments appended as it is placed (its sources are placed before it). Graphs have few functions and
// long runs of one: the last group used is tried first.
class OperationBuilder {
 public:
  // Places one task; `source_of(j)` is the node that argument j (a DelayedNodePtr) reads.
  template <class SourceOf>
  TaskRef add(const TaskFunction* function, const std::vector<DelayedArg>& args, SourceOf&& source_of) {
    if (groups_.empty() || groups_[last_].function != function) {
      auto [it, fresh] = group_of_.emplace(function, groups_.size());
      if (fresh)
        groups_.push_back(Group{function, next_op_id(), 0, std::vector<std::vector<Arg>>(function->arity())});
      last_ = it->second;
    }
    Group& group = groups_[last_];
    if (args.size() != group.columns.size())
      throw SubmissionError(function->signature() + " takes " + std::to_string(group.columns.size()) +
                            " arguments, got " + std::to_string(args.size()));
    for (std::size_t j = 0; j < args.size(); ++j) {
      const DelayedArg& arg = args[j];
      if (const Value* literal = std::get_if<Value>(&arg)) {
        group.columns[j].emplace_back(*literal);
      } else if (std::holds_alternative<DelayedNodePtr>(arg)) {
        group.columns[j].emplace_back(placed_[source_of(j)]);
      } else {
        group.columns[j].emplace_back(std::get<ResultHandle>(arg).task());
      }
    }
    return TaskRef{group.id, group.size++};
  }
  // Remembers where node `i` (in walk order) went, for the tasks that read it.
  void place(std::uint32_t i, TaskRef where) {
    if (placed_.size() <= i) placed_.resize(i + 1);
    placed_[i] = where;
  }
  const TaskRef& placed(std::uint32_t i) const { return placed_[i]; }

  std::vector<OperationPtr> finish() {
    std::vector<OperationPtr> operations;
    for (auto& group : groups_) {
      std::vector<Column> packed;
      for (auto& column : group.columns) packed.push_back(Column::per_task(std::move(column)));
      operations.push_back(std::make_shared<Operation>(*group.function, group.size, std::move(packed),
                                                       std::string{}, group.id));
    }
    return operations;
  }

 private:
  struct Group {
    const TaskFunction* function;
    OpId id;
    std::uint32_t size;
    std::vector<std::vector<Arg>> columns;
  };
  std::vector<Group> groups_;
  std::unordered_map<const TaskFunction*, std::size_t> group_of_;
  std::size_t last_ = 0;
  std::vector<TaskRef> placed_;
};

}  // namespace

LoweredDelayed lower_delayed(const std::vector<const DelayedNode*>& roots, const FusionLimits* fusion) {
  // Post-order walk without recursion: a node is listed after every node it depends on, with each
  // argument's source (the index of the node it reads, or -1 for a literal or a future) recorded as it is.
  // Unfused, each node is placed as it is listed, while it is still in the cache.
  std::vector<const DelayedNode*> order;
  PointerIndex<DelayedNode> index_of;
  FusionGraph sources;
  OperationBuilder builder;
  std::vector<std::pair<const DelayedNode*, bool>> stack;
  for (const DelayedNode* root : roots) {
    stack.emplace_back(root, false);
    while (!stack.empty()) {
      auto [node, expanded] = stack.back();
      if (index_of.contains(node)) {
        stack.pop_back();
        continue;
      }
      if (!expanded) {
        stack.back().second = true;
        for (const auto& arg : node->args)
          if (auto* child = std::get_if<DelayedNodePtr>(&arg); child && !index_of.contains(child->get()))
            stack.emplace_back(child->get(), false);
        continue;
      }
      stack.pop_back();
      const auto i = static_cast<std::uint32_t>(order.size());
      index_of.insert(node, i);
      order.push_back(node);
      const std::uint32_t first = sources.first_arg.back();
      for (const auto& arg : node->args) {
        const auto* child = std::get_if<DelayedNodePtr>(&arg);
        sources.args.push_back(child ? static_cast<std::int64_t>(index_of.find(child->get())) : -1);
      }
      sources.first_arg.push_back(static_cast<std::uint32_t>(sources.args.size()));
      if (!fusion)
        builder.place(i, builder.add(node->function, node->args,
                                     [&](std::size_t j) { return sources.args[first + j]; }));
    }
  }

  if (fusion) {
    // What each node becomes: its own task, a step inside the fused task of its group's last node, or
    // (the last node of a group) the fused task itself, with the program and the group's inputs.
    std::vector<bool> inside(order.size(), false);
    std::vector<std::uint32_t> fused_at(order.size(), UINT32_MAX);  // per node: its entry in `fused`
    std::vector<FusedCall<DelayedArg>> fused;
    sources.wanted.assign(order.size(), 0);
    sources.fusible.resize(order.size());
    for (const DelayedNode* root : roots) sources.wanted[index_of.find(root)] = 1;
    for (std::size_t i = 0; i < order.size(); ++i) {
      const auto& args = order[i]->args;
      sources.fusible[i] =
          fusible_call(*order[i]->function, args.empty() ? nullptr : std::get_if<Value>(&args[0]));
    }
    for (const auto& group : plan_fusion(sources, *fusion)) {
      for (std::uint32_t member : group) inside[member] = true;
      inside[group.back()] = false;
      fused_at[group.back()] = static_cast<std::uint32_t>(fused.size());
      fused.push_back(make_fused_call<DelayedArg>(
          sources, group, [&](std::uint32_t t) -> const std::vector<DelayedArg>& { return order[t]->args; },
          [&](std::uint32_t t) { return order[t]->function; }));
    }
    for (std::uint32_t i = 0; i < order.size(); ++i) {
      if (inside[i]) continue;
      const std::uint32_t first = sources.first_arg[i];
      if (fused_at[i] == UINT32_MAX) {
        builder.place(i, builder.add(order[i]->function, order[i]->args,
                                     [&](std::size_t j) { return sources.args[first + j]; }));
        continue;
      }
      // A fused task's inputs are its members' arguments: the nodes they read are looked up.
      const auto& call = fused[fused_at[i]];
      builder.place(i, builder.add(call.function, call.args, [&](std::size_t j) {
        return index_of.find(std::get<DelayedNodePtr>(call.args[j]).get());
      }));
    }
  }

  LoweredDelayed out;
  out.operations = builder.finish();
  out.roots.reserve(roots.size());
  for (const DelayedNode* root : roots) out.roots.push_back(builder.placed(index_of.find(root)));
  return out;
}

}  // namespace detail

}  // namespace tessera

// Which tasks of a graph to fuse into one task (tessera.fused): a plain function over task indexes, shared
// by the passes over dictionary graphs (GraphSpec) and over delayed, bag and array graphs.
//
// Two shapes are fused, and only they, so that no parallelism worth having is given away:
// - linear chains: a task whose one consumer reads no other task of the graph (Dask's linear fusion);
// - diamonds: a small fan-out-fan-in subgraph from one source to one sink, every task between them read
//   only inside it, e.g. exp(x) - 1/x (the seed log's "aggressive fusion"). Independent producers that meet
//   in one consumer (a reduction tree) are not a diamond: they stay separate tasks.
#pragma once

#include <cstdint>
#include <vector>

namespace tessera {

// How far the fusion pass goes; GraphOptimizations (client/tessera/client.hpp) carries the same fields.
struct FusionLimits {
  bool linear = true;
  bool diamonds = true;
  // The most original tasks one fused task runs.
  std::uint32_t max_tasks = 64;
  // The most tasks of a diamond on one level (its parallel branches).
  std::uint32_t max_width = 4;
  // The most inputs (literal arguments and results of tasks outside it) one fused task takes.
  std::uint32_t max_inputs = 32;
};

// A graph as the planner reads it, flat (a graph may have millions of tasks): task after task, the
// source of each argument: the index of the task of this graph it reads, or -1 for a literal or a result
// from outside the graph. Every index is below the reading task's own (tasks in topological order).
struct FusionGraph {
  std::vector<std::int64_t> args;
  std::vector<std::uint32_t> first_arg{0};  // task t's arguments are args[first_arg[t], first_arg[t + 1])
  // Its result is asked for: it stays the result of a task (the sink of a group at most).
  std::vector<char> wanted;
  // It may run inside a fused task (fusible_call in fused_task.hpp).
  std::vector<char> fusible;

  std::uint32_t size() const { return static_cast<std::uint32_t>(first_arg.size() - 1); }
  // Ends the task whose arguments were appended to `args` since the last one.
  void end_task(bool is_wanted, bool is_fusible) {
    first_arg.push_back(static_cast<std::uint32_t>(args.size()));
    wanted.push_back(is_wanted);
    fusible.push_back(is_fusible);
  }
};

// The groups to fuse: each has at least two tasks, in topological order, and its last task is the only
// one read from outside it or asked for. A task is in one group at most; tasks in no group stay as
// they are. Linear in the graph's size.
std::vector<std::vector<std::uint32_t>> plan_fusion(const FusionGraph& graph, const FusionLimits& limits);

}  // namespace tessera

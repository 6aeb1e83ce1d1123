#include "graph/fusion_plan.hpp"

#include <algorithm>
#include <functional>
#include <queue>
#include <span>
#include <utility>

namespace tessera {
namespace {

// Calls f once for each distinct task of the graph that task t reads.
template <class F>
void for_each_dependency(const FusionGraph& g, std::uint32_t t, F&& f) {
  const std::uint32_t begin = g.first_arg[t], end = g.first_arg[t + 1];
  for (std::uint32_t j = begin; j < end; ++j) {
    const std::int64_t a = g.args[j];
    if (a < 0 || std::find(g.args.begin() + begin, g.args.begin() + j, a) != g.args.begin() + j) continue;
    f(static_cast<std::uint32_t>(a));
  }
}

// The distinct readers of each task, ascending, in one flat array.
class Consumers {
 public:
  explicit Consumers(const FusionGraph& g) : first_(g.size() + 1, 0) {
    const std::uint32_t n = g.size();
    for (std::uint32_t t = 0; t < n; ++t)
      for_each_dependency(g, t, [&](std::uint32_t d) { ++first_[d + 1]; });
    for (std::uint32_t t = 0; t < n; ++t) first_[t + 1] += first_[t];
    of_.resize(first_[n]);
    std::vector<std::uint32_t> cursor(first_.begin(), first_.end() - 1);
    for (std::uint32_t t = 0; t < n; ++t)
      for_each_dependency(g, t, [&](std::uint32_t d) { of_[cursor[d]++] = t; });
  }
  std::span<const std::uint32_t> of(std::uint32_t t) const {
    return {of_.data() + first_[t], of_.data() + first_[t + 1]};
  }
  std::size_t count(std::uint32_t t) const { return first_[t + 1] - first_[t]; }

 private:
  std::vector<std::uint32_t> first_, of_;
};

// Grows a region forward from `source` over tasks that read only the region, and returns the largest
// prefix of it that is closed (only its newest task is read from outside or asked for), or nothing.
class DiamondSearch {
 public:
  DiamondSearch(const FusionGraph& g, const Consumers& consumers, const std::vector<char>& taken,
                const FusionLimits& limits)
      : g_(g),
        consumers_(consumers),
        taken_(taken),
        limits_(limits),
        stamp_of_(g.size(), 0),
        queued_(g.size(), 0),
        open_(g.size(), 0),
        level_(g.size(), 0) {}

  std::vector<std::uint32_t> from(std::uint32_t source) {
    ++stamp_;
    region_.clear();
    std::vector<std::uint32_t> per_level(limits_.max_tasks + 1, 0);
    std::priority_queue<std::uint32_t, std::vector<std::uint32_t>, std::greater<>> candidates;
    std::size_t open_count = 0, best = 0;
    std::size_t inputs = g_.first_arg[source + 1] - g_.first_arg[source];

    auto admit = [&](std::uint32_t task) {
      stamp_of_[task] = stamp_;
      region_.push_back(task);
      for_each_dependency(g_, task, [&](std::uint32_t d) {
        if (stamp_of_[d] == stamp_ && --open_[d] == 0 && !g_.wanted[d]) --open_count;
      });
      open_[task] = static_cast<std::uint32_t>(consumers_.count(task));
      if (open_[task] > 0 || g_.wanted[task]) ++open_count;
      for (std::uint32_t c : consumers_.of(task))
        if (queued_[c] != stamp_) {
          queued_[c] = stamp_;
          candidates.push(c);
        }
    };
    level_[source] = 0;
    per_level[0] = 1;
    admit(source);
    while (!candidates.empty()) {
      const std::uint32_t task = candidates.top();
      candidates.pop();
      // A task the region cannot take keeps the tasks it reads open for good: nothing later can close.
      if (taken_[task] || !g_.fusible[task] || region_.size() >= limits_.max_tasks) break;
      std::uint32_t level = 0;
      bool inside = true;
      for_each_dependency(g_, task, [&](std::uint32_t d) {
        if (stamp_of_[d] != stamp_) inside = false;
        level = std::max(level, level_[d] + 1);
      });
      if (!inside || ++per_level[level] > limits_.max_width) break;
      for (std::uint32_t j = g_.first_arg[task]; j < g_.first_arg[task + 1]; ++j)
        inputs += g_.args[j] < 0 ? 1 : 0;
      if (inputs > limits_.max_inputs) break;
      level_[task] = level;
      admit(task);
      const bool newest_is_open = open_[task] > 0 || g_.wanted[task];
      if (open_count == 1 && newest_is_open && region_.size() >= 3) best = region_.size();
    }
    std::vector<std::uint32_t> out(region_.begin(), region_.begin() + static_cast<std::ptrdiff_t>(best));
    std::sort(out.begin(), out.end());
    return out;
  }

 private:
  const FusionGraph& g_;
  const Consumers& consumers_;
  const std::vector<char>& taken_;
  const FusionLimits& limits_;
  std::uint32_t stamp_ = 0;
  std::vector<std::uint32_t> stamp_of_, queued_, open_, level_;
  std::vector<std::uint32_t> region_;
};

// Units of tasks that run as one: a union-find whose root is the unit's sink (its last task).
class Units {
 public:
  explicit Units(const FusionGraph& g)
      : parent_(g.size()), size_(g.size(), 1), inputs_(g.size()), fusible_(g.fusible) {
    for (std::uint32_t t = 0; t < g.size(); ++t) {
      parent_[t] = t;
      inputs_[t] = g.first_arg[t + 1] - g.first_arg[t];
    }
  }
  std::uint32_t find(std::uint32_t t) {
    std::uint32_t root = t;
    while (parent_[root] != root) root = parent_[root];
    while (parent_[t] != root) t = std::exchange(parent_[t], root);
    return root;
  }
  // `members` (ascending) become one unit under its last task.
  void join(const std::vector<std::uint32_t>& members, std::size_t inputs) {
    const std::uint32_t sink = members.back();
    for (std::uint32_t m : members) parent_[m] = sink;
    size_[sink] = static_cast<std::uint32_t>(members.size());
    inputs_[sink] = inputs;
    fusible_[sink] = 1;
  }
  // The unit `producer` runs inside the unit `consumer` from now on.
  void absorb(std::uint32_t consumer, std::uint32_t producer, std::size_t inputs) {
    parent_[producer] = consumer;
    size_[consumer] += size_[producer];
    inputs_[consumer] = inputs;
  }
  std::uint32_t size(std::uint32_t root) const { return size_[root]; }
  std::size_t inputs(std::uint32_t root) const { return inputs_[root]; }
  bool fusible(std::uint32_t root) const { return fusible_[root]; }

 private:
  std::vector<std::uint32_t> parent_, size_;
  std::vector<std::size_t> inputs_;
  std::vector<char> fusible_;
};

// Whether any task could be fused at all: most graphs of independent tasks have none, and pay nothing.
bool anything_to_fuse(const FusionGraph& g, const Consumers& consumers, const FusionLimits& limits) {
  for (std::uint32_t t = 0; t < g.size(); ++t) {
    const std::size_t readers = consumers.count(t);
    if (!g.fusible[t] || g.wanted[t]) continue;
    if ((limits.linear && readers == 1) || (limits.diamonds && readers >= 2)) return true;
  }
  return false;
}

}  // namespace

std::vector<std::vector<std::uint32_t>> plan_fusion(const FusionGraph& g, const FusionLimits& limits) {
  const std::uint32_t n = g.size();
  if (n < 2 || limits.max_tasks < 2 || (!limits.linear && !limits.diamonds)) return {};
  const Consumers consumers(g);
  if (!anything_to_fuse(g, consumers, limits)) return {};
  Units units(g);

  // Diamonds first, each kept with its members (a later chain step reads them all).
  std::vector<std::vector<std::uint32_t>> diamonds;
  std::vector<std::int32_t> diamond_of(n, -1);  // by sink
  if (limits.diamonds && limits.max_tasks >= 3) {
    std::vector<char> taken(n, 0);
    DiamondSearch search(g, consumers, taken, limits);
    for (std::uint32_t source = 0; source < n; ++source) {
      const auto fan_out = consumers.count(source);
      if (taken[source] || !g.fusible[source] || g.wanted[source] || fan_out < 2 ||
          fan_out > limits.max_tasks)
        continue;
      auto region = search.from(source);
      if (region.empty()) continue;
      std::size_t inputs = 0;
      for (std::uint32_t t : region) taken[t] = 1;
      for (std::uint32_t t : region)
        for (std::uint32_t j = g.first_arg[t]; j < g.first_arg[t + 1]; ++j)
          inputs += g.args[j] < 0 ||
                    !std::binary_search(region.begin(), region.end(), static_cast<std::uint32_t>(g.args[j]));
      units.join(region, inputs);
      diamond_of[region.back()] = static_cast<std::int32_t>(diamonds.size());
      diamonds.push_back(std::move(region));
    }
  }

  // Linear chains, over units (a fused diamond is one link), producers before their consumers: a unit
  // that reads exactly one other unit, which nothing else reads, takes it in.
  if (limits.linear) {
    std::vector<std::uint32_t> single;
    for (std::uint32_t t = 0; t < n; ++t) {
      if (units.find(t) != t || !units.fusible(t)) continue;  // t is not the last task of its unit
      single.assign(1, t);
      const auto& members = diamond_of[t] >= 0 ? diamonds[static_cast<std::size_t>(diamond_of[t])] : single;
      std::int64_t only = -1;
      bool one = true;
      for (std::uint32_t m : members) {
        for_each_dependency(g, m, [&](std::uint32_t d) {
          const std::uint32_t u = units.find(d);
          if (u == t || static_cast<std::int64_t>(u) == only) return;
          if (only >= 0) one = false;
          only = u;
        });
        if (!one) break;
      }
      if (only < 0 || !one) continue;
      const auto producer = static_cast<std::uint32_t>(only);  // also its sink
      if (!units.fusible(producer) || g.wanted[producer] ||
          units.size(producer) + units.size(t) > limits.max_tasks)
        continue;
      bool read_only_here = true;
      for (std::uint32_t reader : consumers.of(producer)) read_only_here &= units.find(reader) == t;
      if (!read_only_here) continue;
      std::size_t reads_of_producer = 0;
      for (std::uint32_t m : members)
        for (std::uint32_t j = g.first_arg[m]; j < g.first_arg[m + 1]; ++j)
          reads_of_producer += g.args[j] == static_cast<std::int64_t>(producer) ? 1 : 0;
      const std::size_t inputs = units.inputs(producer) + units.inputs(t) - reads_of_producer;
      if (inputs > limits.max_inputs) continue;
      units.absorb(t, producer, inputs);
    }
  }

  std::vector<std::vector<std::uint32_t>> groups;
  std::vector<std::int32_t> group_of(n, -1);  // by unit
  for (std::uint32_t t = 0; t < n; ++t) {
    const std::uint32_t root = units.find(t);
    if (units.size(root) < 2) continue;
    if (group_of[root] < 0) {
      group_of[root] = static_cast<std::int32_t>(groups.size());
      groups.emplace_back();
    }
    groups[static_cast<std::size_t>(group_of[root])].push_back(t);
  }
  return groups;
}

}  // namespace tessera

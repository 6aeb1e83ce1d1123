// Bag<T>: a sequence split into partitions, processed partition by partition (Dask's bag). map, filter
// and fold/reduce each add one task per partition; compute() runs them and concatenates the results.
#pragma once

#include <optional>
#include <vector>

#include "tessera/client.hpp"
#include "tessera/delayed.hpp"

namespace tessera {

namespace detail {
// The built-in partition functions, registered on first use.
struct BagFunctions {
  const TaskFunction* identity;  // (partition) -> partition
  const TaskFunction* map;       // (function name, partition) -> partition
  const TaskFunction* filter;    // (predicate name, partition) -> partition
  const TaskFunction* fold;      // (binary function name, initial or none, partition) -> value or none
  const TaskFunction* combine;   // (binary function name, a or none, b or none) -> value or none
};
const BagFunctions& bag_functions();
}  // namespace detail

template <class T>
class Bag {
 public:
  using value_type = T;

  // Splits items into `npartitions` partitions of near-equal size (at least one item each when possible).
  static Bag from_sequence(const std::vector<T>& items, std::uint32_t npartitions) {
    if (npartitions == 0) throw SubmissionError("Bag::from_sequence: npartitions must be at least 1");
    const std::size_t n = items.size();
    const std::size_t parts = std::max<std::size_t>(1, std::min<std::size_t>(npartitions, n));
    std::vector<DelayedArg> partitions;
    partitions.reserve(parts);
    for (std::size_t p = 0; p < parts; ++p) {
      const std::size_t begin = n * p / parts, end = n * (p + 1) / parts;
      partitions.emplace_back(to_value(std::vector<T>(items.begin() + begin, items.begin() + end)));
    }
    return Bag(std::move(partitions));
  }

  std::size_t npartitions() const { return partitions_.size(); }

  // Applies fn (a registered task function of one T) to every item.
  template <class F>
  auto map(const F& fn) const {
    using R = detail::task_result_t<F>;
    static_assert(std::tuple_size_v<detail::task_arguments_t<F>> == 1,
                  "Bag::map takes a function of one item");
    return Bag<R>(apply(detail::bag_functions().map, detail::resolve(fn)));
  }

  // Keeps the items for which pred (a registered task function of one T returning bool) is true.
  template <class F>
  Bag filter(const F& pred) const {
    static_assert(std::is_same_v<detail::task_result_t<F>, bool>,
                  "Bag::filter takes a predicate returning bool");
    return Bag(apply(detail::bag_functions().filter, detail::resolve(pred)));
  }

  // Folds every partition with binop starting from `initial`, then combines the partitions' results
  // pairwise in a tree.
  template <class F>
  Delayed<T> fold(const F& binop, const T& initial) const {
    return aggregate(detail::resolve(binop), to_value(initial));
  }
  // The same without an initial value; the bag must not be empty.
  template <class F>
  Delayed<T> reduce(const F& binop) const {
    return aggregate(detail::resolve(binop), Value{});
  }

  // The partitions as delayed vectors (a partition given by value becomes an identity task).
  std::vector<Delayed<std::vector<T>>> to_delayed() const {
    std::vector<Delayed<std::vector<T>>> out;
    out.reserve(partitions_.size());
    for (const auto& p : partitions_) {
      if (const auto* node = std::get_if<DelayedNodePtr>(&p)) {
        out.emplace_back(*node);
      } else {
        out.emplace_back(
            std::shared_ptr<DelayedNode>(new DelayedNode{detail::bag_functions().identity, {p}}));
      }
    }
    return out;
  }

  // Computes every partition and concatenates them in order.
  std::vector<T> compute(Client& client) const {
    std::vector<T> out;
    for (auto& part : client.compute(to_delayed()))
      out.insert(out.end(), std::make_move_iterator(part.begin()), std::make_move_iterator(part.end()));
    return out;
  }

  // Starts computing every partition and returns a bag of their results, kept on the workers; with
  // options.checkpoint, also stored as checkpoints (see PersistOptions).
  Bag persist(Client& client, PersistOptions options = {}) const {
    auto futures = client.persist(to_delayed(), options);
    std::vector<DelayedArg> parts;
    parts.reserve(futures.size());
    for (auto& f : futures) parts.emplace_back(f.handle());
    return Bag(std::move(parts));
  }

  explicit Bag(std::vector<DelayedArg> partitions) : partitions_(std::move(partitions)) {}

 private:
  std::vector<DelayedArg> apply(const TaskFunction* partition_fn, const TaskFunction& fn) const {
    std::vector<DelayedArg> out;
    out.reserve(partitions_.size());
    for (const auto& p : partitions_)
      out.emplace_back(std::shared_ptr<DelayedNode>(new DelayedNode{partition_fn, {Value(fn.name), p}}));
    return out;
  }

  Delayed<T> aggregate(const TaskFunction& binop, Value initial) const {
    const auto& builtins = detail::bag_functions();
    if (partitions_.empty()) throw SubmissionError("cannot aggregate a bag with no partitions");
    std::vector<DelayedNodePtr> level;
    for (const auto& p : partitions_)
      level.push_back(
          std::shared_ptr<DelayedNode>(new DelayedNode{builtins.fold, {Value(binop.name), initial, p}}));
    while (level.size() > 1) {
      std::vector<DelayedNodePtr> next;
      for (std::size_t i = 0; i + 1 < level.size(); i += 2)
        next.push_back(std::shared_ptr<DelayedNode>(
            new DelayedNode{builtins.combine, {Value(binop.name), level[i], level[i + 1]}}));
      if (level.size() % 2) next.push_back(level.back());
      level = std::move(next);
    }
    return Delayed<T>(level.front());
  }

  std::vector<DelayedArg> partitions_;
};

}  // namespace tessera

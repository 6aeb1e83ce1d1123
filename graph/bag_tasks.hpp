// Registers the built-in partition functions of Bag (tessera.bag.*) in a registry.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

#include "graph/registry.hpp"

namespace tessera {

void register_bag_tasks(Registry& registry);

// One per-item stage of a bag pipeline: the function of a tessera.bag.map or tessera.bag.filter task.
struct BagStage {
  const TaskFunction* function;
  bool filter;
};

// What stream_fold throws when a stage's function (or, at stages.size(), the fold's) throws.
class BagStageFailed : public std::runtime_error {
 public:
  BagStageFailed(std::size_t stage, const std::string& message)
      : std::runtime_error(message), stage_(stage) {}
  std::size_t stage() const { return stage_; }

 private:
  std::size_t stage_;
};

// What map and filter partition tasks in a row, then a fold partition task, give, computed item by item:
// each item goes through every stage and into the fold before the next is made, so a pipeline whose
// mapped partitions are many times a worker's memory holds one item's values at a time (as a Dask bag's
// lazy partitions do), not every stage's whole partition.
Value stream_fold(const std::vector<BagStage>& stages, const TaskFunction& binop, const Value& initial,
                  const Value& partition);

}  // namespace tessera

// WorkerDirectory: where to send a worker's inputs, by worker id. Results travel from operation actors
// straight to the consuming worker, which may be an actor of this process or, in a worker process, a
// proxy that forwards to another process; the scheduler names destinations by id, and this maps them.
#pragma once

#include <caf/all.hpp>
#include <cstdint>
#include <mutex>
#include <vector>

#include "actors/protocols/worker.hpp"

namespace tessera {

class WorkerDirectory {
 public:
  void set(std::uint32_t id, protocols::input_target_type actor) {
    std::lock_guard lock(mutex_);
    if (actors_.size() <= id) actors_.resize(id + 1);
    actors_[id] = std::move(actor);
  }
  void erase(std::uint32_t id) {
    std::lock_guard lock(mutex_);
    if (id < actors_.size()) actors_[id] = nullptr;
  }
  // Null when the id is unknown or its worker left.
  protocols::input_target_type get(std::uint32_t id) const {
    std::lock_guard lock(mutex_);
    return id < actors_.size() ? actors_[id] : protocols::input_target_type{};
  }
  bool contains(std::uint32_t id) const {
    std::lock_guard lock(mutex_);
    return id < actors_.size() && actors_[id];
  }

 private:
  mutable std::mutex mutex_;
  std::vector<protocols::input_target_type> actors_;
};

}  // namespace tessera

// TaskDigests: the content-derived key of a task, for its checkpoint. SHA-256 over a version tag, the
// function's registered name, the task's index in its operation, and each argument: a literal by the
// SHA-256 of its Cap'n Proto encoding, a reference by its producer's digest. The same function over the
// same inputs has the same digest in every run and every client, whatever the operation ids. Digests are
// kept per operation (computed on demand, producers first, without recursion) until prune() lets go of
// operations the scheduler no longer holds. Not thread-safe: the scheduler actor owns it.
#pragma once

#include <functional>
#include <optional>
#include <unordered_map>
#include <vector>

#include "graph/operation.hpp"
#include "storage/checkpoint_store.hpp"

namespace tessera {

class TaskDigests {
 public:
  using Find = std::function<const Operation*(OpId)>;
  // nullopt when an operation it depends on cannot be found.
  std::optional<TaskDigest> of(const Operation& op, std::uint32_t task, const Find& find);
  void prune(const std::function<bool(OpId)>& live);
  std::size_t operations() const { return cache_.size(); }

 private:
  struct Entry {
    std::vector<TaskDigest> digests;
    std::vector<bool> known;
    std::vector<std::optional<TaskDigest>> broadcast;  // per column: its literal's digest, once
  };
  Entry& entry(const Operation& op);
  TaskDigest compute(const Operation& op, Entry& e, std::uint32_t task);
  std::unordered_map<OpId, Entry> cache_;
};

// SHA-256 of a value's Cap'n Proto encoding (its header and frames).
TaskDigest digest_of(const Value& value);

}  // namespace tessera

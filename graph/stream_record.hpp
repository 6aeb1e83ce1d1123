// StreamRecord: one parameter set's outcome, as a stream's client sees it (the store keeps more: see
// storage/result_store.hpp's StreamResult).
#pragma once

#include <cstdint>
#include <string>

#include "graph/value.hpp"

namespace tessera {

struct StreamRecord {
  std::uint64_t id = 0;
  Value value{};
  bool failed = false;
  std::string error{};  // with failed: what the simulation raised
  std::string node{};   // with failed: where it ran
};

}  // namespace tessera

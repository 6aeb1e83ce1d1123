// Process-wide count of task results held by operation actors, so tests and status can see memory return.
#pragma once

#include <atomic>
#include <cstdint>

namespace tessera {

struct HeldResults {
  std::atomic<std::int64_t> count{0};
  std::atomic<std::int64_t> bytes{0};
  static HeldResults& instance() {
    static HeldResults held;
    return held;
  }
};

}  // namespace tessera

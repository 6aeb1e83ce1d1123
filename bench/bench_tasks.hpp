// The no-op task the throughput benchmarks run, shared with the node plugin of the remote benchmark.
#pragma once

#include <cstdint>
#include <tessera/tessera.hpp>

namespace bench_tasks {

inline std::int64_t noop(std::int64_t x) {
  return x;
}
TESSERA_TASK(noop);

}  // namespace bench_tasks

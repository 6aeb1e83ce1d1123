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

#include <unistd.h>

#include <vector>

namespace bench_tasks {

// An 8 MiB chunk (2^20 doubles) stamped with the process that made it, so a consumer can tell whether
// it crossed from another worker process.
inline std::vector<double> stamped_chunk(std::int64_t i) {
  std::vector<double> chunk(std::size_t{1} << 20, 1.0);
  chunk[0] = static_cast<double>(getpid());
  chunk[1] = static_cast<double>(i);
  return chunk;
}
TESSERA_TASK(stamped_chunk);

// Bytes of its two inputs that came from another process (reading them all, as a real consumer would).
inline std::int64_t crossed_bytes(const std::vector<double>& a, const std::vector<double>& b) {
  std::int64_t crossed = 0;
  double sum = 0;
  for (const auto* chunk : {&a, &b}) {
    for (double x : *chunk) sum += x;
    if ((*chunk)[0] != static_cast<double>(getpid()))
      crossed += static_cast<std::int64_t>(chunk->size() * sizeof(double));
  }
  return sum > 0 ? crossed : -1;
}
TESSERA_TASK(crossed_bytes);

}  // namespace bench_tasks

// The no-op task the throughput benchmarks run, shared with the node plugin of the remote benchmark:
// compiled into both, so each declares a version (one definition to the node, whichever module).
#pragma once

#include <chrono>
#include <cstdint>
#include <tessera/tessera.hpp>

namespace bench_tasks {

inline std::int64_t noop(std::int64_t x) {
  return x;
}
TESSERA_TASK_VERSION(noop, "1");

}  // namespace bench_tasks

#include <unistd.h>

#include <thread>
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
TESSERA_TASK_VERSION(stamped_chunk, "1");

// Bytes of its two inputs that came from another process; it reads those whole (as Dask's peer reads
// each chunk it fetched), so a chunk damaged on the way shows.
inline std::int64_t crossed_bytes(const std::vector<double>& a, const std::vector<double>& b) {
  std::int64_t crossed = 0;
  for (const auto* chunk : {&a, &b}) {
    if ((*chunk)[0] == static_cast<double>(getpid())) continue;
    double sum = 0;
    for (std::size_t i = 2; i < chunk->size(); ++i) sum += (*chunk)[i];
    if (sum != static_cast<double>(chunk->size() - 2)) return -1;
    crossed += static_cast<std::int64_t>(chunk->size() * sizeof(double));
  }
  return crossed;
}
TESSERA_TASK_VERSION(crossed_bytes, "1");

// The same as array chunks (what arrays move between workers): 1024 x 1024 float64, stamped likewise.
inline tessera::Value stamped_array_chunk(std::int64_t i) {
  Eigen::MatrixXd chunk = Eigen::MatrixXd::Ones(1024, 1024);
  chunk(0, 0) = static_cast<double>(getpid());
  chunk(1, 0) = static_cast<double>(i);
  return tessera::Value(tessera::backends::Chunk::dense<double>(std::move(chunk)));
}
TESSERA_TASK_VERSION(stamped_array_chunk, "1");

inline std::int64_t crossed_chunk_bytes(const tessera::Value& a, const tessera::Value& b) {
  std::int64_t crossed = 0;
  for (const auto* value : {&a, &b}) {
    const auto chunk = value->as_chunk()->dense<double>();
    if (chunk(0, 0) == static_cast<double>(getpid())) continue;
    const double sum = chunk.sum() - chunk(0, 0) - chunk(1, 0);
    if (sum != static_cast<double>(chunk.size() - 2)) return -1;
    crossed += static_cast<std::int64_t>(chunk.size() * sizeof(double));
  }
  return crossed;
}
TESSERA_TASK_VERSION(crossed_chunk_bytes, "1");

}  // namespace bench_tasks

namespace bench_tasks {

// A trivial simulation for stream throughput across processes: the cost measured is Tessera's. With
// pause_us (the restart benchmark) each set takes that long.
struct EchoSimulation {
  explicit EchoSimulation(const tessera::Config& config)
      : pause_us(config.get<std::int64_t>("pause_us", 0)) {}
  double run(double x) {
    if (pause_us > 0) std::this_thread::sleep_for(std::chrono::microseconds(pause_us));
    return x;
  }
  std::int64_t pause_us;
  static constexpr const char* version = "1";
};
TESSERA_SIMULATION(EchoSimulation, "bench_echo");

}  // namespace bench_tasks

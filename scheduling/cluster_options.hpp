// ClusterOptions: how a LocalCluster is sized (what tessera-node reads from its configuration, too).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "graph/stream_record.hpp"
#include "scheduling/scheduler_options.hpp"

namespace tessera {

struct ClusterOptions {
  // Worker count; each worker owns its own compute threads and operation actors. Default 1.
  std::uint32_t workers = 1;
  // Compute threads per worker: how many task functions one worker runs at once. Default: the cores.
  std::uint32_t threads_per_worker = 0;
  // Threads that handle the runtime's messages. Default: the cores (at least 2).
  std::uint32_t actor_threads = 0;
  SchedulerOptions scheduler{};
  // Where stream results are stored and results past the memory target are spilled (a RocksDB with a
  // column family for each). Empty: a temporary directory, removed with the cluster.
  std::string data_dir{};
  // Bytes of results each worker may hold in memory; 0: no limit. Past memory_target_fraction of it the
  // least recently used results spill to data_dir and come back when needed; when the process's resident
  // memory (above its size when the cluster started, against the sum of its workers' limits) passes
  // memory_pause_fraction, a worker starts no new task until it is back under. No worker is killed for
  // memory.
  std::uint64_t memory_limit = 0;
  double memory_target_fraction = 0.6;
  double memory_pause_fraction = 0.8;
  // Without a memory limit: freed memory up to this many bytes stays with the process's allocator for
  // the next graph instead of going back to the kernel (worker.keep_freed_memory; see
  // actors/allocator_policy.hpp). Process-wide, like malloc itself. 0: glibc's defaults. Default 1 GiB.
  std::uint64_t keep_freed_memory = 1ull << 30;
  // Where the simulation instances of a stream that does not say (StreamOptions::isolation) run.
  Isolation stream_isolation = Isolation::thread;
  // Python modules whose @tessera.task functions and @tessera.simulation classes this cluster runs by
  // name (files, absolute or relative to the working directory, or importable module names), as a node's
  // [plugins] python. Imported once when the cluster starts, to learn their names (a module that fails
  // to import is an error naming it); their code runs in the workers' interpreter processes.
  std::vector<std::string> python_modules{};
  // Registers the functions, simulation class and generator that run Python code a client sends
  // (python:call/N, python:class, python:generator); a node whose security.allow_client_code is off
  // does not.
  bool client_code = true;
  // The interpreter for them: empty for this build's ($TESSERA_PYTHON when set).
  std::string python_executable{};
  // The GPU devices (CUDA ordinals) workers hand to simulations that declare gpus. Empty: every device
  // this process finds. Worker i takes every `workers`-th of them from the i-th (a worker left without
  // one, when there are more workers than devices, shares device i mod count). The ordinals are not
  // checked against the driver (as CUDA_VISIBLE_DEVICES is not): a simulation using a wrong one fails.
  // Each in [0, kMaxGpuOrdinal], none twice.
  std::vector<int> gpus{};
  static constexpr int kMaxGpuOrdinal = 1023;
  // Serves the dashboard over HTTP at "host:port" (port 0: any free one), as tessera-node's [dashboard]
  // section does: pages /status, /tasks, /progress, /streams, /glm, their JSON under /api/, and /metrics.
  // The link is printed on stdout when the cluster starts (LocalCluster::dashboard_link()). Empty: none.
  std::string dashboard{};
  // A file whose first word the dashboard's data asks for (Authorization: Bearer TOKEN). Empty: none.
  std::string dashboard_token_file{};
};

}  // namespace tessera

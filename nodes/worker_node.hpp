// WorkerNode: the worker side of a worker process. It connects to the scheduler, registers one worker
// actor (the same actor an embedded cluster runs) and speaks for it: the scheduler's assignments,
// subscriptions and releases arrive over ZeroMQ and become the worker's messages; what its operation
// actors send the scheduler goes back the same way. Results for tasks on other workers go straight to
// those workers' processes (a peer server here receives theirs), never through the scheduler. It sends
// heartbeats, and if the scheduler declares it lost (or restarts) it starts afresh and registers again.
#pragma once

#include <caf/all.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "nodes/transport.hpp"
#include "scheduling/scheduler_options.hpp"
#include "storage/node_database.hpp"

namespace tessera {

struct WorkerNodeOptions {
  std::string scheduler;                     // the scheduler's address
  std::string listen = "tcp://127.0.0.1:0";  // where peers send this worker its inputs
  // worker.same_host_ipc: also a socket file, which peers on this host (same boot, user and namespaces)
  // dial instead of `listen`
  bool same_host_ipc = true;
  std::string name = "worker";
  std::uint32_t threads = 0;       // 0: the cores
  std::vector<int> gpus{};         // the devices it hands to simulations that declare gpus
  std::uint64_t memory_limit = 0;  // worker.memory_limit: past its target fraction, results spill
  double memory_target_fraction = 0.6;
  double memory_pause_fraction = 0.8;
  std::uint64_t keep_freed_memory = 1ull << 30;  // worker.keep_freed_memory (without a memory limit)
  IdleThreads idle_threads = IdleThreads::wait;  // scheduler.idle_threads
  // The node's database, where results spill (opened on the first spill). Empty: a temporary directory of
  // this worker's, removed with it.
  std::function<std::shared_ptr<NodeDatabase>()> open_database{};
  std::string runs_dir{};  // where program sets get working directories (empty: a temporary directory)
  std::optional<transport::CurveKeys> curve{};  // this worker's keys (CURVE on)
  std::string scheduler_public_key{};
  std::vector<std::string> authorized_keys{};  // peers accepted by this worker's peer server
  bool authorize_any = false;                  // with curve: any peer key (security.authorize_any)
  std::chrono::milliseconds heartbeat_interval{500};
  std::size_t max_message_bytes = transport::kDefaultMaxFrameBytes;  // limits.max_message_size
  transport::LogFunction log{};                                      // default: stderr
};

class WorkerNode {
 public:
  // Throws transport::ConnectionRefused when the scheduler refuses or does not answer the first time.
  explicit WorkerNode(WorkerNodeOptions options);
  ~WorkerNode();
  WorkerNode(const WorkerNode&) = delete;
  WorkerNode& operator=(const WorkerNode&) = delete;

  // Where peers reach this worker (the port resolved).
  const std::string& endpoint() const;
  // The id the scheduler gave this worker; waits up to `timeout` for it (nullopt if none came).
  std::optional<std::uint32_t> wait_for_id(std::chrono::milliseconds timeout) const;

 private:
  struct State;
  std::shared_ptr<State> state_;
};

}  // namespace tessera

// EmbeddedCluster: the engine of a cluster in this process: a CAF actor system with the scheduler actor
// and `workers` worker actors of `threads_per_worker` compute threads each. Users reach it through
// tessera::LocalCluster (client/tessera/local_cluster.hpp), which keeps CAF out of the public headers;
// tessera-node runs one directly. Workers can be added or retired while work runs.
#pragma once

#include <caf/all.hpp>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "actors/cluster_backend.hpp"
#include "actors/messages.hpp"
#include "actors/result_sink.hpp"
#include "actors/scheduler_actor.hpp"
#include "actors/stream_actor.hpp"
#include "monitor/cluster_monitor.hpp"
#include "scheduling/cluster_options.hpp"
#include "scheduling/status.hpp"
#include "storage/checkpoint_store.hpp"

namespace tessera {

// Throws std::invalid_argument naming a memory option out of range (a fraction outside (0, 1]).
void check_memory_options(const ClusterOptions& options);

class EmbeddedCluster {
 public:
  explicit EmbeddedCluster(ClusterOptions options = {});
  ~EmbeddedCluster();
  EmbeddedCluster(const EmbeddedCluster&) = delete;
  EmbeddedCluster& operator=(const EmbeddedCluster&) = delete;

  // Adds workers, or retires the newest ones (their results move to the others first). Returns at once;
  // wait_for_workers() waits until retirements have completed.
  void scale(std::uint32_t workers);
  // Workers that take new tasks (retiring ones excluded).
  std::uint32_t workers() const;
  // Waits until exactly `workers` workers are active and none is still retiring.
  bool wait_for_workers(std::uint32_t workers, std::chrono::milliseconds timeout = std::chrono::seconds(30));
  // The scheduler's answers, each within `timeout` (a std::runtime_error past it, naming what was asked).
  SchedulerStatus status(std::chrono::milliseconds timeout = std::chrono::hours(24)) const;
  std::vector<WorkerInfo> worker_list(std::chrono::milliseconds timeout) const;
  std::vector<FunctionProgress> progress(std::chrono::milliseconds timeout) const;
  std::uint32_t threads_per_worker() const { return options_.threads_per_worker; }
  const ClusterOptions& options() const { return options_; }
  // What the dashboard shows besides the status: task runs, streams, GLM fits.
  std::shared_ptr<const monitor::ClusterMonitor> monitor() const { return monitor_; }
  // From now on the scheduler records each task run for the task stream (a dashboard asks for it).
  void record_task_runs() { monitor_->tasks.enable(); }

  // Where clients of this cluster send their work.
  std::shared_ptr<ClusterBackend> backend() const;
  caf::actor scheduler() const { return scheduler_; }
  std::weak_ptr<const SchedulerLink> link() const { return link_; }
  caf::actor_system& system() { return *system_; }
  // The result store, opened on first use (in data_dir).
  std::shared_ptr<ResultStore> store();
  // The node's database (stream results, spilled chunks, checkpoints), opened on first use.
  std::shared_ptr<NodeDatabase> database();
  // The checkpoints stored in it, opened on first use (at start when data_dir is set: it may hold some).
  std::shared_ptr<CheckpointStore> checkpoints();
  // Whether checkpoints may be stored now (never opens the store: one never opened holds none).
  bool may_hold_checkpoints();
  // Opens a stream on this cluster: its id in the store and its stream actor.
  std::pair<std::uint64_t, caf::actor> open_stream(const StreamSettings& settings,
                                                   std::shared_ptr<StreamSink> sink);
  // Resumes every stream the store has that did not finish (a node restarted from its data_dir): each
  // runs its sets written ahead and not answered, and delivers to `sink_for(id)` until a client
  // attaches. Returns their ids and actors. A stream `refuse` gives a reason for is not resumed (it is
  // logged, and stays as it was in the store).
  std::vector<std::pair<std::uint64_t, caf::actor>> resume_streams(
      const std::function<std::shared_ptr<StreamSink>(std::uint64_t)>& sink_for,
      const std::function<std::optional<std::string>(const StreamSettings&)>& refuse = {});
  // A client resumes stream `id` (tessera stream push --resume): incomplete (closed before its input
  // ended, or its client lost), pushed from a checked input with `input`'s digest. A stream still
  // running takes the new sink; a finished one is started again from the store. Throws SubmissionError
  // naming why it cannot be (no such stream, an ensemble, another input, nothing left to push).
  ReopenedStream reopen_stream(std::uint64_t id, const StreamInput& input, std::shared_ptr<StreamSink> sink);
  // The actor of a stream that has not finished; null when there is none (finished, or never opened).
  caf::actor stream_actor(std::uint64_t id) const;

 private:
  ClusterOptions options_;
  std::shared_ptr<monitor::ClusterMonitor> monitor_ = std::make_shared<monitor::ClusterMonitor>();
  std::unique_ptr<caf::actor_system_config> config_;
  std::unique_ptr<caf::actor_system> system_;
  caf::actor scheduler_;
  // Where the workers of this process find each other.
  std::shared_ptr<WorkerDirectory> directory_ = std::make_shared<WorkerDirectory>();
  std::shared_ptr<SchedulerLink> link_;
  mutable std::mutex mutex_;
  std::vector<std::uint32_t> active_;  // worker ids in the order they joined
  std::mutex store_mutex_;
  std::shared_ptr<NodeDatabase> database_;
  std::shared_ptr<ResultStore> store_;
  std::shared_ptr<CheckpointStore> checkpoints_;
  std::filesystem::path temporary_store_;  // removed at destruction when the store lives there
  // Recursive: a stream that ends while it is spawned (a resume that fails) unregisters itself at once.
  mutable std::recursive_mutex streams_mutex_;
  std::unordered_map<std::uint64_t, caf::actor> streams_;  // running, not finished

  caf::actor spawn_stream(std::uint64_t id, StreamSettings settings, std::shared_ptr<StreamSink> sink,
                          bool resumed);
};

}  // namespace tessera

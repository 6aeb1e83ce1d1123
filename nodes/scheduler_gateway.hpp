// SchedulerGateway: serves remote clients and worker processes for a scheduler actor in this process.
// Clients' submissions, releases and cancellations become the scheduler's own messages; the results they
// want go back over the connection. Each client's operation ids get numbers of this process, so clients
// never collide. Each worker process gets a proxy actor the scheduler treats as a worker; a worker that
// stops sending heartbeats is declared lost (its tasks are recomputed), and a client that goes silent
// has its futures released after a grace period.
#pragma once

#include <caf/all.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "actors/cluster_backend.hpp"
#include "actors/result_sink.hpp"
#include "actors/stream_actor.hpp"
#include "nodes/transport.hpp"
#include "storage/checkpoint_store.hpp"

namespace tessera {

// What one peer may ask of the gateway, checked before anything is allocated for a request; what
// exceeds a limit is refused with an error naming it (the node's [limits] config keys).
struct GatewayLimits {
  std::uint32_t max_slots_per_submission =
      1u << 20;                                   // limits.max_slots_per_submission (and tasks per operation)
  std::uint64_t max_slots_per_client = 1u << 22;  // limits.max_slots_per_client: held at once
  std::uint64_t max_slots_per_node = 1u << 24;    // limits.max_slots_per_node: by all clients together
  std::uint32_t max_histogram_bins = 10000;       // limits.max_histogram_bins
  std::uint64_t max_answer_bytes = std::uint64_t{64}
                                   << 20;   // limits.max_answer_bytes: larger answers are paged
  std::uint32_t max_worker_threads = 1024;  // limits.max_worker_threads: a worker's claim
  std::uint64_t max_worker_memory = std::uint64_t{16} << 40;  // limits.max_worker_memory: a worker's claim
  std::uint32_t max_queries_per_client = 4;    // results queries one client may have waiting at once
  std::uint32_t max_streams_per_client = 256;  // limits.max_streams_per_client: open at once
  std::uint32_t max_clients = 4096;            // limits.max_clients: connected at once
  // Non-empty: submissions of Python code (python:call/N) are refused with this reason
  // (security.allow_client_code off).
  std::string client_code_refused{};
};

struct GatewayOptions {
  // A worker silent this long is lost. Workers send a heartbeat several times within it.
  std::chrono::milliseconds worker_timeout{3000};
  // A client silent this long is gone: what its futures held is released.
  std::chrono::milliseconds client_grace{30000};
  // Streams of parameter sets: opens one on this process's cluster (null: streams are refused).
  std::function<std::pair<std::uint64_t, caf::actor>(const StreamSettings&, std::shared_ptr<StreamSink>)>
      open_stream{};
  // A client resumes an incomplete stream (EmbeddedCluster::reopen_stream; null: resumes are refused).
  std::function<ReopenedStream(std::uint64_t, const StreamInput&, std::shared_ptr<StreamSink>)>
      reopen_stream{};
  // The store that stream results are written to, for queries.
  std::function<std::shared_ptr<ResultStore>()> store{};
  // The node's checkpoints, for `tessera checkpoints list|drop` (null: the node keeps none).
  std::function<std::shared_ptr<CheckpointStore>()> checkpoints{};
  // The actor of a running stream (null when it finished), for a client that reattaches after a reconnect.
  std::function<caf::actor(std::uint64_t)> stream_actor{};
  // Streams the node resumed at its start: closed after client_grace unless a client attaches.
  std::vector<std::pair<std::uint64_t, caf::actor>> resumed{};
  GatewayLimits limits{};
};

class SchedulerGateway {
 public:
  SchedulerGateway(caf::actor scheduler, std::weak_ptr<const SchedulerLink> link,
                   transport::ServerOptions options, GatewayOptions gateway = {});
  ~SchedulerGateway();
  SchedulerGateway(const SchedulerGateway&) = delete;
  SchedulerGateway& operator=(const SchedulerGateway&) = delete;

  const std::string& endpoint() const;
  std::uint64_t dropped() const;
  // Clients connected now (from any thread).
  std::uint32_t clients() const;

 private:
  struct State;
  std::shared_ptr<State> state_;
  std::shared_ptr<transport::Server> server_;
};

}  // namespace tessera

// The stream actor: one per open stream, beside the scheduler. It takes the client's parameter sets,
// writes them ahead to the node's store (one sync for all pushes waiting in its mailbox, after which the
// client is told they are accepted), hands them to the workers' simulation pools in jobs sized by the
// measured simulation time, writes each result to the node's store as it arrives (synced: a result is
// delivered only once durable, and an id already stored is never stored again), then passes it to the
// client's sink, which gives the producer credit back. When the stream is closed and every parameter set
// answered, it records the stream as closed and finishes. It answers the scheduler's progress watchdog with
// its jobs in flight per worker; the scheduler decides which worker stalled and tells it, as for a lost
// worker. A node that restarts from the same store resumes every stream not finished: the sets written ahead
// and not answered run again, the answered ones never do, and a client that reconnects attaches again.
#pragma once

#include <caf/all.hpp>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "actors/stream_sink.hpp"
#include "graph/simulation.hpp"
#include "graph/stream_settings.hpp"
#include "monitor/stream_board.hpp"
#include "monitor/task_stream_log.hpp"
#include "storage/result_store.hpp"

namespace tessera {

struct StreamActorArgs {
  std::uint64_t id = 0;
  StreamSettings settings;
  std::shared_ptr<ResultStore> store;
  std::shared_ptr<StreamSink> sink;
  caf::actor scheduler;
  // Resumed after a restart: the store has its record and its sets written ahead, and it waits for
  // workers instead of failing when there are none yet.
  bool resumed = false;
  // Called by the actor once it has finished, before it quits.
  std::function<void()> on_finished{};
  // Its figures on the dashboard (none: not shown).
  std::shared_ptr<monitor::StreamGauge> gauge{};
  // Where its simulation jobs are counted as work (rates, per worker) and drawn in the task stream.
  std::shared_ptr<monitor::TaskStreamLog> runs{};
};

caf::actor spawn_stream_actor(caf::actor_system& system, StreamActorArgs args);

}  // namespace tessera

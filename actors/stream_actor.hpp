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
#include "monitor/stream_board.hpp"
#include "storage/result_store.hpp"

namespace tessera {

struct StreamSettings {
  std::string simulation;
  std::shared_ptr<const Config> config = std::make_shared<Config>();
  std::uint32_t pool_size = 0;  // simulation actors per worker; 0: one per compute thread
  // Parameter sets accepted and not answered at once, enforced here whatever the client does; 0: the
  // client library's default.
  std::uint64_t max_in_flight = 0;
  static constexpr std::uint64_t kDefaultMaxInFlight = 4096;
  // Unset: the cluster's default (EmbeddedCluster resolves it when the stream opens).
  std::optional<Isolation> isolation{};
  double timeout_seconds = 0;  // 0: none; at most kMaxTimeoutSeconds
  std::uint32_t retries = 0;   // at most kMaxRetries
  static constexpr double kMaxTimeoutSeconds = 30.0 * 24 * 3600;
  static constexpr std::uint32_t kMaxRetries = 100;
  // What the parameters are called, for the header of exports (empty: unnamed).
  std::vector<std::string> parameter_names{};
  static constexpr std::size_t kMaxParameterNames = 4096;
  static constexpr std::size_t kMaxParameterNameBytes = 256;
  // An ensemble: the generator registered under this name proposes the sets (empty: the client pushes
  // them), built from generator_config, at most `budget` of them (in [1, kMaxBudget]).
  std::string generator{};
  std::shared_ptr<const Config> generator_config = std::make_shared<Config>();
  std::uint64_t budget = 0;
  static constexpr std::uint64_t kMaxBudget = 1'000'000'000;
  // What is wrong with these settings (naming the setting), or empty.
  std::string check() const;
  // More would be refused: a peer's stream must not make workers spawn without end.
  static constexpr std::uint32_t kMaxPoolSize = 1024;
};

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
};

caf::actor spawn_stream_actor(caf::actor_system& system, StreamActorArgs args);

}  // namespace tessera

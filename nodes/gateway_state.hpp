// What the scheduler's gateway knows of its peers, shared by its sessions (client, stream, query, worker:
// nodes/*_session.hpp). Touched on the gateway's I/O thread only, except where a member says otherwise.
#pragma once

#include <atomic>
#include <chrono>
#include <limits>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>

#include "nodes/query_executor.hpp"
#include "nodes/remote_sinks.hpp"
#include "nodes/scheduler_gateway.hpp"

namespace tessera {

using GatewayClock = std::chrono::steady_clock;

// One connected client.
struct GatewayClient {
  std::string name;
  // The token its connection was welcomed with: a connection that presents it again (the client
  // reconnected) takes this entry over, with its tables, operations and streams.
  std::string session;
  std::unordered_map<OpId, OpId> ids;  // the client's operation ids -> this process's
  std::unordered_map<std::uint64_t, std::shared_ptr<RemoteSink>> sinks;
  GatewayClock::time_point last_seen = GatewayClock::now();
  std::unordered_map<std::uint64_t, caf::actor> streams;  // its open streams
  struct Pushed {
    std::shared_ptr<RemoteStreamSink> sink;
    std::uint64_t sets = 0;
  };
  std::unordered_map<std::uint64_t, Pushed> pushed;  // per open stream, against limits.max_slots_per_client
  std::uint64_t slots_held = 0;                      // against limits.max_slots_per_client
  // Its queries waiting or being answered (the executor's threads count them down).
  std::shared_ptr<std::atomic<std::uint32_t>> queries = std::make_shared<std::atomic<std::uint32_t>>(0);
};

// Worker connections whose registration the scheduler ended (a stalled or retired worker was sent SHUTDOWN),
// told by their proxies on actor threads and forgotten on the I/O thread: a peer that ignores SHUTDOWN and
// goes on heartbeating must say hello again rather than hold its connection's place for ever.
struct EndedWorkers {
  std::mutex mutex;
  std::vector<std::string> peer_ids;
};

// One worker process. Its registration is asked of the scheduler without waiting (a busy scheduler must
// not hold up the I/O thread): the scheduler stores the id it gives before the worker is sent any task.
struct WorkerPeer {
  static constexpr std::uint32_t kUnassigned = std::numeric_limits<std::uint32_t>::max();
  std::shared_ptr<std::atomic<std::uint32_t>> assigned =
      std::make_shared<std::atomic<std::uint32_t>>(kUnassigned);
  std::string name;
  caf::actor proxy;
  GatewayClock::time_point last_seen = GatewayClock::now();
  GatewayClock::time_point joined_at = GatewayClock::now();
  std::string joining;  // the rest of its "joined as worker N" line, until tick() has logged it

  std::uint32_t id() const { return assigned->load(std::memory_order_acquire); }
  bool registered() const { return id() != kUnassigned; }
};

struct GatewayState {
  static constexpr std::chrono::milliseconds kTrimDelay{1000};
  // Released slots worth a trim (small releases are the steady state; their memory is reused).
  static constexpr std::uint64_t kTrimAfterSlots = 1u << 16;
  caf::actor scheduler;
  std::string name;
  GatewayOptions options;
  std::weak_ptr<const SchedulerLink> link;
  std::weak_ptr<transport::Server> server;
  transport::LogFunction log;
  std::unordered_map<std::string, GatewayClient> clients;
  std::uint64_t slots_held = 0;  // by every client together, against limits.max_slots_per_node
  // When memory that clients held is next given back to the system (after clients left); max: nothing to.
  GatewayClock::time_point trim_at = GatewayClock::time_point::max();
  std::uint64_t released_since_trim = 0;
  int trims_left = 0;
  // Memory that clients held was freed, or is being: give it back to the system soon.
  void trim_soon() {
    trim_at = std::min(trim_at, GatewayClock::now() + kTrimDelay);
    trims_left = 3;
  }
  std::atomic<std::uint32_t> client_count{0};  // clients.size(), for other threads (the dashboard)
  std::unordered_map<std::string, WorkerPeer> workers;
  std::shared_ptr<EndedWorkers> ended_workers = std::make_shared<EndedWorkers>();
  std::unordered_map<std::uint64_t, caf::actor> streams;  // every open stream, for workers' answers
  // Streams resumed after a restart that no client has attached yet, since when: closed after
  // client_grace, as a silent client's are.
  std::unordered_map<std::uint64_t, std::pair<caf::actor, GatewayClock::time_point>> orphans;
  std::unique_ptr<QueryExecutor> queries;

  // To one peer, if the server still runs.
  void send(const std::string& peer, transport::Outgoing& message) const {
    if (auto target = server.lock()) target->send(peer, message);
  }
  // A client that left, or went silent past client_grace: what it held is released, its streams closed
  // (what it pushed still runs and is stored).
  void let_go(GatewayClient& client);
};

}  // namespace tessera

// The messages between the client, the scheduler actor, worker actors and operation actors inside one
// process. Payloads travel by value through CAF mailboxes; Values inside them are references, not copies.
#pragma once

#include <atomic>
#include <caf/all.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "actors/stream_sink.hpp"
#include "graph/errors.hpp"
#include "graph/operation.hpp"
#include "graph/program_spec.hpp"
#include "graph/simulation.hpp"
#include "graph/task_state.hpp"
#include "graph/watch.hpp"
#include "scheduling/status.hpp"
#include "scheduling/task_messages.hpp"

namespace tessera {

// Worker -> scheduler: who a worker is; `address` and `public_key` are how its peers reach it.
struct WorkerRegistration {
  caf::actor actor;
  std::uint32_t threads = 1;
  std::string name{};
  std::string address{};
  std::string public_key{};
  std::uint64_t memory_limit = 0;
  std::string local_address{};  // a socket file peers on its host dial instead of `address`
  std::string host{};           // this_host_identity() of its process: who counts as on its host
  std::string origin{};         // "HOSTNAME-PID" of its process (scheduling::WorkerDescription::origin)
  // Set by the scheduler before any task goes out to the worker: a remote worker's gateway reads the id
  // from it rather than wait on the I/O thread for the reply (null: only the reply carries the id).
  std::shared_ptr<std::atomic<std::uint32_t>> assigned{};
};

// ---- Streams of parameter sets ----

struct GeneratorCheckpoint;  // storage/result_store.hpp

// Client -> stream actor: parameter sets with consecutive ids from first_id, their priorities and their
// own timeouts in seconds (each aligned with them; empty while every one is 0: a timeout of 0 is the
// stream's).
struct StreamBatch {
  std::uint64_t first_id = 0;
  std::vector<Value> parameters;
  std::vector<double> priorities{};
  std::vector<double> timeouts{};
  // An ensemble's push: its generator's state, written with these sets.
  std::shared_ptr<const GeneratorCheckpoint> checkpoint{};
};

// Where a cancellation's answer goes, once: a waiting client thread, or a client connection of a
// scheduler node. A request dropped unanswered (its stream finished first) answers that nothing was
// cancelled, so no one waits for an answer that cannot come.
class CancelReply {
 public:
  using Deliver = std::function<void(CancelledSets, std::string error)>;
  explicit CancelReply(Deliver deliver) : deliver_(std::move(deliver)) {}
  ~CancelReply() {
    if (deliver_) deliver_({}, {});
  }
  CancelReply(const CancelReply&) = delete;
  CancelReply& operator=(const CancelReply&) = delete;
  void operator()(CancelledSets counts, std::string error) {
    auto deliver = std::move(deliver_);
    deliver_ = nullptr;
    if (deliver) deliver(counts, std::move(error));
  }

 private:
  Deliver deliver_;
};

// Client -> stream actor: cancel the sets accepted and not yet answered that are in `ranges` (empty: any
// id) and match `where` (a ResultFilter over id and parameters; empty: any); one of the two must say
// something. `reply` gets how many were cancelled, or why none could be.
// `whole`: the stream itself, its every accepted set and its pusher's further pushes (the pusher is told
// with the stream's end); ranges and where are then empty.
struct StreamCancel {
  std::vector<IdRange> ranges;
  std::string where;
  std::shared_ptr<CancelReply> reply;
  bool whole = false;
};

// Stream actor -> worker (-> its simulation service and pool): these sets of the stream are answered as
// cancelled; do not run them, and stop (process isolation) or give up (thread isolation) the ones running.
struct SimulationCancel {
  std::uint64_t stream_id = 0;
  std::vector<std::uint64_t> ids;
};

// Stream actor -> worker (-> its simulation service): what every job of a stream shares, once per worker
// before the stream's first job there (and simulation_end_atom with the stream id after its last).
struct SimulationSetup {
  std::uint64_t stream_id = 0;
  std::string simulation;
  std::shared_ptr<const Config> config;
  std::uint32_t pool_size = 0;  // simulation actors per worker; 0: one per compute thread
  Isolation isolation = Isolation::thread;
  double timeout_seconds = 0;  // per set; 0: none
  // A program simulation's declaration, as the scheduler has it: what the worker runs (never its own).
  std::shared_ptr<const ProgramSpec> program{};
  // The scheduler's definition of the simulation (graph/definition_identity.hpp): a worker whose own
  // differs runs none of the stream's sets, which go to the other workers.
  std::string identity{};
};

// Stream actor -> worker (-> its simulation service): run these parameter sets of a stream set up there,
// answer `stream`.
struct SimulationJob {
  caf::actor stream;
  std::uint64_t stream_id = 0;
  std::vector<std::uint64_t> ids;
  std::vector<Value> parameters;  // aligned with ids
  // Each set's timeout in seconds (0: none), aligned with ids; empty: every one has the stream's.
  std::vector<double> timeouts{};
};

// Simulation actor -> stream actor: what a job gave, one record per id (results or errors).
struct SimulationOutcome {
  std::uint32_t worker = 0;
  std::uint64_t stream_id = 0;
  std::vector<StreamRecord> records;
  double busy_seconds = 0;
  // Sets of the job that were not run because its simulation actor gave it up (a timeout or a crash
  // before them): they go back to the stream's queue, and the attempt does not count.
  std::vector<std::uint64_t> unrun{};
  // Set when this worker cannot run the stream's simulation at all (SimulationUnavailable): why, naming the
  // worker. The set that found it is among `unrun`; the stream sends the worker no more sets.
  std::string unavailable{};
};

// Client (the gateway, after a reconnect) -> stream actor: results now go to `sink`; the stored results of
// `unanswered` (ids the client pushed and has no result for) are delivered again, the others when they
// come.
struct StreamAttach {
  std::shared_ptr<StreamSink> sink;
  std::vector<std::uint64_t> unanswered;
  // An ensemble's client, which cannot know the ids its generator proposed while it was away: every
  // stored result from this id on is delivered again too (its sink takes each id once).
  std::uint64_t resend_from = ~std::uint64_t{0};
};

// Gateway -> stream actor: a client resumes this incomplete stream (tessera stream push --resume): its
// results go to `sink` now, and it pushes on from the ids the stream has accepted.
struct StreamReopen {
  std::shared_ptr<StreamSink> sink;
  // Set by the asker when it stopped waiting: the stream then ignores the request (a late reopen would
  // hand the stream to a client that was told it failed).
  std::shared_ptr<std::atomic<bool>> given_up = std::make_shared<std::atomic<bool>>(false);
};

// Its answer: the ids it accepted (the client pushes on from there), or protocols::kNotReopened when it
// has finished; the accepted sets not answered yet (the client's sink takes them over) and the stream's
// max_in_flight.
struct StreamReopened {
  std::uint64_t accepted = 0;
  std::vector<std::uint64_t> unanswered{};
  std::uint64_t max_in_flight = 0;
};

// Scheduler -> stream actor: a worker that takes simulation jobs.
struct StreamWorker {
  std::uint32_t id = 0;
  caf::actor actor;
  std::uint32_t threads = 1;
  std::string name{};  // what records say ran their sets
};

// Atoms (CAF 0.17: at most 10 characters).
using submit_atom = caf::atom_constant<caf::atom("submit")>;
using release_atom = caf::atom_constant<caf::atom("release")>;
using assign_atom = caf::atom_constant<caf::atom("assign")>;
using subscribe_atom = caf::atom_constant<caf::atom("subscribe")>;
using input_atom = caf::atom_constant<caf::atom("input")>;
using drop_atom = caf::atom_constant<caf::atom("drop")>;
using cancel_atom = caf::atom_constant<caf::atom("cancel")>;        // client -> scheduler: CancelRequest
using cancel_slots_atom = caf::atom_constant<caf::atom("cslots")>;  // scheduler -> worker: SlotBatch
using forget_atom = caf::atom_constant<caf::atom("forget")>;
using done_atom = caf::atom_constant<caf::atom("done")>;
using ran_atom = caf::atom_constant<caf::atom("ran")>;
using register_atom = caf::atom_constant<caf::atom("register")>;
using welcome_atom = caf::atom_constant<caf::atom("welcome")>;
using retire_atom = caf::atom_constant<caf::atom("retire")>;
using shutdown_atom = caf::atom_constant<caf::atom("shutdown")>;
using status_atom = caf::atom_constant<caf::atom("status")>;
using progress_atom = caf::atom_constant<caf::atom("progress")>;  // -> scheduler: tasks by state per function
using steal_atom = caf::atom_constant<caf::atom("steal")>;
using stolen_atom = caf::atom_constant<caf::atom("stolen")>;
using lost_atom = caf::atom_constant<caf::atom("lost")>;  // -> scheduler: declare a worker lost
using peer_atom = caf::atom_constant<caf::atom("peer")>;
using workers_atom = caf::atom_constant<caf::atom("workers")>;
using stream_push_atom = caf::atom_constant<caf::atom("spush")>;
using stream_close_atom = caf::atom_constant<caf::atom("sclose")>;
using stream_sync_atom = caf::atom_constant<caf::atom("ssync")>;  // stream -> itself: accept what is written
using stream_attach_atom = caf::atom_constant<caf::atom("sattach")>;  // -> stream: StreamAttach
using stream_cancel_atom = caf::atom_constant<caf::atom("scancel")>;  // -> stream: StreamCancel
// -> stream: closed because its client is gone (why, for its record), not by the client itself
using stream_abandon_atom = caf::atom_constant<caf::atom("sabandon")>;
using stream_reopen_atom = caf::atom_constant<caf::atom("sreopen")>;        // -> stream: StreamReopen
using simulation_cancel_atom = caf::atom_constant<caf::atom("simcancel")>;  // -> worker: SimulationCancel
using simulate_atom = caf::atom_constant<caf::atom("simulate")>;
using simulated_atom = caf::atom_constant<caf::atom("simulated")>;
using simulation_setup_atom = caf::atom_constant<caf::atom("simsetup")>;
using simulation_end_atom = caf::atom_constant<caf::atom("simend")>;
// simulation actor -> itself: has the set it runs passed the stream's timeout?
using simulation_timeout_atom = caf::atom_constant<caf::atom("simtimeout")>;
using stream_workers_atom = caf::atom_constant<caf::atom("sworkers")>;  // stream -> scheduler: who takes jobs
using worker_joined_atom = caf::atom_constant<caf::atom("wjoined")>;    // scheduler -> stream: StreamWorker
using worker_left_atom = caf::atom_constant<caf::atom("wleft")>;        // scheduler -> stream: worker id
using idle_atom = caf::atom_constant<caf::atom("idle")>;
// stream -> its generator: how many sets it can run at once; results now durable; no more sets wanted
using generator_slots_atom = caf::atom_constant<caf::atom("genslots")>;
using generator_tell_atom = caf::atom_constant<caf::atom("gentell")>;
using generator_stop_atom = caf::atom_constant<caf::atom("genstop")>;
using generator_end_atom = caf::atom_constant<caf::atom("genend")>;
// generator -> its stream: it failed (the stream ends with this error once what it accepted is answered)
using generator_failed_atom = caf::atom_constant<caf::atom("genfailed")>;
using watchdog_atom = caf::atom_constant<caf::atom("watchdog")>;  // scheduler -> itself: check progress
// scheduler -> stream: its simulation jobs in flight per worker, and what each answered since last asked
using stream_progress_atom = caf::atom_constant<caf::atom("sprogress")>;
using memory_atom = caf::atom_constant<caf::atom("memory")>;       // worker -> scheduler: WorkerMemory
using results_lost_atom = caf::atom_constant<caf::atom("rlost")>;  // worker -> scheduler: LostInputs
using spill_atom = caf::atom_constant<caf::atom("spill")>;         // -> chunk store actor: work to do
using tick_atom = caf::atom_constant<caf::atom("tick")>;  // chunk store actor -> itself: watch memory
// scheduler -> its checkpoint writer: results to store, then deliveries to hand over; and the answer
using checkpoint_write_atom = caf::atom_constant<caf::atom("ckwrite")>;
using checkpoint_written_atom = caf::atom_constant<caf::atom("ckwritten")>;

}  // namespace tessera

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tessera::Submission)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tessera::AssignBatch)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tessera::AssignRun)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tessera::SubscribeBatch)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tessera::InputBatch)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tessera::SlotBatch)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tessera::DoneBatch)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tessera::SchedulerStatus)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(std::vector<tessera::FunctionProgress>)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tessera::StolenBatch)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tessera::LostInputs)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tessera::StealRequest)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tessera::CancelRequest)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tessera::WorkerRegistration)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tessera::StreamAttach)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tessera::StreamReopen)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tessera::StreamReopened)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tessera::PeerNotice)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tessera::WorkerInfo)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tessera::WorkerMemory)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(std::vector<tessera::WorkerInfo>)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tessera::StreamBatch)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tessera::SimulationJob)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tessera::SimulationSetup)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tessera::StreamCancel)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tessera::SimulationCancel)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tessera::SimulationOutcome)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(std::vector<tessera::StreamWorker>)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tessera::StreamWorker)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(std::shared_ptr<tessera::ResultSink>)

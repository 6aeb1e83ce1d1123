// The table of every message kind that crosses a process boundary, declared once: its Envelope field,
// the name logs use, the directions it may travel in (so who may send it to whom), and — for the kinds
// that go between an actor and a connection — the actor message (atom and payload) it carries. The
// names in logs, the sender checks of the scheduler's gateway, of worker processes and of clients, the
// forwarding proxies and the dispatch of received messages to actors are all made from this table
// (nodes/wire_routes.hpp); adding a message is its Cap'n Proto field, one row here, and its handler.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "messages/protocol.capnp.h"
#include "messages/wire_codec.hpp"

namespace tessera::wire {

// Who sends to whom.
enum Direction : std::uint8_t {
  kClientToScheduler = 1 << 0,
  kSchedulerToClient = 1 << 1,
  kWorkerToScheduler = 1 << 2,
  kSchedulerToWorker = 1 << 3,
  kWorkerToWorker = 1 << 4,
};
inline constexpr std::uint8_t kToServer = kClientToScheduler | kWorkerToScheduler | kWorkerToWorker;
inline constexpr std::uint8_t kFromServer = kSchedulerToClient | kSchedulerToWorker | kWorkerToWorker;

// For rows that no actor message carries (the connection's own handshake, the client protocol, which
// the gateway and the client library handle themselves).
struct no_atom {};
struct NoPayload {};

// What bounds the work and memory a message costs its receiver, checked before anything is allocated
// for it. Every row declares one.
enum class Cost : std::uint8_t {
  constant,  // fixed size: no count in it makes the receiver allocate
  frame,     // linear in its bytes, each frame bounded by limits.max_message_size (kDefaultMaxFrameBytes),
             // an attachment past kAttachmentPieceBytes in pieces;
             // from a scheduler or worker the receiver joined, or a client's own data
  hello,     // a peer's claims: a name of at most kMaxPeerNameBytes, addresses of at most
             // kMaxPeerAddressBytes, a worker's threads and memory within limits.max_worker_threads and
             // limits.max_worker_memory
  slots,     // result slots and tasks: limits.max_slots_per_submission and limits.max_slots_per_client
  query,     // histogram bins (limits.max_histogram_bins), answers paged at limits.max_answer_bytes,
             // limits.max_queries_per_client waiting; answered off the I/O thread
  stream,    // a stream's pool size (StreamSettings::kMaxPoolSize), its parameter sets pushed ahead of their
             // results (its max_in_flight, enforced by the stream actor, and limits.max_slots_per_client),
             // the ids a reattaching client lists (limits.max_slots_per_client), open streams per client
             // (limits.max_streams_per_client)
};

// X(KIND, "log name", directions, cost, atom, payload): KIND names wire::Envelope::KIND.
#define TESSERA_WIRE_MESSAGES(X)                                                                             \
  X(HELLO, "hello", kToServer, Cost::hello, no_atom, NoPayload)                                              \
  X(WELCOME, "welcome", kFromServer, Cost::constant, no_atom, NoPayload)                                     \
  X(REFUSE, "refuse", kFromServer, Cost::frame, no_atom, NoPayload)                                          \
  X(HEARTBEAT, "heartbeat", kToServer | kSchedulerToClient, Cost::constant, no_atom, NoPayload)              \
  X(ERROR, "error", kSchedulerToClient | kSchedulerToWorker, Cost::frame, no_atom, NoPayload)                \
  X(VALUE, "value", kClientToScheduler | kSchedulerToClient, Cost::frame, no_atom, NoPayload)                \
  X(SUBMIT, "submit", kClientToScheduler, Cost::slots, no_atom, NoPayload)                                   \
  X(RESULTS, "results", kSchedulerToClient, Cost::frame, no_atom, NoPayload)                                 \
  X(RELEASE, "release", kClientToScheduler, Cost::frame, no_atom, NoPayload)                                 \
  X(CANCEL, "cancel", kClientToScheduler, Cost::frame, no_atom, NoPayload)                                   \
  X(STATUS_REQUEST, "status request", kClientToScheduler, Cost::constant, no_atom, NoPayload)                \
  X(STATUS, "status", kSchedulerToClient, Cost::frame, no_atom, NoPayload)                                   \
  X(WORKER_WELCOME, "worker welcome", kSchedulerToWorker, Cost::constant, welcome_atom, std::uint32_t)       \
  X(PEER, "peer", kSchedulerToWorker, Cost::frame, peer_atom, PeerNotice)                                    \
  X(ASSIGN, "assign", kSchedulerToWorker, Cost::frame, assign_atom, AssignBatch)                             \
  X(SUBSCRIBE, "subscribe", kSchedulerToWorker, Cost::frame, subscribe_atom, SubscribeBatch)                 \
  X(DROP, "drop", kSchedulerToWorker, Cost::frame, drop_atom, SlotBatch)                                     \
  X(CANCEL_SLOTS, "cancel slots", kSchedulerToWorker, Cost::frame, cancel_slots_atom, SlotBatch)             \
  X(STEAL, "steal", kSchedulerToWorker, Cost::constant, steal_atom, StealRequest)                            \
  X(FORGET, "forget", kSchedulerToWorker, Cost::constant, forget_atom, OpId)                                 \
  X(SHUTDOWN, "shutdown", kSchedulerToWorker | kClientToScheduler, Cost::constant, shutdown_atom, NoPayload) \
  X(DONE, "done", kWorkerToScheduler, Cost::frame, done_atom, DoneBatch)                                     \
  X(STOLEN, "stolen", kWorkerToScheduler, Cost::frame, stolen_atom, StolenBatch)                             \
  X(INPUTS, "inputs", kWorkerToWorker, Cost::frame, input_atom, InputBatch)                                  \
  X(WORKERS_REQUEST, "workers request", kClientToScheduler, Cost::constant, no_atom, NoPayload)              \
  X(WORKERS, "workers", kSchedulerToClient, Cost::frame, no_atom, NoPayload)                                 \
  X(STREAM_OPEN, "stream open", kClientToScheduler, Cost::stream, no_atom, NoPayload)                        \
  X(STREAM_OPENED, "stream opened", kSchedulerToClient, Cost::constant, no_atom, NoPayload)                  \
  X(STREAM_PUSH, "stream push", kClientToScheduler, Cost::stream, no_atom, NoPayload)                        \
  X(STREAM_CLOSE, "stream close", kClientToScheduler, Cost::constant, no_atom, NoPayload)                    \
  X(STREAM_RESULTS, "stream results", kSchedulerToClient, Cost::frame, no_atom, NoPayload)                   \
  X(STREAM_FINISHED, "stream finished", kSchedulerToClient, Cost::frame, no_atom, NoPayload)                 \
  X(SIMULATE, "simulate", kSchedulerToWorker, Cost::frame, simulate_atom, SimulationJob)                     \
  X(SIMULATED, "simulated", kWorkerToScheduler, Cost::frame, simulated_atom, SimulationOutcome)              \
  X(RESULTS_QUERY, "results query", kClientToScheduler, Cost::query, no_atom, NoPayload)                     \
  X(RESULTS_ANSWER, "results answer", kSchedulerToClient, Cost::frame, no_atom, NoPayload)                   \
  X(SIMULATION_SETUP, "simulation setup", kSchedulerToWorker, Cost::frame, simulation_setup_atom,            \
    ::tessera::SimulationSetup)                                                                              \
  X(SIMULATION_END, "simulation end", kSchedulerToWorker, Cost::constant, simulation_end_atom,               \
    std::uint64_t)                                                                                           \
  X(GLM, "glm", kClientToScheduler | kSchedulerToClient | kWorkerToScheduler | kSchedulerToWorker,           \
    Cost::frame, glm_atom, ::tessera::GlmMessage)                                                            \
  X(MEMORY, "memory", kWorkerToScheduler, Cost::frame, memory_atom, ::tessera::WorkerMemory)                 \
  X(RESULTS_LOST, "results lost", kWorkerToScheduler, Cost::frame, results_lost_atom, ::tessera::LostInputs) \
  X(STREAM_ATTACH, "stream attach", kClientToScheduler, Cost::stream, no_atom, NoPayload)                    \
  X(STREAM_ACCEPTED, "stream accepted", kSchedulerToClient, Cost::constant, no_atom, NoPayload)              \
  X(CHECKPOINTS_REQUEST, "checkpoints request", kClientToScheduler, Cost::query, no_atom, NoPayload)         \
  X(CHECKPOINTS_ANSWER, "checkpoints answer", kSchedulerToClient, Cost::frame, no_atom, NoPayload)           \
  X(STREAMS_REQUEST, "streams request", kClientToScheduler, Cost::query, no_atom, NoPayload)                 \
  X(STREAMS_ANSWER, "streams answer", kSchedulerToClient, Cost::frame, no_atom, NoPayload)                   \
  X(STREAM_CANCEL, "stream cancel", kClientToScheduler, Cost::frame, no_atom, NoPayload)                     \
  X(STREAM_CANCELLED, "stream cancelled", kSchedulerToClient, Cost::constant, no_atom, NoPayload)            \
  X(SIMULATION_CANCEL, "simulation cancel", kSchedulerToWorker, Cost::frame, simulation_cancel_atom,         \
    ::tessera::SimulationCancel)                                                                             \
  X(SIMULATIONS_REQUEST, "simulations request", kClientToScheduler, Cost::constant, no_atom, NoPayload)      \
  X(SIMULATIONS, "simulations", kSchedulerToClient, Cost::frame, no_atom, NoPayload)                         \
  X(FUNCTIONS_REQUEST, "functions request", kClientToScheduler, Cost::constant, no_atom, NoPayload)          \
  X(FUNCTIONS, "functions", kSchedulerToClient, Cost::frame, no_atom, NoPayload)

struct KindInfo {
  Envelope::Which kind;
  std::string_view name;
  std::uint8_t directions;
  Cost cost;
};

#define TESSERA_WIRE_KIND_INFO(KIND, NAME, DIRECTIONS, COST, ATOM, PAYLOAD) \
  KindInfo{Envelope::KIND, NAME, static_cast<std::uint8_t>(DIRECTIONS), COST},
inline constexpr KindInfo kWireKinds[] = {TESSERA_WIRE_MESSAGES(TESSERA_WIRE_KIND_INFO)};
#undef TESSERA_WIRE_KIND_INFO

// The row of a kind; nullptr for one this build does not know (a newer peer's, or a hostile number).
constexpr const KindInfo* find_kind(Envelope::Which kind) {
  for (const auto& info : kWireKinds)
    if (info.kind == kind) return &info;
  return nullptr;
}

// "done", or "message kind 57" for one not in the table.
std::string kind_name(Envelope::Which kind);

// Throws WireError naming the kind and the direction when `kind` may not travel that way, e.g. "a
// worker may not send 'submit' to the scheduler".
void check_direction(Envelope::Which kind, Direction direction);

// The direction of a message from a peer of role `sender` to a server of role `server` (a scheduler, or
// a worker serving its peers); throws WireError when nothing may travel that way.
Direction direction_between(Role sender, Role server);

}  // namespace tessera::wire

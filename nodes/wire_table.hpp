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

// X(KIND, "log name", directions, atom, payload): KIND names wire::Envelope::KIND.
#define TESSERA_WIRE_MESSAGES(X)                                                                             \
  X(HELLO, "hello", kToServer, no_atom, NoPayload)                                                           \
  X(WELCOME, "welcome", kFromServer, no_atom, NoPayload)                                                     \
  X(REFUSE, "refuse", kFromServer, no_atom, NoPayload)                                                       \
  X(HEARTBEAT, "heartbeat", kToServer, no_atom, NoPayload)                                                   \
  X(ERROR, "error", kSchedulerToClient | kSchedulerToWorker, no_atom, NoPayload)                             \
  X(VALUE, "value", kClientToScheduler | kSchedulerToClient, no_atom, NoPayload)                             \
  X(SUBMIT, "submit", kClientToScheduler, no_atom, NoPayload)                                                \
  X(RESULTS, "results", kSchedulerToClient, no_atom, NoPayload)                                              \
  X(RELEASE, "release", kClientToScheduler, no_atom, NoPayload)                                              \
  X(CANCEL, "cancel", kClientToScheduler, no_atom, NoPayload)                                                \
  X(STATUS_REQUEST, "status request", kClientToScheduler, no_atom, NoPayload)                                \
  X(STATUS, "status", kSchedulerToClient, no_atom, NoPayload)                                                \
  X(WORKER_WELCOME, "worker welcome", kSchedulerToWorker, welcome_atom, std::uint32_t)                       \
  X(PEER, "peer", kSchedulerToWorker, peer_atom, PeerNotice)                                                 \
  X(ASSIGN, "assign", kSchedulerToWorker, assign_atom, AssignBatch)                                          \
  X(SUBSCRIBE, "subscribe", kSchedulerToWorker, subscribe_atom, SubscribeBatch)                              \
  X(DROP, "drop", kSchedulerToWorker, drop_atom, SlotBatch)                                                  \
  X(CANCEL_SLOTS, "cancel slots", kSchedulerToWorker, cancel_slots_atom, SlotBatch)                          \
  X(STEAL, "steal", kSchedulerToWorker, steal_atom, StealRequest)                                            \
  X(FORGET, "forget", kSchedulerToWorker, forget_atom, OpId)                                                 \
  X(SHUTDOWN, "shutdown", kSchedulerToWorker | kClientToScheduler, shutdown_atom, NoPayload)                 \
  X(DONE, "done", kWorkerToScheduler, done_atom, DoneBatch)                                                  \
  X(STOLEN, "stolen", kWorkerToScheduler, stolen_atom, StolenBatch)                                          \
  X(INPUTS, "inputs", kWorkerToWorker, input_atom, InputBatch)                                               \
  X(WORKERS_REQUEST, "workers request", kClientToScheduler, no_atom, NoPayload)                              \
  X(WORKERS, "workers", kSchedulerToClient, no_atom, NoPayload)                                              \
  X(STREAM_OPEN, "stream open", kClientToScheduler, no_atom, NoPayload)                                      \
  X(STREAM_OPENED, "stream opened", kSchedulerToClient, no_atom, NoPayload)                                  \
  X(STREAM_PUSH, "stream push", kClientToScheduler, no_atom, NoPayload)                                      \
  X(STREAM_CLOSE, "stream close", kClientToScheduler, no_atom, NoPayload)                                    \
  X(STREAM_RESULTS, "stream results", kSchedulerToClient, no_atom, NoPayload)                                \
  X(STREAM_FINISHED, "stream finished", kSchedulerToClient, no_atom, NoPayload)                              \
  X(SIMULATE, "simulate", kSchedulerToWorker, simulate_atom, SimulationJob)                                  \
  X(SIMULATED, "simulated", kWorkerToScheduler, simulated_atom, SimulationOutcome)                           \
  X(RESULTS_QUERY, "results query", kClientToScheduler, no_atom, NoPayload)                                  \
  X(RESULTS_ANSWER, "results answer", kSchedulerToClient, no_atom, NoPayload)                                \
  X(SIMULATION_SETUP, "simulation setup", kSchedulerToWorker, simulation_setup_atom,                         \
    ::tessera::SimulationSetup)                                                                              \
  X(SIMULATION_END, "simulation end", kSchedulerToWorker, simulation_end_atom, std::uint64_t)                \
  X(GLM, "glm", kClientToScheduler | kSchedulerToClient | kWorkerToScheduler | kSchedulerToWorker, glm_atom, \
    ::tessera::GlmMessage)

struct KindInfo {
  Envelope::Which kind;
  std::string_view name;
  std::uint8_t directions;
};

#define TESSERA_WIRE_KIND_INFO(KIND, NAME, DIRECTIONS, ATOM, PAYLOAD) \
  KindInfo{Envelope::KIND, NAME, static_cast<std::uint8_t>(DIRECTIONS)},
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

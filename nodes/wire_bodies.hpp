// The body of each wire kind that carries an actor message: how its payload is written into the
// envelope and read back (through the codecs of nodes/ and messages/). One WireBody per row of the wire
// table that names an atom; decoding treats the input as hostile (WireError names what is wrong).
#pragma once

#include <caf/all.hpp>
#include <span>
#include <unordered_set>

#include "actors/glm/messages.hpp"
#include "actors/messages.hpp"
#include "nodes/wire_table.hpp"
#include "nodes/worker_codec.hpp"

namespace tessera::wire {

struct EncodeContext {
  Attachments& attachments;
  // The operations whose definitions the receiving worker holds (an assignment sends a new one once, a
  // forget lets it go); null: every assignment carries its definitions.
  std::unordered_set<OpId>* definitions = nullptr;
  std::uint32_t target_worker = 0;  // inputs: the worker they are for
};

struct DecodeContext {
  Frames frames;
  std::uint32_t sender_worker = 0;       // the scheduler's id for the worker that sent it
  OperationTable* operations = nullptr;  // a worker process's known operations (assignments)
  caf::actor stream_stand_in{};          // a worker process: where simulation answers go
};

template <Envelope::Which Kind>
struct WireBody;

#define TESSERA_WIRE_BODY(KIND, PAYLOAD)                                                            \
  template <>                                                                                       \
  struct WireBody<Envelope::KIND> {                                                                 \
    static void encode(Envelope::Builder envelope, const PAYLOAD& payload, EncodeContext& context); \
    static PAYLOAD decode(Envelope::Reader envelope, const DecodeContext& context);                 \
  };
TESSERA_WIRE_BODY(WORKER_WELCOME, std::uint32_t)
TESSERA_WIRE_BODY(PEER, PeerNotice)
TESSERA_WIRE_BODY(ASSIGN, AssignBatch)
TESSERA_WIRE_BODY(SUBSCRIBE, SubscribeBatch)
TESSERA_WIRE_BODY(DROP, SlotBatch)
TESSERA_WIRE_BODY(CANCEL_SLOTS, SlotBatch)
TESSERA_WIRE_BODY(STEAL, StealRequest)
TESSERA_WIRE_BODY(FORGET, OpId)
TESSERA_WIRE_BODY(SHUTDOWN, NoPayload)
TESSERA_WIRE_BODY(DONE, DoneBatch)
TESSERA_WIRE_BODY(STOLEN, StolenBatch)
TESSERA_WIRE_BODY(INPUTS, InputBatch)
TESSERA_WIRE_BODY(SIMULATE, SimulationJob)
TESSERA_WIRE_BODY(SIMULATED, SimulationOutcome)
TESSERA_WIRE_BODY(SIMULATION_SETUP, ::tessera::SimulationSetup)
TESSERA_WIRE_BODY(SIMULATION_END, std::uint64_t)
TESSERA_WIRE_BODY(SIMULATION_CANCEL, ::tessera::SimulationCancel)
TESSERA_WIRE_BODY(GLM, ::tessera::GlmMessage)
TESSERA_WIRE_BODY(MEMORY, ::tessera::WorkerMemory)
TESSERA_WIRE_BODY(RESULTS_LOST, ::tessera::LostInputs)
#undef TESSERA_WIRE_BODY

}  // namespace tessera::wire

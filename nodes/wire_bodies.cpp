#include "nodes/wire_bodies.hpp"

#include <cmath>

#include "actors/stream_actor.hpp"
#include "graph/printable.hpp"
#include "nodes/glm_codec.hpp"
#include "nodes/memory_codec.hpp"
#include "nodes/program_codec.hpp"
#include "nodes/stream_codec.hpp"

namespace tessera::wire {

void WireBody<Envelope::WORKER_WELCOME>::encode(Envelope::Builder e, const std::uint32_t& id,
                                                EncodeContext&) {
  e.initWorkerWelcome().setWorkerId(id);
}
std::uint32_t WireBody<Envelope::WORKER_WELCOME>::decode(Envelope::Reader e, const DecodeContext&) {
  return e.getWorkerWelcome().getWorkerId();
}

void WireBody<Envelope::PEER>::encode(Envelope::Builder e, const PeerNotice& notice, EncodeContext&) {
  auto peer = e.initPeer();
  peer.setWorkerId(notice.id);
  peer.setAddress(notice.address);
  peer.setPublicKey(notice.public_key);
  peer.setLocalAddress(notice.local_address);
}
PeerNotice WireBody<Envelope::PEER>::decode(Envelope::Reader e, const DecodeContext&) {
  auto peer = e.getPeer();
  return PeerNotice{peer.getWorkerId(), peer.getAddress(), peer.getPublicKey(), peer.getLocalAddress()};
}

void WireBody<Envelope::ASSIGN>::encode(Envelope::Builder e, const AssignBatch& batch, EncodeContext& c) {
  wire::encode(
      batch, [&](OpId op) { return c.definitions ? c.definitions->insert(op).second : true; }, e.initAssign(),
      c.attachments);
}
AssignBatch WireBody<Envelope::ASSIGN>::decode(Envelope::Reader e, const DecodeContext& c) {
  if (!c.operations) throw WireError("an assignment where no operations are kept");
  return wire::decode(e.getAssign(), c.frames, *c.operations);
}

void WireBody<Envelope::SUBSCRIBE>::encode(Envelope::Builder e, const SubscribeBatch& batch, EncodeContext&) {
  wire::encode(batch, e.initSubscribe());
}
SubscribeBatch WireBody<Envelope::SUBSCRIBE>::decode(Envelope::Reader e, const DecodeContext&) {
  return wire::decode(e.getSubscribe());
}

void WireBody<Envelope::DROP>::encode(Envelope::Builder e, const SlotBatch& batch, EncodeContext&) {
  wire::encode(batch, e.initDrop());
}
SlotBatch WireBody<Envelope::DROP>::decode(Envelope::Reader e, const DecodeContext&) {
  return wire::decode(e.getDrop());
}

void WireBody<Envelope::CANCEL_SLOTS>::encode(Envelope::Builder e, const SlotBatch& batch, EncodeContext&) {
  wire::encode(batch, e.initCancelSlots());
}
SlotBatch WireBody<Envelope::CANCEL_SLOTS>::decode(Envelope::Reader e, const DecodeContext&) {
  return wire::decode(e.getCancelSlots());
}

void WireBody<Envelope::STEAL>::encode(Envelope::Builder e, const StealRequest& request, EncodeContext&) {
  auto steal = e.initSteal();
  steal.setOp(request.op);
  steal.setMost(request.most);
}
StealRequest WireBody<Envelope::STEAL>::decode(Envelope::Reader e, const DecodeContext&) {
  return StealRequest{e.getSteal().getOp(), e.getSteal().getMost()};
}

void WireBody<Envelope::FORGET>::encode(Envelope::Builder e, const OpId& op, EncodeContext& c) {
  if (c.definitions) c.definitions->erase(op);
  e.setForget(op);
}
OpId WireBody<Envelope::FORGET>::decode(Envelope::Reader e, const DecodeContext& c) {
  if (c.operations) c.operations->erase(e.getForget());
  return e.getForget();
}

void WireBody<Envelope::SHUTDOWN>::encode(Envelope::Builder e, const NoPayload&, EncodeContext&) {
  e.setShutdown();
}
NoPayload WireBody<Envelope::SHUTDOWN>::decode(Envelope::Reader, const DecodeContext&) {
  return {};
}

void WireBody<Envelope::DONE>::encode(Envelope::Builder e, const DoneBatch& batch, EncodeContext& c) {
  wire::encode(batch, e.initDone(), c.attachments);
}
DoneBatch WireBody<Envelope::DONE>::decode(Envelope::Reader e, const DecodeContext& c) {
  return wire::decode(e.getDone(), c.frames, c.sender_worker);
}

void WireBody<Envelope::STOLEN>::encode(Envelope::Builder e, const StolenBatch& batch, EncodeContext&) {
  wire::encode(batch, e.initStolen());
}
StolenBatch WireBody<Envelope::STOLEN>::decode(Envelope::Reader e, const DecodeContext& c) {
  return wire::decode(e.getStolen(), c.sender_worker);
}

void WireBody<Envelope::INPUTS>::encode(Envelope::Builder e, const InputBatch& batch, EncodeContext& c) {
  wire::encode(c.target_worker, batch, e.initInputs(), c.attachments);
}
InputBatch WireBody<Envelope::INPUTS>::decode(Envelope::Reader e, const DecodeContext& c) {
  return wire::decode(e.getInputs(), c.frames);
}

void WireBody<Envelope::SIMULATE>::encode(Envelope::Builder e, const SimulationJob& job, EncodeContext& c) {
  wire::encode(job, e.initSimulate(), c.attachments);
}
SimulationJob WireBody<Envelope::SIMULATE>::decode(Envelope::Reader e, const DecodeContext& c) {
  return wire::decode(e.getSimulate(), c.frames, c.stream_stand_in);
}

void WireBody<Envelope::SIMULATED>::encode(Envelope::Builder e, const SimulationOutcome& outcome,
                                           EncodeContext& c) {
  auto out = e.initSimulated();
  out.setStreamId(outcome.stream_id);
  out.setBusySeconds(outcome.busy_seconds);
  auto records = init_records(out, outcome.records.size());
  for (std::size_t i = 0; i < outcome.records.size(); ++i)
    wire::encode(outcome.records[i], records[static_cast<unsigned>(i)], c.attachments);
  if (!outcome.unrun.empty()) {
    auto unrun = out.initUnrun(static_cast<unsigned>(outcome.unrun.size()));
    for (std::size_t i = 0; i < outcome.unrun.size(); ++i)
      unrun.set(static_cast<unsigned>(i), outcome.unrun[i]);
  }
  if (!outcome.unavailable.empty()) out.setUnavailable(outcome.unavailable);
}
SimulationOutcome WireBody<Envelope::SIMULATED>::decode(Envelope::Reader e, const DecodeContext& c) {
  auto in = e.getSimulated();
  SimulationOutcome outcome{c.sender_worker, in.getStreamId(), wire::decode(in.getRecords(), c.frames),
                            in.getBusySeconds()};
  for (auto id : in.getUnrun()) outcome.unrun.push_back(id);
  // A peer's reason is shown to users: bounded, and printable.
  outcome.unavailable =
      printable(std::string_view(in.getUnavailable().cStr(), in.getUnavailable().size()), 2048);
  return outcome;
}

void WireBody<Envelope::SIMULATION_SETUP>::encode(Envelope::Builder e,
                                                  const ::tessera::SimulationSetup& setup, EncodeContext& c) {
  auto out = e.initSimulationSetup();
  out.setStreamId(setup.stream_id);
  out.setSimulation(setup.simulation);
  out.setPoolSize(setup.pool_size);
  out.setIsolation(static_cast<std::uint8_t>(setup.isolation));
  out.setTimeoutSeconds(setup.timeout_seconds);
  if (setup.config)
    wire::encode(*setup.config, out.initConfig(static_cast<unsigned>(setup.config->entries().size())),
                 c.attachments);
  if (setup.program) wire::encode(*setup.program, out.initProgram());
  out.setIdentity(setup.identity);
}
::tessera::SimulationSetup WireBody<Envelope::SIMULATION_SETUP>::decode(Envelope::Reader e,
                                                                        const DecodeContext& c) {
  auto in = e.getSimulationSetup();
  if (in.getIsolation() > static_cast<std::uint8_t>(Isolation::process))
    throw WireError("stream " + std::to_string(in.getStreamId()) + ": isolation " +
                    std::to_string(in.getIsolation()) + " is unknown (0 thread, 1 process)");
  const double timeout = in.getTimeoutSeconds();
  if (!std::isfinite(timeout) || timeout < 0 || timeout > StreamSettings::kMaxTimeoutSeconds)
    throw WireError("stream " + std::to_string(in.getStreamId()) + ": timeout " + std::to_string(timeout) +
                    " s is not in [0, " + std::to_string(StreamSettings::kMaxTimeoutSeconds) + "]");
  if (in.getPoolSize() > StreamSettings::kMaxPoolSize)
    throw WireError("stream " + std::to_string(in.getStreamId()) + ": pool size " +
                    std::to_string(in.getPoolSize()) + " exceeds the limit of " +
                    std::to_string(StreamSettings::kMaxPoolSize));
  return ::tessera::SimulationSetup{
      in.getStreamId(),
      in.getSimulation(),
      wire::decode(in.getConfig(), c.frames),
      in.getPoolSize(),
      static_cast<Isolation>(in.getIsolation()),
      timeout,
      in.hasProgram() ? wire::decode(in.getProgram(), in.getSimulation().cStr()) : nullptr,
      printable(std::string_view(in.getIdentity().cStr(), in.getIdentity().size()), 400)};
}

void WireBody<Envelope::SIMULATION_END>::encode(Envelope::Builder e, const std::uint64_t& stream,
                                                EncodeContext&) {
  e.setSimulationEnd(stream);
}
std::uint64_t WireBody<Envelope::SIMULATION_END>::decode(Envelope::Reader e, const DecodeContext&) {
  return e.getSimulationEnd();
}

void WireBody<Envelope::SIMULATION_CANCEL>::encode(Envelope::Builder e,
                                                   const ::tessera::SimulationCancel& cancel,
                                                   EncodeContext&) {
  auto out = e.initSimulationCancel();
  out.setStreamId(cancel.stream_id);
  auto ids = out.initIds(static_cast<unsigned>(cancel.ids.size()));
  for (std::size_t i = 0; i < cancel.ids.size(); ++i) ids.set(static_cast<unsigned>(i), cancel.ids[i]);
}
::tessera::SimulationCancel WireBody<Envelope::SIMULATION_CANCEL>::decode(Envelope::Reader e,
                                                                          const DecodeContext&) {
  auto in = e.getSimulationCancel();
  ::tessera::SimulationCancel cancel{in.getStreamId(), {}};
  cancel.ids.reserve(in.getIds().size());
  for (auto id : in.getIds()) cancel.ids.push_back(id);
  return cancel;
}

void WireBody<Envelope::GLM>::encode(Envelope::Builder e, const ::tessera::GlmMessage& message,
                                     EncodeContext& c) {
  wire::encode(message, e.initGlm(), c.attachments);
}
::tessera::GlmMessage WireBody<Envelope::GLM>::decode(Envelope::Reader e, const DecodeContext& c) {
  return wire::decode(e.getGlm(), c.frames);
}

void WireBody<Envelope::MEMORY>::encode(Envelope::Builder e, const ::tessera::WorkerMemory& memory,
                                        EncodeContext&) {
  encode_memory(memory, e.initMemory());
}
::tessera::WorkerMemory WireBody<Envelope::MEMORY>::decode(Envelope::Reader e, const DecodeContext&) {
  return decode_memory(e.getMemory());
}

void WireBody<Envelope::RESULTS_LOST>::encode(Envelope::Builder e, const ::tessera::LostInputs& lost,
                                              EncodeContext&) {
  wire::encode(lost, e.initResultsLost());
}
::tessera::LostInputs WireBody<Envelope::RESULTS_LOST>::decode(Envelope::Reader e, const DecodeContext& c) {
  return wire::decode(e.getResultsLost(), c.sender_worker);
}

}  // namespace tessera::wire

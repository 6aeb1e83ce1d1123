#include "messages/protocol_codec.hpp"

namespace tessera::wire {
namespace {

std::string text(capnp::Text::Reader t) {
  return std::string(t.begin(), t.end());
}

}  // namespace

void encode(const SubmitMessage& message, Submit::Builder out, Attachments& attachments) {
  out.setSinkId(message.sink_id);
  out.setSlots(message.slots);
  out.setCheckpoint(message.checkpoint);
  auto ops = out.initOperations(static_cast<unsigned>(message.operations.size()));
  for (std::size_t i = 0; i < message.operations.size(); ++i)
    encode(*message.operations[i], ops[static_cast<unsigned>(i)], attachments);
  auto watches = out.initWatches(static_cast<unsigned>(message.watches.size()));
  for (std::size_t i = 0; i < message.watches.size(); ++i) {
    const auto& w = message.watches[i];
    auto wb = watches[static_cast<unsigned>(i)];
    wb.setOp(w.op);
    wb.setFirstTask(w.first_task);
    wb.setCount(w.count);
    wb.setFirstSlot(w.first_slot);
  }
}

SubmitMessage decode(Submit::Reader in, const Frames& frames, const IdMap& map_id,
                     const DecodeLimits& limits) {
  SubmitMessage out;
  out.sink_id = in.getSinkId();
  out.slots = in.getSlots();
  out.checkpoint = in.getCheckpoint();
  if (out.slots > limits.max_tasks)
    throw WireError("submission asks for " + std::to_string(out.slots) + " results, over the limit of " +
                    std::to_string(limits.max_tasks));
  for (auto op : in.getOperations()) out.operations.push_back(decode(op, frames, limits, map_id));
  for (auto w : in.getWatches()) {
    tessera::Watch watch{map_id(w.getOp()), w.getFirstTask(), w.getCount(), w.getFirstSlot()};
    if (static_cast<std::uint64_t>(watch.first_slot) + watch.count > out.slots)
      throw WireError("submission watches slots " + std::to_string(watch.first_slot) + ".." +
                      std::to_string(watch.first_slot + watch.count) + " of a table of " +
                      std::to_string(out.slots));
    bool found = false;
    for (const auto& op : out.operations)
      if (op->id() == watch.op) {
        found = static_cast<std::uint64_t>(watch.first_task) + watch.count <= op->size();
        break;
      }
    if (!found) throw WireError("submission watches tasks outside the operations it carries");
    out.watches.push_back(watch);
  }
  return out;
}

void encode(const tessera::TaskFailed& error, TaskFailure::Builder out) {
  out.setFunction(error.function());
  out.setKey(error.key());
  out.setMessage(error.message());
  out.setCancelled(error.cancelled());
}

std::shared_ptr<const tessera::TaskFailed> decode(TaskFailure::Reader in) {
  return std::make_shared<const TaskFailed>(text(in.getFunction()), text(in.getKey()), text(in.getMessage()),
                                            in.getCancelled());
}

void encode(std::uint64_t sink_id, const std::vector<tessera::Delivery>& deliveries, Results::Builder out,
            Attachments& attachments) {
  out.setSinkId(sink_id);
  auto list = out.initDeliveries(static_cast<unsigned>(deliveries.size()));
  for (std::size_t i = 0; i < deliveries.size(); ++i) {
    const auto& d = deliveries[i];
    auto b = list[static_cast<unsigned>(i)];
    b.setSlot(d.slot);
    b.setState(static_cast<TaskState>(d.state));
    b.setHeld(d.held && d.state == tessera::TaskState::done);
    if (d.state == tessera::TaskState::done) {
      encode(d.value, b.initValue(), attachments);
    } else if (d.error) {
      encode(*d.error, b.initError());
    }
  }
}

std::vector<tessera::Delivery> decode(Results::Reader in, const Frames& frames) {
  std::vector<tessera::Delivery> out;
  out.reserve(in.getDeliveries().size());
  for (auto d : in.getDeliveries()) {
    const auto state = static_cast<tessera::TaskState>(d.getState());
    if (!is_final(state))
      throw WireError("a result delivery in state " + std::to_string(static_cast<int>(state)));
    tessera::Delivery delivery{d.getSlot(), state, tessera::Value{}, nullptr, false};
    if (state == tessera::TaskState::done) {
      delivery.held = d.getHeld();
      delivery.value = decode(d.getValue(), frames);
    } else {
      delivery.error = decode(d.getError());
    }
    out.push_back(std::move(delivery));
  }
  return out;
}

}  // namespace tessera::wire

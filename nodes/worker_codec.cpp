#include "nodes/worker_codec.hpp"

#include <cmath>

#include "messages/protocol_codec.hpp"

namespace tessera::wire {
namespace {

unsigned count(std::size_t n) {
  return static_cast<unsigned>(n);
}

}  // namespace

void encode(const AssignBatch& batch, const std::function<bool(OpId)>& first_time, Assign::Builder out,
            Attachments& attachments) {
  std::vector<const tessera::Operation*> definitions;
  for (const auto& run : batch.runs)
    if (first_time(run.op->id())) definitions.push_back(run.op.get());
  auto ops = out.initOperations(count(definitions.size()));
  for (std::size_t i = 0; i < definitions.size(); ++i) encode(*definitions[i], ops[count(i)], attachments);
  auto runs = out.initRuns(count(batch.runs.size()));
  for (std::size_t i = 0; i < batch.runs.size(); ++i) {
    const auto& run = batch.runs[i];
    auto r = runs[count(i)];
    r.setOp(run.op->id());
    r.setFirstTask(run.first_task);
    r.setCount(run.count);
    r.setFirstSlot(run.first_slot);
    r.setAdopt(run.adopt);
    r.setReport(run.report);
    r.setCheckpoint(run.checkpoint);
    if (!run.restored.empty()) {
      auto restored = r.initRestored(count(run.restored.size()));
      for (std::size_t k = 0; k < run.restored.size(); ++k)
        encode(run.restored[k], restored[count(k)], attachments);
    }
  }
}

AssignBatch decode(Assign::Reader in, const Frames& frames, OperationTable& known,
                   const DecodeLimits& limits) {
  // A worker fails the tasks of a function it cannot run as the scheduler defines it, naming why.
  DecodeLimits operations = limits;
  operations.differing_functions_fail_tasks = true;
  for (auto op : in.getOperations()) {
    auto decoded = decode(op, frames, operations);
    known[decoded->id()] = std::move(decoded);
  }
  AssignBatch batch;
  batch.runs.reserve(in.getRuns().size());
  for (auto r : in.getRuns()) {
    auto it = known.find(r.getOp());
    if (it == known.end())
      throw WireError("assignment of operation " + std::to_string(r.getOp()) +
                      ", whose definition never came");
    const std::uint64_t end = std::uint64_t{r.getFirstTask()} + r.getCount();
    if (end > it->second->size())
      throw WireError("assignment of tasks " + std::to_string(r.getFirstTask()) + ".." + std::to_string(end) +
                      " of operation " + std::to_string(r.getOp()) + ", which has " +
                      std::to_string(it->second->size()));
    if (std::uint64_t{r.getFirstSlot()} + r.getCount() > limits.max_tasks)
      throw WireError("assignment to slots past the limit of " + std::to_string(limits.max_tasks));
    tessera::AssignRun run{it->second,   r.getFirstTask(), r.getCount(),     r.getFirstSlot(),
                           r.getAdopt(), r.getReport(),    r.getCheckpoint()};
    if (r.hasRestored()) {
      if (r.getRestored().size() != r.getCount())
        throw WireError("assignment of " + std::to_string(r.getCount()) + " tasks with " +
                        std::to_string(r.getRestored().size()) + " restored values");
      run.restored.reserve(r.getCount());
      for (auto v : r.getRestored()) run.restored.push_back(decode(v, frames));
    }
    batch.runs.push_back(std::move(run));
  }
  return batch;
}

void encode(const SubscribeBatch& batch, Subscribe::Builder out) {
  auto list = out.initSubscriptions(count(batch.subscriptions.size()));
  for (std::size_t i = 0; i < batch.subscriptions.size(); ++i) {
    const auto& s = batch.subscriptions[i];
    auto b = list[count(i)];
    b.setOp(s.op);
    b.setSlot(s.slot);
    auto to = b.initTo();
    to.setWorker(s.to.worker);
    to.setOp(s.to.op);
    to.setSlot(s.to.slot);
    to.setColumn(s.to.column);
  }
}

SubscribeBatch decode(Subscribe::Reader in) {
  SubscribeBatch batch;
  batch.subscriptions.reserve(in.getSubscriptions().size());
  for (auto s : in.getSubscriptions()) {
    auto to = s.getTo();
    batch.subscriptions.push_back(tessera::Subscription{
        s.getOp(), s.getSlot(),
        tessera::Destination{to.getWorker(), to.getOp(), to.getSlot(), to.getColumn()}});
  }
  return batch;
}

void encode(const SlotBatch& batch, Slots::Builder out) {
  out.setOp(batch.op);
  auto list = out.initSlots(count(batch.slots.size()));
  for (std::size_t i = 0; i < batch.slots.size(); ++i) list.set(count(i), batch.slots[i]);
}

SlotBatch decode(Slots::Reader in) {
  SlotBatch batch{in.getOp(), {}};
  for (auto slot : in.getSlots()) batch.slots.push_back(slot);
  return batch;
}

void encode(const DoneBatch& batch, Done::Builder out, Attachments& attachments) {
  out.setOp(batch.op);
  out.setBusySeconds(batch.busy_seconds);
  out.setRan(batch.ran);
  out.setFinishedAt(batch.finished_at);
  auto tasks = out.initTasks(count(batch.tasks.size()));
  for (std::size_t i = 0; i < batch.tasks.size(); ++i) tasks.set(count(i), batch.tasks[i]);
  auto results = out.initResults(count(batch.results.size()));
  for (std::size_t i = 0; i < batch.results.size(); ++i)
    encode(batch.results[i], results[count(i)], attachments);
  auto failures = out.initFailures(count(batch.failures.size()));
  for (std::size_t i = 0; i < batch.failures.size(); ++i) {
    failures[count(i)].setTask(batch.failures[i].task);
    encode(*batch.failures[i].error, failures[count(i)].initError());
  }
  if (!batch.held.empty()) {
    auto held = out.initHeld(count(batch.held.size()));
    for (std::size_t i = 0; i < batch.held.size(); ++i) held.set(count(i), batch.held[i]);
  }
}

DoneBatch decode(Done::Reader in, const Frames& frames, std::uint32_t worker) {
  DoneBatch batch;
  batch.worker = worker;
  batch.op = in.getOp();
  batch.busy_seconds = in.getBusySeconds();
  batch.ran = in.getRan();
  // Only shown on the dashboard; a value that is no time is left out there.
  batch.finished_at = std::isfinite(in.getFinishedAt()) ? in.getFinishedAt() : 0;
  if (in.getResults().size() != in.getTasks().size())
    throw WireError("a done message with " + std::to_string(in.getTasks().size()) + " tasks and " +
                    std::to_string(in.getResults().size()) + " results");
  for (auto task : in.getTasks()) batch.tasks.push_back(task);
  batch.results.reserve(batch.tasks.size());
  for (auto r : in.getResults()) batch.results.push_back(decode(r, frames));
  for (auto index : in.getHeld()) {
    if (index >= batch.tasks.size())
      throw WireError("a done message holds result " + std::to_string(index) + " of " +
                      std::to_string(batch.tasks.size()) + " tasks");
    batch.held.push_back(index);
  }
  for (auto f : in.getFailures())
    batch.failures.push_back(tessera::TaskFailure{f.getTask(), decode(f.getError())});
  return batch;
}

void encode(const StolenBatch& batch, Stolen::Builder out) {
  out.setOp(batch.op);
  auto tasks = out.initTasks(count(batch.tasks.size()));
  for (std::size_t i = 0; i < batch.tasks.size(); ++i) tasks.set(count(i), batch.tasks[i]);
}

void encode(const ::tessera::LostInputs& lost, wire::LostInputs::Builder out) {
  auto list = out.initInputs(count(lost.inputs.size()));
  for (std::size_t i = 0; i < lost.inputs.size(); ++i) {
    const auto& l = lost.inputs[i];
    auto b = list[count(i)];
    b.setProducerOp(l.producer.op);
    b.setProducerIndex(l.producer.index);
    b.setConsumerOp(l.consumer.op);
    b.setConsumerSlot(l.consumer.slot);
    b.setColumn(l.consumer.column);
  }
}

::tessera::LostInputs decode(wire::LostInputs::Reader in, std::uint32_t worker) {
  ::tessera::LostInputs lost{worker, {}};
  lost.inputs.reserve(in.getInputs().size());
  for (auto l : in.getInputs())
    lost.inputs.push_back(::tessera::LostInput{
        ::tessera::TaskRef{l.getProducerOp(), l.getProducerIndex()},
        ::tessera::Destination{worker, l.getConsumerOp(), l.getConsumerSlot(), l.getColumn()}});
  return lost;
}

StolenBatch decode(Stolen::Reader in, std::uint32_t worker) {
  StolenBatch batch{worker, in.getOp(), {}};
  for (auto task : in.getTasks()) batch.tasks.push_back(task);
  return batch;
}

void encode(std::uint32_t worker, const InputBatch& batch, Inputs::Builder out, Attachments& attachments) {
  out.setWorker(worker);
  auto list = out.initInputs(count(batch.inputs.size()));
  for (std::size_t i = 0; i < batch.inputs.size(); ++i) {
    const auto& input = batch.inputs[i];
    auto b = list[count(i)];
    b.setOp(input.op);
    b.setSlot(input.slot);
    b.setColumn(input.column);
    encode(input.value, b.initValue(), attachments);
  }
}

InputBatch decode(Inputs::Reader in, const Frames& frames) {
  InputBatch batch;
  batch.inputs.reserve(in.getInputs().size());
  for (auto i : in.getInputs())
    batch.inputs.push_back(
        InputDelivery{i.getOp(), i.getSlot(), i.getColumn(), decode(i.getValue(), frames)});
  return batch;
}

}  // namespace tessera::wire

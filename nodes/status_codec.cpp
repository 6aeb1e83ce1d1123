#include "nodes/status_codec.hpp"

#include "graph/printable.hpp"
#include "messages/wire_codec.hpp"
#include "nodes/memory_codec.hpp"

namespace tessera::wire {
namespace {

constexpr std::size_t kMostWorkers = 1u << 20, kNameBytes = 256, kErrorBytes = 4096;

std::string text(capnp::Text::Reader in, std::size_t bytes) {
  return printable(std::string_view(in.cStr(), in.size()), bytes);
}

void check_count(std::size_t count, const char* what) {
  if (count > kMostWorkers)
    throw WireError(std::to_string(count) + " " + what + " exceed the limit of " +
                    std::to_string(kMostWorkers));
}

}  // namespace

void encode(const ClusterStatus& status, Status::Builder out) {
  const auto& s = status.scheduler;
  out.setName(status.name);
  out.setClients(status.clients);
  out.setWorkers(s.workers);
  out.setRetiringWorkers(s.retiring_workers);
  out.setOperations(s.operations);
  out.setTasksPending(s.tasks_pending);
  out.setResultsHeld(s.results_held);
  out.setTasksDone(s.tasks_done);
  out.setTasksErred(s.tasks_erred);
  out.setTasksCancelled(s.tasks_cancelled);
  out.setTasksStolen(s.tasks_stolen);
  out.setWorkersLost(s.workers_lost);
  out.setTasksRecomputed(s.tasks_recomputed);
  out.setTasksFromCheckpoint(s.tasks_from_checkpoint);
  out.setCheckpointsWritten(s.checkpoints_written);
  out.setCheckpointBytesWritten(s.checkpoint_bytes_written);
  out.setCheckpointWriteSeconds(s.checkpoint_write_seconds);
  out.setCheckpointsCorrupt(s.checkpoints_corrupt);
  out.setCheckpointError(s.checkpoint_error);
  out.setCheckpointsStored(s.checkpoints_stored);
  out.setSetsDone(s.sets_done);
  out.setSetsFailed(s.sets_failed);
  auto memory = out.initMemory(static_cast<unsigned>(s.memory.size()));
  for (std::size_t i = 0; i < s.memory.size(); ++i)
    encode_memory(s.memory[i], memory[static_cast<unsigned>(i)]);
}

ClusterStatus decode(Status::Reader in) {
  check_count(in.getMemory().size(), "memory reports");
  ClusterStatus status;
  auto& s = status.scheduler;
  status.name = text(in.getName(), kNameBytes);
  status.clients = in.getClients();
  s.workers = in.getWorkers();
  s.retiring_workers = in.getRetiringWorkers();
  s.operations = in.getOperations();
  s.tasks_pending = in.getTasksPending();
  s.results_held = in.getResultsHeld();
  s.tasks_done = in.getTasksDone();
  s.tasks_erred = in.getTasksErred();
  s.tasks_cancelled = in.getTasksCancelled();
  s.tasks_stolen = in.getTasksStolen();
  s.workers_lost = in.getWorkersLost();
  s.tasks_recomputed = in.getTasksRecomputed();
  s.tasks_from_checkpoint = in.getTasksFromCheckpoint();
  s.checkpoints_written = in.getCheckpointsWritten();
  s.checkpoint_bytes_written = in.getCheckpointBytesWritten();
  s.checkpoint_write_seconds = in.getCheckpointWriteSeconds();
  s.checkpoints_corrupt = in.getCheckpointsCorrupt();
  s.checkpoint_error = text(in.getCheckpointError(), kErrorBytes);
  s.checkpoints_stored = in.getCheckpointsStored();
  s.sets_done = in.getSetsDone();
  s.sets_failed = in.getSetsFailed();
  s.memory.reserve(in.getMemory().size());
  for (auto m : in.getMemory()) s.memory.push_back(decode_memory(m));
  return status;
}

void encode(const std::vector<WorkerInfo>& workers, capnp::List<WorkerEntry>::Builder out) {
  for (std::size_t i = 0; i < workers.size(); ++i) {
    const auto& w = workers[i];
    auto entry = out[static_cast<unsigned>(i)];
    entry.setWorkerId(w.id);
    entry.setName(w.name);
    entry.setAddress(w.address.empty() ? "(in the scheduler's process)" : w.address);
    entry.setThreads(w.threads);
    entry.setMemoryLimit(w.memory_limit);
    entry.setTasksAssigned(w.tasks_assigned);
    entry.setRetiring(w.retiring);
    entry.setSetsRun(w.sets_run);
    encode_memory(w.memory, entry.initMemory());
  }
}

std::vector<WorkerInfo> decode(capnp::List<WorkerEntry>::Reader in) {
  check_count(in.size(), "workers");
  std::vector<WorkerInfo> out;
  out.reserve(in.size());
  for (auto entry : in) {
    WorkerInfo w;
    w.id = entry.getWorkerId();
    w.name = text(entry.getName(), kNameBytes);
    w.address = text(entry.getAddress(), kNameBytes);
    w.threads = entry.getThreads();
    w.memory_limit = entry.getMemoryLimit();
    w.tasks_assigned = entry.getTasksAssigned();
    w.retiring = entry.getRetiring();
    w.sets_run = entry.getSetsRun();
    w.memory = decode_memory(entry.getMemory());
    out.push_back(std::move(w));
  }
  return out;
}

}  // namespace tessera::wire

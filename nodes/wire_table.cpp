#include "nodes/wire_table.hpp"

namespace tessera::wire {
namespace {

struct DirectionWords {
  Direction direction;
  const char* sender;
  const char* receiver;
};
constexpr DirectionWords kDirectionWords[] = {
    {kClientToScheduler, "client", "the scheduler"}, {kSchedulerToClient, "scheduler", "a client"},
    {kWorkerToScheduler, "worker", "the scheduler"}, {kSchedulerToWorker, "scheduler", "a worker"},
    {kWorkerToWorker, "worker", "another worker"},
};

}  // namespace

std::string kind_name(Envelope::Which kind) {
  if (const KindInfo* info = find_kind(kind)) return std::string(info->name);
  return "message kind " + std::to_string(static_cast<int>(kind));
}

void check_direction(Envelope::Which kind, Direction direction) {
  const KindInfo* info = find_kind(kind);
  if (info && (info->directions & direction)) return;
  for (const auto& words : kDirectionWords)
    if (words.direction == direction)
      throw WireError(std::string("a ") + words.sender + " may not send '" + kind_name(kind) + "' to " +
                      words.receiver);
  throw WireError("'" + kind_name(kind) + "' travels in no such direction");
}

Direction direction_between(Role sender, Role server) {
  if (server == Role::WORKER) {
    if (sender != Role::WORKER) throw WireError("only other workers may send to a worker");
    return kWorkerToWorker;
  }
  return sender == Role::WORKER ? kWorkerToScheduler : kClientToScheduler;
}

}  // namespace tessera::wire

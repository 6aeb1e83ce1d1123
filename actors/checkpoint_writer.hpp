// The scheduler's checkpoint writer: a detached actor (a thread of its own) that stores checkpointed
// results in the node's CheckpointStore and then hands their sinks the deliveries that waited on the write,
// so that a client that sees a result may rely on its checkpoint. A write (about 13 ms per 4 MB value) no
// longer holds the scheduler actor, and through it every other client. Writes run in the order sent. The
// scheduler sends here the deliveries of checkpointed tasks not stored yet (to any sink), and a sink's
// later deliveries while any of its earlier ones wait, so that each sink's deliveries keep their order.
// A result computed from a checkpointed task is not held back: it may reach a client before the
// checkpoint it was computed from is stored.
#pragma once

#include <caf/all.hpp>
#include <cstddef>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "actors/messages.hpp"
#include "actors/result_sink.hpp"
#include "storage/checkpoint_store.hpp"

namespace tessera {

using SinkDeliveries = std::vector<std::pair<std::shared_ptr<ResultSink>, std::vector<Delivery>>>;

// Scheduler -> writer: records to store (none: only deliveries that keep their sink's order), then the
// deliveries to hand over.
struct CheckpointWrite {
  std::shared_ptr<CheckpointStore> store;
  std::vector<CheckpointStore::Record> records;
  std::vector<TaskRef> tasks;  // the records' tasks, given back in the answer
  SinkDeliveries deliveries;
};

// Writer -> scheduler: a write is done. `tasks`: the write's; `sinks`: one entry per delivery it handed over.
struct CheckpointWritten {
  std::size_t records = 0;
  std::string error;  // the store refused the write: those results are not checkpointed
  std::vector<TaskRef> tasks;
  std::vector<std::shared_ptr<ResultSink>> sinks;
};

}  // namespace tessera

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tessera::CheckpointWrite)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tessera::CheckpointWritten)

namespace tessera {

namespace protocols {
using checkpoint_writer_type = caf::typed_actor<caf::reacts_to<checkpoint_write_atom, CheckpointWrite>,
                                                caf::reacts_to<shutdown_atom>>;  // after what was sent
}  // namespace protocols

// `scheduler` is told of each write done (checkpoint_written_atom, CheckpointWritten).
protocols::checkpoint_writer_type spawn_checkpoint_writer(caf::actor_system& system, caf::actor scheduler);

}  // namespace tessera

// The scheduler actor: the CAF face of scheduling::SchedulerCore. It turns the messages of clients,
// workers and the gateway into calls of the state machine, sends the outbox each call returns, and
// keeps what only an actor can hold: the workers' actor handles, the stream actors that follow worker
// changes, and the solver actors of GLM fits. When options.progress_timeout is set it runs the progress
// watchdog on a timer, asking the stream actors for their jobs in flight. Its protocol:
// actors/protocols/scheduler.hpp.
#pragma once

#include <caf/all.hpp>
#include <memory>

#include "actors/checkpoint_keeper.hpp"
#include "actors/worker_directory.hpp"
#include "monitor/cluster_monitor.hpp"
#include "scheduling/scheduler_options.hpp"

namespace tessera {

// `directory` is filled with each registered worker, for the workers of this process to find each
// other; made by the scheduler when null. `checkpoints`: where checkpointed results are stored and
// looked up (none: nowhere). `monitor`: where task runs and GLM fits are recorded for the dashboard
// (none: nowhere).
caf::actor spawn_scheduler(caf::actor_system& system, SchedulerOptions options = {},
                           std::shared_ptr<WorkerDirectory> directory = nullptr,
                           CheckpointAccess checkpoints = {},
                           std::shared_ptr<monitor::ClusterMonitor> monitor = nullptr);

}  // namespace tessera

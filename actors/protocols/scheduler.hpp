// The scheduler actor's protocol: what clients, workers, the gateway and stream actors may tell or ask
// it. Implemented by actors/scheduler_actor.cpp over scheduling::SchedulerCore.
#pragma once

#include <caf/all.hpp>
#include <cstdint>
#include <memory>
#include <vector>

#include "actors/checkpoint_writer.hpp"
#include "actors/glm/messages.hpp"
#include "actors/messages.hpp"

namespace tessera::protocols {

using scheduler_actor_type = caf::typed_actor<
    // Clients: work, releases of result slots, cancellations.
    caf::reacts_to<submit_atom, Submission>, caf::reacts_to<release_atom, std::shared_ptr<ResultSink>>,
    caf::reacts_to<cancel_atom, CancelRequest>,
    // Workers: finished and stolen-back tasks.
    caf::reacts_to<done_atom, DoneBatch>, caf::reacts_to<stolen_atom, StolenBatch>,
    // Workers' chunk stores: memory held, spilled, and whether they are paused; inputs that came back
    // damaged from disk.
    caf::reacts_to<memory_atom, WorkerMemory>, caf::reacts_to<results_lost_atom, LostInputs>,
    // Cluster membership: a worker joins (answered with its id), is declared lost, or retires.
    caf::replies_to<register_atom, WorkerRegistration>::with<std::uint32_t>,
    caf::reacts_to<lost_atom, std::uint32_t>, caf::reacts_to<retire_atom, std::uint32_t>,
    // GLM fits: a client's fit request, and the partitions' answers forwarded to the fit's solver.
    caf::reacts_to<glm_fit_atom, GlmFitRequest, std::shared_ptr<GlmReply>>,
    caf::reacts_to<glm_atom, GlmMessage>,
    // Stream actors: the workers that take simulation jobs (the asker is told of later joins and losses).
    caf::replies_to<stream_workers_atom>::with<std::vector<StreamWorker>>,
    // Status displays.
    caf::replies_to<workers_atom>::with<std::vector<WorkerInfo>>,
    caf::replies_to<status_atom>::with<SchedulerStatus>,
    caf::replies_to<progress_atom>::with<std::vector<FunctionProgress>>, caf::reacts_to<shutdown_atom>,
    // Its own progress watchdog's timer (from anyone else: ignored).
    caf::reacts_to<watchdog_atom>,
    // Its checkpoint writer: a write is done, and the deliveries that waited on it are out.
    caf::reacts_to<checkpoint_written_atom, CheckpointWritten>>;

}  // namespace tessera::protocols

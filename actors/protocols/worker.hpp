// A worker's protocols. worker_actor_type is what the scheduler tells a worker; a worker actor of the
// scheduler's process implements it, and so does the proxy of a worker in another process (whose
// messages are the wire table's scheduler -> worker rows, checked against this list at compile time in
// nodes/remote_worker_proxy.cpp). input_target_type is how other workers reach a worker's tasks: a
// worker actor, or in a worker process the proxy of another process's worker.
#pragma once

#include <caf/all.hpp>
#include <cstdint>

#include "actors/glm/messages.hpp"
#include "actors/messages.hpp"

namespace tessera::protocols {

using worker_actor_type =
    caf::typed_actor<caf::reacts_to<welcome_atom, std::uint32_t>,  // its id in the cluster
                     caf::reacts_to<peer_atom, PeerNotice>,        // how to reach another worker
                     caf::reacts_to<assign_atom, AssignBatch>, caf::reacts_to<subscribe_atom, SubscribeBatch>,
                     caf::reacts_to<drop_atom, SlotBatch>,          // results nobody needs
                     caf::reacts_to<cancel_slots_atom, SlotBatch>,  // tasks that must not run
                     caf::reacts_to<steal_atom, StealRequest>,      // give back queued tasks (answered with
                                                                    // stolen_atom)
                     caf::reacts_to<forget_atom, OpId>,             // an operation is over
                     caf::reacts_to<shutdown_atom>,
                     caf::reacts_to<simulation_setup_atom, SimulationSetup>,  // what a stream's jobs share,
                                                                              // once
                     caf::reacts_to<simulation_end_atom, std::uint64_t>,      // a stream sent its last job
                     caf::reacts_to<simulate_atom, SimulationJob>,  // parameter sets for its simulation pools
                     caf::reacts_to<simulation_cancel_atom, SimulationCancel>,  // sets answered as cancelled
                     caf::reacts_to<glm_atom, GlmMessage>>;  // a GLM fit's messages for its partitions

using input_target_type =
    caf::typed_actor<caf::reacts_to<input_atom, InputBatch>, caf::reacts_to<shutdown_atom>>;

// A worker actor: both, and the held results its services ask for (of one operation, by slot).
using local_worker_type = worker_actor_type::extend<
    caf::reacts_to<input_atom, InputBatch>,
    caf::replies_to<fetch_atom, OpId, std::vector<std::uint32_t>>::with<std::vector<Value>>>;

}  // namespace tessera::protocols

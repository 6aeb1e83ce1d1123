// The generator actor: one per ensemble (a stream whose sets a generator proposes), spawned by its
// stream actor on the same node. It keeps the stream's simulation actors busy: it asks its generator for
// as many sets as would fill every slot twice over (one running, one queued, as the stream dispatches),
// pushes them to the stream as a client would, tells the generator each result once the stream has
// stored it, and asks again. When the generator says it is done, or the budget is spent, it closes the
// stream, which finishes once every set is answered. A generator that throws ends the ensemble with its
// error; the sets already accepted are still answered.
//
// A generator that can save its state is checkpointed with a push at most once a second: the stream
// writes the checkpoint in the same batch as the sets, so a checkpoint's proposals are always accepted.
// After a restart the actor loads the last one and tells the generator the results stored since; the
// sets proposed after that checkpoint still run, but as orphans (the state that proposed them is lost, so
// their results are not told), and the generator goes on with the stream's next ids. One that cannot
// save lets the stream finish what it accepted.
#pragma once

#include <caf/all.hpp>
#include <cstdint>
#include <memory>

#include "actors/protocols/generator.hpp"
#include "graph/generator.hpp"
#include "storage/result_store.hpp"

namespace tessera {

struct GeneratorActorArgs {
  std::uint64_t stream_id = 0;
  // Weak: the stream holds its generator, so a strong handle back would keep both alive for ever once
  // their node let go of the stream.
  caf::actor_addr stream;
  const GeneratorType* type = nullptr;
  std::shared_ptr<const Config> config;
  std::uint64_t budget = 0;
  std::uint64_t max_in_flight = 4096;  // the stream's: never more sets outstanding
  std::shared_ptr<ResultStore> store;
  // Resumed after a restart: sets below `accepted` are the stream's (written ahead or answered).
  bool resumed = false;
  std::uint64_t accepted = 0;
};

protocols::generator_actor_type spawn_generator_actor(caf::actor_system& system, GeneratorActorArgs args);

}  // namespace tessera

#include "actors/chunk_store_actor.hpp"
#include "actors/stray_errors.hpp"

#include <cstdio>
#include <iostream>

namespace tessera {
namespace {

// A limited worker samples its memory every 20 ms and reports every 0.5 s; an unlimited one only reports.
constexpr auto kLimitedTick = std::chrono::milliseconds(20);
constexpr auto kReportEvery = std::chrono::milliseconds(500);

struct ChunkStoreState {
  std::shared_ptr<ChunkStore> store;
  std::shared_ptr<ComputePool> pool;
  protocols::scheduler_actor_type scheduler;
  std::uint32_t worker = 0;
  bool welcomed = false;
  int ticks = 0;
};

using ChunkStoreActor = protocols::chunk_store_type::stateful_base<ChunkStoreState>;

void report(ChunkStoreActor* self) {
  auto& st = self->state;
  if (!st.welcomed) return;
  auto memory = st.store->report();
  memory.worker = st.worker;
  self->send(st.scheduler, memory_atom::value, std::move(memory));
}

// Past the target, or above the pause fraction, spilling starts here (and the store closes or opens the
// pool as it goes); put() asks for it too, so this tick is the backstop.
void watch_memory(ChunkStoreActor* self) {
  auto& store = *self->state.store;
  // Also when under the target: records of released results are deleted here.
  store.spill(store.check_pressure() ? SpillGoal::while_over : SpillGoal::target);
  // Then spilled inputs of waiting tasks come back, into the room spilling left.
  store.read_ahead_spilled();
}

protocols::chunk_store_type::behavior_type chunk_store_actor(ChunkStoreActor* self,
                                                             std::shared_ptr<ChunkStore> store,
                                                             std::shared_ptr<ComputePool> pool,
                                                             protocols::scheduler_actor_type scheduler) {
  survive_stray_errors(self, "chunk store");
  auto& st = self->state;
  st.store = std::move(store);
  st.pool = std::move(pool);
  st.scheduler = std::move(scheduler);
  const bool limited = st.store->options().limit > 0;
  const auto tick = limited ? kLimitedTick : kReportEvery;
  const int ticks_per_report = static_cast<int>(kReportEvery / tick);
  self->delayed_send(self, tick, tick_atom::value);
  return {
      [=](welcome_atom, std::uint32_t id) {
        self->state.worker = id;
        self->state.welcomed = true;
        report(self);
      },
      [=](spill_atom) {
        if (limited) watch_memory(self);
      },
      [=](tick_atom) {
        auto& st = self->state;
        if (self->current_sender() != self->ctrl()) return;  // only its own timer
        if (limited) watch_memory(self);
        if (++st.ticks % ticks_per_report == 0) report(self);
        self->delayed_send(self, tick, tick_atom::value);
      },
      [=](shutdown_atom) {
        self->state.pool->set_admission(Admission::open);
        self->quit();
      },
  };
}

}  // namespace

protocols::chunk_store_type spawn_chunk_store_actor(caf::actor_system& system,
                                                    std::shared_ptr<ChunkStore> store,
                                                    std::shared_ptr<ComputePool> pool,
                                                    protocols::scheduler_actor_type scheduler) {
  // Only a limited worker writes to disk, and only its store actor blocks.
  if (store->options().limit > 0)
    return system.spawn<caf::detached>(chunk_store_actor, std::move(store), std::move(pool),
                                       std::move(scheduler));
  return system.spawn(chunk_store_actor, std::move(store), std::move(pool), std::move(scheduler));
}

}  // namespace tessera

#include "actors/checkpoint_writer.hpp"

#include "actors/protocols/scheduler.hpp"
#include "actors/stray_errors.hpp"

namespace tessera {
namespace {

protocols::checkpoint_writer_type::behavior_type checkpoint_writer(
    protocols::checkpoint_writer_type::pointer self, caf::actor scheduler) {
  survive_stray_errors(self, "checkpoint writer");
  // Held weakly, and ended with it: a strong handle each way would keep both alive for ever.
  self->monitor(scheduler);
  self->set_down_handler([=](const caf::down_msg&) { self->quit(); });
  const caf::actor_addr told = scheduler.address();
  return {
      [=](checkpoint_write_atom, CheckpointWrite& write) {
        CheckpointWritten done;
        done.records = write.records.size();
        done.tasks = std::move(write.tasks);
        if (write.store && !write.records.empty()) {
          try {
            write.store->write(write.records);
          } catch (const std::exception& e) {
            done.error = e.what();
          }
        }
        write.records.clear();  // the values go before the deliveries wake their clients
        done.sinks.reserve(write.deliveries.size());
        for (auto& [sink, batch] : write.deliveries) {
          sink->deliver(batch);
          done.sinks.push_back(std::move(sink));
        }
        if (auto to = caf::actor_cast<protocols::scheduler_actor_type>(told))
          self->send(to, checkpoint_written_atom::value, std::move(done));
      },
      [=](shutdown_atom) { self->quit(); },
  };
}

}  // namespace

protocols::checkpoint_writer_type spawn_checkpoint_writer(caf::actor_system& system, caf::actor scheduler) {
  return system.spawn<caf::detached>(checkpoint_writer, std::move(scheduler));
}

}  // namespace tessera

#include "actors/gpu_device_actor.hpp"

#include <memory>
#include <vector>

#include "actors/protocols/gpu_device.hpp"
#include "actors/stray_errors.hpp"
#include "backends/device_queue.hpp"

namespace tessera {
namespace {

struct GpuDeviceState {
  std::vector<std::shared_ptr<backends::DeviceQueue>> queues;
  std::size_t next = 0;
};

using GpuDeviceActor = protocols::gpu_device_type::stateful_base<GpuDeviceState>;

protocols::gpu_device_type::behavior_type gpu_device_actor(
    GpuDeviceActor* self, std::vector<std::shared_ptr<backends::DeviceQueue>> queues) {
  self->state.queues = std::move(queues);
  survive_stray_errors(self, "GPU device actor");
  return {
      [=](gpu_run_atom, GpuJob& job) {
        auto& st = self->state;
        // Round robin over the streams: independent chunks overlap on the device.
        auto& queue = *st.queues[st.next++ % st.queues.size()];
        try {
          queue.submit(job.enqueue, std::move(job.done));
        } catch (...) {
          job.failed(std::current_exception());
        }
      },
  };
}

}  // namespace

caf::actor spawn_gpu_device_actor(caf::actor_system& system, int device, int streams) {
  auto queues = backends::make_device_queues(device, streams);
  if (queues.empty()) return {};
  return caf::actor_cast<caf::actor>(system.spawn<caf::detached>(gpu_device_actor, std::move(queues)));
}

}  // namespace tessera

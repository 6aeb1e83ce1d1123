// Device queues in a build without CUDA: there are no GPUs to queue work on.
#include "backends/device_queue.hpp"

namespace tessera::backends {

int device_count() {
  return 0;
}
std::vector<std::shared_ptr<DeviceQueue>> make_device_queues(int, int) {
  return {};
}

}  // namespace tessera::backends

// libtessera_cuda: the cuda backend as a library of its own, which libtessera_backends loads on first use
// (cuda/loader.cpp) on a machine with an NVIDIA driver. Its entry points are C functions: everything else
// binds inside it (exports.map), so its register_cuda_kernels and device_count are never confused with the
// loader's functions of the same names.
#include <memory>
#include <vector>

#include "backends/device_queue.hpp"
#include "backends/dispatch.hpp"

extern "C" {

void tessera_cuda_register_kernels(tessera::backends::Dispatch* dispatch) {
  tessera::backends::register_cuda_kernels(*dispatch);
}

int tessera_cuda_device_count() {
  return tessera::backends::device_count();
}

void tessera_cuda_make_device_queues(int device, int streams,
                                     std::vector<std::shared_ptr<tessera::backends::DeviceQueue>>* out) {
  *out = tessera::backends::make_device_queues(device, streams);
}
}

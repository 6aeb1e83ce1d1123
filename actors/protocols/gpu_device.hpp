// The GPU device actor's protocol: jobs to enqueue on one of its CUDA queues.
#pragma once

#include <caf/all.hpp>

#include "actors/gpu_device_actor.hpp"

namespace tessera::protocols {

using gpu_device_type = caf::typed_actor<caf::reacts_to<gpu_run_atom, GpuJob>>;

}  // namespace tessera::protocols

// The GPU device actor: one per GPU a worker uses. It owns the device's queues (CUDA streams with their
// cuBLAS and cuSOLVER handles, see backends/device_queue.hpp), enqueues each job's kernels on the next
// queue, and the job's completion comes back as a message posted when the GPU reaches it: no thread waits
// for the GPU. Detached (its own thread), since a kernel that must read a result back to the host (a
// factorization's status, a condition number) waits for its stream in the middle.
#pragma once

#include <caf/all.hpp>
#include <exception>
#include <functional>

namespace tessera {

struct GpuJob {
  std::function<void()> enqueue;  // runs on the actor's thread, with a queue's stream current
  std::function<void()> done;     // from a CUDA driver thread: must only post a message
  std::function<void(std::exception_ptr)> failed;  // when enqueue threw (after its work finished)
};

using gpu_run_atom = caf::atom_constant<caf::atom("gpurun")>;

// A GPU device actor for `device` with `streams` queues; an invalid handle when the device cannot be used.
caf::actor spawn_gpu_device_actor(caf::actor_system& system, int device, int streams = 4);

}  // namespace tessera

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tessera::GpuJob)

// Asynchronous execution on a GPU, for the GPU device actor: a queue is one CUDA stream with its own cuBLAS
// and cuSOLVER handles. Kernels run inside submit() only enqueue their work on the queue's stream (they do
// not wait for it); `done` runs once the GPU has finished everything enqueued so far, from a CUDA driver
// thread, so no host thread blocks on the GPU. Without CUDA (or without a GPU) there are no queues.
#pragma once

#include <functional>
#include <memory>
#include <vector>

namespace tessera::backends {

class DeviceQueue {
 public:
  virtual ~DeviceQueue() = default;
  virtual int device() const = 0;
  // Runs `enqueue` on the calling thread with this queue's stream as the stream of every kernel it calls,
  // then arranges for `done` to run when the stream reaches that point. An exception from `enqueue` is
  // rethrown to the caller after the work it enqueued has finished; `done` is then not called.
  virtual void submit(const std::function<void()>& enqueue, std::function<void()> done) = 0;
};

// The number of usable GPUs (0 without CUDA or without a device).
int device_count();
// `streams` queues on `device` (none when the device is unusable).
std::vector<std::shared_ptr<DeviceQueue>> make_device_queues(int device, int streams);

}  // namespace tessera::backends

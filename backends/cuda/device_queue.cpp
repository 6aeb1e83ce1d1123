// DeviceQueue on CUDA (see backends/device_queue.hpp): each queue holds one stream with its cuBLAS and
// cuSOLVER handles, leased from the device's pool (context.hpp) like a thread's, so it is never destroyed
// while buffers allocated on it wait to be freed; a queue gives it back when it goes.
//
// submit() runs `enqueue` under a StreamOverride, so the kernels it calls enqueue their work on the queue's
// stream and finish() without waiting; kernels that must read results back to the host still wait
// (synchronize()) in the middle of `enqueue`. `done` is then enqueued behind that work with
// cudaLaunchHostFunc.
//
// A queue is used from one thread at a time (the GPU device actor's): its handles are not thread-safe, and
// the stream override is the calling thread's. It may be destroyed from any thread once no submit() runs.
//
// `done` runs on a CUDA driver thread, which runs the host functions of many streams one after another and
// holds this stream's later work back until it returns. So `done` must only post a message: it must not call
// CUDA, cuBLAS or cuSOLVER (the driver may fail the call or deadlock), nor block, nor let go of the last
// reference to a cuda chunk (freeing one calls CUDA); it is destroyed on that thread right after it runs.
// What it throws is ignored. If the device fails while the work runs (a fault that loses the CUDA context),
// the driver may never reach `done`.
#include <cuda_runtime.h>

#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "backends/chunk.hpp"
#include "backends/cuda/context.hpp"
#include "backends/device_queue.hpp"

namespace tessera::backends {
namespace {

// cudaLaunchHostFunc's callback: runs `done` (a heap-allocated std::function) and deletes it. A host
// function must not throw, nor call CUDA.
void CUDART_CB run_done(void* data) noexcept {
  std::unique_ptr<std::function<void()>> done(static_cast<std::function<void()>*>(data));
  try {
    (*done)();
  } catch (...) {
    // Nothing can report it from here; `done` is documented to only post a message.
  }
}

// Waits for the stream, ignoring its errors (an exception in flight already says what went wrong).
void wait_ignoring_errors(cudaStream_t stream) noexcept {
  if (cudaStreamSynchronize(stream) != cudaSuccess) cudaGetLastError();
}

class CudaDeviceQueue final : public DeviceQueue {
 public:
  // The caller has made the context's device current (the stream may be created now).
  explicit CudaDeviceQueue(cuda::DeviceContext& context) : context_(context), resources_(context.lease()) {}

  // Waits for the work still in flight (its `done` runs), then gives the stream back to the pool idle.
  ~CudaDeviceQueue() override {
    wait_ignoring_errors(resources_->stream);
    context_.give_back(resources_);
  }

  CudaDeviceQueue(const CudaDeviceQueue&) = delete;
  CudaDeviceQueue& operator=(const CudaDeviceQueue&) = delete;

  int device() const override { return context_.device(); }

  void submit(const std::function<void()>& enqueue, std::function<void()> done) override {
    cuda::DeviceGuard guard(device());
    // Allocated before anything is enqueued, so that failing to allocate it leaves no work in flight.
    auto heap_done = done ? std::make_unique<std::function<void()>>(std::move(done)) : nullptr;
    try {
      cuda::StreamOverride scope(device(), *resources_);
      enqueue();
    } catch (...) {
      // The work enqueued so far may use buffers and inputs that unwinding frees: let it finish first.
      wait_ignoring_errors(resources_->stream);
      throw;
    }
    if (!heap_done) return;
    const cudaError_t status = cudaLaunchHostFunc(resources_->stream, run_done, heap_done.get());
    if (status != cudaSuccess) {
      wait_ignoring_errors(resources_->stream);  // as when enqueue throws: `done` is not called
      cuda::raise_cuda_error(status, "cudaLaunchHostFunc");
    }
    heap_done.release();  // run_done owns it now
  }

 private:
  cuda::DeviceContext& context_;
  cuda::StreamResources* resources_;
};

}  // namespace

int device_count() {
  int count = 0;
  // Without a driver or a GPU this fails (cudaErrorInsufficientDriver, cudaErrorNoDevice): no devices.
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // clear it, so that it does not surface in a later check
    return 0;
  }
  return count;
}

std::vector<std::shared_ptr<DeviceQueue>> make_device_queues(int device, int streams) {
  std::vector<std::shared_ptr<DeviceQueue>> queues;
  if (streams <= 0 || device < 0 || device >= device_count()) return queues;
  try {
    cuda::DeviceGuard guard(device);  // streams and handles are created on the current device
    auto& context = cuda::DeviceContext::of(device);
    queues.reserve(static_cast<std::size_t>(streams));
    for (int k = 0; k < streams; ++k) queues.push_back(std::make_shared<CudaDeviceQueue>(context));
  } catch (const KernelError&) {
    queues.clear();  // a failing CUDA call: the device is unusable
  }
  return queues;
}

}  // namespace tessera::backends

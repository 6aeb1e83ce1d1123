// Per-device CUDA state. Each device gets one context, created on first use, owning a pool of streams: the
// first time a host thread runs a kernel on a device it leases a stream with its own cuBLAS and cuSOLVER
// handles bound to it, and the stream returns to the pool when the thread ends. Threads therefore never share
// a stream or a handle, and need no locks once they hold one.
//
// Kernels enqueue their work on the calling thread's stream and finish() it before returning their outputs:
// normally that synchronizes the stream, so a chunk never refers to unfinished work. Inside a DeviceQueue's
// submit() (device_queue.cpp) a StreamOverride makes the queue's stream the kernels' stream instead, and
// finish() does not wait: the queue reports completion, and the outputs may only be used after it. Waits the
// host needs for itself (reading a result back) are synchronize(), which always waits.
#pragma once

#include <memory>
#include <mutex>
#include <vector>

#include "backends/cuda/status.hpp"

namespace tessera::backends::cuda {

// One stream with the library handles bound to it; one host thread uses it at a time.
struct StreamResources {
  cudaStream_t stream = nullptr;
  cublasHandle_t blas = nullptr;
  cusolverDnHandle_t solver = nullptr;
};

class DeviceContext {
 public:
  // The context of `device`, created on first use. Contexts live until the process ends, since chunks freed
  // during static destruction may still free memory on their streams.
  static DeviceContext& of(int device);

  int device() const { return device_; }
  // Whether the device has stream-ordered memory pools (cudaMallocAsync); virtually all do.
  bool has_memory_pools() const { return has_memory_pools_; }
  // The calling thread's stream and handles on this device: those of the innermost StreamOverride for this
  // device when the thread has one, otherwise the thread's own, leased on its first use. The caller must have
  // made this device current (KernelStream does).
  const StreamResources& this_thread_stream();
  // A stream and handles for one user's exclusive use (a thread's, or a DeviceQueue's), from the pool or
  // created with this device current (the caller makes it current), until given back. Never destroyed: a
  // buffer allocated on a stream is freed on it, whenever its last holder lets go.
  StreamResources* lease();
  void give_back(StreamResources* resources);

  DeviceContext(const DeviceContext&) = delete;
  DeviceContext& operator=(const DeviceContext&) = delete;

 private:
  explicit DeviceContext(int device);

  int device_;
  bool has_memory_pools_ = false;
  std::mutex mutex_;
  std::vector<std::unique_ptr<StreamResources>> streams_;  // every stream made here; never destroyed
  std::vector<StreamResources*> idle_;                     // those no thread holds
};

// Makes a device current on the calling thread for the guard's lifetime, then restores the previous one.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = 0;
  bool changed_ = false;
};

// While alive, the calling thread's kernels on `device` use `resources` (a DeviceQueue's stream and handles)
// instead of the thread's leased stream, and their finish() does not wait. Kernels on other devices behave as
// without it. Scopes nest (the innermost for a device wins) and must end in reverse order, on the thread that
// made them; `resources` must outlive the scope, and be used by this thread alone meanwhile.
class StreamOverride {
 public:
  StreamOverride(int device, const StreamResources& resources);
  ~StreamOverride();
  StreamOverride(const StreamOverride&) = delete;
  StreamOverride& operator=(const StreamOverride&) = delete;

  // The resources of the calling thread's innermost override for `device`, or nullptr when it has none.
  static const StreamResources* active(int device);

 private:
  int device_;
  const StreamResources* resources_;
  const StreamOverride* outer_;  // the scope this one is nested in, restored at its end
};

// What one kernel call works with: its device made current, and the calling thread's stream and handles (a
// queue's, inside a StreamOverride for the device).
class KernelStream {
 public:
  explicit KernelStream(int device);
  // When a kernel throws, waits for what it enqueued before its buffers and inputs can be freed (inside a
  // queue's scope too).
  ~KernelStream();
  KernelStream(const KernelStream&) = delete;
  KernelStream& operator=(const KernelStream&) = delete;

  int device() const { return device_; }
  cudaStream_t stream() const { return resources_->stream; }
  cublasHandle_t blas() const { return resources_->blas; }
  cusolverDnHandle_t solver() const { return resources_->solver; }
  bool has_memory_pools() const { return context_->has_memory_pools(); }
  // Whether the stream is a DeviceQueue's (the kernel runs inside its submit()).
  bool queued() const { return queued_; }
  // Waits until all the work enqueued on the stream is done, always: for a host that reads device results
  // next (a download, a status code), or whose host memory a copy still uses.
  void synchronize() const { check_cuda(cudaStreamSynchronize(stream()), "cudaStreamSynchronize"); }
  // Kernels call it before returning outputs: synchronize(), except on a queue's stream, where the outputs
  // are ready when the queue reports completion. (On a device without memory pools it always waits: the
  // kernel's workspaces are then freed with cudaFree, which is not ordered after the stream's work.)
  void finish() const {
    if (!queued_ || !has_memory_pools()) synchronize();
  }

 private:
  DeviceGuard guard_;  // first: the device is current before the stream is leased
  int device_;
  DeviceContext* context_;
  const StreamResources* resources_;
  bool queued_;
  int uncaught_at_start_;
};

// The device current on the calling thread (0 unless the thread chose another); creation kernels use it.
int current_device();

}  // namespace tessera::backends::cuda

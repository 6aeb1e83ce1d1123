// Per-device CUDA state. Each device gets one context, created on first use, owning a pool of streams: the
// first time a host thread runs a kernel on a device it leases a stream with its own cuBLAS and cuSOLVER
// handles bound to it, and the stream returns to the pool when the thread ends. Threads therefore never share
// a stream or a handle, and need no locks once they hold one.
//
// Kernels enqueue their work on the calling thread's stream and synchronize that stream before returning
// their outputs, so a chunk never refers to unfinished work. (A GPU device actor will later take completion
// as a message instead, keeping several kernels in flight per stream.)
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
  // The calling thread's stream and handles on this device, leased on the thread's first use. The caller must
  // have made this device current (KernelStream does).
  const StreamResources& this_thread_stream();

  DeviceContext(const DeviceContext&) = delete;
  DeviceContext& operator=(const DeviceContext&) = delete;

 private:
  explicit DeviceContext(int device);
  StreamResources* lease();
  void give_back(StreamResources* resources);
  friend struct ThreadLeases;

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

// What one kernel call works with: its device made current, and the calling thread's stream and handles.
class KernelStream {
 public:
  explicit KernelStream(int device);
  // When a kernel throws, waits for what it enqueued before its buffers and inputs can be freed.
  ~KernelStream();
  KernelStream(const KernelStream&) = delete;
  KernelStream& operator=(const KernelStream&) = delete;

  int device() const { return device_; }
  cudaStream_t stream() const { return resources_->stream; }
  cublasHandle_t blas() const { return resources_->blas; }
  cusolverDnHandle_t solver() const { return resources_->solver; }
  bool has_memory_pools() const { return context_->has_memory_pools(); }
  // Waits until all the work enqueued on the stream is done; kernels call it before returning outputs.
  void synchronize() const { check_cuda(cudaStreamSynchronize(stream()), "cudaStreamSynchronize"); }

 private:
  DeviceGuard guard_;  // first: the device is current before the stream is leased
  int device_;
  DeviceContext* context_;
  const StreamResources* resources_;
  int uncaught_at_start_;
};

// The device current on the calling thread (0 unless the thread chose another); creation kernels use it.
int current_device();

}  // namespace tessera::backends::cuda

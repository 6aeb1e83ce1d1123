#include "backends/cuda/context.hpp"

#include <cstdint>
#include <exception>
#include <string>
#include <utility>

namespace tessera::backends::cuda {

// The streams the calling thread holds, one per device it used; given back when the thread ends.
struct ThreadLeases {
  std::vector<std::pair<DeviceContext*, StreamResources*>> held;

  ~ThreadLeases() {
    for (auto& [context, resources] : held) context->give_back(resources);
  }
};

namespace {

thread_local ThreadLeases thread_leases;
thread_local const StreamOverride* innermost_override = nullptr;

// Creates a stream and its handles, destroying what was made if a later step fails.
std::unique_ptr<StreamResources> create_stream_resources() {
  auto resources = std::make_unique<StreamResources>();
  try {
    // Non-blocking: the stream never waits for the legacy default stream that other libraries may use.
    check_cuda(cudaStreamCreateWithFlags(&resources->stream, cudaStreamNonBlocking),
               "cudaStreamCreateWithFlags");
    check_cublas(cublasCreate(&resources->blas), "cublasCreate");
    check_cublas(cublasSetStream(resources->blas, resources->stream), "cublasSetStream");
    check_cusolver(cusolverDnCreate(&resources->solver), "cusolverDnCreate");
    check_cusolver(cusolverDnSetStream(resources->solver, resources->stream), "cusolverDnSetStream");
  } catch (...) {
    if (resources->solver) cusolverDnDestroy(resources->solver);
    if (resources->blas) cublasDestroy(resources->blas);
    if (resources->stream) cudaStreamDestroy(resources->stream);
    throw;
  }
  return resources;
}

}  // namespace

DeviceContext& DeviceContext::of(int device) {
  static std::mutex mutex;
  static std::vector<DeviceContext*> contexts;  // by device; never destroyed (see the header)
  std::lock_guard lock(mutex);
  if (contexts.empty()) {
    int count = 0;
    check_cuda(cudaGetDeviceCount(&count), "cudaGetDeviceCount");
    contexts.assign(static_cast<std::size_t>(count), nullptr);
  }
  if (device < 0 || static_cast<std::size_t>(device) >= contexts.size())
    raise_kernel_error("cuda device " + std::to_string(device) + " does not exist (this machine has " +
                       std::to_string(contexts.size()) + ")");
  auto& context = contexts[static_cast<std::size_t>(device)];
  if (!context) context = new DeviceContext(device);
  return *context;
}

DeviceContext::DeviceContext(int device) : device_(device) {
  int pools = 0;
  check_cuda(cudaDeviceGetAttribute(&pools, cudaDevAttrMemoryPoolsSupported, device),
             "cudaDeviceGetAttribute");
  has_memory_pools_ = pools != 0;
  if (has_memory_pools_) {
    // By default the pool returns its memory to the driver at every synchronization, and kernels outside
    // queues synchronize every time: keep it instead, so that allocating a chunk is a pool hit rather than a
    // cudaMalloc.
    cudaMemPool_t pool = nullptr;
    check_cuda(cudaDeviceGetDefaultMemPool(&pool, device), "cudaDeviceGetDefaultMemPool");
    std::uint64_t keep_everything = UINT64_MAX;
    check_cuda(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep_everything),
               "cudaMemPoolSetAttribute(cudaMemPoolAttrReleaseThreshold)");
  }
}

const StreamResources& DeviceContext::this_thread_stream() {
  if (const StreamResources* queue = StreamOverride::active(device_)) return *queue;
  for (const auto& [context, resources] : thread_leases.held)
    if (context == this) return *resources;
  StreamResources* resources = lease();
  thread_leases.held.emplace_back(this, resources);
  return *resources;
}

StreamResources* DeviceContext::lease() {
  {
    std::lock_guard lock(mutex_);
    if (!idle_.empty()) {
      StreamResources* resources = idle_.back();
      idle_.pop_back();
      return resources;
    }
  }
  auto created = create_stream_resources();  // outside the lock: creating handles takes milliseconds
  std::lock_guard lock(mutex_);
  streams_.push_back(std::move(created));
  return streams_.back().get();
}

void DeviceContext::give_back(StreamResources* resources) {
  std::lock_guard lock(mutex_);
  idle_.push_back(resources);
}

DeviceGuard::DeviceGuard(int device) {
  check_cuda(cudaGetDevice(&previous_), "cudaGetDevice");
  if (previous_ != device) {
    check_cuda(cudaSetDevice(device), "cudaSetDevice");
    changed_ = true;
  }
}

DeviceGuard::~DeviceGuard() {
  if (changed_ && cudaSetDevice(previous_) != cudaSuccess) cudaGetLastError();  // nothing to do about it here
}

StreamOverride::StreamOverride(int device, const StreamResources& resources)
    : device_(device), resources_(&resources), outer_(innermost_override) {
  innermost_override = this;
}

StreamOverride::~StreamOverride() {
  innermost_override = outer_;
}

const StreamResources* StreamOverride::active(int device) {
  for (const StreamOverride* scope = innermost_override; scope; scope = scope->outer_)
    if (scope->device_ == device) return scope->resources_;
  return nullptr;
}

KernelStream::KernelStream(int device)
    : guard_(device),
      device_(device),
      context_(&DeviceContext::of(device)),
      resources_(&context_->this_thread_stream()),
      queued_(StreamOverride::active(device) == resources_),
      uncaught_at_start_(std::uncaught_exceptions()) {}

KernelStream::~KernelStream() {
  if (std::uncaught_exceptions() > uncaught_at_start_ && cudaStreamSynchronize(stream()) != cudaSuccess)
    cudaGetLastError();  // the exception in flight already says what went wrong
}

int current_device() {
  int device = 0;
  check_cuda(cudaGetDevice(&device), "cudaGetDevice");
  return device;
}

}  // namespace tessera::backends::cuda

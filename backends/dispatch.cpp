#include "backends/dispatch.hpp"

#include "backends/composite.hpp"
#include "backends/glm_partials.hpp"

#include <array>
#include <map>
#include <mutex>
#include <shared_mutex>
#include <thread>

namespace tessera::backends {

struct Dispatch::Impl {
  mutable std::shared_mutex mutex;
  std::map<std::pair<std::string, Backend>, Kernel, std::less<>> kernels;
  std::array<Availability, 3> availability{};
};

Dispatch::Dispatch() : impl_(std::make_unique<Impl>()) {}
Dispatch::~Dispatch() = default;

Dispatch& Dispatch::global() {
  static Dispatch* table = [] {
    auto* d = new Dispatch();  // never destroyed: kernels may run during static destruction of users
    register_cpu_kernels(*d);
    register_sparse_kernels(*d);
    register_cuda_kernels(*d);
    glm::register_glm_kernels(*d);
    register_composite_kernels(*d);  // after the backends: composites exist where their parts do
    return d;
  }();
  return *table;
}

void Dispatch::add(std::string_view operation, Backend backend, Kernel kernel) {
  std::unique_lock lock(impl_->mutex);
  impl_->kernels[{std::string(operation), backend}] = std::move(kernel);
}

bool Dispatch::has(std::string_view operation, Backend backend) const {
  std::shared_lock lock(impl_->mutex);
  return impl_->kernels.count(std::pair<std::string, Backend>{std::string(operation), backend}) > 0;
}

const Kernel& Dispatch::get(std::string_view operation, Backend backend) const {
  std::shared_lock lock(impl_->mutex);
  auto it = impl_->kernels.find(std::pair<std::string, Backend>{std::string(operation), backend});
  if (it == impl_->kernels.end())
    throw KernelError("operation '" + std::string(operation) + "' has no kernel for the " +
                      std::string(backend_name(backend)) + " backend");
  return it->second;  // entries are never removed, so the reference outlives the lock
}

namespace {

// BLAS threads follow the number of kernels running in this process: a kernel running alone (the SVD of
// R at the root of TSQR, say) gets every core; as soon as a second starts, each gets one. The count
// changes between BLAS calls, so cores are shared only for the rest of a call already under way.
class BlasThreadPolicy {
 public:
  static BlasThreadPolicy& instance() {
    static BlasThreadPolicy policy;
    return policy;
  }
  void enter() {
    std::lock_guard lock(mutex_);
    if (++running_ == 1)
      set_blas_threads(cores_);
    else if (running_ == 2)
      set_blas_threads(1);
  }
  void leave() {
    std::lock_guard lock(mutex_);
    if (--running_ == 1) set_blas_threads(cores_);
  }

 private:
  BlasThreadPolicy() : cores_(static_cast<int>(std::max(1u, std::thread::hardware_concurrency()))) {}
  std::mutex mutex_;
  int running_ = 0;
  int cores_;
};

struct RunningKernel {
  RunningKernel() { BlasThreadPolicy::instance().enter(); }
  ~RunningKernel() { BlasThreadPolicy::instance().leave(); }
  RunningKernel(const RunningKernel&) = delete;
  RunningKernel& operator=(const RunningKernel&) = delete;
};

}  // namespace

Chunks Dispatch::run(std::string_view operation, std::span<const ChunkPtr> inputs, const Params& params,
                     Backend backend) const {
  if (!inputs.empty()) backend = inputs.front()->backend();
  const Kernel& kernel = get(operation, backend);
  // Composite kernels call run() again: only the outermost call counts as a running kernel.
  thread_local int depth = 0;
  if (depth > 0) return kernel(inputs, params);
  ++depth;
  struct Depth {
    ~Depth() { --depth; }
  } restore_depth;
  RunningKernel running;
  return kernel(inputs, params);
}

void Dispatch::set_availability(Backend backend, Availability availability) {
  std::unique_lock lock(impl_->mutex);
  impl_->availability[static_cast<std::size_t>(backend)] = std::move(availability);
}

Availability Dispatch::availability(Backend backend) const {
  std::shared_lock lock(impl_->mutex);
  return impl_->availability[static_cast<std::size_t>(backend)];
}

void Dispatch::require(Backend backend) const {
  auto a = availability(backend);
  if (!a.available)
    throw KernelError("the " + std::string(backend_name(backend)) + " backend is unavailable: " + a.reason);
}

}  // namespace tessera::backends

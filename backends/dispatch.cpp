#include "backends/dispatch.hpp"

#include "backends/composite.hpp"
#include "backends/conditional.hpp"
#include "backends/donation.hpp"
#include "backends/glm_partials.hpp"

#include <array>
#include <map>
#include <mutex>
#include <shared_mutex>
#include <thread>

namespace tessera::backends {

struct Dispatch::Impl {
  mutable std::shared_mutex mutex;
  struct Entry {
    Kernel kernel;
    BlasThreads blas = BlasThreads::shared;
  };
  std::map<std::pair<std::string, Backend>, Entry, std::less<>> kernels;

  const Entry& entry(std::string_view operation, Backend backend) const;
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
    register_conditional_kernels(*d);
    return d;
  }();
  return *table;
}

void Dispatch::add(std::string_view operation, Backend backend, Kernel kernel, BlasThreads blas) {
  std::unique_lock lock(impl_->mutex);
  impl_->kernels[{std::string(operation), backend}] = Impl::Entry{std::move(kernel), blas};
}

bool Dispatch::has(std::string_view operation, Backend backend) const {
  std::shared_lock lock(impl_->mutex);
  return impl_->kernels.count(std::pair<std::string, Backend>{std::string(operation), backend}) > 0;
}

const Dispatch::Impl::Entry& Dispatch::Impl::entry(std::string_view operation, Backend backend) const {
  std::shared_lock lock(mutex);
  auto it = kernels.find(std::pair<std::string, Backend>{std::string(operation), backend});
  if (it == kernels.end())
    throw KernelError("operation '" + std::string(operation) + "' has no kernel for the " +
                      std::string(backend_name(backend)) + " backend");
  return it->second;  // entries are never removed, so the reference outlives the lock
}

const Kernel& Dispatch::get(std::string_view operation, Backend backend) const {
  return impl_->entry(operation, backend).kernel;
}

namespace {

// BLAS threads follow the number of kernels running in this process: a kernel running alone (the SVD of
// R at the root of TSQR, say) gets every core; as soon as a second starts, each gets one. A kernel of
// many small BLAS calls (BlasThreads::one) never gets more: its calls are too small to share, and
// OpenBLAS's idle threads would spin beside the other compute threads. The count changes between BLAS
// calls, so cores are shared only for the rest of a call already under way.
class BlasThreadPolicy {
 public:
  static BlasThreadPolicy& instance() {
    static BlasThreadPolicy policy;
    return policy;
  }
  void enter(BlasThreads blas) {
    std::lock_guard lock(mutex_);
    ++running_;
    if (blas == BlasThreads::shared) ++sharing_;
    apply();
  }
  void leave(BlasThreads blas) {
    std::lock_guard lock(mutex_);
    --running_;
    if (blas == BlasThreads::shared) --sharing_;
    apply();
  }

 private:
  BlasThreadPolicy() : cores_(static_cast<int>(std::max(1u, std::thread::hardware_concurrency()))) {}
  // Set each time, not only on a change: a compute pool that starts sets one thread behind this count.
  void apply() { set_blas_threads(running_ == 1 && sharing_ == 1 ? cores_ : 1); }
  std::mutex mutex_;
  int running_ = 0, sharing_ = 0;
  int cores_;
};

struct RunningKernel {
  explicit RunningKernel(BlasThreads blas) : blas(blas) { BlasThreadPolicy::instance().enter(blas); }
  ~RunningKernel() { BlasThreadPolicy::instance().leave(blas); }
  RunningKernel(const RunningKernel&) = delete;
  RunningKernel& operator=(const RunningKernel&) = delete;
  BlasThreads blas;
};

}  // namespace

Chunks Dispatch::run(std::string_view operation, std::span<const ChunkPtr> inputs, const Params& params,
                     Backend backend) const {
  if (!inputs.empty()) backend = inputs.front()->backend();
  const auto& entry = impl_->entry(operation, backend);
  // Composite kernels call run() again: only the outermost call counts as a running kernel.
  thread_local int depth = 0;
  if (depth > 0) {
    // A composite operation keeps using what it passes on: its parts may not overwrite a donated chunk.
    const ChunkDonation none(nullptr);
    return entry.kernel(inputs, params);
  }
  ++depth;
  struct Depth {
    ~Depth() { --depth; }
  } restore_depth;
  RunningKernel running(entry.blas);
  return entry.kernel(inputs, params);
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

// The dispatch table: one kernel per (operation, backend). Algorithm code names operations; the backend
// of the chunks decides which kernel runs, so the same algorithm runs on cpu, sparse and cuda chunks.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "backends/chunk.hpp"

namespace tessera::backends {

// A kernel's parameters besides its chunks: numbers and a name, as they travel (in array tasks and on the
// wire). Kernels and builders do not read them by position: each operation's struct in
// backends/kernel_params.hpp names the fields and checks them.
struct Params {
  std::string name;
  std::vector<std::int64_t> ints;
  std::vector<double> reals;
};

using Chunks = std::vector<ChunkPtr>;
using Kernel = std::function<Chunks(std::span<const ChunkPtr> inputs, const Params& params)>;

// Tells whether a backend can run at all here (cuda without a GPU cannot), and why not.
struct Availability {
  bool available = true;
  std::string reason;
};

// Whether a kernel's BLAS calls may use every core when it runs alone (shared), or always one thread
// (one: many small calls, which BLAS threads would only slow down).
enum class BlasThreads : std::uint8_t { shared, one };

class Dispatch {
 public:
  // The table with every built-in backend's kernels registered.
  static Dispatch& global();

  void add(std::string_view operation, Backend backend, Kernel kernel,
           BlasThreads blas = BlasThreads::shared);
  bool has(std::string_view operation, Backend backend) const;
  // Throws KernelError naming the operation and the backend when no kernel is registered.
  const Kernel& get(std::string_view operation, Backend backend) const;
  // Runs `operation` on the backend of the first input (or `backend` for operations without inputs).
  Chunks run(std::string_view operation, std::span<const ChunkPtr> inputs, const Params& params,
             Backend backend = Backend::cpu) const;

  void set_availability(Backend backend, Availability availability);
  Availability availability(Backend backend) const;
  // Throws KernelError with the reason when the backend cannot run here.
  void require(Backend backend) const;

  Dispatch();
  ~Dispatch();
  Dispatch(const Dispatch&) = delete;
  Dispatch& operator=(const Dispatch&) = delete;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Each backend's kernels (defined beside them); Dispatch::global() calls them once.
void register_cpu_kernels(Dispatch& dispatch);
void register_sparse_kernels(Dispatch& dispatch);
void register_cuda_kernels(Dispatch& dispatch);  // marks cuda unavailable when built without CUDA

// BLAS threads per kernel call: 1 when the framework runs chunks in parallel (OpenBLAS's own threads then
// only oversubscribe the cores: two concurrent 2-thread dgeqrf calls took 3.3x as long as 1-thread ones).
void set_blas_threads(int threads);
// Stops BLAS's thread pool; it starts again on the next call that needs it, from the calling thread (whose
// signal mask its threads inherit). For programs that block signals in main: OpenBLAS starts its pool
// when it is loaded, before main, with every signal open.
void restart_blas_threads();

}  // namespace tessera::backends

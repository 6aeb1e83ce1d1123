// The cpu backend's entry points: its kernels into the dispatch table, and BLAS's threads.
#include "backends/cpu/dense_util.hpp"

extern "C" void openblas_set_num_threads(int threads);
extern "C" int blas_thread_shutdown_(void);

namespace tessera::backends {

void set_blas_threads(int threads) {
  openblas_set_num_threads(std::max(1, threads));
}

void restart_blas_threads() {
  blas_thread_shutdown_();
}

void register_cpu_kernels(Dispatch& dispatch) {
  cpu::register_elementwise(dispatch);
  cpu::register_layout(dispatch);
  cpu::register_reductions(dispatch);
  cpu::register_linalg(dispatch);
}

}  // namespace tessera::backends

// The cuda backend's entry point: its kernels into the dispatch table, and whether a GPU is there to run
// them. (unavailable.cpp defines the same function for builds without CUDA; only one of the two is ever
// linked.)
#include "backends/cuda/kernel_util.hpp"

namespace tessera::backends {

void register_cuda_kernels(Dispatch& dispatch) {
  // Registered even without a GPU, so that a missing kernel and a missing device give different errors.
  cuda::register_elementwise(dispatch);
  cuda::register_layout(dispatch);
  cuda::register_reductions(dispatch);
  cuda::register_linalg(dispatch);

  int devices = 0;
  // Without a GPU this is cudaErrorInsufficientDriver (35) rather than cudaErrorNoDevice: any error means
  // none.
  const cudaError_t status = cudaGetDeviceCount(&devices);
  if (status != cudaSuccess) {
    cudaGetLastError();  // clear it, so that it does not surface in a later check
    dispatch.set_availability(
        Backend::cuda, {false, std::string("no usable CUDA device: cudaGetDeviceCount failed: ") +
                                   cudaGetErrorName(status) + " (" + cudaGetErrorString(status) + ")"});
  } else if (devices == 0) {
    dispatch.set_availability(Backend::cuda, {false, "no CUDA device found (cudaGetDeviceCount returned 0)"});
  } else {
    dispatch.set_availability(Backend::cuda, {true, ""});
  }
}

}  // namespace tessera::backends

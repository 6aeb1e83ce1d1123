// Status checks for CUDA runtime, cuBLAS and cuSOLVER calls: a failure becomes a KernelError naming the call
// and the status. Plain C++17 without Eigen, so the .cu files can include it as well.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cusolverDn.h>

#include <string>

namespace tessera::backends::cuda {

// Throws KernelError (defined in status.cpp, where chunk.hpp is visible; the .cu files never include it).
[[noreturn]] void raise_kernel_error(const std::string& message);

[[noreturn]] void raise_cuda_error(cudaError_t status, const char* call);
[[noreturn]] void raise_cublas_error(cublasStatus_t status, const char* call);
[[noreturn]] void raise_cusolver_error(cusolverStatus_t status, const char* call);

inline void check_cuda(cudaError_t status, const char* call) {
  if (status != cudaSuccess) raise_cuda_error(status, call);
}
inline void check_cublas(cublasStatus_t status, const char* call) {
  if (status != CUBLAS_STATUS_SUCCESS) raise_cublas_error(status, call);
}
inline void check_cusolver(cusolverStatus_t status, const char* call) {
  if (status != CUSOLVER_STATUS_SUCCESS) raise_cusolver_error(status, call);
}
// After a kernel launch: a bad launch configuration is reported at once, named after the kernel.
inline void check_launch(const char* kernel) {
  check_cuda(cudaGetLastError(), kernel);
}

const char* cusolver_status_name(cusolverStatus_t status);

}  // namespace tessera::backends::cuda

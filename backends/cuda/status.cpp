#include "backends/cuda/status.hpp"

#include "backends/chunk.hpp"

namespace tessera::backends::cuda {

void raise_kernel_error(const std::string& message) {
  throw KernelError(message);
}

void raise_cuda_error(cudaError_t status, const char* call) {
  cudaGetLastError();  // clears the error, so that the next check_launch does not report it again
  throw KernelError(std::string(call) + " failed: " + cudaGetErrorName(status) + " (" +
                    cudaGetErrorString(status) + ")");
}

void raise_cublas_error(cublasStatus_t status, const char* call) {
  throw KernelError(std::string(call) + " failed: " + cublasGetStatusName(status) + " (" +
                    cublasGetStatusString(status) + ")");
}

void raise_cusolver_error(cusolverStatus_t status, const char* call) {
  throw KernelError(std::string(call) + " failed: " + cusolver_status_name(status) + " (status " +
                    std::to_string(static_cast<int>(status)) + ")");
}

// cuSOLVER has no status-string function of its own.
const char* cusolver_status_name(cusolverStatus_t status) {
  switch (status) {
    case CUSOLVER_STATUS_SUCCESS:
      return "CUSOLVER_STATUS_SUCCESS";
    case CUSOLVER_STATUS_NOT_INITIALIZED:
      return "CUSOLVER_STATUS_NOT_INITIALIZED";
    case CUSOLVER_STATUS_ALLOC_FAILED:
      return "CUSOLVER_STATUS_ALLOC_FAILED";
    case CUSOLVER_STATUS_INVALID_VALUE:
      return "CUSOLVER_STATUS_INVALID_VALUE";
    case CUSOLVER_STATUS_ARCH_MISMATCH:
      return "CUSOLVER_STATUS_ARCH_MISMATCH";
    case CUSOLVER_STATUS_MAPPING_ERROR:
      return "CUSOLVER_STATUS_MAPPING_ERROR";
    case CUSOLVER_STATUS_EXECUTION_FAILED:
      return "CUSOLVER_STATUS_EXECUTION_FAILED";
    case CUSOLVER_STATUS_INTERNAL_ERROR:
      return "CUSOLVER_STATUS_INTERNAL_ERROR";
    case CUSOLVER_STATUS_MATRIX_TYPE_NOT_SUPPORTED:
      return "CUSOLVER_STATUS_MATRIX_TYPE_NOT_SUPPORTED";
    case CUSOLVER_STATUS_NOT_SUPPORTED:
      return "CUSOLVER_STATUS_NOT_SUPPORTED";
    case CUSOLVER_STATUS_ZERO_PIVOT:
      return "CUSOLVER_STATUS_ZERO_PIVOT";
    case CUSOLVER_STATUS_INVALID_LICENSE:
      return "CUSOLVER_STATUS_INVALID_LICENSE";
    case CUSOLVER_STATUS_INVALID_WORKSPACE:
      return "CUSOLVER_STATUS_INVALID_WORKSPACE";
    default:
      return "cuSOLVER status outside the known list";
  }
}

}  // namespace tessera::backends::cuda

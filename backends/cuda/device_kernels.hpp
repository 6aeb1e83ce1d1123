// The launchers of Tessera's own CUDA kernels (elementwise.cu, reductions.cu). Each checks its operation
// name, enqueues its work on `stream` and returns without waiting. Plain C++17 without Eigen, since nvcc
// compiles the files that define them; the host kernels (*_kernels.cpp) validate shapes before calling them.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace tessera::backends::cuda {

// A dense column-major operand of a broadcasting kernel: a dimension of extent 1 repeats along the result's.
template <class T>
struct Operand {
  const T* data;
  std::int64_t rows, cols;
};

// Elementwise (elementwise.cu). `name` is one of elementwise_ops.hpp's names; others throw KernelError.
template <class T>
void launch_unary(const std::string& name, const T* in, T* out, std::int64_t count, cudaStream_t stream);
template <class T>
void launch_scalar(const std::string& name, const T* in, T scalar, bool scalar_left, T* out,
                   std::int64_t count, cudaStream_t stream);
template <class T>
void launch_binary(const std::string& name, Operand<T> a, Operand<T> b, T* out, std::int64_t rows,
                   std::int64_t cols, cudaStream_t stream);
// out = cast<T>(mask) != 0 ? a : b, broadcasting all three.
template <class M, class T>
void launch_where(Operand<M> mask, Operand<T> a, Operand<T> b, T* out, std::int64_t rows, std::int64_t cols,
                  cudaStream_t stream);
template <class From, class To>
void launch_convert(const From* in, To* out, std::int64_t count, cudaStream_t stream);
template <class T>
void launch_fill(T* out, std::int64_t count, T value, cudaStream_t stream);
// out (rows x cols) = the upper triangle of the top rows of `in` (leading dimension `ld`), zeros below.
template <class T>
void launch_upper_triangle(const T* in, std::int64_t ld, T* out, std::int64_t rows, std::int64_t cols,
                           cudaStream_t stream);
// out = a * diag(scales), or a * diag(1 / scales) when `divide` (the reciprocal first, as the cpu kernel).
template <class T>
void launch_scale_columns(const T* a, std::int64_t rows, std::int64_t cols, const T* scales, bool divide,
                          T* out, cudaStream_t stream);

// Reductions (reductions.cu). Reductions over all elements go through per-block partials in a workspace of
// kReductionWorkspaceBytes device bytes that the caller provides.
inline constexpr int kMaxPartials = 1024;
inline constexpr std::size_t kReductionWorkspaceBytes =
    kMaxPartials * (sizeof(double) + sizeof(std::int64_t));

// name in sum, sumsq, min, max; axis 0 -> out 1 x cols, 1 -> rows x 1, -1 -> 1 x 1. min and max of no
// elements have no value: the caller rejects them. NaN propagates through min and max.
template <class T>
void launch_reduce(const std::string& name, const T* in, std::int64_t rows, std::int64_t cols, int axis,
                   T* out, void* workspace, cudaStream_t stream);
// argmax (is_max) or argmin of a non-empty matrix into float64 `out`, laid out as ops::argreduce documents;
// NaN wins and ties go to the first index (row-major order for axis -1).
template <class T>
void launch_argreduce(bool is_max, const T* in, std::int64_t rows, std::int64_t cols, int axis,
                      std::int64_t first_row, std::int64_t first_col, std::int64_t total_cols, double* out,
                      void* workspace, cudaStream_t stream);
// Sets *flag (zeroed by the caller) to 1 when any element is NaN or infinite.
template <class T>
void launch_find_nonfinite(const T* in, std::int64_t count, unsigned int* flag, cudaStream_t stream);

}  // namespace tessera::backends::cuda

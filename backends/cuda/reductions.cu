// Reduction device kernels: sum, sumsq, min and max along an axis or over everything, argmax and argmin with
// their indices, and a finiteness check. One block reduces a column (or a row of a short matrix); reductions
// over everything run in two stages through per-block partials.
#include <algorithm>

#include "backends/cuda/device_kernels.hpp"
#include "backends/cuda/status.hpp"

namespace tessera::backends::cuda {
namespace {

constexpr int kThreads = 256;  // a multiple of the warp size: block_reduce relies on it
constexpr int kWarpSize = 32;
constexpr unsigned int kFullMask = 0xffffffffu;
constexpr std::int64_t kMaxBlocks = 65535;
// Below this many rows, a reduction along rows gives each row a block instead of a thread.
constexpr std::int64_t kRowsForThreadPerRow = 4096;

unsigned int blocks_for(std::int64_t count, std::int64_t max_blocks) {
  return static_cast<unsigned int>(
      std::clamp<std::int64_t>((count + kThreads - 1) / kThreads, 1, max_blocks));
}
unsigned int grid_for_items(std::int64_t items) {
  return static_cast<unsigned int>(std::clamp<std::int64_t>(items, 1, kMaxBlocks));
}

__device__ inline bool is_nan(double x) {
  return x != x;
}
__device__ inline bool is_nan(float x) {
  return x != x;
}

// A reduction as an identity, a transform of each element and an associative combination.
template <class T>
struct SumOp {
  __device__ static T identity() { return T(0); }
  __device__ static T transform(T x) { return x; }
  __device__ static T combine(T a, T b) { return a + b; }
};
template <class T>
struct SumSquaresOp {
  __device__ static T identity() { return T(0); }
  __device__ static T transform(T x) { return x * x; }
  __device__ static T combine(T a, T b) { return a + b; }
};
template <class T>
struct MinOp {
  __device__ static T identity() { return T(INFINITY); }
  __device__ static T transform(T x) { return x; }
  __device__ static T combine(T a, T b) {
    if (is_nan(a)) return a;
    if (is_nan(b)) return b;
    return b < a ? b : a;
  }
};
template <class T>
struct MaxOp {
  __device__ static T identity() { return T(-INFINITY); }
  __device__ static T transform(T x) { return x; }
  __device__ static T combine(T a, T b) {
    if (is_nan(a)) return a;
    if (is_nan(b)) return b;
    return a < b ? b : a;
  }
};

// An arg-reduction candidate: a value and its index (the element's rank in the order ties resolve by).
template <class T>
struct Candidate {
  T value;
  std::int64_t index;  // -1: no element yet
};

// The candidate argmax/argmin keeps of two: NaN first, then the better value, then the smaller index, which
// is what a sequential scan keeping the first strictly better element picks.
template <class T>
__device__ Candidate<T> pick(Candidate<T> a, Candidate<T> b, bool is_max) {
  if (a.index < 0) return b;
  if (b.index < 0) return a;
  const bool a_nan = is_nan(a.value), b_nan = is_nan(b.value);
  if (a_nan != b_nan) return a_nan ? a : b;
  if (a_nan || a.value == b.value) return a.index <= b.index ? a : b;
  return (is_max ? a.value > b.value : a.value < b.value) ? a : b;
}

template <class T>
__device__ T shuffle_down(T value, int offset) {
  return __shfl_down_sync(kFullMask, value, offset);
}
template <class T>
__device__ Candidate<T> shuffle_down(Candidate<T> candidate, int offset) {
  return {__shfl_down_sync(kFullMask, candidate.value, offset),
          __shfl_down_sync(kFullMask, candidate.index, offset)};
}

// Reduces one value per thread of the block; the result is valid in thread 0. Every thread must call it, and
// it may be called again (in a loop) since it synchronizes before returning.
template <class V, class Combine>
__device__ V block_reduce(V value, V identity, Combine combine) {
  __shared__ V warp_results[kThreads / kWarpSize];
  const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2)
    value = combine(value, shuffle_down(value, offset));
  if (lane == 0) warp_results[warp] = value;
  __syncthreads();
  if (warp == 0) {
    value = lane < static_cast<int>(blockDim.x / kWarpSize) ? warp_results[lane] : identity;
    for (int offset = kWarpSize / 2; offset > 0; offset /= 2)
      value = combine(value, shuffle_down(value, offset));
  }
  __syncthreads();
  return value;
}

template <class Op, class T>
struct Combiner {
  __device__ T operator()(T a, T b) const { return Op::combine(a, b); }
};
template <class T>
struct CandidatePicker {
  bool is_max;
  __device__ Candidate<T> operator()(Candidate<T> a, Candidate<T> b) const { return pick(a, b, is_max); }
};

// --- sum, sumsq, min, max ---

// One block per column.
template <class Op, class T>
__global__ void reduce_columns_kernel(const T* in, std::int64_t rows, std::int64_t cols, T* out) {
  for (std::int64_t j = blockIdx.x; j < cols; j += gridDim.x) {
    T acc = Op::identity();
    for (std::int64_t i = threadIdx.x; i < rows; i += blockDim.x)
      acc = Op::combine(acc, Op::transform(in[i + j * rows]));
    acc = block_reduce(acc, Op::identity(), Combiner<Op, T>{});
    if (threadIdx.x == 0) out[j] = acc;
  }
}

// One thread per row: neighbouring threads read neighbouring elements of each column.
template <class Op, class T>
__global__ void reduce_rows_by_thread_kernel(const T* in, std::int64_t rows, std::int64_t cols, T* out) {
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < rows;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    T acc = Op::identity();
    for (std::int64_t j = 0; j < cols; ++j) acc = Op::combine(acc, Op::transform(in[i + j * rows]));
    out[i] = acc;
  }
}

// One block per row, for matrices with too few rows to fill the device a thread per row.
template <class Op, class T>
__global__ void reduce_rows_by_block_kernel(const T* in, std::int64_t rows, std::int64_t cols, T* out) {
  for (std::int64_t i = blockIdx.x; i < rows; i += gridDim.x) {
    T acc = Op::identity();
    for (std::int64_t j = threadIdx.x; j < cols; j += blockDim.x)
      acc = Op::combine(acc, Op::transform(in[i + j * rows]));
    acc = block_reduce(acc, Op::identity(), Combiner<Op, T>{});
    if (threadIdx.x == 0) out[i] = acc;
  }
}

// Over everything: each block writes one partial, then a single block combines them with kTransform off,
// since partials are already transformed (the second stage of sumsq sums).
template <class Op, class T, bool kTransform>
__global__ void reduce_all_kernel(const T* in, std::int64_t count, T* out) {
  T acc = Op::identity();
  for (std::int64_t k = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; k < count;
       k += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    acc = Op::combine(acc, kTransform ? Op::transform(in[k]) : in[k]);
  acc = block_reduce(acc, Op::identity(), Combiner<Op, T>{});
  if (threadIdx.x == 0) out[blockIdx.x] = acc;
}

template <class Op, class T>
void reduce_with(const T* in, std::int64_t rows, std::int64_t cols, int axis, T* out, void* workspace,
                 cudaStream_t stream) {
  if (axis == 0) {
    if (cols == 0) return;
    reduce_columns_kernel<Op><<<grid_for_items(cols), kThreads, 0, stream>>>(in, rows, cols, out);
    check_launch("reduce_columns_kernel");
  } else if (axis == 1) {
    if (rows == 0) return;
    if (rows >= kRowsForThreadPerRow) {
      reduce_rows_by_thread_kernel<Op>
          <<<blocks_for(rows, kMaxBlocks), kThreads, 0, stream>>>(in, rows, cols, out);
      check_launch("reduce_rows_by_thread_kernel");
    } else {
      reduce_rows_by_block_kernel<Op><<<grid_for_items(rows), kThreads, 0, stream>>>(in, rows, cols, out);
      check_launch("reduce_rows_by_block_kernel");
    }
  } else {
    const std::int64_t count = rows * cols;
    const unsigned int partials = blocks_for(count, kMaxPartials);
    auto* partial_values = static_cast<T*>(workspace);
    reduce_all_kernel<Op, T, true><<<partials, kThreads, 0, stream>>>(in, count, partial_values);
    check_launch("reduce_all_kernel");
    reduce_all_kernel<Op, T, false><<<1, kThreads, 0, stream>>>(partial_values, partials, out);
    check_launch("reduce_all_kernel");
  }
}

// --- argmax, argmin ---

// One block per column: out(0, j) = value, out(1, j) = global row.
template <class T>
__global__ void arg_columns_kernel(const T* in, std::int64_t rows, std::int64_t cols, bool is_max,
                                   std::int64_t first_row, double* out) {
  const CandidatePicker<T> picker{is_max};
  for (std::int64_t j = blockIdx.x; j < cols; j += gridDim.x) {
    Candidate<T> best{T(0), -1};
    for (std::int64_t i = threadIdx.x; i < rows; i += blockDim.x) best = picker(best, {in[i + j * rows], i});
    best = block_reduce(best, Candidate<T>{T(0), -1}, picker);
    if (threadIdx.x == 0) {
      out[2 * j] = static_cast<double>(best.value);
      out[2 * j + 1] = static_cast<double>(first_row + best.index);
    }
  }
}

// out(i, 0) = value, out(i, 1) = global column, for a rows x 2 output.
template <class T>
__device__ void write_row_candidate(Candidate<T> best, std::int64_t i, std::int64_t rows,
                                    std::int64_t first_col, double* out) {
  out[i] = static_cast<double>(best.value);
  out[rows + i] = static_cast<double>(first_col + best.index);
}

template <class T>
__global__ void arg_rows_by_thread_kernel(const T* in, std::int64_t rows, std::int64_t cols, bool is_max,
                                          std::int64_t first_col, double* out) {
  const CandidatePicker<T> picker{is_max};
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < rows;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    Candidate<T> best{T(0), -1};
    for (std::int64_t j = 0; j < cols; ++j) best = picker(best, {in[i + j * rows], j});
    write_row_candidate(best, i, rows, first_col, out);
  }
}

template <class T>
__global__ void arg_rows_by_block_kernel(const T* in, std::int64_t rows, std::int64_t cols, bool is_max,
                                         std::int64_t first_col, double* out) {
  const CandidatePicker<T> picker{is_max};
  for (std::int64_t i = blockIdx.x; i < rows; i += gridDim.x) {
    Candidate<T> best{T(0), -1};
    for (std::int64_t j = threadIdx.x; j < cols; j += blockDim.x) best = picker(best, {in[i + j * rows], j});
    best = block_reduce(best, Candidate<T>{T(0), -1}, picker);
    if (threadIdx.x == 0) write_row_candidate(best, i, rows, first_col, out);
  }
}

// Over everything, ranked in row-major order (NumPy's flat index), so ties go to the first in that order.
// Stage one: each block writes a partial candidate.
template <class T>
__global__ void arg_all_partials_kernel(const T* in, std::int64_t rows, std::int64_t cols, bool is_max,
                                        T* partial_values, std::int64_t* partial_ranks) {
  const CandidatePicker<T> picker{is_max};
  Candidate<T> best{T(0), -1};
  const std::int64_t count = rows * cols;
  for (std::int64_t k = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; k < count;
       k += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t i = k % rows, j = k / rows;
    best = picker(best, {in[k], i * cols + j});
  }
  best = block_reduce(best, Candidate<T>{T(0), -1}, picker);
  if (threadIdx.x == 0) {
    partial_values[blockIdx.x] = best.value;
    partial_ranks[blockIdx.x] = best.index;
  }
}

// Stage two, one block: out = (value, flat index in the whole array).
template <class T>
__global__ void arg_all_final_kernel(const T* partial_values, const std::int64_t* partial_ranks, int partials,
                                     std::int64_t cols, bool is_max, std::int64_t first_row,
                                     std::int64_t first_col, std::int64_t total_cols, double* out) {
  const CandidatePicker<T> picker{is_max};
  Candidate<T> best{T(0), -1};
  for (int k = threadIdx.x; k < partials; k += blockDim.x)
    best = picker(best, {partial_values[k], partial_ranks[k]});
  best = block_reduce(best, Candidate<T>{T(0), -1}, picker);
  if (threadIdx.x == 0) {
    const std::int64_t i = best.index / cols, j = best.index % cols;
    out[0] = static_cast<double>(best.value);
    out[1] = static_cast<double>((first_row + i) * total_cols + first_col + j);
  }
}

template <class T>
__global__ void find_nonfinite_kernel(const T* in, std::int64_t count, unsigned int* flag) {
  for (std::int64_t k = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; k < count;
       k += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const T x = in[k];
    if (is_nan(x - x)) {  // NaN for NaN and for either infinity
      *flag = 1u;
      return;
    }
  }
}

}  // namespace

template <class T>
void launch_reduce(const std::string& name, const T* in, std::int64_t rows, std::int64_t cols, int axis,
                   T* out, void* workspace, cudaStream_t stream) {
  if (name == "sum") return reduce_with<SumOp<T>>(in, rows, cols, axis, out, workspace, stream);
  if (name == "sumsq") return reduce_with<SumSquaresOp<T>>(in, rows, cols, axis, out, workspace, stream);
  if (name == "min") return reduce_with<MinOp<T>>(in, rows, cols, axis, out, workspace, stream);
  if (name == "max") return reduce_with<MaxOp<T>>(in, rows, cols, axis, out, workspace, stream);
  raise_kernel_error("unknown reduction '" + name + "' (known: sum, sumsq, min, max)");
}

template <class T>
void launch_argreduce(bool is_max, const T* in, std::int64_t rows, std::int64_t cols, int axis,
                      std::int64_t first_row, std::int64_t first_col, std::int64_t total_cols, double* out,
                      void* workspace, cudaStream_t stream) {
  if (rows == 0 || cols == 0) raise_kernel_error("launch_argreduce: empty matrix");
  if (axis == 0) {
    arg_columns_kernel<<<grid_for_items(cols), kThreads, 0, stream>>>(in, rows, cols, is_max, first_row, out);
    check_launch("arg_columns_kernel");
  } else if (axis == 1) {
    if (rows >= kRowsForThreadPerRow) {
      arg_rows_by_thread_kernel<<<blocks_for(rows, kMaxBlocks), kThreads, 0, stream>>>(in, rows, cols, is_max,
                                                                                       first_col, out);
      check_launch("arg_rows_by_thread_kernel");
    } else {
      arg_rows_by_block_kernel<<<grid_for_items(rows), kThreads, 0, stream>>>(in, rows, cols, is_max,
                                                                              first_col, out);
      check_launch("arg_rows_by_block_kernel");
    }
  } else {
    const unsigned int partials = blocks_for(rows * cols, kMaxPartials);
    // The workspace holds kMaxPartials values (8 bytes each at most), then kMaxPartials ranks.
    auto* partial_values = static_cast<T*>(workspace);
    auto* partial_ranks =
        reinterpret_cast<std::int64_t*>(static_cast<char*>(workspace) + kMaxPartials * sizeof(double));
    arg_all_partials_kernel<<<partials, kThreads, 0, stream>>>(in, rows, cols, is_max, partial_values,
                                                               partial_ranks);
    check_launch("arg_all_partials_kernel");
    arg_all_final_kernel<<<1, kThreads, 0, stream>>>(partial_values, partial_ranks,
                                                     static_cast<int>(partials), cols, is_max, first_row,
                                                     first_col, total_cols, out);
    check_launch("arg_all_final_kernel");
  }
}

template <class T>
void launch_find_nonfinite(const T* in, std::int64_t count, unsigned int* flag, cudaStream_t stream) {
  if (count == 0) return;
  find_nonfinite_kernel<<<blocks_for(count, kMaxBlocks), kThreads, 0, stream>>>(in, count, flag);
  check_launch("find_nonfinite_kernel");
}

#define TESSERA_INSTANTIATE_REDUCTIONS(T)                                                                  \
  template void launch_reduce<T>(const std::string&, const T*, std::int64_t, std::int64_t, int, T*, void*, \
                                 cudaStream_t);                                                            \
  template void launch_argreduce<T>(bool, const T*, std::int64_t, std::int64_t, int, std::int64_t,         \
                                    std::int64_t, std::int64_t, double*, void*, cudaStream_t);             \
  template void launch_find_nonfinite<T>(const T*, std::int64_t, unsigned int*, cudaStream_t);

TESSERA_INSTANTIATE_REDUCTIONS(float)
TESSERA_INSTANTIATE_REDUCTIONS(double)
#undef TESSERA_INSTANTIATE_REDUCTIONS

}  // namespace tessera::backends::cuda

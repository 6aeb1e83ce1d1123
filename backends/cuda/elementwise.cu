// Elementwise device kernels: one templated kernel per shape of access (flat, scalar, broadcast), each taking
// a functor that the launcher chooses by name, mirroring elementwise_ops.hpp.
#include <algorithm>

#include "backends/cuda/device_kernels.hpp"
#include "backends/cuda/status.hpp"

namespace tessera::backends::cuda {
namespace {

constexpr int kThreads = 256;
constexpr std::int64_t kMaxBlocks = 65535;  // grid-stride loops cover the rest

unsigned int blocks_for(std::int64_t count) {
  return static_cast<unsigned int>(
      std::clamp<std::int64_t>((count + kThreads - 1) / kThreads, 1, kMaxBlocks));
}

__device__ inline std::int64_t first_index() {
  return static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ inline std::int64_t grid_stride() {
  return static_cast<std::int64_t>(gridDim.x) * blockDim.x;
}

// The math functions by element type, so functors are written once for float and double.
__device__ inline float exp_of(float x) {
  return expf(x);
}
__device__ inline double exp_of(double x) {
  return exp(x);
}
__device__ inline float log_of(float x) {
  return logf(x);
}
__device__ inline double log_of(double x) {
  return log(x);
}
__device__ inline float abs_of(float x) {
  return fabsf(x);
}
__device__ inline double abs_of(double x) {
  return fabs(x);
}
__device__ inline float sqrt_of(float x) {
  return sqrtf(x);
}
__device__ inline double sqrt_of(double x) {
  return sqrt(x);
}
__device__ inline float pow_of(float x, float y) {
  return powf(x, y);
}
__device__ inline double pow_of(double x, double y) {
  return pow(x, y);
}

// Unary functors.
template <class T>
struct Exp {
  __device__ T operator()(T x) const { return exp_of(x); }
};
template <class T>
struct Log {
  __device__ T operator()(T x) const { return log_of(x); }
};
template <class T>
struct Abs {
  __device__ T operator()(T x) const { return abs_of(x); }
};
template <class T>
struct Sqrt {
  __device__ T operator()(T x) const { return sqrt_of(x); }
};
template <class T>
struct Sigmoid {
  __device__ T operator()(T x) const { return T(1) / (T(1) + exp_of(-x)); }
};
template <class T>
struct Negate {
  __device__ T operator()(T x) const { return -x; }
};
template <class T>
struct Square {
  __device__ T operator()(T x) const { return x * x; }
};

// Binary functors; comparisons give 1 or 0. minimum and maximum compare as std::min and std::max do, so NaN
// behaves as on cpu.
template <class T>
struct Add {
  __device__ T operator()(T a, T b) const { return a + b; }
};
template <class T>
struct Subtract {
  __device__ T operator()(T a, T b) const { return a - b; }
};
template <class T>
struct Multiply {
  __device__ T operator()(T a, T b) const { return a * b; }
};
template <class T>
struct Divide {
  __device__ T operator()(T a, T b) const { return a / b; }
};
template <class T>
struct Power {
  __device__ T operator()(T a, T b) const { return pow_of(a, b); }
};
template <class T>
struct Minimum {
  __device__ T operator()(T a, T b) const { return b < a ? b : a; }
};
template <class T>
struct Maximum {
  __device__ T operator()(T a, T b) const { return a < b ? b : a; }
};
template <class T>
struct Less {
  __device__ T operator()(T a, T b) const { return T(a < b); }
};
template <class T>
struct LessEqual {
  __device__ T operator()(T a, T b) const { return T(a <= b); }
};
template <class T>
struct Greater {
  __device__ T operator()(T a, T b) const { return T(a > b); }
};
template <class T>
struct GreaterEqual {
  __device__ T operator()(T a, T b) const { return T(a >= b); }
};
template <class T>
struct Equal {
  __device__ T operator()(T a, T b) const { return T(a == b); }
};
template <class T>
struct NotEqual {
  __device__ T operator()(T a, T b) const { return T(a != b); }
};

// Calls launch with the unary functor named `name`, with elementwise_ops.hpp's names and error message.
template <class T, class Launch>
void with_unary_functor(const std::string& name, Launch&& launch) {
  if (name == "exp") return launch(Exp<T>{});
  if (name == "log") return launch(Log<T>{});
  if (name == "abs") return launch(Abs<T>{});
  if (name == "sqrt") return launch(Sqrt<T>{});
  if (name == "sigmoid") return launch(Sigmoid<T>{});
  if (name == "neg") return launch(Negate<T>{});
  if (name == "square") return launch(Square<T>{});
  raise_kernel_error("unknown unary operation '" + name +
                     "' (known: exp, log, abs, sqrt, sigmoid, neg, square)");
}

template <class T, class Launch>
void with_binary_functor(const std::string& name, Launch&& launch) {
  if (name == "add") return launch(Add<T>{});
  if (name == "sub") return launch(Subtract<T>{});
  if (name == "mul") return launch(Multiply<T>{});
  if (name == "div") return launch(Divide<T>{});
  if (name == "pow") return launch(Power<T>{});
  if (name == "minimum") return launch(Minimum<T>{});
  if (name == "maximum") return launch(Maximum<T>{});
  if (name == "lt") return launch(Less<T>{});
  if (name == "le") return launch(LessEqual<T>{});
  if (name == "gt") return launch(Greater<T>{});
  if (name == "ge") return launch(GreaterEqual<T>{});
  if (name == "eq") return launch(Equal<T>{});
  if (name == "ne") return launch(NotEqual<T>{});
  raise_kernel_error("unknown binary operation '" + name +
                     "' (known: add, sub, mul, div, pow, minimum, maximum, lt, le, gt, ge, eq, ne)");
}

// Element (i, j) of a broadcast operand.
template <class T>
__device__ T broadcast_at(const Operand<T>& x, std::int64_t i, std::int64_t j) {
  return x.data[(x.rows == 1 ? 0 : i) + (x.cols == 1 ? 0 : j) * x.rows];
}

template <class T, class F>
__global__ void unary_kernel(const T* in, T* out, std::int64_t count, F f) {
  for (std::int64_t k = first_index(); k < count; k += grid_stride()) out[k] = f(in[k]);
}

template <class T, class F>
__global__ void scalar_kernel(const T* in, T scalar, bool scalar_left, T* out, std::int64_t count, F f) {
  for (std::int64_t k = first_index(); k < count; k += grid_stride())
    out[k] = scalar_left ? f(scalar, in[k]) : f(in[k], scalar);
}

// Operands of the result's shape: no index arithmetic.
template <class T, class F>
__global__ void same_shape_binary_kernel(const T* a, const T* b, T* out, std::int64_t count, F f) {
  for (std::int64_t k = first_index(); k < count; k += grid_stride()) out[k] = f(a[k], b[k]);
}

template <class T, class F>
__global__ void broadcast_binary_kernel(Operand<T> a, Operand<T> b, T* out, std::int64_t rows,
                                        std::int64_t count, F f) {
  for (std::int64_t k = first_index(); k < count; k += grid_stride()) {
    const std::int64_t i = k % rows, j = k / rows;
    out[k] = f(broadcast_at(a, i, j), broadcast_at(b, i, j));
  }
}

template <class M, class T>
__global__ void where_kernel(Operand<M> mask, Operand<T> a, Operand<T> b, T* out, std::int64_t rows,
                             std::int64_t count) {
  for (std::int64_t k = first_index(); k < count; k += grid_stride()) {
    const std::int64_t i = k % rows, j = k / rows;
    out[k] = static_cast<T>(broadcast_at(mask, i, j)) != T(0) ? broadcast_at(a, i, j) : broadcast_at(b, i, j);
  }
}

template <class From, class To>
__global__ void convert_kernel(const From* in, To* out, std::int64_t count) {
  for (std::int64_t k = first_index(); k < count; k += grid_stride()) out[k] = static_cast<To>(in[k]);
}

template <class T>
__global__ void fill_kernel(T* out, std::int64_t count, T value) {
  for (std::int64_t k = first_index(); k < count; k += grid_stride()) out[k] = value;
}

template <class T>
__global__ void upper_triangle_kernel(const T* in, std::int64_t ld, T* out, std::int64_t rows,
                                      std::int64_t count) {
  for (std::int64_t k = first_index(); k < count; k += grid_stride()) {
    const std::int64_t i = k % rows, j = k / rows;
    out[k] = i <= j ? in[i + j * ld] : T(0);
  }
}

template <class T>
__global__ void scale_columns_kernel(const T* a, std::int64_t rows, std::int64_t count, const T* scales,
                                     bool divide, T* out) {
  for (std::int64_t k = first_index(); k < count; k += grid_stride()) {
    const T scale = scales[k / rows];
    out[k] = a[k] * (divide ? T(1) / scale : scale);
  }
}

}  // namespace

template <class T>
void launch_unary(const std::string& name, const T* in, T* out, std::int64_t count, cudaStream_t stream) {
  with_unary_functor<T>(name, [&](auto f) {
    if (count == 0) return;
    unary_kernel<<<blocks_for(count), kThreads, 0, stream>>>(in, out, count, f);
    check_launch("unary_kernel");
  });
}

template <class T>
void launch_scalar(const std::string& name, const T* in, T scalar, bool scalar_left, T* out,
                   std::int64_t count, cudaStream_t stream) {
  with_binary_functor<T>(name, [&](auto f) {
    if (count == 0) return;
    scalar_kernel<<<blocks_for(count), kThreads, 0, stream>>>(in, scalar, scalar_left, out, count, f);
    check_launch("scalar_kernel");
  });
}

template <class T>
void launch_binary(const std::string& name, Operand<T> a, Operand<T> b, T* out, std::int64_t rows,
                   std::int64_t cols, cudaStream_t stream) {
  with_binary_functor<T>(name, [&](auto f) {
    const std::int64_t count = rows * cols;
    if (count == 0) return;
    if (a.rows == rows && a.cols == cols && b.rows == rows && b.cols == cols) {
      same_shape_binary_kernel<<<blocks_for(count), kThreads, 0, stream>>>(a.data, b.data, out, count, f);
      check_launch("same_shape_binary_kernel");
    } else {
      broadcast_binary_kernel<<<blocks_for(count), kThreads, 0, stream>>>(a, b, out, rows, count, f);
      check_launch("broadcast_binary_kernel");
    }
  });
}

template <class M, class T>
void launch_where(Operand<M> mask, Operand<T> a, Operand<T> b, T* out, std::int64_t rows, std::int64_t cols,
                  cudaStream_t stream) {
  const std::int64_t count = rows * cols;
  if (count == 0) return;
  where_kernel<<<blocks_for(count), kThreads, 0, stream>>>(mask, a, b, out, rows, count);
  check_launch("where_kernel");
}

template <class From, class To>
void launch_convert(const From* in, To* out, std::int64_t count, cudaStream_t stream) {
  if (count == 0) return;
  convert_kernel<<<blocks_for(count), kThreads, 0, stream>>>(in, out, count);
  check_launch("convert_kernel");
}

template <class T>
void launch_fill(T* out, std::int64_t count, T value, cudaStream_t stream) {
  if (count == 0) return;
  fill_kernel<<<blocks_for(count), kThreads, 0, stream>>>(out, count, value);
  check_launch("fill_kernel");
}

template <class T>
void launch_upper_triangle(const T* in, std::int64_t ld, T* out, std::int64_t rows, std::int64_t cols,
                           cudaStream_t stream) {
  const std::int64_t count = rows * cols;
  if (count == 0) return;
  upper_triangle_kernel<<<blocks_for(count), kThreads, 0, stream>>>(in, ld, out, rows, count);
  check_launch("upper_triangle_kernel");
}

template <class T>
void launch_scale_columns(const T* a, std::int64_t rows, std::int64_t cols, const T* scales, bool divide,
                          T* out, cudaStream_t stream) {
  const std::int64_t count = rows * cols;
  if (count == 0) return;
  scale_columns_kernel<<<blocks_for(count), kThreads, 0, stream>>>(a, rows, count, scales, divide, out);
  check_launch("scale_columns_kernel");
}

// The element types the host kernels use.
#define TESSERA_INSTANTIATE_ELEMENTWISE(T)                                                                   \
  template void launch_unary<T>(const std::string&, const T*, T*, std::int64_t, cudaStream_t);               \
  template void launch_scalar<T>(const std::string&, const T*, T, bool, T*, std::int64_t, cudaStream_t);     \
  template void launch_binary<T>(const std::string&, Operand<T>, Operand<T>, T*, std::int64_t, std::int64_t, \
                                 cudaStream_t);                                                              \
  template void launch_where<float, T>(Operand<float>, Operand<T>, Operand<T>, T*, std::int64_t,             \
                                       std::int64_t, cudaStream_t);                                          \
  template void launch_where<double, T>(Operand<double>, Operand<T>, Operand<T>, T*, std::int64_t,           \
                                        std::int64_t, cudaStream_t);                                         \
  template void launch_fill<T>(T*, std::int64_t, T, cudaStream_t);                                           \
  template void launch_upper_triangle<T>(const T*, std::int64_t, T*, std::int64_t, std::int64_t,             \
                                         cudaStream_t);                                                      \
  template void launch_scale_columns<T>(const T*, std::int64_t, std::int64_t, const T*, bool, T*,            \
                                        cudaStream_t);

TESSERA_INSTANTIATE_ELEMENTWISE(float)
TESSERA_INSTANTIATE_ELEMENTWISE(double)
#undef TESSERA_INSTANTIATE_ELEMENTWISE

template void launch_convert<float, double>(const float*, double*, std::int64_t, cudaStream_t);
template void launch_convert<double, float>(const double*, float*, std::int64_t, cudaStream_t);

}  // namespace tessera::backends::cuda

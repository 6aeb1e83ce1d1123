// Helpers the dense cpu kernels share: dtype dispatch and shape checks.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "backends/chunk.hpp"
#include "backends/dispatch.hpp"
#include "backends/kernel_params.hpp"

namespace tessera::backends::cpu {

inline std::string shape_text(std::int64_t rows, std::int64_t cols) {
  std::string text(1, '(');  // appended, not concatenated: g++ 12 warns falsely on "(" + string
  text += std::to_string(rows);
  text += ", ";
  text += std::to_string(cols);
  text += ')';
  return text;
}

// Calls fn(T{}) with T the element type of `dtype`.
template <class F>
decltype(auto) with_dtype(DType dtype, F&& fn) {
  if (dtype == DType::float64) return fn(double{});
  return fn(float{});
}

inline void require_inputs(std::string_view op, std::span<const ChunkPtr> inputs, std::size_t count) {
  if (inputs.size() != count)
    throw KernelError(std::string(op) + " takes " + std::to_string(count) + " chunks, got " +
                      std::to_string(inputs.size()));
}

inline void require_same_dtype(std::string_view op, const Chunk& a, const Chunk& b) {
  if (a.dtype() != b.dtype())
    throw KernelError(std::string(op) + ": element types differ: " + a.describe() + " and " + b.describe());
}

// The broadcast extent of one dimension, or throws naming both shapes.
inline std::int64_t broadcast_extent(std::string_view op, std::int64_t a, std::int64_t b, const Chunk& x,
                                     const Chunk& y) {
  if (a == b || b == 1) return a;
  if (a == 1) return b;
  throw KernelError(std::string(op) + ": shapes " + shape_text(x.rows(), x.cols()) + " and " +
                    shape_text(y.rows(), y.cols()) + " do not broadcast");
}

// A dense view of any cpu or sparse chunk (sparse ones are converted).
template <class T>
DenseMatrix<T> to_dense_copy(const Chunk& chunk) {
  if (chunk.backend() == Backend::sparse) return DenseMatrix<T>(chunk.sparse<T>());
  return chunk.dense<T>();
}

// Shape checks every backend's kernels share (shape_checks.cpp).

// An assemble call's shape and blocks, each checked against its input and the result.
void check_assemble(std::span<const ChunkPtr> in, const AssembleParams& params);
// The broadcast shape of where's mask, a and b, or a KernelError naming the three shapes.
std::pair<std::int64_t, std::int64_t> where_shape(std::span<const ChunkPtr> in);
// matmul's pairs (A_i, B_i): each contracts (under the transpose flags) and shares one element type.
void check_matmul_pairs(std::span<const ChunkPtr> in, bool transpose_a, bool transpose_b);

void register_elementwise(Dispatch& dispatch);
void register_layout(Dispatch& dispatch);
void register_reductions(Dispatch& dispatch);
void register_linalg(Dispatch& dispatch);

}  // namespace tessera::backends::cpu

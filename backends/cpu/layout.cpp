// Dense creation and layout kernels: random, full, transpose, assemble (slices, concatenation, rechunking).
#include "backends/cpu/dense_util.hpp"
#include "backends/kernel_params.hpp"
#include "backends/operations.hpp"
#include "backends/random.hpp"

namespace tessera::backends::cpu {
namespace {

void require_shape(std::string_view op, std::int64_t rows, std::int64_t cols) {
  if (rows < 0 || cols < 0) throw KernelError(std::string(op) + ": negative shape " + shape_text(rows, cols));
}

Chunks random(std::span<const ChunkPtr>, const Params& params) {
  const auto p = RandomParams::from(params);
  require_shape("random", p.rows, p.cols);
  const auto total_cols = static_cast<std::uint64_t>(p.total_cols);
  const double a = p.low, b = p.high;
  return {with_dtype(p.dtype, [&](auto t) {
    using T = decltype(t);
    DenseMatrix<T> out(p.rows, p.cols);
    for (std::int64_t j = 0; j < p.cols; ++j)
      for (std::int64_t i = 0; i < p.rows; ++i) {
        const std::uint64_t index = static_cast<std::uint64_t>(p.first_row + i) * total_cols +
                                    static_cast<std::uint64_t>(p.first_col + j);
        out(i, j) = static_cast<T>(p.normal ? a + b * standard_normal(p.seed, index)
                                            : a + (b - a) * uniform01(p.seed, index));
      }
    return Chunk::dense<T>(std::move(out));
  })};
}

Chunks full(std::span<const ChunkPtr>, const Params& params) {
  const auto p = FullParams::from(params);
  require_shape("full", p.rows, p.cols);
  return {with_dtype(p.dtype, [&](auto t) {
    using T = decltype(t);
    return Chunk::dense<T>(DenseMatrix<T>::Constant(p.rows, p.cols, static_cast<T>(p.value)));
  })};
}

Chunks transpose(std::span<const ChunkPtr> in, const Params&) {
  require_inputs("transpose", in, 1);
  return {with_dtype(in[0]->dtype(), [&](auto t) {
    using T = decltype(t);
    return Chunk::dense<T>(in[0]->dense<T>().transpose());
  })};
}

Chunks assemble(std::span<const ChunkPtr> in, const Params& params) {
  if (in.empty()) throw KernelError("assemble needs at least one chunk");
  const auto p = AssembleParams::from(params);
  check_assemble(in, p);
  const auto& blocks = p.blocks;
  const auto rows = p.rows, cols = p.cols;
  // A block that is a whole chunk's whole extent is that chunk: no copy.
  if (in.size() == 1 && blocks[0].rows == in[0]->rows() && blocks[0].cols == in[0]->cols() &&
      rows == blocks[0].rows && cols == blocks[0].cols)
    return {in[0]};
  return {with_dtype(in[0]->dtype(), [&](auto t) {
    using T = decltype(t);
    DenseMatrix<T> out = DenseMatrix<T>::Zero(rows, cols);
    for (std::size_t k = 0; k < in.size(); ++k) {
      const auto& b = blocks[k];
      if (in[k]->backend() == Backend::sparse)
        out.block(b.dst_row, b.dst_col, b.rows, b.cols) =
            DenseMatrix<T>(in[k]->sparse<T>().block(b.src_row, b.src_col, b.rows, b.cols));
      else
        out.block(b.dst_row, b.dst_col, b.rows, b.cols) =
            in[k]->dense<T>().block(b.src_row, b.src_col, b.rows, b.cols);
    }
    return Chunk::dense<T>(std::move(out));
  })};
}

Chunks to_dense(std::span<const ChunkPtr> in, const Params&) {
  require_inputs("to_dense", in, 1);
  return {in[0]};
}

}  // namespace

void register_layout(Dispatch& d) {
  d.add(ops::random, Backend::cpu, random);
  d.add(ops::full, Backend::cpu, full);
  d.add(ops::transpose, Backend::cpu, transpose);
  d.add(ops::assemble, Backend::cpu, assemble);
  d.add(ops::to_dense, Backend::cpu, to_dense);
}

}  // namespace tessera::backends::cpu

// Dense creation and layout kernels: random, full, transpose, assemble (slices, concatenation, rechunking).
#include "backends/cpu/dense_util.hpp"
#include "backends/operations.hpp"
#include "backends/random.hpp"

namespace tessera::backends::cpu {
namespace {

void require_shape(std::string_view op, std::int64_t rows, std::int64_t cols) {
  if (rows < 0 || cols < 0) throw KernelError(std::string(op) + ": negative shape " + shape_text(rows, cols));
}

Chunks random(std::span<const ChunkPtr>, const Params& p) {
  const auto rows = p.integer(0), cols = p.integer(1), row0 = p.integer(2), col0 = p.integer(3);
  const auto total_cols = static_cast<std::uint64_t>(p.integer(4));
  const auto seed = static_cast<std::uint64_t>(p.integer(5));
  const auto dtype = static_cast<DType>(p.integer(6));
  const bool normal = p.integer(7) != 0;
  const double a = p.real(0), b = p.real(1);
  require_shape("random", rows, cols);
  return {with_dtype(dtype, [&](auto t) {
    using T = decltype(t);
    DenseMatrix<T> out(rows, cols);
    for (std::int64_t j = 0; j < cols; ++j)
      for (std::int64_t i = 0; i < rows; ++i) {
        const std::uint64_t index =
            static_cast<std::uint64_t>(row0 + i) * total_cols + static_cast<std::uint64_t>(col0 + j);
        out(i, j) = static_cast<T>(normal ? a + b * standard_normal(seed, index)
                                          : a + (b - a) * uniform01(seed, index));
      }
    return Chunk::dense<T>(std::move(out));
  })};
}

Chunks full(std::span<const ChunkPtr>, const Params& p) {
  const auto rows = p.integer(0), cols = p.integer(1);
  require_shape("full", rows, cols);
  return {with_dtype(static_cast<DType>(p.integer(2)), [&](auto t) {
    using T = decltype(t);
    return Chunk::dense<T>(DenseMatrix<T>::Constant(rows, cols, static_cast<T>(p.real(0))));
  })};
}

Chunks transpose(std::span<const ChunkPtr> in, const Params&) {
  require_inputs("transpose", in, 1);
  return {with_dtype(in[0]->dtype(), [&](auto t) {
    using T = decltype(t);
    return Chunk::dense<T>(in[0]->dense<T>().transpose());
  })};
}

Chunks assemble(std::span<const ChunkPtr> in, const Params& p) {
  if (in.empty()) throw KernelError("assemble needs at least one chunk");
  std::int64_t rows = 0, cols = 0;
  const auto blocks = assemble_blocks(in, p, rows, cols);
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

// Shape checks shared by the cpu, sparse and cuda kernels, so each error reads the same on every backend.
#include "backends/cpu/dense_util.hpp"

namespace tessera::backends::cpu {

void check_assemble(std::span<const ChunkPtr> in, const AssembleParams& p) {
  const auto rows = p.rows, cols = p.cols;
  if (rows < 0 || cols < 0) throw KernelError("assemble: negative shape " + shape_text(rows, cols));
  if (p.blocks.size() != in.size())
    throw KernelError("assemble: " + std::to_string(in.size()) + " chunks need " +
                      std::to_string(2 + 6 * in.size()) + " integers, got " +
                      std::to_string(2 + 6 * p.blocks.size()));
  for (std::size_t k = 0; k < in.size(); ++k) {
    const AssembleBlock& b = p.blocks[k];
    if (b.src_row < 0 || b.src_col < 0 || b.rows < 0 || b.cols < 0 || b.src_row + b.rows > in[k]->rows() ||
        b.src_col + b.cols > in[k]->cols() || b.dst_row < 0 || b.dst_col < 0 || b.dst_row + b.rows > rows ||
        b.dst_col + b.cols > cols)
      throw KernelError("assemble: block " + std::to_string(k) + " of " + shape_text(b.rows, b.cols) +
                        " from " + shape_text(b.src_row, b.src_col) + " of a " + in[k]->describe() +
                        " chunk to " + shape_text(b.dst_row, b.dst_col) + " does not fit a " +
                        shape_text(rows, cols) + " result");
    if (k > 0) require_same_dtype("assemble", *in[0], *in[k]);
  }
}

std::pair<std::int64_t, std::int64_t> where_shape(std::span<const ChunkPtr> in) {
  require_inputs("where", in, 3);
  require_same_dtype("where", *in[1], *in[2]);
  std::int64_t rows = 1, cols = 1;
  for (const auto& c : in) {
    rows = std::max(rows, c->rows());
    cols = std::max(cols, c->cols());
  }
  for (const auto& c : in)
    if ((c->rows() != rows && c->rows() != 1) || (c->cols() != cols && c->cols() != 1))
      throw KernelError("where: shapes " + shape_text(in[0]->rows(), in[0]->cols()) + ", " +
                        shape_text(in[1]->rows(), in[1]->cols()) + " and " +
                        shape_text(in[2]->rows(), in[2]->cols()) + " do not broadcast");
  return {rows, cols};
}

void check_matmul_pairs(std::span<const ChunkPtr> in, bool ta, bool tb) {
  if (in.empty() || in.size() % 2 != 0)
    throw KernelError("matmul takes pairs of chunks, got " + std::to_string(in.size()));
  const std::size_t k = in.size() / 2;
  const auto rows = ta ? in[0]->cols() : in[0]->rows();
  const auto cols = tb ? in[k]->rows() : in[k]->cols();
  for (std::size_t i = 0; i < k; ++i) {
    const auto& a = *in[i];
    const auto& b = *in[k + i];
    if ((ta ? a.rows() : a.cols()) != (tb ? b.cols() : b.rows()))
      throw KernelError("matmul: shapes " + shape_text(a.rows(), a.cols()) + (ta ? "^T" : "") + " and " +
                        shape_text(b.rows(), b.cols()) + (tb ? "^T" : "") + " do not contract");
    if ((ta ? a.cols() : a.rows()) != rows || (tb ? b.rows() : b.cols()) != cols)
      throw KernelError("matmul: the products of pair 0 and pair " + std::to_string(i) + " differ in shape");
    require_same_dtype("matmul", a, b);
  }
}

}  // namespace tessera::backends::cpu

// Sparse kernels (Eigen sparse, compressed column storage): operations that keep zeros zero stay sparse;
// the others densify and run the cpu kernel, which result_backend() predicts.
#include "backends/cpu/dense_util.hpp"
#include "backends/cpu/elementwise_ops.hpp"
#include "backends/kernel_params.hpp"
#include "backends/operations.hpp"
#include "backends/random.hpp"
#include "backends/result_meta.hpp"

namespace tessera::backends::sparse {
namespace {

using cpu::require_inputs;
using cpu::shape_text;
using cpu::with_dtype;

ChunkPtr densify(const ChunkPtr& chunk) {
  if (chunk->backend() != Backend::sparse) return chunk;
  return with_dtype(chunk->dtype(), [&](auto t) {
    using T = decltype(t);
    return Chunk::dense<T>(DenseMatrix<T>(chunk->sparse<T>()));
  });
}

// Runs the cpu kernel of `op` on densified inputs.
Chunks on_dense(std::string_view op, std::span<const ChunkPtr> in, const Params& p) {
  Chunks dense;
  dense.reserve(in.size());
  for (const auto& c : in) dense.push_back(densify(c));
  return Dispatch::global().get(op, Backend::cpu)(dense, p);
}

template <class T>
SparseMatrix<T> as_sparse(const Chunk& chunk) {
  if (chunk.backend() == Backend::sparse) return chunk.sparse<T>();
  return chunk.dense<T>().sparseView();
}

Chunks unary(std::span<const ChunkPtr> in, const Params& params) {
  require_inputs("unary", in, 1);
  const auto p = UnaryParams::from(params);
  if (!keeps_zero(p.function)) return on_dense(ops::unary, in, params);
  return {with_dtype(in[0]->dtype(), [&](auto t) {
    using T = decltype(t);
    return with_unary<T>(p.function, [&](auto f) {
      SparseMatrix<T> out = in[0]->sparse<T>();
      for (Eigen::Index k = 0; k < out.nonZeros(); ++k) out.valuePtr()[k] = f(out.valuePtr()[k]);
      return Chunk::sparse<T>(std::move(out));
    });
  })};
}

Chunks scalar(std::span<const ChunkPtr> in, const Params& params) {
  require_inputs("scalar", in, 1);
  const auto p = ScalarParams::from(params);
  if (result_backend(ops::scalar, p.function, std::array{Backend::sparse}, p.scalar_left) != Backend::sparse)
    return on_dense(ops::scalar, in, params);
  return {with_dtype(in[0]->dtype(), [&](auto t) {
    using T = decltype(t);
    const T s = static_cast<T>(p.scalar);
    SparseMatrix<T> out = p.function == "mul" ? SparseMatrix<T>(in[0]->sparse<T>() * s)
                                              : SparseMatrix<T>(in[0]->sparse<T>() / s);
    return Chunk::sparse<T>(std::move(out));
  })};
}

Chunks binary(std::span<const ChunkPtr> in, const Params& params) {
  require_inputs("binary", in, 2);
  const std::string& name = BinaryParams::from(params).function;
  const std::array backends{in[0]->backend(), in[1]->backend()};
  if (result_backend(ops::binary, name, backends) != Backend::sparse)
    return on_dense(ops::binary, in, params);
  cpu::require_same_dtype(name, *in[0], *in[1]);
  return {with_dtype(in[0]->dtype(), [&](auto t) {
    using T = decltype(t);
    const auto& a = in[0]->sparse<T>();
    const auto& other = *in[1];
    const auto rows = cpu::broadcast_extent(name, a.rows(), other.rows(), *in[0], other);
    const auto cols = cpu::broadcast_extent(name, a.cols(), other.cols(), *in[0], other);
    if (rows != a.rows() || cols != a.cols())
      throw KernelError(name + ": a sparse " + shape_text(a.rows(), a.cols()) +
                        " chunk cannot broadcast to " + shape_text(rows, cols));
    SparseMatrix<T> out;
    if (other.rows() == a.rows() && other.cols() == a.cols()) {
      const SparseMatrix<T> b = as_sparse<T>(other);
      if (name == "add")
        out = a + b;
      else if (name == "sub")
        out = a - b;
      else
        out = a.cwiseProduct(b);
    } else {
      // Only mul broadcasts here: by a row (scales columns), a column (scales rows) or a scalar.
      const DenseMatrix<T> b = cpu::to_dense_copy<T>(other);
      if (b.rows() == 1 && b.cols() == 1)
        out = a * b(0, 0);
      else if (b.rows() == 1)
        out = a * b.row(0).transpose().asDiagonal();
      else
        out = b.col(0).asDiagonal() * a;
    }
    return Chunk::sparse<T>(std::move(out));
  })};
}

Chunks where(std::span<const ChunkPtr> in, const Params& p) {
  return on_dense(ops::where, in, p);
}
Chunks argreduce(std::span<const ChunkPtr> in, const Params& p) {
  return on_dense(ops::argreduce, in, p);
}

Chunks astype(std::span<const ChunkPtr> in, const Params& params) {
  require_inputs("astype", in, 1);
  const auto target = AstypeParams::from(params).dtype;
  if (target == in[0]->dtype()) return {in[0]};
  if (target == DType::float32) return {Chunk::sparse<float>(in[0]->sparse<double>().cast<float>())};
  return {Chunk::sparse<double>(in[0]->sparse<float>().cast<double>())};
}

Chunks transpose(std::span<const ChunkPtr> in, const Params&) {
  require_inputs("transpose", in, 1);
  return {with_dtype(in[0]->dtype(), [&](auto t) {
    using T = decltype(t);
    return Chunk::sparse<T>(SparseMatrix<T>(in[0]->sparse<T>().transpose()));
  })};
}

Chunks assemble(std::span<const ChunkPtr> in, const Params& params) {
  if (in.empty()) throw KernelError("assemble needs at least one chunk");
  const auto p = AssembleParams::from(params);
  cpu::check_assemble(in, p);
  const auto& blocks = p.blocks;
  const auto rows = p.rows, cols = p.cols;
  return {with_dtype(in[0]->dtype(), [&](auto t) {
    using T = decltype(t);
    std::vector<Eigen::Triplet<T, std::int64_t>> triplets;
    for (std::size_t k = 0; k < in.size(); ++k) {
      const auto& b = blocks[k];
      const SparseMatrix<T> block = as_sparse<T>(*in[k]).block(b.src_row, b.src_col, b.rows, b.cols);
      for (Eigen::Index j = 0; j < block.outerSize(); ++j)
        for (typename SparseMatrix<T>::InnerIterator it(block, j); it; ++it)
          triplets.emplace_back(b.dst_row + it.row(), b.dst_col + it.col(), it.value());
    }
    SparseMatrix<T> out(rows, cols);
    out.setFromTriplets(triplets.begin(), triplets.end());
    return Chunk::sparse<T>(std::move(out));
  })};
}

Chunks matmul(std::span<const ChunkPtr> in, const Params& params) {
  const auto p = MatmulParams::from(params);
  const bool ta = p.transpose_a, tb = p.transpose_b;
  cpu::check_matmul_pairs(in, ta, tb);
  const std::size_t k = in.size() / 2;
  std::vector<Backend> backends;
  for (const auto& c : in) backends.push_back(c->backend());
  const bool sparse_result = result_backend(ops::matmul, {}, backends) == Backend::sparse;
  return {with_dtype(in[0]->dtype(), [&](auto t) -> ChunkPtr {
    using T = decltype(t);
    SparseMatrix<T> sparse_out;
    DenseMatrix<T> dense_out;
    for (std::size_t i = 0; i < k; ++i) {
      const SparseMatrix<T> a_sparse = as_sparse<T>(*in[i]);
      const SparseMatrix<T> a = ta ? SparseMatrix<T>(a_sparse.transpose()) : a_sparse;
      if (sparse_result) {
        const SparseMatrix<T>& b_raw = in[k + i]->sparse<T>();
        SparseMatrix<T> product =
            tb ? SparseMatrix<T>(a * SparseMatrix<T>(b_raw.transpose())) : SparseMatrix<T>(a * b_raw);
        sparse_out = i == 0 ? product : SparseMatrix<T>(sparse_out + product);
      } else {
        const DenseMatrix<T> b_dense = cpu::to_dense_copy<T>(*in[k + i]);
        if (i == 0) dense_out.setZero(a.rows(), tb ? b_dense.rows() : b_dense.cols());
        if (tb)
          dense_out.noalias() += a * b_dense.transpose();
        else
          dense_out.noalias() += a * b_dense;
      }
    }
    if (sparse_result) return Chunk::sparse<T>(std::move(sparse_out));
    return Chunk::dense<T>(std::move(dense_out));
  })};
}

Chunks reduce(std::span<const ChunkPtr> in, const Params& params) {
  require_inputs("reduce", in, 1);
  const auto p = ReduceParams::from(params);
  if (p.reduction != "sum" && p.reduction != "sumsq")
    return on_dense(ops::reduce, in, params);  // min/max see implicit zeros
  const auto axis = p.axis;
  return {with_dtype(in[0]->dtype(), [&](auto t) {
    using T = decltype(t);
    const SparseMatrix<T> m =
        p.reduction == "sum" ? in[0]->sparse<T>() : SparseMatrix<T>(in[0]->sparse<T>().cwiseAbs2());
    const Eigen::Matrix<T, Eigen::Dynamic, 1> ones_cols = Eigen::Matrix<T, Eigen::Dynamic, 1>::Ones(m.cols());
    const Eigen::Matrix<T, Eigen::Dynamic, 1> ones_rows = Eigen::Matrix<T, Eigen::Dynamic, 1>::Ones(m.rows());
    if (axis == 0) return Chunk::dense<T>(DenseMatrix<T>((m.transpose() * ones_rows).transpose()));
    if (axis == 1) return Chunk::dense<T>(DenseMatrix<T>(m * ones_cols));
    return Chunk::dense<T>(DenseMatrix<T>::Constant(1, 1, m.sum()));
  })};
}

// Sums of sparse partial products stay sparse; other combinations see dense partials.
Chunks combine(std::span<const ChunkPtr> in, const Params& params) {
  const std::string& name = CombineParams::from(params).reduction;
  if (name != "sum" && name != "sumsq") return on_dense(ops::combine, in, params);
  if (in.empty()) throw KernelError("combine needs at least one partial result");
  return {with_dtype(in[0]->dtype(), [&](auto t) {
    using T = decltype(t);
    SparseMatrix<T> out = as_sparse<T>(*in[0]);
    for (std::size_t k = 1; k < in.size(); ++k) {
      const SparseMatrix<T> next = as_sparse<T>(*in[k]);
      if (next.rows() != out.rows() || next.cols() != out.cols())
        throw KernelError("combine " + name + ": partial " + in[k]->describe() + " differs from " +
                          in[0]->describe());
      out = out + next;
    }
    return Chunk::sparse<T>(std::move(out));
  })};
}

Chunks to_dense(std::span<const ChunkPtr> in, const Params&) {
  require_inputs("to_dense", in, 1);
  return {densify(in[0])};
}

Chunks to_sparse(std::span<const ChunkPtr> in, const Params&) {
  require_inputs("to_sparse", in, 1);
  if (in[0]->backend() == Backend::sparse) return {in[0]};
  return {with_dtype(in[0]->dtype(), [&](auto t) {
    using T = decltype(t);
    return Chunk::sparse<T>(in[0]->dense<T>().sparseView());
  })};
}

// random on sparse: as the dense one, plus the density; entry (i, j) is present when an independent counter
// says so, so the pattern too is the same whatever the chunking.
Chunks random(std::span<const ChunkPtr>, const Params& params) {
  const auto p = RandomParams::from(params);
  const auto total_cols = static_cast<std::uint64_t>(p.total_cols);
  const double a = p.low, b = p.high;
  if (!(p.density >= 0.0 && p.density <= 1.0)) throw KernelError("random: density must lie in [0, 1]");
  const std::uint64_t pattern_seed = splitmix64(p.seed ^ 0x5bd1e995ULL);
  return {with_dtype(p.dtype, [&](auto t) {
    using T = decltype(t);
    std::vector<Eigen::Triplet<T, std::int64_t>> triplets;
    for (std::int64_t j = 0; j < p.cols; ++j)
      for (std::int64_t i = 0; i < p.rows; ++i) {
        const std::uint64_t index = static_cast<std::uint64_t>(p.first_row + i) * total_cols +
                                    static_cast<std::uint64_t>(p.first_col + j);
        if (uniform01(pattern_seed, index) >= p.density) continue;
        const double v =
            p.normal ? a + b * standard_normal(p.seed, index) : a + (b - a) * uniform01(p.seed, index);
        triplets.emplace_back(i, j, static_cast<T>(v));
      }
    SparseMatrix<T> out(p.rows, p.cols);
    out.setFromTriplets(triplets.begin(), triplets.end());
    return Chunk::sparse<T>(std::move(out));
  })};
}

Chunks full(std::span<const ChunkPtr>, const Params& params) {
  const auto p = FullParams::from(params);
  if (p.value != 0.0)
    throw KernelError("full: a sparse chunk filled with " + std::to_string(p.value) +
                      " would be dense; create it on the cpu backend");
  return {with_dtype(p.dtype, [&](auto t) {
    using T = decltype(t);
    return Chunk::sparse<T>(SparseMatrix<T>(p.rows, p.cols));
  })};
}

}  // namespace
}  // namespace tessera::backends::sparse

namespace tessera::backends {

void register_sparse_kernels(Dispatch& d) {
  using namespace sparse;
  d.add(ops::unary, Backend::sparse, unary);
  d.add(ops::scalar, Backend::sparse, scalar);
  d.add(ops::binary, Backend::sparse, binary);
  d.add(ops::where, Backend::sparse, where);
  d.add(ops::astype, Backend::sparse, astype);
  d.add(ops::transpose, Backend::sparse, transpose);
  d.add(ops::assemble, Backend::sparse, assemble);
  d.add(ops::matmul, Backend::sparse, matmul);
  d.add(ops::reduce, Backend::sparse, reduce);
  d.add(ops::argreduce, Backend::sparse, argreduce);
  d.add(ops::combine, Backend::sparse, combine);
  d.add(ops::to_dense, Backend::sparse, to_dense);
  d.add(ops::to_sparse, Backend::sparse, to_sparse);
  d.add(ops::to_sparse, Backend::cpu, to_sparse);
  d.add(ops::random, Backend::sparse, random);
  d.add(ops::full, Backend::sparse, full);
}

}  // namespace tessera::backends

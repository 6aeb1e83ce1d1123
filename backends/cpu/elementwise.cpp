// Dense elementwise kernels: unary functions, operations with a scalar, broadcasting binary operations,
// where and astype.
#include "backends/cpu/dense_util.hpp"
#include "backends/cpu/elementwise_ops.hpp"
#include "backends/operations.hpp"

namespace tessera::backends::cpu {
namespace {

template <class T, class F>
DenseMatrix<T> broadcast_binary(const std::string& op, const Chunk& x, const Chunk& y, F f) {
  const auto& a = x.dense<T>();
  const DenseMatrix<T> b_storage = y.backend() == Backend::sparse ? to_dense_copy<T>(y) : DenseMatrix<T>();
  const auto& b = y.backend() == Backend::sparse ? b_storage : y.dense<T>();
  if (a.rows() == b.rows() && a.cols() == b.cols()) return a.binaryExpr(b, f);
  const auto rows = broadcast_extent(op, a.rows(), b.rows(), x, y);
  const auto cols = broadcast_extent(op, a.cols(), b.cols(), x, y);
  DenseMatrix<T> out(rows, cols);
  const bool ar = a.rows() == 1, ac = a.cols() == 1, br = b.rows() == 1, bc = b.cols() == 1;
  for (Eigen::Index j = 0; j < cols; ++j)
    for (Eigen::Index i = 0; i < rows; ++i) out(i, j) = f(a(ar ? 0 : i, ac ? 0 : j), b(br ? 0 : i, bc ? 0 : j));
  return out;
}

Chunks unary(std::span<const ChunkPtr> in, const Params& p) {
  require_inputs("unary", in, 1);
  return {with_dtype(in[0]->dtype(), [&](auto t) {
    using T = decltype(t);
    return with_unary<T>(p.name, [&](auto f) { return Chunk::dense<T>(in[0]->dense<T>().unaryExpr(f)); });
  })};
}

Chunks scalar(std::span<const ChunkPtr> in, const Params& p) {
  require_inputs("scalar", in, 1);
  const bool scalar_left = !p.ints.empty() && p.ints[0] != 0;
  return {with_dtype(in[0]->dtype(), [&](auto t) {
    using T = decltype(t);
    const T s = static_cast<T>(p.real(0));
    return with_binary<T>(p.name, [&](auto f) {
      if (scalar_left) return Chunk::dense<T>(in[0]->dense<T>().unaryExpr([&](T x) { return f(s, x); }));
      return Chunk::dense<T>(in[0]->dense<T>().unaryExpr([&](T x) { return f(x, s); }));
    });
  })};
}

Chunks binary(std::span<const ChunkPtr> in, const Params& p) {
  require_inputs("binary", in, 2);
  require_same_dtype(p.name, *in[0], *in[1]);
  return {with_dtype(in[0]->dtype(), [&](auto t) {
    using T = decltype(t);
    return with_binary<T>(p.name,
                          [&](auto f) { return Chunk::dense<T>(broadcast_binary<T>(p.name, *in[0], *in[1], f)); });
  })};
}

Chunks where(std::span<const ChunkPtr> in, const Params&) {
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
                        shape_text(in[1]->rows(), in[1]->cols()) + " and " + shape_text(in[2]->rows(), in[2]->cols()) +
                        " do not broadcast");
  return {with_dtype(in[1]->dtype(), [&](auto t) {
    using T = decltype(t);
    const DenseMatrix<T> mask =
        with_dtype(in[0]->dtype(), [&](auto m) -> DenseMatrix<T> {
          return to_dense_copy<decltype(m)>(*in[0]).template cast<T>();
        });
    const auto& a = in[1]->dense<T>();
    const auto& b = in[2]->dense<T>();
    auto at = [](const DenseMatrix<T>& x, Eigen::Index i, Eigen::Index j) {
      return x(x.rows() == 1 ? 0 : i, x.cols() == 1 ? 0 : j);
    };
    DenseMatrix<T> out(rows, cols);
    for (Eigen::Index j = 0; j < cols; ++j)
      for (Eigen::Index i = 0; i < rows; ++i) out(i, j) = at(mask, i, j) != T(0) ? at(a, i, j) : at(b, i, j);
    return Chunk::dense<T>(std::move(out));
  })};
}

Chunks astype(std::span<const ChunkPtr> in, const Params& p) {
  require_inputs("astype", in, 1);
  const auto target = static_cast<DType>(p.integer(0));
  if (target == in[0]->dtype()) return {in[0]};
  if (target == DType::float32) return {Chunk::dense<float>(in[0]->dense<double>().cast<float>())};
  return {Chunk::dense<double>(in[0]->dense<float>().cast<double>())};
}

}  // namespace

void register_elementwise(Dispatch& d) {
  d.add(ops::unary, Backend::cpu, unary);
  d.add(ops::scalar, Backend::cpu, scalar);
  d.add(ops::binary, Backend::cpu, binary);
  d.add(ops::where, Backend::cpu, where);
  d.add(ops::astype, Backend::cpu, astype);
}

}  // namespace tessera::backends::cpu

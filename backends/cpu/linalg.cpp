// Dense products and factorizations: matmul through BLAS (Eigen with EIGEN_USE_BLAS), QR and SVD through
// LAPACKE (OpenBLAS's LAPACK).
#include "backends/cpu/dense_util.hpp"
#include "backends/cpu/lapack.hpp"
#include "backends/kernel_params.hpp"
#include "backends/operations.hpp"

namespace tessera::backends::cpu {
namespace {

// Adds op(a) * op(b) into out (allocated on the first pair).
template <class T>
void accumulate_product(DenseMatrix<T>& out, bool first, const Chunk& a_chunk, const Chunk& b_chunk, bool ta,
                        bool tb) {
  const auto& a = a_chunk.dense<T>();
  if (b_chunk.backend() == Backend::sparse) {
    const auto& b = b_chunk.sparse<T>();
    DenseMatrix<T> product;
    if (ta && tb)
      product = a.transpose() * b.transpose();
    else if (ta)
      product = a.transpose() * b;
    else if (tb)
      product = a * b.transpose();
    else
      product = a * b;
    if (first)
      out = std::move(product);
    else
      out += product;
    return;
  }
  const auto& b = b_chunk.dense<T>();
  const auto rows = ta ? a.cols() : a.rows();
  const auto cols = tb ? b.rows() : b.cols();
  if (first) out.setZero(rows, cols);
  if (ta && tb)
    out.noalias() += a.transpose() * b.transpose();
  else if (ta)
    out.noalias() += a.transpose() * b;
  else if (tb)
    out.noalias() += a * b.transpose();
  else
    out.noalias() += a * b;
}

Chunks matmul(std::span<const ChunkPtr> in, const Params& params) {
  const auto p = MatmulParams::from(params);
  const bool ta = p.transpose_a, tb = p.transpose_b;
  check_matmul_pairs(in, ta, tb);
  const std::size_t k = in.size() / 2;
  // A^T A summed (Gram matrices, as the SVD's Gram path asks for): symmetric rank updates do half the flops.
  bool gram = ta && !tb;
  for (std::size_t i = 0; gram && i < k; ++i) gram = in[i] == in[k + i] && in[i]->backend() == Backend::cpu;
  return {with_dtype(in[0]->dtype(), [&](auto t) {
    using T = decltype(t);
    DenseMatrix<T> out;
    if (gram) {
      out.setZero(in[0]->cols(), in[0]->cols());
      for (std::size_t i = 0; i < k; ++i)
        out.template selfadjointView<Eigen::Lower>().rankUpdate(in[i]->dense<T>().transpose());
      out.template triangularView<Eigen::StrictlyUpper>() = out.transpose();
      return Chunk::dense<T>(std::move(out));
    }
    for (std::size_t i = 0; i < k; ++i) accumulate_product<T>(out, i == 0, *in[i], *in[k + i], ta, tb);
    return Chunk::dense<T>(std::move(out));
  })};
}

Chunks qr_factor(std::span<const ChunkPtr> in, const Params&) {
  require_inputs("qr_factor", in, 1);
  return with_dtype(in[0]->dtype(), [&](auto t) -> Chunks {
    using T = decltype(t);
    DenseMatrix<T> a = in[0]->dense<T>();
    const auto m = a.rows(), n = a.cols();
    DenseMatrix<T> tau(std::min(m, n), 1);
    if (m > 0 && n > 0) {
      const lapack_int info =
          lapack::geqrf(static_cast<lapack_int>(m), static_cast<lapack_int>(n), a.data(),
                        static_cast<lapack_int>(std::max<Eigen::Index>(1, m)), tau.data());
      // LAPACKE refuses a matrix holding NaN as a bad fourth argument: say what is wrong with it.
      if (info == -4 && !a.allFinite())
        throw KernelError("qr_factor: the " + in[0]->describe() + " matrix holds NaN or infinity");
      lapack::check(info, "geqrf");
    }
    return {Chunk::dense<T>(std::move(a)), Chunk::dense<T>(std::move(tau))};
  });
}

Chunks qr_r(std::span<const ChunkPtr> in, const Params&) {
  require_inputs("qr_r", in, 1);
  return {with_dtype(in[0]->dtype(), [&](auto t) {
    using T = decltype(t);
    const auto& a = in[0]->dense<T>();
    const auto k = std::min(a.rows(), a.cols());
    return Chunk::dense<T>(a.topRows(k).template triangularView<Eigen::Upper>());
  })};
}

Chunks qr_q(std::span<const ChunkPtr> in, const Params&) {
  require_inputs("qr_q", in, 2);
  return {with_dtype(in[0]->dtype(), [&](auto t) {
    using T = decltype(t);
    const auto& packed = in[0]->dense<T>();
    const auto& tau = in[1]->dense<T>();
    const auto m = packed.rows(), k = std::min(packed.rows(), packed.cols());
    DenseMatrix<T> q = packed.leftCols(k);
    if (m > 0 && k > 0)
      lapack::check(
          lapack::orgqr(static_cast<lapack_int>(m), static_cast<lapack_int>(k), static_cast<lapack_int>(k),
                        q.data(), static_cast<lapack_int>(m), tau.data()),
          "orgqr");
    return Chunk::dense<T>(std::move(q));
  })};
}

Chunks qr_apply(std::span<const ChunkPtr> in, const Params&) {
  require_inputs("qr_apply", in, 3);
  return {with_dtype(in[0]->dtype(), [&](auto t) {
    using T = decltype(t);
    // ormqr writes into the factor while it works (it sets each reflector's leading 1 and restores it):
    // the factor is shared by every descent through this node, so it works on a copy.
    const DenseMatrix<T> packed = in[0]->dense<T>();
    const auto& tau = in[1]->dense<T>();
    const auto& c_in = in[2]->dense<T>();
    const auto m = packed.rows(), k = tau.rows();
    if (c_in.rows() > m)
      throw KernelError("qr_apply: " + shape_text(c_in.rows(), c_in.cols()) + " has more rows than Q's " +
                        std::to_string(m));
    DenseMatrix<T> c = DenseMatrix<T>::Zero(m, c_in.cols());
    c.topRows(c_in.rows()) = c_in;
    if (m > 0 && k > 0 && c.cols() > 0)
      lapack::check(lapack::ormqr(static_cast<lapack_int>(m), static_cast<lapack_int>(c.cols()),
                                  static_cast<lapack_int>(k), packed.data(), static_cast<lapack_int>(m),
                                  tau.data(), c.data(), static_cast<lapack_int>(m)),
                    "ormqr");
    return Chunk::dense<T>(std::move(c));
  })};
}

Chunks svd(std::span<const ChunkPtr> in, const Params&) {
  require_inputs("svd", in, 1);
  return with_dtype(in[0]->dtype(), [&](auto t) -> Chunks {
    using T = decltype(t);
    DenseMatrix<T> a = in[0]->dense<T>();
    const auto m = a.rows(), n = a.cols(), k = std::min(m, n);
    DenseMatrix<T> s(k, 1), u(m, k), vt(k, n);
    if (k > 0) {
      if (!a.allFinite()) throw KernelError("svd: the matrix holds NaN or infinity");
      lapack::check(lapack::gesdd(static_cast<lapack_int>(m), static_cast<lapack_int>(n), a.data(),
                                  static_cast<lapack_int>(m), s.data(), u.data(), static_cast<lapack_int>(m),
                                  vt.data(), static_cast<lapack_int>(k)),
                    "gesdd");
    }
    return {Chunk::dense<T>(std::move(u)), Chunk::dense<T>(std::move(s)), Chunk::dense<T>(std::move(vt))};
  });
}

// The SVD of X from G = X^T X: S = sqrt(eigenvalues), V = eigenvectors, descending. Whether it is accepted
// (a 1 x 1 chunk, 1 or 0) is S's condition number against the limit: the eigenvalues carry rounding of
// the largest one, so a small singular value loses accuracy as the condition number squared.
Chunks gram_svd(std::span<const ChunkPtr> in, const Params& params) {
  require_inputs("gram_svd", in, 1);
  const double max_condition = GramSvdParams::from(params).max_condition;
  return with_dtype(in[0]->dtype(), [&](auto t) -> Chunks {
    using T = decltype(t);
    DenseMatrix<T> v = in[0]->dense<T>();
    const auto n = v.rows();
    if (v.cols() != n) throw KernelError("gram_svd: the Gram matrix " + in[0]->describe() + " is not square");
    DenseMatrix<T> w(n, 1), s(n, 1), accepted(1, 1);
    accepted(0, 0) = 0;
    // A non-finite Gram matrix (overflow, or NaN in X) is left to the stable path, which names it; LAPACK's
    // eigensolvers are not promised to return on NaN.
    if (n > 0 && v.allFinite() &&
        lapack::syevd(static_cast<lapack_int>(n), v.data(), static_cast<lapack_int>(n), w.data()) == 0) {
      const T largest = w(n - 1, 0), smallest = w(0, 0);
      const bool ok = smallest > 0 && static_cast<double>(largest) <=
                                          max_condition * max_condition * static_cast<double>(smallest);
      accepted(0, 0) = ok ? 1 : 0;
    }
    // Descending, as svd gives them: V's columns in reverse are Vt's rows.
    const DenseMatrix<T> vt = v.rowwise().reverse().transpose();
    for (Eigen::Index i = 0; i < n; ++i) s(i, 0) = std::sqrt(std::max<T>(w(n - 1 - i, 0), 0));
    return {Chunk::dense<T>(std::move(s)), Chunk::dense<T>(std::move(vt)),
            Chunk::dense<T>(std::move(accepted))};
  });
}

Chunks scale_columns(std::span<const ChunkPtr> in, const Params& params) {
  require_inputs("scale_columns", in, 2);
  const bool divide = ScaleColumnsParams::from(params).divide;
  return {with_dtype(in[0]->dtype(), [&](auto t) {
    using T = decltype(t);
    const auto& a = in[0]->dense<T>();
    const auto& s = in[1]->dense<T>();
    if (s.size() != a.cols())
      throw KernelError("scale_columns: " + std::to_string(s.size()) + " scales for " +
                        std::to_string(a.cols()) + " columns");
    const Eigen::Matrix<T, Eigen::Dynamic, 1> factors =
        divide ? Eigen::Matrix<T, Eigen::Dynamic, 1>(s.reshaped().cwiseInverse())
               : Eigen::Matrix<T, Eigen::Dynamic, 1>(s.reshaped());
    return Chunk::dense<T>(a * factors.asDiagonal());
  })};
}

}  // namespace

void register_linalg(Dispatch& d) {
  d.add(ops::matmul, Backend::cpu, matmul);
  d.add(ops::qr_factor, Backend::cpu, qr_factor);
  d.add(ops::qr_r, Backend::cpu, qr_r);
  d.add(ops::qr_q, Backend::cpu, qr_q);
  d.add(ops::qr_apply, Backend::cpu, qr_apply);
  d.add(ops::svd, Backend::cpu, svd);
  d.add(ops::scale_columns, Backend::cpu, scale_columns);
  d.add(ops::gram_svd, Backend::cpu, gram_svd);
}

}  // namespace tessera::backends::cpu

// The fused pass of a GLM's partials over a dense partition: one read of X gives the loss, the gradient
// and (order 2) the Hessian. Compiled twice: into tessera_backends for any x86-64 (OpenBLAS's products),
// and into tessera_wide_kernels for x86-64-v4 (Eigen's own AVX-512 products; cpu/wide/). It depends on
// Eigen and the standard library only, so that the wide build carries nothing else of Tessera's, and
// everything here has internal linkage: each build keeps its own copy.
#pragma once

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <cstdint>

namespace tessera::backends::glm::dense_pass {
namespace {

// glm::Family's values (glm_partials.cpp checks that they agree).
enum FamilyCode : int { kLogistic = 0, kNormal = 1, kPoisson = 2 };

// One row's loss, d loss / d eta and d^2 loss / d eta^2.
struct RowTerms {
  double loss, residual, weight;
};

inline RowTerms row_terms(int family, double eta, double y) {
  switch (family) {
    case kLogistic: {
      // Written so that neither exp overflows for large |eta|.
      const double e = std::exp(-std::abs(eta));
      const double mu = eta >= 0 ? 1 / (1 + e) : e / (1 + e);
      const double softplus = std::max(eta, 0.0) + std::log1p(e);
      return {softplus - y * eta, mu - y, mu * (1 - mu)};
    }
    case kNormal: {
      const double r = eta - y;
      return {0.5 * r * r, r, 1};
    }
    case kPoisson: {
      const double mu = std::exp(eta);
      return {mu - y * eta, mu - y, mu};
    }
  }
  return {0, 0, 0};
}

// What the rows add to the loss and to the intercept's gradient.
struct RowSums {
  double loss = 0, intercept_gradient = 0;
};

// Rows [first, first + count) of y against their linear predictors eta (without the intercept): adds
// their losses and residuals to `sums` and writes each row's residual (and, order 2, weight).
template <class Vector, class YMatrix>
void add_rows(int family, const Vector& eta, const YMatrix& y, Eigen::Index first, Eigen::Index count,
              double intercept, int order, RowSums& sums, Vector& residual, Vector& weight) {
  using T = typename Vector::Scalar;
  if (family == kLogistic) {
    // The block at once, in Eigen's vectorised exp and log: one scalar exp and log1p per row took a third
    // of an evaluation. log(1 + e) for log1p(e): e is in (0, 1], where they differ by at most one
    // rounding of 1 + e (1e-16 absolute, in the loss only).
    thread_local Eigen::ArrayXd z, e, inverse, mu, r;
    const auto labels = y.middleRows(first, count).col(0).template cast<double>().array();
    z = eta.head(count).template cast<double>().array() + intercept;
    e = (-z.abs()).exp();
    inverse = (1 + e).inverse();
    mu = (z >= 0).select(inverse, e * inverse);
    sums.loss += (z.max(0.0) + (1 + e).log() - labels * z).sum();
    r = mu - labels;
    sums.intercept_gradient += r.sum();
    residual.head(count) = r.template cast<T>().matrix();
    if (order == 2) weight.head(count) = (mu * (1 - mu)).template cast<T>().matrix();
    return;
  }
  for (Eigen::Index i = 0; i < count; ++i) {
    const RowTerms t =
        row_terms(family, static_cast<double>(eta[i]) + intercept, static_cast<double>(y(first + i, 0)));
    sums.loss += t.loss;
    sums.intercept_gradient += t.residual;
    residual[i] = static_cast<T>(t.residual);
    weight[i] = static_cast<T>(t.weight);
  }
}

// Rows per block: a block of X stays in cache between X b and X^T r, so X is read from memory once.
// 1024 rows of 100 float64 columns (800 KiB) fit a 1 MiB L2; 256-row blocks ran 40% slower here.
constexpr Eigen::Index kBlockRows = 1024;

// Sums over x's rows at beta (p + 1 values, the intercept first), written to loss, gradient (p + 1) and,
// when order is 2, hessian ((p + 1) x (p + 1), column-major).
template <class XMatrix, class YMatrix>
void dense_partials(const XMatrix& x, const YMatrix& y, const double* beta, int family, int order,
                    double* loss, double* gradient_out, double* hessian_out) {
  using T = typename XMatrix::Scalar;
  const Eigen::Index n = x.rows(), p = x.cols();
  const Eigen::Map<const Eigen::VectorXd> coefficients(beta + 1, p);
  const Eigen::Matrix<T, Eigen::Dynamic, 1> b = coefficients.cast<T>();
  Eigen::Matrix<T, Eigen::Dynamic, 1> eta(kBlockRows), residual(kBlockRows), weight(kBlockRows);
  Eigen::Matrix<T, Eigen::Dynamic, 1> gradient = Eigen::Matrix<T, Eigen::Dynamic, 1>::Zero(p);
  Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic> weighted;
  Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic> hessian;
  Eigen::VectorXd intercept_column;
  double intercept_weight = 0;
  if (order == 2) {
    hessian = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic>::Zero(p, p);
    intercept_column = Eigen::VectorXd::Zero(p);
  }
  RowSums sums;
  for (Eigen::Index start = 0; start < n; start += kBlockRows) {
    const Eigen::Index m = std::min(kBlockRows, n - start);
    const auto block = x.middleRows(start, m);
    eta.head(m).noalias() = block * b;
    add_rows(family, eta, y, start, m, beta[0], order, sums, residual, weight);
    if (order >= 1) gradient.noalias() += block.transpose() * residual.head(m);
    if (order == 2) {
      // X^T W X as (W^1/2 X)^T (W^1/2 X): a symmetric rank-k update, half a product's flops.
      weighted = block.array().colwise() * weight.head(m).array().sqrt();
      hessian.template selfadjointView<Eigen::Lower>().rankUpdate(weighted.transpose());
      intercept_column += (block.transpose() * weight.head(m)).template cast<double>();
      intercept_weight += weight.head(m).template cast<double>().sum();
    }
  }
  *loss = sums.loss;
  gradient_out[0] = sums.intercept_gradient;  // the rest stays 0 at order 0
  Eigen::Map<Eigen::VectorXd>(gradient_out + 1, p) = gradient.template cast<double>();
  if (order == 2) {
    Eigen::Map<Eigen::MatrixXd> out(hessian_out, p + 1, p + 1);
    out(0, 0) = intercept_weight;
    out.col(0).tail(p) = intercept_column;
    out.row(0).tail(p) = intercept_column.transpose();
    out.bottomRightCorner(p, p) =
        hessian.template selfadjointView<Eigen::Lower>().toDenseMatrix().template cast<double>();
  }
}

}  // namespace
}  // namespace tessera::backends::glm::dense_pass

#include "backends/glm_partials.hpp"

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "backends/cpu/cpu_features.hpp"
#include "backends/cpu/glm_dense_pass.hpp"
#include "backends/kernel_params.hpp"
#include "backends/operations.hpp"
#ifdef TESSERA_WIDE_KERNELS
#include "backends/cpu/wide/wide_kernels.hpp"
#endif

namespace tessera::backends::glm {

std::optional<Family> parse_family(std::string_view name) {
  if (name == "logistic") return Family::logistic;
  if (name == "normal") return Family::normal;
  if (name == "poisson") return Family::poisson;
  return std::nullopt;
}

std::string_view family_name(Family family) {
  switch (family) {
    case Family::logistic:
      return "logistic";
    case Family::normal:
      return "normal";
    case Family::poisson:
      return "poisson";
  }
  return "unknown";
}

namespace {

static_assert(static_cast<int>(Family::logistic) == dense_pass::kLogistic &&
              static_cast<int>(Family::normal) == dense_pass::kNormal &&
              static_cast<int>(Family::poisson) == dense_pass::kPoisson);

Partials empty_partials(std::int64_t p, int order) {
  Partials out;
  out.gradient = Eigen::VectorXd::Zero(p + 1);
  if (order == 2) out.hessian = Eigen::MatrixXd::Zero(p + 1, p + 1);
  return out;
}

Chunks to_chunks(Partials partials) {
  Chunks out;
  out.push_back(Chunk::dense<double>(DenseMatrix<double>::Constant(1, 1, partials.loss)));
  out.push_back(Chunk::dense<double>(std::move(partials.gradient)));
  if (partials.hessian.size() > 0) out.push_back(Chunk::dense<double>(std::move(partials.hessian)));
  return out;
}

enum class PassBuild { best, portable };

// The fused dense pass: the x86-64-v4 build for float64 where the CPU has AVX-512, else the portable one.
template <class XMatrix, class YMatrix>
Partials dense_partials(const XMatrix& x, const YMatrix& y, const Eigen::VectorXd& beta, Family family,
                        int order, [[maybe_unused]] PassBuild build = PassBuild::best) {
  const Eigen::Index p = x.cols();
  Partials out = empty_partials(p, order);
  double* hessian = order == 2 ? out.hessian.data() : nullptr;
  const int code = static_cast<int>(family);
  if constexpr (std::is_same_v<typename XMatrix::Scalar, double> &&
                std::is_same_v<typename YMatrix::Scalar, double>) {
#ifdef TESSERA_WIDE_KERNELS
    if (build == PassBuild::best && cpu::wide_kernels_enabled() && x.outerStride() == x.rows() &&
        y.outerStride() == y.rows() &&
        tessera_wide_glm_partials_f64(x.data(), x.rows(), p, y.data(), beta.data(), code, order, &out.loss,
                                      out.gradient.data(), hessian) == 0)
      return out;
#endif
  }
  dense_pass::dense_partials(x, y, beta.data(), code, order, &out.loss, out.gradient.data(), hessian);
  return out;
}

template <class XMatrix, class YMatrix>
Partials sparse_partials(const XMatrix& x, const YMatrix& y, const Eigen::VectorXd& beta, Family family,
                         int order) {
  using T = typename XMatrix::Scalar;
  const Eigen::Index n = x.rows(), p = x.cols();
  Partials out = empty_partials(p, order);
  const Eigen::Matrix<T, Eigen::Dynamic, 1> b = beta.tail(p).cast<T>();
  Eigen::Matrix<T, Eigen::Dynamic, 1> eta = x * b;
  Eigen::Matrix<T, Eigen::Dynamic, 1> residual(n), weight(n);
  dense_pass::RowSums sums;
  dense_pass::add_rows(static_cast<int>(family), eta, y, 0, n, beta[0], order, sums, residual, weight);
  out.loss = sums.loss;
  out.gradient[0] = sums.intercept_gradient;
  if (order >= 1) out.gradient.tail(p) = (x.transpose() * residual).template cast<double>();
  if (order == 2) {
    const XMatrix weighted = weight.asDiagonal() * x;
    out.hessian.bottomRightCorner(p, p) =
        Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic>(x.transpose() * weighted).template cast<double>();
    const Eigen::VectorXd column_weights = (x.transpose() * weight).template cast<double>();
    out.hessian.col(0).tail(p) = column_weights;
    out.hessian.row(0).tail(p) = column_weights.transpose();
    out.hessian(0, 0) = weight.template cast<double>().sum();
  }
  return out;
}

void check_inputs(std::span<const ChunkPtr> inputs) {
  if (inputs.size() != 3)
    throw KernelError("glm_partials: takes X, y and beta, got " + std::to_string(inputs.size()) + " inputs");
  const auto& x = *inputs[0];
  const auto& y = *inputs[1];
  const auto& beta = *inputs[2];
  if (y.rows() != x.rows() || y.cols() != 1)
    throw KernelError("glm_partials: y is " + y.describe() + ", X has " + std::to_string(x.rows()) + " rows");
  if (beta.rows() != x.cols() + 1 || beta.cols() != 1)
    throw KernelError("glm_partials: beta is " + beta.describe() + ", X has " + std::to_string(x.cols()) +
                      " columns (beta needs one more, the intercept)");
}

Eigen::VectorXd beta_of(const Chunk& chunk) {
  return visit_dense(chunk,
                     [](const auto& m) -> Eigen::VectorXd { return m.col(0).template cast<double>(); });
}

Chunks cpu_partials(std::span<const ChunkPtr> inputs, const Params& params) {
  check_inputs(inputs);
  const auto [family, order] = GlmPartialsParams::from(params);
  const Eigen::VectorXd beta = beta_of(*inputs[2]);
  return to_chunks(visit_dense(*inputs[0], [&](const auto& x) {
    return visit_dense(*inputs[1], [&](const auto& y) { return dense_partials(x, y, beta, family, order); });
  }));
}

Chunks sparse_partials_kernel(std::span<const ChunkPtr> inputs, const Params& params) {
  check_inputs(inputs);
  const auto [family, order] = GlmPartialsParams::from(params);
  const Eigen::VectorXd beta = beta_of(*inputs[2]);
  const ChunkPtr& y_chunk = inputs[1];
  if (y_chunk->backend() != Backend::cpu)
    throw KernelError("glm_partials: y must be dense, got " + y_chunk->describe());
  return to_chunks(visit_sparse(*inputs[0], [&](const auto& x) {
    return visit_dense(*y_chunk, [&](const auto& y) { return sparse_partials(x, y, beta, family, order); });
  }));
}

// A chunk's values on the host, dense, as float64.
Eigen::MatrixXd host_matrix(const ChunkPtr& chunk) {
  ChunkPtr host = chunk;
  auto& dispatch = Dispatch::global();
  if (host->backend() == Backend::cuda)
    host = dispatch.run(backends::ops::to_host, std::span(&host, 1), {})[0];
  if (host->backend() == Backend::sparse)
    host = dispatch.run(backends::ops::to_dense, std::span(&host, 1), {})[0];
  return visit_dense(*host, [](const auto& m) -> Eigen::MatrixXd { return m.template cast<double>(); });
}

Partials partials_from(const Chunks& chunks) {
  Partials out;
  out.loss = host_matrix(chunks.at(0))(0, 0);
  out.gradient = host_matrix(chunks.at(1)).col(0);
  if (chunks.size() > 2) out.hessian = host_matrix(chunks[2]);
  return out;
}

}  // namespace

Partials evaluate(const ChunkPtr& x, const ChunkPtr& y, const Eigen::VectorXd& beta, Family family,
                  int order) {
  auto& dispatch = Dispatch::global();
  if (!dispatch.has(ops::glm_partials, x->backend())) return evaluate_composed(x, y, beta, family, order);
  ChunkPtr y_input = y;
  if (y->backend() != Backend::cpu) y_input = Chunk::dense<double>(host_matrix(y));
  const ChunkPtr inputs[] = {x, y_input, Chunk::dense<double>(Eigen::MatrixXd(beta))};
  return partials_from(
      dispatch.run(ops::glm_partials, inputs, GlmPartialsParams{family, order}.to_params(), x->backend()));
}

Partials evaluate_portable(const Chunk& x, const Chunk& y, const Eigen::VectorXd& beta, Family family,
                           int order) {
  if (x.backend() != Backend::cpu || y.backend() != Backend::cpu)
    throw KernelError("glm::evaluate_portable: X and y must be cpu chunks, got " + x.describe() + " and " +
                      y.describe());
  return visit_dense(x, [&](const auto& xm) {
    return visit_dense(
        y, [&](const auto& ym) { return dense_partials(xm, ym, beta, family, order, PassBuild::portable); });
  });
}

Partials evaluate_composed(const ChunkPtr& x, const ChunkPtr& y, const Eigen::VectorXd& beta, Family family,
                           int order) {
  auto& dispatch = Dispatch::global();
  const Backend backend = x->backend();
  const std::int64_t p = x->cols();
  // A chunk on X's backend and dtype (sparse products take a dense cpu operand).
  auto place = [&](Eigen::MatrixXd values) {
    ChunkPtr chunk = Chunk::dense<double>(std::move(values));
    if (x->dtype() == DType::float32)
      chunk = dispatch.run(backends::ops::astype, std::span(&chunk, 1),
                           AstypeParams{DType::float32}.to_params())[0];
    if (backend == Backend::cuda) chunk = dispatch.run(backends::ops::to_cuda, std::span(&chunk, 1), {})[0];
    return chunk;
  };
  auto run1 = [&](const auto& params, std::vector<ChunkPtr> inputs) {
    return dispatch.run(params.operation, inputs, params.to_params(), backend).at(0);
  };
  auto unary = [&](const ChunkPtr& a, const char* name) { return run1(UnaryParams{name}, {a}); };
  auto binary = [&](const ChunkPtr& a, const ChunkPtr& b, const char* name) {
    return run1(BinaryParams{name}, {a, b});
  };
  auto total = [&](const ChunkPtr& a, const char* name) {
    return host_matrix(run1(ReduceParams{name, -1}, {a}))(0, 0);
  };
  const MatmulParams product{false, false}, transposed_product{true, false};
  const ChunkPtr y_here = y->backend() == backend ? y : place(host_matrix(y));

  ChunkPtr eta = run1(product, {x, place(beta.tail(p))});
  eta = run1(ScalarParams{"add", beta[0], false}, {eta});
  ChunkPtr mu = eta;
  if (family == Family::logistic) mu = unary(eta, "sigmoid");
  if (family == Family::poisson) mu = unary(eta, "exp");
  const ChunkPtr residual = binary(mu, y_here, "sub");

  Partials out;
  switch (family) {
    case Family::normal:
      out.loss = 0.5 * total(residual, "sumsq");
      break;
    case Family::logistic:  // log(1 + e^eta) = -log(sigmoid(-eta))
      out.loss = -total(unary(unary(unary(eta, "neg"), "sigmoid"), "log"), "sum") -
                 total(binary(y_here, eta, "mul"), "sum");
      break;
    case Family::poisson:
      out.loss = total(mu, "sum") - total(binary(y_here, eta, "mul"), "sum");
      break;
  }
  out.gradient = Eigen::VectorXd::Zero(p + 1);
  if (order >= 1) {
    out.gradient[0] = total(residual, "sum");
    out.gradient.tail(p) = host_matrix(run1(transposed_product, {x, residual})).col(0);
  }
  if (order == 2) {
    ChunkPtr weight = mu;
    if (family == Family::logistic) weight = binary(mu, run1(ScalarParams{"sub", 1.0, true}, {mu}), "mul");
    if (family == Family::normal) weight = place(Eigen::MatrixXd::Ones(x->rows(), 1));
    const ChunkPtr weighted = binary(x, weight, "mul");
    out.hessian = Eigen::MatrixXd::Zero(p + 1, p + 1);
    out.hessian(0, 0) = total(weight, "sum");
    const Eigen::VectorXd column_weights = host_matrix(run1(transposed_product, {x, weight})).col(0);
    out.hessian.col(0).tail(p) = column_weights;
    out.hessian.row(0).tail(p) = column_weights.transpose();
    out.hessian.bottomRightCorner(p, p) = host_matrix(run1(transposed_product, {x, weighted}));
  }
  return out;
}

namespace {

std::string at_row(const char* what, std::int64_t row, std::int64_t col, double value) {
  std::string text = std::string(what) + " at row " + std::to_string(row);
  if (col >= 0) text += ", column " + std::to_string(col);
  text += " (" + std::to_string(value) + ")";
  return text;
}

}  // namespace

std::optional<std::string> check_labels(const Chunk& y, Family family, std::int64_t first_row) {
  // A shared pointer that does not own: the chunk outlives this call.
  const ChunkPtr y_ref(std::shared_ptr<const Chunk>{}, &y);
  const Eigen::MatrixXd labels = host_matrix(y_ref);
  for (Eigen::Index i = 0; i < labels.rows(); ++i) {
    const double v = labels(i, 0);
    if (!std::isfinite(v)) return at_row("y has a non-finite value", first_row + i, -1, v);
    if (family == Family::logistic && v != 0 && v != 1)
      return at_row("y has a label other than 0 or 1 (logistic regression)", first_row + i, -1, v);
    if (family == Family::poisson && v < 0)
      return at_row("y has a negative count (Poisson regression)", first_row + i, -1, v);
  }
  return std::nullopt;
}

std::optional<std::string> check_values(const Chunk& x, std::int64_t first_row) {
  if (x.backend() == Backend::sparse) {
    return visit_sparse(x, [&](const auto& m) -> std::optional<std::string> {
      for (Eigen::Index j = 0; j < m.outerSize(); ++j)
        for (typename std::decay_t<decltype(m)>::InnerIterator it(m, j); it; ++it)
          if (!std::isfinite(static_cast<double>(it.value())))
            return at_row("X has a non-finite value", first_row + it.row(), j,
                          static_cast<double>(it.value()));
      return std::nullopt;
    });
  }
  // Host chunks are read where they are; only a device chunk is copied.
  auto scan = [&](const auto& values) -> std::optional<std::string> {
    if (values.allFinite()) return std::nullopt;
    for (Eigen::Index j = 0; j < values.cols(); ++j)
      for (Eigen::Index i = 0; i < values.rows(); ++i)
        if (!std::isfinite(static_cast<double>(values(i, j))))
          return at_row("X has a non-finite value", first_row + i, j, static_cast<double>(values(i, j)));
    return std::nullopt;
  };
  if (x.backend() == Backend::cpu) return visit_dense(x, scan);
  return scan(host_matrix(ChunkPtr(std::shared_ptr<const Chunk>{}, &x)));
}

Eigen::VectorXd local_solve(const ChunkPtr& x, const ChunkPtr& y, Family family, double scale, double rho,
                            const Eigen::VectorXd& target, Eigen::VectorXd start, bool fit_intercept) {
  Eigen::VectorXd b = std::move(start);
  if (!fit_intercept) b[0] = 0;
  auto objective = [&](const Eigen::VectorXd& at, double loss) {
    return scale * loss + 0.5 * rho * (at - target).squaredNorm();
  };
  const Eigen::Index k = b.size();
  for (int iteration = 0; iteration < 50; ++iteration) {
    const Partials here = evaluate(x, y, b, family, 2);
    Eigen::VectorXd gradient = scale * here.gradient + rho * (b - target);
    Eigen::MatrixXd hessian = scale * here.hessian + rho * Eigen::MatrixXd::Identity(k, k);
    if (!fit_intercept) {
      gradient[0] = 0;
      hessian.row(0).setZero();
      hessian.col(0).setZero();
      hessian(0, 0) = 1;
    }
    const Eigen::VectorXd step = hessian.ldlt().solve(gradient);
    const double decrease = gradient.dot(step);
    const double before = objective(b, here.loss);
    // At the minimum to rounding, or the step is no descent.
    if (!(decrease > 1e-16 * (1 + std::abs(before)))) break;
    double t = 1;
    Eigen::VectorXd next = b - step;
    // Near the minimum (a small Newton decrement) the full step is taken without checking it, as damped
    // Newton's analysis allows; farther away, and for any family but the quadratic one, whose Newton step
    // is exact, the step backs off until the objective falls enough.
    const bool near = decrease < 1e-6 * (1 + std::abs(before));
    if (family != Family::normal && !near) {
      while (t > 1e-12) {
        next = b - t * step;
        if (objective(next, evaluate(x, y, next, family, 0).loss) <= before - 1e-4 * t * decrease) break;
        t *= 0.5;
      }
    }
    b = next;
    // The step just taken leaves an error of about the decrement squared: done.
    if (decrease < 1e-10 * (1 + std::abs(before)) || family == Family::normal) break;
  }
  return b;
}

void register_glm_kernels(Dispatch& dispatch) {
  // 1024-row blocks: products far too small for BLAS's threads.
  dispatch.add(ops::glm_partials, Backend::cpu, cpu_partials, BlasThreads::one);
  dispatch.add(ops::glm_partials, Backend::sparse, sparse_partials_kernel, BlasThreads::one);
}

}  // namespace tessera::backends::glm

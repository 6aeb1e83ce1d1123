// What a user sets on a GLM estimator (tessera/glm.hpp):
//
//   tessera::glm::LogisticRegression est{{.solver = "newton", .regularizer = "l2", .lambda = 1e-3}};
//
// Plain settings only, so the solver's side (actors/glm/spec.hpp) includes this header too.
#pragma once

#include <cstdint>
#include <string>

namespace tessera::glm {

struct Options {
  // gradient_descent (Armijo backtracking), newton, lbfgs, proximal_grad (FISTA with restarts) or admm.
  std::string solver = "lbfgs";
  // none, l1, l2 or elastic_net; l1 and elastic_net take proximal_grad or admm. The objective is
  // (1/n) * sum of per-row losses + lambda * R(beta), the intercept not penalized: R = ||beta||^2 / 2 (l2),
  // ||beta||_1 (l1), and for elastic_net l1_ratio * ||beta||_1 + (1 - l1_ratio) * ||beta||^2 / 2.
  std::string regularizer = "none";
  double lambda = 0;
  double l1_ratio = 0.5;
  bool fit_intercept = true;
  // 0: the solver's default (gradient_descent 1000, newton 50, lbfgs 500, proximal_grad 5000, admm 1000).
  std::int64_t max_iter = 0;
  // gradient_descent, newton, lbfgs stop when the gradient's largest component is at most
  // tol * max(1, the first gradient's largest component); proximal_grad likewise on the gradient mapping.
  // ADMM uses abstol and reltol on its primal and dual residuals instead.
  double tol = 1e-6;
  std::int64_t lbfgs_memory = 10;
  // ADMM: the penalty (adapted by residual balancing unless adaptive_rho is off), over-relaxation in
  // [1, 1.8], and the tolerances of Boyd et al. (2011), section 3.3.1.
  double rho = 0.1;
  bool adaptive_rho = true;
  double over_relaxation = 1.0;
  double abstol = 1e-8;
  double reltol = 1e-6;
  // fit() from Eigen matrices: rows per partition (0: the rows split in 4). Not sent to the cluster.
  std::int64_t chunk_rows = 0;
};

}  // namespace tessera::glm

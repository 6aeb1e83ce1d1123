// The five GLM solvers, written once against GlmObjective: they see the data only through sums over all
// partitions (loss, gradient, Hessian) and, for ADMM, each partition's local solve. The solver actor
// implements GlmObjective with messages to the partitions where the data lives; tests may implement it
// in memory.
#pragma once

#include <Eigen/Dense>
#include <string>
#include <vector>

#include "actors/glm/spec.hpp"

namespace tessera::glm {

class GlmObjective {
 public:
  virtual ~GlmObjective() = default;
  // Sums over all rows at beta (p + 1, the intercept first); order 0 (the loss), 1 or 2.
  virtual backends::glm::Partials evaluate(const Eigen::VectorXd& beta, int order) = 0;
  // ADMM: partition i's argmin_b scale * loss_i(b) + rho / 2 * ||b - targets[i]||^2, from starts[i].
  virtual std::vector<Eigen::VectorXd> local_solve(const std::vector<Eigen::VectorXd>& targets,
                                                   const std::vector<Eigen::VectorXd>& starts, double rho,
                                                   double scale) = 0;
  virtual std::size_t partitions() const = 0;
};

struct FitOutcome {
  Eigen::VectorXd beta;  // p + 1, the intercept first (0 without one)
  std::int64_t iterations = 0;
  bool converged = false;
  double objective = 0;          // (1/n) * loss + lambda * R at beta
  std::int64_t evaluations = 0;  // passes over the data (ADMM: local solves count one each)
};

// Runs spec.solver from beta = 0. Throws std::invalid_argument for a spec validate() refuses.
FitOutcome solve(const GlmSpec& spec, GlmObjective& objective);

// The proximal operator of t * lambda * R, applied to every coefficient but the intercept.
Eigen::VectorXd proximal(const GlmSpec& spec, const Eigen::VectorXd& v, double t);
// lambda * R(beta) without the intercept.
double penalty(const GlmSpec& spec, const Eigen::VectorXd& beta);

}  // namespace tessera::glm

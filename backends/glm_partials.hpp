// What one partition of a GLM's rows adds to the objective and its derivatives: the per-chunk half of
// every GLM solver. Written against the dispatch table, so it runs on every backend: cpu and sparse have a
// fused kernel (one pass over the rows), the others compose it from matmul, chain, binary and reduce.
#pragma once

#include <Eigen/Dense>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "backends/chunk.hpp"
#include "backends/dispatch.hpp"

namespace tessera::backends::glm {

// The distribution of y given the linear predictor eta, each with its canonical link.
enum class Family : std::uint8_t { logistic, normal, poisson };
std::optional<Family> parse_family(std::string_view name);
std::string_view family_name(Family family);

namespace ops {
// glm_partials: X (rows x p), y (rows x 1), beta ((p + 1) x 1, cpu, the intercept first); ints {family,
// order (0, 1, 2)} -> {loss (1 x 1), gradient ((p + 1) x 1)[, hessian ((p + 1) x (p + 1)) when order is 2]},
// sums over the rows (not divided by their count). The per-row loss is the negative log-likelihood without
// the terms that do not depend on beta: logistic log(1 + e^eta) - y eta, normal (eta - y)^2 / 2,
// Poisson e^eta - y eta.
inline constexpr const char* glm_partials = "glm_partials";
}  // namespace ops

struct Partials {
  double loss = 0;
  Eigen::VectorXd gradient;  // p + 1, the intercept first
  Eigen::MatrixXd hessian;   // (p + 1) x (p + 1) when asked for, else empty
};

// Sums over the partition's rows at beta (p + 1, the intercept first); order 0 (the loss only), 1 or 2.
Partials evaluate(const ChunkPtr& x, const ChunkPtr& y, const Eigen::VectorXd& beta, Family family,
                  int order);
// The same through the composed operations only, whatever the backend has (tests compare the two).
Partials evaluate_composed(const ChunkPtr& x, const ChunkPtr& y, const Eigen::VectorXd& beta, Family family,
                           int order);

// The cpu kernel's dense pass in its portable build, whatever the CPU: evaluate() runs the x86-64-v4
// (AVX-512) build for float64 where the CPU has it (backends/cpu/cpu_features.hpp); tests compare the two.
Partials evaluate_portable(const Chunk& x, const Chunk& y, const Eigen::VectorXd& beta, Family family,
                           int order);

// The first value the family cannot take, named by its global row (first_row + local) and column: in y,
// a non-finite value, a label other than 0 or 1 (logistic), a negative count (Poisson) — a pass over y;
// in X, a non-finite value — a pass over X, as long as a fit's round, so fits run it only when a result
// is not finite.
std::optional<std::string> check_labels(const Chunk& y, Family family, std::int64_t first_row);
std::optional<std::string> check_values(const Chunk& x, std::int64_t first_row);

// ADMM's local step: argmin_b scale * loss_sum(b) + rho / 2 * ||b - target||^2 by damped Newton from
// `start`. Without an intercept, b[0] stays 0.
Eigen::VectorXd local_solve(const ChunkPtr& x, const ChunkPtr& y, Family family, double scale, double rho,
                            const Eigen::VectorXd& target, Eigen::VectorXd start, bool fit_intercept);

// Registers the fused glm_partials kernels (cpu, sparse).
void register_glm_kernels(Dispatch& dispatch);

}  // namespace tessera::backends::glm

// Generalized linear models on chunked arrays, with scikit-learn's estimator API:
//
//   tessera::glm::LogisticRegression est{{.solver = "lbfgs", .regularizer = "l2", .lambda = 1e-3}};
//   est.fit(client, X, y);                    // X on cpu, sparse or cuda: the same call
//   auto p = est.predict_proba(X_new);        // an Array, computed like any other
//
// fit() persists one partition per row chunk of X (those rows with their y) on the workers, and a solver
// actor on the scheduler's side broadcasts the coefficients to them and sums their losses, gradients and
// Hessians each round: the rows never move and no graph is built per iteration.
//
// The objective is (1/n) * sum of per-row losses (negative log-likelihoods) + lambda * R(beta), the
// intercept not penalized, with R = ||beta||^2 / 2 (l2), ||beta||_1 (l1) or
// l1_ratio * ||beta||_1 + (1 - l1_ratio) * ||beta||^2 / 2 (elastic_net). scikit-learn's C is 1 / (n * lambda)
// for LogisticRegression; its alpha is lambda for Ridge, Lasso, ElasticNet and PoissonRegressor.
#pragma once

#include <Eigen/Dense>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "tessera/array.hpp"
#include "tessera/glm_options.hpp"

namespace tessera {
class Client;
}

namespace tessera::backends::glm {
enum class Family : std::uint8_t;  // internal (backends/glm_partials.hpp); users pick one by estimator
}

namespace tessera::glm {

// How the last fit went.
struct FitReport {
  std::int64_t iterations = 0;
  bool converged = false;
  double objective = 0;
  std::int64_t evaluations = 0;  // passes over the data
  double seconds = 0;            // the solver's, from loading the partitions to the answer
  std::int64_t rounds = 0;       // broadcast-and-reduce rounds with the workers
  double round_seconds = 0;      // their wall time, summed
  double worker_seconds = 0;     // the slowest worker's time per round, summed
  // Per round, what the rounds cost beyond the workers' own time: messages, scheduling, reduction.
  double overhead_per_round() const {
    return rounds ? (round_seconds - worker_seconds) / static_cast<double>(rounds) : 0;
  }
};

// A fit that failed on the cluster (bad data found while loading it, a worker lost, ...).
class FitError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class GeneralizedLinearModel {
 public:
  // Throws SubmissionError for bad input found here: shapes, unknown names, settings out of range. Data
  // the family cannot take (non-finite values, labels other than 0/1, negative counts) is a FitError
  // naming the row (and column): labels are checked before the solver starts, X's values when the first
  // round's results are not finite (a pass over X saved on good data).
  GeneralizedLinearModel& fit(Client& client, const Array& x, const Array& y);
  GeneralizedLinearModel& fit(Client& client, const Eigen::MatrixXd& x, const Eigen::VectorXd& y);

  // X beta + intercept.
  Array decision_function(const Array& x) const;
  Eigen::VectorXd decision_function(const Eigen::MatrixXd& x) const;

  bool fitted() const { return fitted_; }
  const Eigen::VectorXd& coef() const;
  double intercept() const;
  const FitReport& report() const { return report_; }
  const Options& options() const { return options_; }

 private:
  // The three estimators below are the families.
  friend class LogisticRegression;
  friend class LinearRegression;
  friend class PoissonRegression;
  GeneralizedLinearModel(backends::glm::Family family, Options options);
  void require_fitted(const char* what) const;
  void check_columns(std::int64_t cols, const char* what) const;

  backends::glm::Family family_;
  Options options_;
  bool fitted_ = false;
  Eigen::VectorXd coef_;
  double intercept_ = 0;
  FitReport report_;
};

class LogisticRegression : public GeneralizedLinearModel {
 public:
  explicit LogisticRegression(Options options = {});
  // P(y = 1 | x).
  Array predict_proba(const Array& x) const;
  Eigen::VectorXd predict_proba(const Eigen::MatrixXd& x) const;
  // 0 or 1.
  Array predict(const Array& x) const;
  Eigen::VectorXd predict(const Eigen::MatrixXd& x) const;
  // Mean accuracy.
  double score(Client& client, const Array& x, const Array& y) const;
};

class LinearRegression : public GeneralizedLinearModel {
 public:
  explicit LinearRegression(Options options = {});
  Array predict(const Array& x) const;
  Eigen::VectorXd predict(const Eigen::MatrixXd& x) const;
  // R^2, the coefficient of determination.
  double score(Client& client, const Array& x, const Array& y) const;
};

class PoissonRegression : public GeneralizedLinearModel {
 public:
  explicit PoissonRegression(Options options = {});
  // The expected count, exp(X beta + intercept).
  Array predict(const Array& x) const;
  Eigen::VectorXd predict(const Eigen::MatrixXd& x) const;
  // D^2, the fraction of Poisson deviance explained (scikit-learn's PoissonRegressor.score).
  double score(Client& client, const Array& x, const Array& y) const;
};

}  // namespace tessera::glm

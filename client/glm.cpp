// GLM estimators: checks the input, persists the partitions, asks the cluster for a fit and reads its answer.
#include "tessera/glm.hpp"

#include <cmath>

#include "actors/glm/messages.hpp"
#include "actors/glm/spec.hpp"
#include "client/array_graph.hpp"
#include "graph/array_tasks.hpp"
#include "tessera/client.hpp"

namespace tessera::glm {

using detail::ArrayAccess;

namespace {

GlmSpec spec_of(backends::glm::Family family, const Options& options, std::int64_t rows, std::int64_t cols) {
  GlmSpec spec;
  static_cast<Options&>(spec) = options;
  spec.family = family;
  spec.rows = rows;
  spec.cols = cols;
  return spec;
}

std::string family_text(backends::glm::Family family) {
  return std::string(backends::glm::family_name(family));
}

}  // namespace

GeneralizedLinearModel::GeneralizedLinearModel(backends::glm::Family family, Options options)
    : family_(family), options_(std::move(options)) {
  try {
    validate(spec_of(family_, options_, 1, 1));
  } catch (const std::invalid_argument& e) {
    throw SubmissionError(e.what());
  }
}

GeneralizedLinearModel& GeneralizedLinearModel::fit(Client& client, const Array& x, const Array& y) {
  const std::string where = "glm (" + family_text(family_) + ") fit: ";
  if (x.ndim() != 2) throw SubmissionError(where + "X must be 2-D, got " + x.describe());
  if (y.ndim() == 0 || (y.ndim() == 2 && y.cols() != 1))
    throw SubmissionError(where + "y must be 1-D (or one column), got " + y.describe());
  if (x.rows() != y.rows())
    throw SubmissionError(where + "X has " + std::to_string(x.rows()) + " rows but y has " +
                          std::to_string(y.rows()));
  if (x.rows() == 0 || x.cols() == 0) throw SubmissionError(where + "X is empty: " + x.describe());
  GlmSpec spec = spec_of(family_, options_, x.rows(), x.cols());
  try {
    validate(spec);
  } catch (const std::invalid_argument& e) {
    throw SubmissionError(e.what());
  }

  // One partition per row chunk of X: its rows with every column, and the same rows of y.
  const auto& x_data = *ArrayAccess::data(x);
  const auto& row_chunks = x_data.row_chunks;
  const Array x_rows = x_data.grid_cols() == 1 && !x_data.transpose_of && !x_data.chain
                           ? x
                           : detail::regrid(x, 0, 0, row_chunks, {x.cols()});
  const Array y_rows = detail::regrid(y, 0, 0, row_chunks, {1});
  std::vector<Delayed<Value>> partitions;
  for (std::size_t i = 0; i < row_chunks.size(); ++i)
    partitions.emplace_back(std::shared_ptr<DelayedNode>(
        new DelayedNode{&array_pair_function(),
                        {ArrayAccess::data(x_rows)->block(i, 0), ArrayAccess::data(y_rows)->block(i, 0)}}));
  const auto held = client.persist(partitions);

  GlmFitRequest request{spec, {}};
  std::int64_t first_row = 0;
  for (std::size_t i = 0; i < held.size(); ++i) {
    held[i].wait();
    if (auto failure = held[i].exception()) {
      if (failure->function() == kLostConnectionFunction) throw ConnectionLost(failure->message());
      throw FitError(where + "partition " + std::to_string(i) + " could not be made: " + failure->what());
    }
    const TaskRef task = held[i].task();
    request.partitions.push_back(GlmPartitionTask{task.op, task.index, first_row});
    first_row += row_chunks[i];
  }
  const GlmFitted answer = client.fit_glm(std::move(request));
  if (!answer.error.empty()) throw FitError(where + answer.error);
  intercept_ = answer.beta[0];
  coef_ = answer.beta.tail(answer.beta.size() - 1);
  report_ = FitReport{answer.iterations, answer.converged, answer.objective,     answer.evaluations,
                      answer.seconds,    answer.rounds,    answer.round_seconds, answer.worker_seconds};
  fitted_ = true;
  return *this;
}

GeneralizedLinearModel& GeneralizedLinearModel::fit(Client& client, const Eigen::MatrixXd& x,
                                                    const Eigen::VectorXd& y) {
  if (x.rows() != y.size())
    throw SubmissionError("glm (" + family_text(family_) + ") fit: X has " + std::to_string(x.rows()) +
                          " rows but y has " + std::to_string(y.size()));
  const std::int64_t chunk =
      options_.chunk_rows > 0 ? options_.chunk_rows : std::max<std::int64_t>(1, (x.rows() + 3) / 4);
  return fit(client, Array::from_eigen(x, {.chunks = {chunk}}), Array::from_eigen(y, {.chunks = {chunk}}));
}

void GeneralizedLinearModel::require_fitted(const char* what) const {
  if (!fitted_) throw SubmissionError(std::string("glm: ") + what + " before fit()");
}

void GeneralizedLinearModel::check_columns(std::int64_t cols, const char* what) const {
  if (cols != coef_.size())
    throw SubmissionError(std::string("glm: ") + what + ": X has " + std::to_string(cols) +
                          " columns, the model was fitted on " + std::to_string(coef_.size()));
}

const Eigen::VectorXd& GeneralizedLinearModel::coef() const {
  require_fitted("coef()");
  return coef_;
}

double GeneralizedLinearModel::intercept() const {
  require_fitted("intercept()");
  return intercept_;
}

Array GeneralizedLinearModel::decision_function(const Array& x) const {
  require_fitted("decision_function()");
  if (x.ndim() != 2) throw SubmissionError("glm: decision_function: X must be 2-D, got " + x.describe());
  check_columns(x.cols(), "decision_function");
  const Array coefficients =
      Array::from_eigen(coef_).astype(std::string(backends::dtype_name(x.meta().dtype)));
  return x.dot(coefficients) + intercept_;
}

Eigen::VectorXd GeneralizedLinearModel::decision_function(const Eigen::MatrixXd& x) const {
  require_fitted("decision_function()");
  check_columns(x.cols(), "decision_function");
  return (x * coef_).array() + intercept_;
}

LogisticRegression::LogisticRegression(Options options)
    : GeneralizedLinearModel(backends::glm::Family::logistic, std::move(options)) {}

Array LogisticRegression::predict_proba(const Array& x) const {
  return decision_function(x).sigmoid();
}

Eigen::VectorXd LogisticRegression::predict_proba(const Eigen::MatrixXd& x) const {
  return decision_function(x).array().unaryExpr([](double eta) { return 1 / (1 + std::exp(-eta)); });
}

Array LogisticRegression::predict(const Array& x) const {
  return decision_function(x) > 0.0;
}

Eigen::VectorXd LogisticRegression::predict(const Eigen::MatrixXd& x) const {
  return decision_function(x).unaryExpr([](double eta) { return eta > 0 ? 1.0 : 0.0; });
}

double LogisticRegression::score(Client& client, const Array& x, const Array& y) const {
  const Eigen::VectorXd truth = y.compute_vector(client);
  const Eigen::VectorXd predicted = predict(x).compute_vector(client);
  return (truth.array() == predicted.array()).cast<double>().mean();
}

LinearRegression::LinearRegression(Options options)
    : GeneralizedLinearModel(backends::glm::Family::normal, std::move(options)) {}

Array LinearRegression::predict(const Array& x) const {
  return decision_function(x);
}

Eigen::VectorXd LinearRegression::predict(const Eigen::MatrixXd& x) const {
  return decision_function(x);
}

double LinearRegression::score(Client& client, const Array& x, const Array& y) const {
  const Eigen::VectorXd truth = y.compute_vector(client);
  const Eigen::VectorXd predicted = predict(x).compute_vector(client);
  const double residual = (truth - predicted).squaredNorm();
  const double total = (truth.array() - truth.mean()).square().sum();
  return 1 - residual / total;
}

PoissonRegression::PoissonRegression(Options options)
    : GeneralizedLinearModel(backends::glm::Family::poisson, std::move(options)) {}

Array PoissonRegression::predict(const Array& x) const {
  return decision_function(x).exp();
}

Eigen::VectorXd PoissonRegression::predict(const Eigen::MatrixXd& x) const {
  return decision_function(x).array().exp();
}

double PoissonRegression::score(Client& client, const Array& x, const Array& y) const {
  const Eigen::VectorXd truth = y.compute_vector(client);
  const Eigen::VectorXd predicted = predict(x).compute_vector(client);
  auto deviance = [&](auto mean_of) {
    double d = 0;
    for (Eigen::Index i = 0; i < truth.size(); ++i) {
      const double t = truth[i], mu = mean_of(i);
      d += 2 * ((t > 0 ? t * std::log(t / mu) : 0.0) - t + mu);
    }
    return d;
  };
  const double mean = truth.mean();
  return 1 - deviance([&](Eigen::Index i) { return predicted[i]; }) /
                 deviance([&](Eigen::Index) { return mean; });
}

}  // namespace tessera::glm

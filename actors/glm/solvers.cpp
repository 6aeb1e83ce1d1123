#include "actors/glm/solvers.hpp"

#include <cmath>
#include <deque>
#include <optional>

namespace tessera::glm {

Eigen::VectorXd proximal(const GlmSpec& spec, const Eigen::VectorXd& v, double t) {
  Eigen::VectorXd out = v;
  auto w = out.tail(v.size() - 1);
  const double s = t * spec.lambda;
  auto soft = [&](double threshold) {
    w = w.unaryExpr([threshold](double x) {
      return x > threshold ? x - threshold : (x < -threshold ? x + threshold : 0.0);
    });
  };
  if (spec.regularizer == "l2") {
    w /= 1 + s;
  } else if (spec.regularizer == "l1") {
    soft(s);
  } else if (spec.regularizer == "elastic_net") {
    soft(s * spec.l1_ratio);
    w /= 1 + s * (1 - spec.l1_ratio);
  }
  return out;
}

double penalty(const GlmSpec& spec, const Eigen::VectorXd& beta) {
  const auto w = beta.tail(beta.size() - 1);
  if (spec.regularizer == "l2") return spec.lambda * 0.5 * w.squaredNorm();
  if (spec.regularizer == "l1") return spec.lambda * w.lpNorm<1>();
  if (spec.regularizer == "elastic_net")
    return spec.lambda * (spec.l1_ratio * w.lpNorm<1>() + (1 - spec.l1_ratio) * 0.5 * w.squaredNorm());
  return 0;
}

namespace {

// The smooth part of the objective, (1/n) * loss + l2 * ||w||^2 / 2, with its derivatives; the intercept's
// are zeroed when the model has none, so no solver moves it.
struct Smooth {
  const GlmSpec& spec;
  GlmObjective& objective;
  double l2;
  std::int64_t evaluations = 0;

  struct Point {
    Eigen::VectorXd beta;
    double value = 0;
    Eigen::VectorXd gradient;
    Eigen::MatrixXd hessian;
  };

  Point at(Eigen::VectorXd beta, int order) {
    if (!spec.fit_intercept) beta[0] = 0;
    const auto partials = objective.evaluate(beta, order);
    ++evaluations;
    const double inv_n = 1.0 / static_cast<double>(spec.rows);
    const Eigen::Index p = beta.size() - 1;
    Point point;
    point.value = partials.loss * inv_n + 0.5 * l2 * beta.tail(p).squaredNorm();
    if (order >= 1) {
      point.gradient = partials.gradient * inv_n;
      point.gradient.tail(p) += l2 * beta.tail(p);
      if (!spec.fit_intercept) point.gradient[0] = 0;
    }
    if (order == 2) {
      point.hessian = partials.hessian * inv_n;
      point.hessian.diagonal().tail(p).array() += l2;
      if (!spec.fit_intercept) {
        point.hessian.row(0).setZero();
        point.hessian.col(0).setZero();
        point.hessian(0, 0) = 1;
      }
    }
    point.beta = std::move(beta);
    return point;
  }
};

double largest(const Eigen::VectorXd& v) {
  return v.size() == 0 ? 0 : v.lpNorm<Eigen::Infinity>();
}

// The gradient's largest component at which a smooth solver stops: tol relative to the first gradient's
// (at beta = 0), so the criterion does not depend on the scale of y.
double gradient_target(const GlmSpec& spec, const Eigen::VectorXd& first_gradient) {
  return spec.tol * std::max(1.0, largest(first_gradient));
}

// Armijo's sufficient decrease, or, once the objective's change is lost in rounding, a smaller gradient:
// near the minimum of a function with a large value, f cannot show the decrease the condition asks for.
bool acceptable(double value, double candidate_value, double decrease, const Eigen::VectorXd& gradient,
                const Eigen::VectorXd& candidate_gradient) {
  if (candidate_value <= value - decrease) return true;
  const bool within_rounding = std::abs(candidate_value - value) <= 1e-12 * (1 + std::abs(value));
  return within_rounding && candidate_gradient.size() > 0 && candidate_gradient.norm() < gradient.norm();
}

constexpr double kArmijo = 1e-4;
constexpr double kSmallestStep = 1e-20;

// Backtracks along `direction` (slope = gradient . direction < 0) from `step`, halving it, until the
// objective falls enough; evaluates each candidate to `order`. Empty when the step underflows.
std::optional<Smooth::Point> backtrack(Smooth& smooth, const Smooth::Point& current,
                                       const Eigen::VectorXd& direction, double slope, double& step,
                                       int order) {
  for (; step >= kSmallestStep; step *= 0.5) {
    auto candidate = smooth.at(current.beta + step * direction, order);
    if (acceptable(current.value, candidate.value, -kArmijo * step * slope, current.gradient,
                   candidate.gradient))
      return candidate;
  }
  return std::nullopt;
}

FitOutcome finish(Smooth& smooth, const GlmSpec& spec, Smooth::Point point, std::int64_t iterations,
                  bool converged) {
  FitOutcome out;
  out.objective = point.value + (smooth.l2 == 0 ? penalty(spec, point.beta) : 0);
  out.beta = std::move(point.beta);
  out.iterations = iterations;
  out.converged = converged;
  out.evaluations = smooth.evaluations;
  return out;
}

// The loop the smooth solvers share: from beta = 0, `next` turns the current point into the next one (or
// nothing when its line search fails) until the gradient is small enough or the iterations run out.
template <class Next>
FitOutcome descend(const GlmSpec& spec, Smooth& smooth, Eigen::VectorXd start, int order, Next next) {
  auto current = smooth.at(std::move(start), order);
  const double target = gradient_target(spec, current.gradient);
  std::int64_t iteration = 0;
  for (; iteration < spec.iteration_limit(); ++iteration) {
    if (largest(current.gradient) <= target) break;
    auto following = next(current);
    if (!following) return finish(smooth, spec, std::move(current), iteration, false);
    current = std::move(*following);
  }
  const bool converged = largest(current.gradient) <= target;
  return finish(smooth, spec, std::move(current), iteration, converged);
}

FitOutcome gradient_descent(const GlmSpec& spec, Smooth& smooth, Eigen::VectorXd start) {
  double step = 1;
  return descend(spec, smooth, std::move(start), 1, [&](const Smooth::Point& current) {
    auto next = backtrack(smooth, current, -current.gradient, -current.gradient.squaredNorm(), step, 1);
    step *= 2;  // the next iteration tries a longer step first
    return next;
  });
}

FitOutcome newton(const GlmSpec& spec, Smooth& smooth, Eigen::VectorXd start) {
  return descend(spec, smooth, std::move(start), 2, [&](const Smooth::Point& current) {
    Eigen::LDLT<Eigen::MatrixXd> factor(current.hessian);
    Eigen::VectorXd direction = -factor.solve(current.gradient);
    double slope = current.gradient.dot(direction);
    if (factor.info() != Eigen::Success || !(slope < 0) || !direction.allFinite()) {
      direction = -current.gradient;  // a singular Hessian: fall back to the gradient
      slope = -current.gradient.squaredNorm();
    }
    double step = 1;
    return backtrack(smooth, current, direction, slope, step, 2);
  });
}

FitOutcome lbfgs(const GlmSpec& spec, Smooth& smooth, Eigen::VectorXd start) {
  std::deque<Eigen::VectorXd> s_history, y_history;
  std::deque<double> rho_history;
  return descend(spec, smooth, std::move(start), 1, [&](const Smooth::Point& current) {
    const Eigen::VectorXd& g = current.gradient;
    // The two-loop recursion: direction = -H g with H the inverse-Hessian estimate.
    Eigen::VectorXd q = g;
    std::vector<double> alpha(s_history.size());
    for (std::size_t i = s_history.size(); i-- > 0;) {
      alpha[i] = rho_history[i] * s_history[i].dot(q);
      q -= alpha[i] * y_history[i];
    }
    if (!s_history.empty()) q *= s_history.back().dot(y_history.back()) / y_history.back().squaredNorm();
    for (std::size_t i = 0; i < s_history.size(); ++i) {
      const double b = rho_history[i] * y_history[i].dot(q);
      q += (alpha[i] - b) * s_history[i];
    }
    Eigen::VectorXd direction = -q;
    double slope = g.dot(direction);
    if (!(slope < 0)) {  // not a descent direction: start the memory over
      direction = -g;
      slope = -g.squaredNorm();
      s_history.clear();
      y_history.clear();
      rho_history.clear();
    }
    double step = s_history.empty() ? std::min(1.0, 1.0 / g.norm()) : 1.0;
    auto next = backtrack(smooth, current, direction, slope, step, 1);
    if (next) {
      Eigen::VectorXd s = next->beta - current.beta;
      Eigen::VectorXd y = next->gradient - current.gradient;
      const double sy = s.dot(y);
      if (sy > 1e-16 * s.norm() * y.norm()) {  // keeps the estimate positive definite
        s_history.push_back(std::move(s));
        y_history.push_back(std::move(y));
        rho_history.push_back(1 / sy);
        if (static_cast<std::int64_t>(s_history.size()) > spec.lbfgs_memory) {
          s_history.pop_front();
          y_history.pop_front();
          rho_history.pop_front();
        }
      }
    }
    return next;
  });
}

// FISTA with backtracking and adaptive restart (O'Donoghue and Candes, 2015): the momentum starts over
// whenever the objective rises.
FitOutcome proximal_gradient(const GlmSpec& spec, Smooth& smooth, Eigen::VectorXd start) {
  auto x = smooth.at(std::move(start), 0);
  double objective_x = x.value + penalty(spec, x.beta);
  Eigen::VectorXd y = x.beta;
  double momentum = 1, step = 1;
  double target = -1;
  std::int64_t iteration = 0;
  bool converged = false;
  for (; iteration < spec.iteration_limit() && !converged; ++iteration) {
    const auto at_y = smooth.at(y, 1);
    if (target < 0) target = gradient_target(spec, at_y.gradient);
    Smooth::Point next;
    Eigen::VectorXd moved;
    for (;;) {
      Eigen::VectorXd candidate = proximal(spec, y - step * at_y.gradient, step);
      if (!spec.fit_intercept) candidate[0] = 0;
      next = smooth.at(candidate, 0);
      moved = next.beta - y;
      if (next.value <= at_y.value + at_y.gradient.dot(moved) + moved.squaredNorm() / (2 * step) +
                            1e-12 * (1 + std::abs(at_y.value)))
        break;
      step *= 0.5;
      if (step < kSmallestStep) return finish(smooth, spec, std::move(x), iteration, false);
    }
    converged = largest(moved) / step <= target;
    const double objective_next = next.value + penalty(spec, next.beta);
    if (objective_next > objective_x) {
      momentum = 1;
      y = next.beta;
    } else {
      const double following = (1 + std::sqrt(1 + 4 * momentum * momentum)) / 2;
      y = next.beta + ((momentum - 1) / following) * (next.beta - x.beta);
      momentum = following;
    }
    x = std::move(next);
    objective_x = objective_next;
  }
  return finish(smooth, spec, std::move(x), iteration, converged);
}

// Consensus ADMM (Boyd et al., 2011, section 7.1 with 3.4.1's residual balancing): each partition solves
// its own problem where its data lives; the regularizer enters only through the consensus z.
FitOutcome admm(const GlmSpec& spec, Smooth& smooth, GlmObjective& objective, Eigen::VectorXd start) {
  const std::size_t parts = objective.partitions();
  const double n_parts = static_cast<double>(parts);
  const Eigen::Index k = start.size();
  Eigen::VectorXd z = std::move(start);
  std::vector<Eigen::VectorXd> x(parts, z), u(parts, Eigen::VectorXd::Zero(k));
  double rho = spec.rho;
  const double inv_n = 1.0 / static_cast<double>(spec.rows);
  const double alpha = spec.over_relaxation;
  std::int64_t iteration = 0, solves = 0;
  bool converged = false;
  for (; iteration < spec.iteration_limit() && !converged; ++iteration) {
    std::vector<Eigen::VectorXd> targets(parts);
    for (std::size_t i = 0; i < parts; ++i) targets[i] = z - u[i];
    x = objective.local_solve(targets, x, rho, inv_n);
    ++solves;
    const Eigen::VectorXd z_old = z;
    Eigen::VectorXd average = Eigen::VectorXd::Zero(k);
    std::vector<Eigen::VectorXd> relaxed(parts);
    for (std::size_t i = 0; i < parts; ++i) {
      relaxed[i] = alpha * x[i] + (1 - alpha) * z_old;
      average += relaxed[i] + u[i];
    }
    average /= n_parts;
    z = proximal(spec, average, 1 / (n_parts * rho));
    if (!spec.fit_intercept) z[0] = 0;
    double primal = 0, x_norm = 0, u_norm = 0;
    for (std::size_t i = 0; i < parts; ++i) {
      u[i] += relaxed[i] - z;
      primal += (x[i] - z).squaredNorm();
      x_norm += x[i].squaredNorm();
      u_norm += u[i].squaredNorm();
    }
    primal = std::sqrt(primal);
    const double dual = rho * std::sqrt(n_parts) * (z - z_old).norm();
    const double scale = std::sqrt(n_parts * static_cast<double>(k)) * spec.abstol;
    const double primal_tol =
        scale + spec.reltol * std::max(std::sqrt(x_norm), std::sqrt(n_parts) * z.norm());
    const double dual_tol = scale + spec.reltol * rho * std::sqrt(u_norm);
    converged = primal <= primal_tol && dual <= dual_tol;
    if (spec.adaptive_rho && !converged) {
      // u is the scaled dual y / rho: it scales inversely with rho.
      if (primal > 10 * dual) {
        rho *= 2;
        for (auto& ui : u) ui /= 2;
      } else if (dual > 10 * primal) {
        rho /= 2;
        for (auto& ui : u) ui *= 2;
      }
    }
  }
  auto point = smooth.at(z, 0);
  auto out = finish(smooth, spec, std::move(point), iteration, converged);
  out.evaluations += solves;
  return out;
}

}  // namespace

FitOutcome solve(const GlmSpec& spec, GlmObjective& objective) {
  validate(spec);
  if (spec.rows <= 0 || spec.cols <= 0)
    throw std::invalid_argument("glm: the data has " + std::to_string(spec.rows) + " rows and " +
                                std::to_string(spec.cols) + " columns; fitting needs at least one of each");
  Eigen::VectorXd start = Eigen::VectorXd::Zero(spec.cols + 1);
  // The smooth solvers carry the ridge term in their objective; the others apply it in a proximal step.
  const bool ridge_in_smooth =
      spec.regularizer == "l2" && spec.solver != "proximal_grad" && spec.solver != "admm";
  Smooth smooth{spec, objective, ridge_in_smooth ? spec.lambda : 0.0};
  if (spec.solver == "gradient_descent") return gradient_descent(spec, smooth, std::move(start));
  if (spec.solver == "newton") return newton(spec, smooth, std::move(start));
  if (spec.solver == "lbfgs") return lbfgs(spec, smooth, std::move(start));
  if (spec.solver == "proximal_grad") return proximal_gradient(spec, smooth, std::move(start));
  return admm(spec, smooth, objective, std::move(start));
}

}  // namespace tessera::glm

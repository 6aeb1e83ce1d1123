#include "actors/glm/spec.hpp"

#include <cmath>
#include <stdexcept>

namespace tessera::glm {

namespace {
bool known_solver(const std::string& s) {
  return s == "gradient_descent" || s == "newton" || s == "lbfgs" || s == "proximal_grad" || s == "admm";
}
bool known_regularizer(const std::string& r) {
  return r == "none" || r == "l1" || r == "l2" || r == "elastic_net";
}
}  // namespace

std::int64_t GlmSpec::iteration_limit() const {
  if (max_iter > 0) return max_iter;
  if (solver == "gradient_descent") return 1000;
  if (solver == "newton") return 50;
  if (solver == "lbfgs") return 500;
  if (solver == "proximal_grad") return 5000;
  return 1000;
}

void validate(const GlmSpec& spec) {
  auto fail = [](const std::string& what) { throw std::invalid_argument("glm: " + what); };
  if (!known_solver(spec.solver))
    fail("unknown solver '" + spec.solver +
         "' (known: gradient_descent, newton, lbfgs, proximal_grad, admm)");
  if (!known_regularizer(spec.regularizer))
    fail("unknown regularizer '" + spec.regularizer + "' (known: none, l1, l2, elastic_net)");
  if (!spec.smooth_regularizer() && spec.solver != "proximal_grad" && spec.solver != "admm")
    fail("solver " + spec.solver + " needs a smooth objective; regularizer " + spec.regularizer +
         " takes proximal_grad or admm");
  if (!(spec.lambda >= 0) || !std::isfinite(spec.lambda))
    fail("lambda must be a finite number >= 0, got " + std::to_string(spec.lambda));
  if (!(spec.l1_ratio >= 0 && spec.l1_ratio <= 1))
    fail("l1_ratio must lie in [0, 1], got " + std::to_string(spec.l1_ratio));
  if (spec.max_iter < 0)
    fail("max_iter must be >= 0 (0: the solver's default), got " + std::to_string(spec.max_iter));
  if (!(spec.tol >= 0)) fail("tol must be >= 0, got " + std::to_string(spec.tol));
  if (spec.lbfgs_memory < 1) fail("lbfgs_memory must be >= 1, got " + std::to_string(spec.lbfgs_memory));
  if (!(spec.rho > 0) || !std::isfinite(spec.rho)) fail("rho must be > 0, got " + std::to_string(spec.rho));
  if (!(spec.over_relaxation >= 1 && spec.over_relaxation <= 1.8))
    fail("over_relaxation must lie in [1, 1.8], got " + std::to_string(spec.over_relaxation));
  if (!(spec.abstol >= 0) || !(spec.reltol >= 0)) fail("abstol and reltol must be >= 0");
}

}  // namespace tessera::glm

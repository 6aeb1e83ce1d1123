#include "actors/glm/spec.hpp"

#include <cmath>
#include <stdexcept>

namespace tessera::glm {

namespace {
constexpr std::int64_t kSpecVersion = 1;

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

Value to_value(const GlmSpec& s) {
  return Value(Value::List{Value(kSpecVersion), Value(static_cast<std::int64_t>(s.family)), Value(s.solver),
                           Value(s.regularizer), Value(s.lambda), Value(s.l1_ratio), Value(s.fit_intercept),
                           Value(s.max_iter), Value(s.tol), Value(s.lbfgs_memory), Value(s.rho),
                           Value(s.adaptive_rho), Value(s.over_relaxation), Value(s.abstol), Value(s.reltol),
                           Value(s.rows), Value(s.cols)});
}

GlmSpec spec_from_value(const Value& value) {
  try {
    const auto& f = value.as_list();
    if (f.size() != 17 || f[0].as_int() != kSpecVersion)
      throw std::invalid_argument("not a GLM spec of version " + std::to_string(kSpecVersion));
    GlmSpec s;
    const auto family = f[1].as_int();
    if (family < 0 || family > 2) throw std::invalid_argument("unknown family " + std::to_string(family));
    s.family = static_cast<Family>(family);
    s.solver = f[2].as_string();
    s.regularizer = f[3].as_string();
    s.lambda = f[4].as_double();
    s.l1_ratio = f[5].as_double();
    s.fit_intercept = f[6].as_bool();
    s.max_iter = f[7].as_int();
    s.tol = f[8].as_double();
    s.lbfgs_memory = f[9].as_int();
    s.rho = f[10].as_double();
    s.adaptive_rho = f[11].as_bool();
    s.over_relaxation = f[12].as_double();
    s.abstol = f[13].as_double();
    s.reltol = f[14].as_double();
    s.rows = f[15].as_int();
    s.cols = f[16].as_int();
    validate(s);
    return s;
  } catch (const std::invalid_argument&) {
    throw;
  } catch (const std::exception& e) {
    throw std::invalid_argument(std::string("glm: a malformed spec: ") + e.what());
  }
}

}  // namespace tessera::glm

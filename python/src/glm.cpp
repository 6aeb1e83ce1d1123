// The GLM estimators' compiled half: fit on the cluster, predict here. python/tessera/_glm.py gives them
// scikit-learn's API (get_params, set_params, score), so model_selection accepts them.
#include <pybind11/eigen.h>
#include <pybind11/stl.h>

#include "bindings.hpp"
#include "graph/errors.hpp"
#include "tessera/array.hpp"
#include "tessera/glm.hpp"
#include "waiting.hpp"

namespace tessera::python {

namespace {

// One option's value as T; a value of another type is a SubmissionError naming the option.
template <class T>
T option(const std::string& name, py::handle value, const char* type) {
  try {
    return value.cast<T>();
  } catch (const py::cast_error&) {
    throw SubmissionError("GLM option " + name + " must be " + type + ", got " +
                          py::str(py::type::handle_of(value).attr("__name__")).cast<std::string>());
  }
}

glm::Options options_from(const py::dict& kwargs) {
  glm::Options o;
  for (auto [key, value] : kwargs) {
    const auto name = key.cast<std::string>();
    if (name == "solver")
      o.solver = option<std::string>(name, value, "a str");
    else if (name == "regularizer")
      o.regularizer = option<std::string>(name, value, "a str");
    else if (name == "lambda_")
      o.lambda = option<double>(name, value, "a number");
    else if (name == "l1_ratio")
      o.l1_ratio = option<double>(name, value, "a number");
    else if (name == "fit_intercept")
      o.fit_intercept = option<bool>(name, value, "a bool");
    else if (name == "max_iter")
      o.max_iter = option<std::int64_t>(name, value, "an int");
    else if (name == "tol")
      o.tol = option<double>(name, value, "a number");
    else if (name == "lbfgs_memory")
      o.lbfgs_memory = option<std::int64_t>(name, value, "an int");
    else if (name == "rho")
      o.rho = option<double>(name, value, "a number");
    else if (name == "adaptive_rho")
      o.adaptive_rho = option<bool>(name, value, "a bool");
    else if (name == "over_relaxation")
      o.over_relaxation = option<double>(name, value, "a number");
    else if (name == "abstol")
      o.abstol = option<double>(name, value, "a number");
    else if (name == "reltol")
      o.reltol = option<double>(name, value, "a number");
    else if (name == "chunk_rows")
      o.chunk_rows = option<std::int64_t>(name, value, "an int");
    else
      throw SubmissionError("GLM: unknown option " + name);
  }
  return o;
}

py::dict report_dict(const glm::FitReport& r) {
  py::dict d;
  d["iterations"] = r.iterations;
  d["converged"] = r.converged;
  d["objective"] = r.objective;
  d["evaluations"] = r.evaluations;
  d["seconds"] = r.seconds;
  d["rounds"] = r.rounds;
  d["overhead_per_round"] = r.overhead_per_round();
  return d;
}

template <class Estimator>
py::class_<Estimator> bind_estimator(py::module_& m, const char* name) {
  py::class_<Estimator> estimator(m, name);
  estimator.def(py::init([](const py::kwargs& kwargs) { return Estimator(options_from(kwargs)); }))
      .def(
          "fit",
          [](Estimator& e, const ClientPtr& owner, Eigen::MatrixXd x, Eigen::VectorXd y) {
            // The fit runs on its own copy of the estimator, so an interrupted fit leaves this one as it was.
            Estimator fitted = call_interruptibly([e, owner, x = std::move(x), y = std::move(y)]() mutable {
              e.fit(owner->client, x, y);
              return e;
            });
            e = std::move(fitted);
          },
          py::arg("client"), py::arg("x"), py::arg("y"))
      .def(
          "fit_arrays",
          [](Estimator& e, const ClientPtr& owner, const Array& x, const Array& y) {
            Estimator fitted = call_interruptibly([e, owner, x, y]() mutable {
              e.fit(owner->client, x, y);
              return e;
            });
            e = std::move(fitted);
          },
          py::arg("client"), py::arg("x"), py::arg("y"))
      .def(
          "predict", [](const Estimator& e, const Eigen::MatrixXd& x) { return e.predict(x); }, py::arg("x"),
          py::call_guard<py::gil_scoped_release>())
      .def(
          "decision_function",
          [](const Estimator& e, const Eigen::MatrixXd& x) -> Eigen::VectorXd {
            return e.decision_function(x);
          },
          py::arg("x"), py::call_guard<py::gil_scoped_release>())
      .def_property_readonly("fitted", &Estimator::fitted)
      .def_property_readonly("coef", [](const Estimator& e) { return Eigen::VectorXd(e.coef()); })
      .def_property_readonly("intercept", &Estimator::intercept)
      .def_property_readonly("report", [](const Estimator& e) { return report_dict(e.report()); });
  return estimator;
}

}  // namespace

void bind_glm(py::module_& m) {
  auto glm_module = m.def_submodule("_glm", "GLM estimators (tessera.glm wraps these)");
  bind_estimator<glm::LinearRegression>(glm_module, "LinearRegression");
  bind_estimator<glm::PoissonRegression>(glm_module, "PoissonRegression");
  bind_estimator<glm::LogisticRegression>(glm_module, "LogisticRegression")
      .def(
          "predict_proba",
          [](const glm::LogisticRegression& e, const Eigen::MatrixXd& x) -> Eigen::VectorXd {
            return e.predict_proba(x);
          },
          py::arg("x"), py::call_guard<py::gil_scoped_release>());
}

}  // namespace tessera::python

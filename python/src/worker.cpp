// The interpreter side of a worker's Python process (tessera._worker): the job loop of
// actors/simulation_child.hpp, with each set run by a Python callable. The worker execs the interpreter
// with its socket and progress page as descriptors 3 and 4; this never returns.
#include <unistd.h>

#include <pybind11/pybind11.h>

#include <string>

#include "actors/simulation_child.hpp"
#include "bindings.hpp"
#include "values.hpp"

namespace tessera::python {

namespace {

// The text a set fails with: what tessera._worker's `describe` makes of the exception (its type, its
// message and a bounded traceback).
std::string failure_text(py::error_already_set& error, const py::function& describe) {
  try {
    return describe(error.value(), error.trace()).cast<std::string>();
  } catch (const std::exception&) {
    return error.what();
  }
}

class PythonRun final : public Simulation {
 public:
  PythonRun(py::object run, std::string where, py::function describe)
      : run_(std::move(run)), where_(std::move(where)), describe_(std::move(describe)) {}
  Value run(const Value& parameters) override {
    try {
      return to_value(run_(from_value(parameters)), where_);
    } catch (py::error_already_set& e) {
      throw std::runtime_error(failure_text(e, describe_));
    }
  }

 private:
  py::object run_;
  std::string where_;
  py::function describe_;
};

[[noreturn]] void serve(const std::string& name, const py::function& factory, const py::function& describe) {
  SimulationProgress* progress = map_child_progress(kChildProgressFd);
  if (!progress) ::_exit(4);
  std::string first;
  if (!child_frames::read_frame(kChildSocketFd, first)) ::_exit(0);
  const auto start = child_frames::decode_start(first);
  if (!start) ::_exit(3);
  serve_simulation_jobs(
      kChildSocketFd, progress, name,
      [&]() -> std::unique_ptr<Simulation> {
        try {
          py::dict settings;
          for (const auto& [key, value] : start->config.entries()) settings[py::str(key)] = from_value(value);
          return std::make_unique<PythonRun>(factory(settings), "the result of '" + name + "'", describe);
        } catch (py::error_already_set& e) {
          throw std::runtime_error(failure_text(e, describe));
        }
      },
      start->max_result_bytes);
}

}  // namespace

void bind_worker(py::module_& m) {
  m.def("_serve", &serve, py::arg("name"), py::arg("factory"), py::arg("describe"),
        "Runs this interpreter as a worker's Python process (tessera._worker): factory(config) gives the "
        "callable each parameter set is run by. Never returns.");
}

}  // namespace tessera::python

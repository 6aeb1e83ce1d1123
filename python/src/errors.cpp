// Tessera's errors as Python exceptions, with the same messages. Each derives from the builtin a Python
// user would catch (SubmissionError from ValueError, ConnectionLost from ConnectionError, ...).
#include <pybind11/pybind11.h>

#include "bindings.hpp"
#include "errors.hpp"
#include "graph/errors.hpp"
#include "graph/stream_record.hpp"
#include "tessera/glm.hpp"
#include "tessera/plugins.hpp"

namespace tessera::python {

namespace {
// Never released: a py::object here would be let go after the interpreter finalized.
py::handle task_failed_type;
}  // namespace

py::object task_failed_object(const TaskFailed& failure) {
  py::object error = task_failed_type(failure.what());
  error.attr("function") = failure.function();
  error.attr("key") = failure.key();
  error.attr("reason") = failure.message();
  error.attr("cancelled") = failure.cancelled();
  return error;
}

void bind_errors(py::module_& m) {
  // Translators are tried newest first: the derived classes come after their bases.
  py::register_exception<TypeError>(m, "ValueTypeError", PyExc_TypeError);
  py::register_exception<SubmissionError>(m, "SubmissionError", PyExc_ValueError);
  py::register_exception<QueryError>(m, "QueryError", PyExc_ValueError);
  py::register_exception<backends::KernelError>(m, "KernelError", PyExc_ValueError);
  py::register_exception<glm::FitError>(m, "FitError", PyExc_RuntimeError);
  py::register_exception<PluginError>(m, "PluginError", PyExc_ImportError);
  auto& connection = py::register_exception<ConnectionError>(m, "ConnectionError", PyExc_ConnectionError);
  py::register_exception<ConnectionLost>(m, "ConnectionLost", connection.ptr());
  task_failed_type = py::exception<TaskFailed>(m, "TaskFailed", PyExc_RuntimeError).inc_ref();
  m.attr("TaskFailed").attr("__doc__") =
      "A task failed (its function raised) or was cancelled; attributes function, key, reason, cancelled.";
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const TaskFailed& e) {
      py::object error = task_failed_object(e);
      PyErr_SetObject(task_failed_type.ptr(), error.ptr());
    }
  });
}

}  // namespace tessera::python

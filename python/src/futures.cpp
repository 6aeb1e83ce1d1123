// tessera.Future (result with a timeout, exception, done, status, cancel) and tessera.as_completed.
#include <pybind11/stl.h>

#include <cmath>
#include <sstream>

#include "bindings.hpp"
#include "errors.hpp"
#include "tessera/as_completed.hpp"
#include "values.hpp"
#include "waiting.hpp"

namespace tessera::python {

namespace {

std::string key_of(const PyFuture& f) {
  const TaskRef task = f.future.task();
  return std::to_string(task.op) + ":" + std::to_string(task.index);
}

// Waits for the future's task to end; raises TimeoutError past `timeout` seconds.
void wait_for(const PyFuture& f, const std::optional<double>& timeout, const char* what) {
  const auto deadline = deadline_after(timeout, what);
  const bool done = wait_interruptibly(
      [&](Clock::time_point slice_end) { return f.future.handle().wait(slice_end); }, deadline);
  if (!done) {
    std::ostringstream message;
    message << "task " << key_of(f) << " (" << f.function << ") did not finish within " << *timeout << " s";
    PyErr_SetString(PyExc_TimeoutError, message.str().c_str());
    throw py::error_already_set();
  }
}

// Yields futures as their tasks end. It holds the Python futures, so the handles it reads stay alive.
class AsCompletedIterator {
 public:
  AsCompletedIterator(py::list futures, std::optional<double> timeout)
      : futures_(std::move(futures)), deadline_(deadline_after(timeout, "as_completed")), timeout_(timeout) {
    std::vector<const detail::ResultHandle*> handles;
    handles.reserve(futures_.size());
    for (auto item : futures_) {
      if (!py::isinstance<PyFuture>(item))
        throw TypeError("as_completed: every item must be a tessera.Future");
      handles.push_back(&item.cast<PyFuture&>().future.handle());
    }
    order_ = std::make_unique<detail::CompletionOrder>(handles);
  }

  py::object next() {
    if (order_->exhausted()) throw py::stop_iteration();
    std::optional<std::size_t> index;
    const bool got = wait_interruptibly(
        [&](Clock::time_point slice_end) {
          index = order_->next(slice_end);
          return index.has_value();
        },
        deadline_);
    if (!got) {
      std::ostringstream message;
      message << "as_completed: futures still unfinished after " << *timeout_ << " s";
      PyErr_SetString(PyExc_TimeoutError, message.str().c_str());
      throw py::error_already_set();
    }
    return futures_[*index];
  }

 private:
  py::list futures_;
  std::optional<Clock::time_point> deadline_;
  std::optional<double> timeout_;
  std::unique_ptr<detail::CompletionOrder> order_;
};

}  // namespace

void bind_futures(py::module_& m) {
  py::class_<PyFuture>(m, "Future", "A handle on one task's result; the task runs at once.")
      .def(
          "result",
          [](const PyFuture& f, std::optional<double> timeout) {
            wait_for(f, timeout, "Future.result");
            Value value;
            {
              py::gil_scoped_release released;
              value = f.future.handle().result();  // a held result is fetched from its worker here
            }
            return from_value(value);
          },
          py::arg("timeout") = py::none(),
          "Waits (at most `timeout` seconds: TimeoutError) and returns the result, or raises the task's "
          "TaskFailed.")
      .def(
          "exception",
          [](const PyFuture& f, std::optional<double> timeout) -> py::object {
            wait_for(f, timeout, "Future.exception");
            auto failure = f.future.exception();
            return failure ? task_failed_object(*failure) : py::none();
          },
          py::arg("timeout") = py::none(), "Waits; the task's TaskFailed, or None when it succeeded.")
      .def(
          "wait",
          [](const PyFuture& f, std::optional<double> timeout) {
            return wait_interruptibly(
                [&](Clock::time_point slice_end) { return f.future.handle().wait(slice_end); },
                deadline_after(timeout, "Future.wait"));
          },
          py::arg("timeout") = py::none(),
          "Waits; True once the task has ended, False when the timeout passed.")
      .def("done", [](const PyFuture& f) { return f.future.done(); })
      .def_property_readonly("status",
                             [](const PyFuture& f) { return std::string(state_name(f.future.status())); })
      .def_property_readonly("key", &key_of)
      .def_property_readonly("function", [](const PyFuture& f) { return f.function; })
      .def("cancel",
           [](const PyFuture& f) {
             py::gil_scoped_release released;
             f.owner->client.cancel(f.future);
           })
      .def("__repr__", [](const PyFuture& f) {
        return "<tessera.Future " + f.function + " key=" + key_of(f) +
               " status=" + std::string(state_name(f.future.status())) + ">";
      });

  py::class_<AsCompletedIterator>(m, "_AsCompleted")
      .def(py::init<py::list, std::optional<double>>(), py::arg("futures"), py::arg("timeout") = py::none())
      .def("__iter__", [](py::object self) { return self; })
      .def("__next__", &AsCompletedIterator::next);
}

}  // namespace tessera::python

// tessera.Stream: parameter sets pushed one by one or by the thousand from a NumPy array, results read
// by iteration, and the stream's controls (cancel, close, wait); tessera.Record, one result.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <cmath>

#include "bindings.hpp"
#include "graph/printable.hpp"
#include "values.hpp"
#include "waiting.hpp"

namespace tessera::python {

namespace {

struct PyStream {
  ClientPtr owner;
  std::unique_ptr<Stream> stream;
  std::string simulation;

  Stream& open() {
    if (!stream) throw std::logic_error("stream of " + in_quotes(simulation) + " was let go");
    return *stream;
  }
};

Isolation isolation_of(const std::string& name) {
  if (name == "thread") return Isolation::thread;
  if (name == "process") return Isolation::process;
  throw std::invalid_argument("stream: isolation must be \"thread\" or \"process\", got " + in_quotes(name));
}

StreamOptions stream_options(std::size_t max_in_flight, std::uint32_t pool_size, const py::object& config,
                             const std::optional<std::string>& isolation, double timeout,
                             std::uint32_t retries, std::vector<std::string> parameter_names) {
  StreamOptions options;
  options.max_in_flight = max_in_flight;
  options.pool_size = pool_size;
  options.config = to_config(config, "stream config");
  if (isolation) options.isolation = isolation_of(*isolation);
  options.timeout = std::chrono::duration<double>(timeout);
  options.retries = retries;
  options.parameter_names = std::move(parameter_names);
  return options;
}

SetOptions set_options(double priority, double timeout) {
  return SetOptions{priority, std::chrono::duration<double>(timeout)};
}

// push_many: rows of a C-ordered float64 array, each one parameter set (a 1-D array: each element one).
// Signals are looked at between batches, with the GIL held; the array stays alive (and unresized: we
// hold a reference) while the GIL is released.
std::uint64_t push_rows(Stream& stream,
                        const py::array_t<double, py::array::c_style | py::array::forcecast>& rows,
                        double priority) {
  if (rows.ndim() != 1 && rows.ndim() != 2)
    throw std::invalid_argument(
        "push_many: the array must be 1-D (one number per set) or 2-D (one row per set), "
        "got " +
        std::to_string(rows.ndim()) + " dimensions");
  const auto n = static_cast<std::size_t>(rows.shape(0));
  const auto width = rows.ndim() == 2 ? static_cast<std::size_t>(rows.shape(1)) : 0;
  const double* data = rows.data();
  const SetOptions options = set_options(priority, 0);
  const std::uint64_t first = stream.pushed();
  constexpr std::size_t kBatch = 16384;
  for (std::size_t begin = 0; begin < n; begin += kBatch) {
    const std::size_t end = std::min(n, begin + kBatch);
    {
      py::gil_scoped_release released;
      for (std::size_t i = begin; i < end; ++i) {
        if (width == 0) {
          stream.push_value(Value(data[i]), options);
        } else {
          const double* row = data + i * width;
          stream.push_value(Value(std::vector<double>(row, row + width)), options);
        }
      }
    }
    check_signals();
  }
  return first;
}

py::dict timeline_dict(const SetTimeline& t) {
  py::dict d;
  d["pushed"] = t.pushed;
  d["dispatched"] = t.dispatched;
  d["started"] = t.started;
  d["finished"] = t.finished;
  d["stored"] = t.stored;
  return d;
}

}  // namespace

void bind_streams(py::module_& m) {
  py::class_<StreamRecord>(m, "Record", "One parameter set's outcome, as a stream delivers it.")
      .def_readonly("id", &StreamRecord::id)
      .def_property_readonly("value", [](const StreamRecord& r) { return from_value(r.value); })
      .def_readonly("failed", &StreamRecord::failed)
      .def_readonly("error", &StreamRecord::error)
      .def_readonly("node", &StreamRecord::node)
      .def_property_readonly("failure",
                             [](const StreamRecord& r) { return std::string(failure_name(r.failure)); })
      .def_readonly("attempts", &StreamRecord::attempts)
      .def_property_readonly("timeline", [](const StreamRecord& r) { return timeline_dict(r.timeline); })
      .def_property_readonly(
          "program", [](const StreamRecord& r) { return program_dict(r.program); },
          "A program simulation's set: {exit_status, signal, stdout, stderr} (the last 4 KiB of each); None "
          "otherwise.")
      .def("__repr__", [](const StreamRecord& r) {
        return "<tessera.Record id=" + std::to_string(r.id) +
               (r.failed ? " failed: " + printable(r.error, 60) : " value=" + r.value.to_string(60)) + ">";
      });

  py::class_<PyStream>(m, "Stream",
                       "A stream of parameter sets fed to a simulation; iterate for its results.")
      .def_property_readonly("id", [](PyStream& s) { return s.open().id(); })
      .def_property_readonly("simulation", [](const PyStream& s) { return s.simulation; })
      .def_property_readonly("pushed", [](PyStream& s) { return s.open().pushed(); })
      .def_property_readonly("accepted", [](PyStream& s) { return s.open().accepted(); })
      .def_property_readonly("completed", [](PyStream& s) { return s.open().completed(); })
      .def_property_readonly("error", [](PyStream& s) { return s.open().error(); })
      .def(
          "push",
          [](PyStream& s, py::handle parameters, double priority, double timeout) {
            Value value = to_value(parameters, "push(" + in_quotes(s.simulation) + ")");
            Stream& stream = s.open();
            py::gil_scoped_release released;
            return stream.push_value(std::move(value), set_options(priority, timeout));
          },
          py::arg("parameters"), py::arg("priority") = 0.0, py::arg("timeout") = 0.0,
          "Sends one parameter set and returns its id; waits while max_in_flight sets are unanswered.")
      .def(
          "_push_rows",
          [](PyStream& s, const py::array_t<double, py::array::c_style | py::array::forcecast>& rows,
             double priority) { return push_rows(s.open(), rows, priority); },
          py::arg("rows"), py::arg("priority") = 0.0)
      .def("flush",
           [](PyStream& s) {
             Stream& stream = s.open();
             py::gil_scoped_release released;
             stream.flush();
           })
      .def(
          "close",
          [](PyStream& s) {
            Stream& stream = s.open();
            py::gil_scoped_release released;
            stream.close();
          },
          "No more pushes; the results still come.")
      .def(
          "next",
          [](PyStream& s, std::optional<double> timeout) -> py::object {
            Stream& stream = s.open();
            std::optional<StreamRecord> record;
            wait_interruptibly(
                [&](Clock::time_point slice_end) {
                  record = stream.next(slice_end);
                  return record.has_value() || stream.drained();
                },
                deadline_after(timeout, "Stream.next"));
            if (!record) return py::none();
            return py::cast(std::move(*record));
          },
          py::arg("timeout") = py::none(),
          "The next result in completion order; None at the end of the stream or when the timeout passed.")
      .def_property_readonly("drained", [](PyStream& s) { return s.open().drained(); })
      .def(
          "wait",
          [](PyStream& s, std::optional<double> timeout) {
            Stream& stream = s.open();
            return wait_interruptibly([&](Clock::time_point slice_end) { return stream.wait(slice_end); },
                                      deadline_after(timeout, "Stream.wait"));
          },
          py::arg("timeout") = py::none(),
          "Waits until the stream is closed and every set answered; False when the timeout passed.")
      .def(
          "cancel",
          [](PyStream& s, const std::vector<std::uint64_t>& ids) {
            Stream& stream = s.open();
            py::gil_scoped_release released;
            const CancelledSets c = stream.cancel(std::span<const std::uint64_t>(ids));
            return std::make_pair(c.queued, c.running);
          },
          py::arg("ids"))
      .def(
          "cancel_where",
          [](PyStream& s, const std::string& filter) {
            Stream& stream = s.open();
            py::gil_scoped_release released;
            const CancelledSets c = stream.cancel_where(filter);
            return std::make_pair(c.queued, c.running);
          },
          py::arg("filter"))
      .def("_release", [](PyStream& s) {
        py::gil_scoped_release released;
        s.stream.reset();  // closes it if open
      });

  m.def(
      "_open_stream",
      [](const ClientPtr& owner, const std::string& simulation, std::size_t max_in_flight,
         std::uint32_t pool_size, const py::object& config, const std::optional<std::string>& isolation,
         double timeout, std::uint32_t retries, std::vector<std::string> parameter_names) {
        StreamOptions options = stream_options(max_in_flight, pool_size, config, isolation, timeout, retries,
                                               std::move(parameter_names));
        py::gil_scoped_release released;
        return PyStream{owner, std::make_unique<Stream>(owner->client.stream(simulation, std::move(options))),
                        simulation};
      },
      py::arg("client"), py::arg("simulation"), py::arg("max_in_flight"), py::arg("pool_size"),
      py::arg("config"), py::arg("isolation"), py::arg("timeout"), py::arg("retries"),
      py::arg("parameter_names"));
  m.def(
      "_open_ensemble",
      [](const ClientPtr& owner, const std::string& generator, const std::string& simulation,
         std::uint64_t budget, const py::object& generator_config, std::size_t max_in_flight,
         std::uint32_t pool_size, const py::object& config, const std::optional<std::string>& isolation,
         double timeout, std::uint32_t retries) {
        EnsembleOptions options;
        options.budget = budget;
        options.config = to_config(generator_config, "ensemble generator_config");
        options.stream = stream_options(max_in_flight, pool_size, config, isolation, timeout, retries, {});
        py::gil_scoped_release released;
        return PyStream{
            owner,
            std::make_unique<Stream>(owner->client.ensemble(generator, simulation, std::move(options))),
            simulation};
      },
      py::arg("client"), py::arg("generator"), py::arg("simulation"), py::arg("budget"),
      py::arg("generator_config"), py::arg("max_in_flight"), py::arg("pool_size"), py::arg("config"),
      py::arg("isolation"), py::arg("timeout"), py::arg("retries"));
}

}  // namespace tessera::python

// tessera.ResultQuery: a stream's stored results, filtered (where), counted, summarized, read back by id
// and as columns for NumPy and pandas (python/tessera/_frames.py builds the frames from these).
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <cmath>
#include <limits>
#include <sstream>

#include "bindings.hpp"
#include "tessera/results.hpp"
#include "values.hpp"
#include "waiting.hpp"

namespace tessera::python {

namespace {

struct PyQuery {
  ClientPtr owner;
  ResultQuery query;
  std::uint64_t stream;
};

// The numbers of a value, when it is one number or a flat list of them.
bool numbers_of(const Value& v, std::vector<double>& out) {
  out.clear();
  switch (v.kind()) {
    case ValueKind::integer:
    case ValueKind::real:
      out.push_back(v.as_double());
      return true;
    case ValueKind::boolean:
      out.push_back(v.as_bool() ? 1.0 : 0.0);
      return true;
    case ValueKind::doubles:
      out = v.as_doubles();
      return true;
    case ValueKind::vector: {
      const auto& e = v.as_vector();
      out.assign(e.data(), e.data() + e.size());
      return true;
    }
    case ValueKind::list:
      for (const auto& item : v.as_list()) {
        if (item.kind() != ValueKind::integer && item.kind() != ValueKind::real) return false;
        out.push_back(item.as_double());
      }
      return true;
    default:
      return false;
  }
}

// One row of numbers per record (record-major), all of one width; `numeric` goes false at the first
// record that is not numbers, or not as many. Missing values (failed sets) are NaN rows.
struct NumberColumn {
  std::vector<double> data;
  std::size_t rows = 0, width = 0;
  bool known = false, numeric = true;
  std::vector<double> scratch;

  void add(const Value& v, bool missing) {
    if (!numeric) return;
    constexpr double nan = std::numeric_limits<double>::quiet_NaN();
    if (missing || v.is_none()) {
      if (known) data.insert(data.end(), width, nan);
      ++rows;
      return;
    }
    if (!numbers_of(v, scratch) || (known && scratch.size() != width)) {
      numeric = false;
      return;
    }
    if (!known) {
      known = true;
      width = scratch.size();
      data.assign(rows * width, nan);
    }
    data.insert(data.end(), scratch.begin(), scratch.end());
    ++rows;
  }

  // (rows,) for one number per record, (rows, width) otherwise; None when not numeric.
  py::object array() {
    if (!numeric) return py::none();
    if (!known) {
      width = 1;
      data.assign(rows, std::numeric_limits<double>::quiet_NaN());
    }
    auto* owned = new std::vector<double>(std::move(data));
    py::capsule base(owned, [](void* p) { delete static_cast<std::vector<double>*>(p); });
    const auto item = static_cast<py::ssize_t>(sizeof(double));
    const auto n = static_cast<py::ssize_t>(rows), w = static_cast<py::ssize_t>(width);
    if (width == 1) return py::array(py::dtype::of<double>(), {n}, {item}, owned->data(), base);
    return py::array(py::dtype::of<double>(), {n, w}, {item * w, item}, owned->data(), base);
  }
};

// Every matching record, read in windows of ids so that a million results never sit in memory at once.
py::dict columns(const PyQuery& q, bool with_parameters, bool with_objects) {
  std::vector<std::uint64_t> ids;
  std::vector<bool> failed;
  std::vector<std::string> errors;
  std::vector<Value> values;
  std::vector<double> exit_statuses;  // a program's sets: NaN where none ended by exiting
  bool any_program = false;
  NumberColumn results, parameters;
  constexpr std::uint64_t kWindow = 1 << 16;
  constexpr std::uint64_t kEnd = std::numeric_limits<std::uint64_t>::max();
  std::uint64_t first = 0;
  bool last_window = false;
  std::vector<StreamResult> page;
  while (!last_window) {
    {
      py::gil_scoped_release released;
      page = q.query.range(first, first + kWindow);
      // Past the last id (or a gap of a whole window, under a filter): the rest in one answer.
      if (page.empty()) {
        last_window = true;
        page = q.query.range(first, kEnd);
      }
    }
    for (auto& r : page) {
      ids.push_back(r.id);
      failed.push_back(r.failed);
      errors.push_back(r.failed ? r.error : std::string());
      results.add(r.value, r.failed);
      if (with_parameters) parameters.add(r.parameters, false);
      if (with_objects) values.push_back(std::move(r.value));
      any_program = any_program || r.program;
      exit_statuses.push_back(r.program && r.program->signal == 0
                                  ? static_cast<double>(r.program->exit_status)
                                  : std::numeric_limits<double>::quiet_NaN());
    }
    first += kWindow;
    check_signals();
  }
  py::dict out;
  py::array_t<std::uint64_t> id_array(static_cast<py::ssize_t>(ids.size()));
  std::copy(ids.begin(), ids.end(), id_array.mutable_data());
  py::array_t<bool> failed_array(static_cast<py::ssize_t>(failed.size()));
  std::copy(failed.begin(), failed.end(), failed_array.mutable_data());
  out["id"] = id_array;
  out["failed"] = failed_array;
  out["error"] = py::cast(errors);
  out["result"] = results.array();
  if (any_program) {
    py::array_t<double> statuses(static_cast<py::ssize_t>(exit_statuses.size()));
    std::copy(exit_statuses.begin(), exit_statuses.end(), statuses.mutable_data());
    out["exit_status"] = statuses;
  }
  if (with_parameters) out["parameters"] = parameters.array();
  if (with_objects) {
    py::list objects(values.size());
    for (std::size_t i = 0; i < values.size(); ++i) objects[i] = from_value(values[i]);
    out["objects"] = objects;
  }
  return out;
}

py::dict summary_dict(const ResultSummary& s) {
  py::dict d;
  d["count"] = s.count;
  d["failed"] = s.failed;
  d["numeric"] = s.numeric;
  d["mean"] = s.mean;
  d["min"] = s.min;
  d["max"] = s.max;
  d["histogram"] = s.histogram;
  d["bin_edges"] = s.bin_edges();
  return d;
}

}  // namespace

py::object program_dict(const std::shared_ptr<const ProgramOutcome>& program) {
  if (!program) return py::none();
  const ProgramOutcome& outcome = *program;
  py::dict d;
  d["exit_status"] = outcome.signal == 0 ? py::object(py::int_(outcome.exit_status)) : py::object(py::none());
  d["signal"] = outcome.signal;
  d["stdout"] = py::bytes(outcome.stdout_tail).attr("decode")("utf-8", "replace");
  d["stderr"] = py::bytes(outcome.stderr_tail).attr("decode")("utf-8", "replace");
  return d;
}

void bind_results(py::module_& m) {
  py::class_<StreamResult>(m, "StoredResult", "One parameter set's outcome as the store keeps it.")
      .def_readonly("id", &StreamResult::id)
      .def_property_readonly("value", [](const StreamResult& r) { return from_value(r.value); })
      .def_property_readonly("parameters", [](const StreamResult& r) { return from_value(r.parameters); })
      .def_readonly("failed", &StreamResult::failed)
      .def_readonly("error", &StreamResult::error)
      .def_readonly("node", &StreamResult::node)
      .def_property_readonly("failure",
                             [](const StreamResult& r) { return std::string(failure_name(r.failure)); })
      .def_readonly("attempts", &StreamResult::attempts)
      .def_property_readonly(
          "program", [](const StreamResult& r) { return program_dict(r.program); },
          "A program simulation's set: {exit_status, signal, stdout, stderr} (the last 4 KiB of each); None "
          "otherwise.")
      .def("__repr__", [](const StreamResult& r) {
        return "<tessera.StoredResult id=" + std::to_string(r.id) + " value=" + r.value.to_string(60) + ">";
      });

  py::class_<PyQuery>(m, "ResultQuery", "A query over a stream's stored results.")
      .def_property_readonly("stream", [](const PyQuery& q) { return q.stream; })
      .def(
          "where",
          [](const PyQuery& q, const std::string& filter) {
            return PyQuery{q.owner, q.query.where(filter), q.stream};
          },
          py::arg("filter"), "The same query with a filter, e.g. \"result > 2 and not failed\".")
      .def("count",
           [](const PyQuery& q) {
             py::gil_scoped_release released;
             return q.query.count();
           })
      .def(
          "summary",
          [](const PyQuery& q, const std::string& field, std::size_t bins) {
            ResultSummary s;
            {
              py::gil_scoped_release released;
              s = q.query.summary(field, bins);
            }
            return summary_dict(s);
          },
          py::arg("field") = "result", py::arg("bins") = 10)
      .def(
          "get",
          [](const PyQuery& q, std::uint64_t id) {
            py::gil_scoped_release released;
            return q.query.get(id);
          },
          py::arg("id"))
      .def(
          "range",
          [](const PyQuery& q, std::uint64_t first, std::uint64_t last) {
            py::gil_scoped_release released;
            return q.query.range(first, last);
          },
          py::arg("first"), py::arg("last"))
      .def(
          "to_text",
          [](const PyQuery& q, const std::string& format, const std::string& field, std::size_t bins) {
            std::ostringstream out;
            {
              py::gil_scoped_release released;
              q.query.to_text(out, format, field, bins);
            }
            return out.str();
          },
          py::arg("format"), py::arg("field") = "result", py::arg("bins") = 10)
      .def("_columns", &columns, py::arg("parameters") = true, py::arg("objects") = false);

  m.def(
      "_results",
      [](const ClientPtr& owner, std::uint64_t stream) {
        return PyQuery{owner, owner->client.results(stream), stream};
      },
      py::arg("client"), py::arg("stream"));
  m.def(
      "_streams",
      [](const ClientPtr& owner) {
        std::vector<StreamListing> listed;
        {
          py::gil_scoped_release released;
          listed = owner->client.streams();
        }
        py::list out;
        for (const auto& s : listed) {
          py::dict d;
          d["id"] = s.id;
          d["simulation"] = s.simulation;
          d["state"] = stream_state(s);
          d["pushed"] = s.pushed;
          d["stored"] = s.stored;
          d["input_sets"] = s.input_sets;
          if (!s.ended_early.empty()) d["ended_early"] = s.ended_early;
          out.append(std::move(d));
        }
        return out;
      },
      py::arg("client"));
  m.def(
      "_drop_stream",
      [](const ClientPtr& owner, std::uint64_t stream) {
        py::gil_scoped_release released;
        owner->client.drop_stream(stream);
      },
      py::arg("client"), py::arg("stream"));
}

}  // namespace tessera::python

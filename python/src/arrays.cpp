// tessera.Array (chunked arrays) from and to NumPy, their operations, linalg (TSQR, QR, SVD, randomized
// SVD, lstsq) and .npy files. Computing runs on a client's cluster (python/tessera/__init__.py passes the
// current client when none is given).
#include <pybind11/numpy.h>
#include <pybind11/operators.h>
#include <pybind11/stl.h>

#include "bindings.hpp"
#include "tessera/array.hpp"
#include "tessera/io.hpp"
#include "tessera/linalg.hpp"
#include "values.hpp"
#include "waiting.hpp"

namespace tessera::python {

namespace {

ArrayOptions array_options(const std::vector<std::int64_t>& chunks, const std::string& backend,
                           const std::string& dtype) {
  ArrayOptions options;
  options.chunks = chunks;
  options.backend = backend;
  options.dtype = dtype;
  return options;
}

// One copy, block by block, from the NumPy buffer into the chunks (Chunk owns its matrix).
Array from_numpy(const py::array& input, const std::vector<std::int64_t>& chunks, const std::string& backend,
                 const std::optional<std::string>& dtype) {
  const bool single = py::dtype::of<float>().is(input.dtype());
  auto data = py::array_t<double, py::array::forcecast>::ensure(input);
  if (!data) throw py::error_already_set();
  if (data.ndim() != 1 && data.ndim() != 2)
    throw SubmissionError("from_numpy: arrays are 1-D or 2-D, got " + std::to_string(data.ndim()) +
                          " dimensions");
  const auto item = static_cast<py::ssize_t>(sizeof(double));
  for (py::ssize_t d = 0; d < data.ndim(); ++d)
    if (data.strides(d) % item != 0)
      throw SubmissionError("from_numpy: strides that are not whole elements cannot be read");
  const Eigen::Index rows = data.shape(0), cols = data.ndim() == 2 ? data.shape(1) : 1;
  const Eigen::Index row_stride = data.strides(0) / item,
                     col_stride = data.ndim() == 2 ? data.strides(1) / item : 1;
  // Eigen's column-major Map: the inner stride steps down a column (rows), the outer one across columns.
  const Array::MatrixView view(data.data(), rows, cols,
                               Eigen::Stride<Eigen::Dynamic, Eigen::Dynamic>(col_stride, row_stride));
  const std::string element = dtype ? *dtype : (single ? "float32" : "float64");
  py::gil_scoped_release released;
  return Array::from_view(view, static_cast<int>(data.ndim()), array_options(chunks, backend, element));
}

// A computed array as NumPy: 0-d as a float, 1-D as (n,), 2-D as (rows, cols), owning the result.
py::object to_numpy(const Array& array, const ClientPtr& owner) {
  const int ndim = array.ndim();
  Eigen::MatrixXd m = call_interruptibly([array, owner] { return array.compute(owner->client); });
  if (ndim == 0) return py::float_(m(0, 0));
  return adopt_matrix(std::move(m), ndim == 1);
}

std::optional<int> axis_of(const py::object& axis) {
  if (axis.is_none()) return std::nullopt;
  return axis.cast<int>();
}

// a[rows] and a[rows, cols] with slices (step 1) of the rows and, for 2-D, of the columns.
Array slice(const Array& a, const py::object& index) {
  auto bounds = [](const py::object& item, std::int64_t extent, const char* what) {
    if (!py::isinstance<py::slice>(item))
      throw SubmissionError(std::string("Array[...]: ") + what + " must be a slice (a:b)");
    py::ssize_t start, stop, step, length;
    if (!py::reinterpret_borrow<py::slice>(item).compute(static_cast<py::ssize_t>(extent), &start, &stop,
                                                         &step, &length))
      throw py::error_already_set();
    if (step != 1) throw SubmissionError(std::string("Array[...]: ") + what + " slices take no step");
    return std::make_pair(static_cast<std::int64_t>(start), static_cast<std::int64_t>(start + length));
  };
  py::tuple parts =
      py::isinstance<py::tuple>(index) ? py::reinterpret_borrow<py::tuple>(index) : py::make_tuple(index);
  if (parts.size() == 0 || static_cast<int>(parts.size()) > a.ndim())
    throw SubmissionError("Array[...]: " + std::to_string(parts.size()) + " indices for a " +
                          std::to_string(a.ndim()) + "-D array");
  auto [r0, r1] = bounds(parts[0], a.rows(), "rows");
  Array out = (r0 == 0 && r1 == a.rows()) ? a : a.slice_rows(r0, r1);
  if (parts.size() == 2) {
    auto [c0, c1] = bounds(parts[1], a.cols(), "columns");
    if (!(c0 == 0 && c1 == a.cols())) out = out.slice_cols(c0, c1);
  }
  return out;
}

}  // namespace

void bind_arrays(py::module_& m) {
  py::class_<Array> array(m, "Array", "A 1-D or 2-D chunked array on the cpu, sparse or cuda backend.");
  array.def_property_readonly("ndim", &Array::ndim)
      .def_property_readonly("shape", [](const Array& a) { return py::tuple(py::cast(a.shape())); })
      .def_property_readonly("chunks", &Array::chunks)
      .def_property_readonly("nchunks", &Array::nchunks)
      .def_property_readonly(
          "backend", [](const Array& a) { return std::string(backends::backend_name(a.meta().backend)); })
      .def_property_readonly("dtype",
                             [](const Array& a) { return std::string(backends::dtype_name(a.meta().dtype)); })
      .def("__repr__", &Array::describe)
      .def("_compute", &to_numpy, py::arg("client"))
      .def(
          "_persist",
          [](const Array& a, const ClientPtr& owner, bool checkpoint) {
            return call_interruptibly(
                [a, owner, checkpoint] { return a.persist(owner->client, {.checkpoint = checkpoint}); });
          },
          py::arg("client"), py::arg("checkpoint") = false)
      .def(py::self + py::self)
      .def(py::self - py::self)
      .def(py::self * py::self)
      .def(py::self / py::self)
      .def(py::self + double())
      .def(py::self - double())
      .def(py::self * double())
      .def(py::self / double())
      .def(double() + py::self)
      .def(double() - py::self)
      .def(double() * py::self)
      .def(double() / py::self)
      .def(-py::self)
      .def(py::self < py::self)
      .def(py::self <= py::self)
      .def(py::self > py::self)
      .def(py::self >= py::self)
      .def(py::self < double())
      .def(py::self <= double())
      .def(py::self > double())
      .def(py::self >= double())
      .def("__pow__", [](const Array& a, double e) { return a.pow(e); })
      .def("__pow__", [](const Array& a, const Array& e) { return a.pow(e); })
      .def("__matmul__", &Array::dot)
      .def("__getitem__", &slice)
      .def("dot", &Array::dot)
      .def("eq", &Array::eq)
      .def("ne", &Array::ne)
      .def("minimum", &Array::minimum)
      .def("maximum", &Array::maximum)
      .def("exp", &Array::exp)
      .def("log", &Array::log)
      .def("abs", &Array::abs)
      .def("sqrt", &Array::sqrt)
      .def("sigmoid", &Array::sigmoid)
      .def("square", &Array::square)
      .def("astype", &Array::astype, py::arg("dtype"))
      .def("to_backend", &Array::to_backend, py::arg("backend"))
      .def_property_readonly("T", &Array::T)
      .def("rechunk", &Array::rechunk, py::arg("chunks"))
      .def(
          "sum", [](const Array& a, py::object axis) { return a.sum(axis_of(axis)); },
          py::arg("axis") = py::none())
      .def(
          "mean", [](const Array& a, py::object axis) { return a.mean(axis_of(axis)); },
          py::arg("axis") = py::none())
      .def(
          "min", [](const Array& a, py::object axis) { return a.min(axis_of(axis)); },
          py::arg("axis") = py::none())
      .def(
          "max", [](const Array& a, py::object axis) { return a.max(axis_of(axis)); },
          py::arg("axis") = py::none())
      .def(
          "norm", [](const Array& a, py::object axis) { return a.norm(axis_of(axis)); },
          py::arg("axis") = py::none())
      .def(
          "argmax", [](const Array& a, py::object axis) { return a.argmax(axis_of(axis)); },
          py::arg("axis") = py::none())
      .def(
          "argmin", [](const Array& a, py::object axis) { return a.argmin(axis_of(axis)); },
          py::arg("axis") = py::none());

  m.def("from_numpy", &from_numpy, py::arg("array"), py::arg("chunks") = std::vector<std::int64_t>{},
        py::arg("backend") = "cpu", py::arg("dtype") = py::none(),
        "A chunked array of a NumPy array's elements (copied once into the chunks).");
  m.def(
      "_random",
      [](const std::vector<std::int64_t>& shape, const std::vector<std::int64_t>& chunks,
         const std::string& backend, const std::string& dtype, std::uint64_t seed,
         const std::string& distribution, double low, double high, double density) {
        ArrayOptions options = array_options(chunks, backend, dtype);
        options.seed = seed;
        options.distribution = distribution;
        options.low = low;
        options.high = high;
        options.density = density;
        return Array::random(shape, options);
      },
      py::arg("shape"), py::arg("chunks"), py::arg("backend"), py::arg("dtype"), py::arg("seed"),
      py::arg("distribution"), py::arg("low"), py::arg("high"), py::arg("density"));
  m.def(
      "_full",
      [](const std::vector<std::int64_t>& shape, double value, const std::vector<std::int64_t>& chunks,
         const std::string& backend, const std::string& dtype) {
        return Array::full(shape, value, array_options(chunks, backend, dtype));
      },
      py::arg("shape"), py::arg("value"), py::arg("chunks"), py::arg("backend"), py::arg("dtype"));
  m.def("where", py::overload_cast<const Array&, const Array&, const Array&>(&where));
  m.def("where", py::overload_cast<const Array&, double, const Array&>(&where));
  m.def("where", py::overload_cast<const Array&, const Array&, double>(&where));
  m.def("concatenate", &concatenate, py::arg("arrays"), py::arg("axis") = 0);
  m.def(
      "_compute_all",
      [](const std::vector<Array>& arrays, const ClientPtr& owner) {
        auto results = call_interruptibly([arrays, owner] { return compute(owner->client, arrays); });
        py::list out;
        for (std::size_t i = 0; i < arrays.size(); ++i) {
          if (arrays[i].ndim() == 0)
            out.append(py::float_(results[i](0, 0)));
          else
            out.append(adopt_matrix(std::move(results[i]), arrays[i].ndim() == 1));
        }
        return out;
      },
      py::arg("arrays"), py::arg("client"));

  m.def(
      "from_npy",
      [](const std::string& path, std::int64_t chunk_rows, std::int64_t chunk_cols,
         const std::string& backend) {
        return io::from_npy(path, io::NpyOptions{chunk_rows, chunk_cols, backend});
      },
      py::arg("path"), py::arg("chunk_rows") = 0, py::arg("chunk_cols") = 0, py::arg("backend") = "cpu",
      "An array over a .npy file; each chunk reads its own block where it is computed.");
  m.def(
      "_to_npy",
      [](const Array& a, const std::string& path, const ClientPtr& owner) {
        call_interruptibly([a, path, owner] { io::to_npy(a, path, owner->client); });
      },
      py::arg("array"), py::arg("path"), py::arg("client"));

  auto linalg =
      m.def_submodule("linalg", "TSQR, QR, SVD, randomized SVD and least squares on chunked arrays");
  linalg.def(
      "svd",
      [](const Array& a) {
        auto r = linalg::svd(a);
        return py::make_tuple(r.u, r.s, r.vt);
      },
      py::arg("a"), "The thin SVD (u, s, vt) as arrays; compute them with tessera.compute(u, s, vt).");
  linalg.def(
      "qr",
      [](const Array& a) {
        auto r = linalg::qr(a);
        return py::make_tuple(r.q, r.r);
      },
      py::arg("a"));
  linalg.def(
      "tsqr",
      [](const Array& a, std::int64_t leaf_rows, std::size_t fan_in) {
        auto r = linalg::tsqr(a, {leaf_rows, fan_in});
        return py::make_tuple(r.q, r.r);
      },
      py::arg("a"), py::arg("leaf_rows") = 0, py::arg("fan_in") = 8);
  linalg.def(
      "svd_compressed",
      [](const Array& a, std::int64_t k, std::int64_t oversampling, int power_iterations,
         std::uint64_t seed) {
        auto r = linalg::svd_compressed(a, k, {oversampling, power_iterations, seed});
        return py::make_tuple(r.u, r.s, r.vt);
      },
      py::arg("a"), py::arg("k"), py::arg("oversampling") = 10, py::arg("power_iterations") = 0,
      py::arg("seed") = 0);
  linalg.def(
      "lstsq",
      [](const Array& a, const Array& b, double rcond) {
        auto r = linalg::lstsq(a, b, rcond);
        return py::make_tuple(r.x, r.residuals, r.rank, r.s);
      },
      py::arg("a"), py::arg("b"), py::arg("rcond") = -1.0);
}

}  // namespace tessera::python

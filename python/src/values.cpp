#include "values.hpp"

#include <Python.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "graph/errors.hpp"
#include "graph/printable.hpp"

namespace tessera::python {

namespace {

std::string python_type_name(py::handle object) {
  return py::str(py::type::handle_of(object).attr("__name__")).cast<std::string>();
}

[[noreturn]] void refuse(py::handle object, std::string_view where, std::string_view why) {
  throw TypeError(std::string(where) + ": a " + python_type_name(object) + " " + std::string(why));
}

Value array_value(const py::array& array, std::string_view where) {
  const auto kind = array.dtype().kind();
  if (kind != 'f' && kind != 'i' && kind != 'u' && kind != 'b')
    refuse(array, where,
           "of dtype " + py::str(array.dtype()).cast<std::string>() +
               " has no Tessera form "
               "(numbers only)");
  if (array.ndim() == 0) return to_value(array.attr("item")(), where);
  if (array.ndim() > 2)
    refuse(array, where,
           "of " + std::to_string(array.ndim()) + " dimensions has no Tessera form (1-D or 2-D)");
  auto doubles = py::array_t<double, py::array::c_style | py::array::forcecast>::ensure(array);
  if (!doubles) throw py::error_already_set();
  if (doubles.ndim() == 1) {
    const double* data = doubles.data();
    return Value(std::vector<double>(data, data + doubles.shape(0)));
  }
  using RowMajor = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  return Value(
      Eigen::MatrixXd(Eigen::Map<const RowMajor>(doubles.data(), doubles.shape(0), doubles.shape(1))));
}

// A read-only array over memory `owner` keeps alive.
template <class T>
py::array view(const T* data, std::vector<py::ssize_t> shape, std::vector<py::ssize_t> strides, Value owner) {
  auto* kept = new Value(std::move(owner));
  py::capsule base(kept, [](void* p) { delete static_cast<Value*>(p); });
  py::array out(py::dtype::of<T>(), std::move(shape), std::move(strides), data, base);
  py::detail::array_proxy(out.ptr())->flags &= ~py::detail::npy_api::NPY_ARRAY_WRITEABLE_;
  return out;
}

// A column-major matrix or a chunk's DenseView, its elements kept alive by `owner`.
template <class Matrix>
py::array dense_view(const Matrix& m, const Value& owner) {
  using T = typename Matrix::Scalar;
  const auto item = static_cast<py::ssize_t>(sizeof(T));
  return view<T>(m.data(), {m.rows(), m.cols()}, {item, item * m.rows()}, owner);
}

py::object chunk_value(const Value& value) {
  const auto& chunk = *value.as_chunk();
  switch (chunk.backend()) {
    case backends::Backend::cpu:
      return backends::visit_dense(chunk, [&](const auto& m) { return dense_view(m, value); });
    case backends::Backend::sparse: {
      // Densified: NumPy has no sparse type (scipy.sparse is not a dependency).
      Eigen::MatrixXd dense = backends::visit_sparse(
          chunk, [](const auto& m) -> Eigen::MatrixXd { return Eigen::MatrixXd(m.template cast<double>()); });
      return adopt_matrix(std::move(dense), false);
    }
    case backends::Backend::cuda:
      break;
  }
  throw TypeError("a " + chunk.describe() + " chunk lives on a GPU: move it with to_backend(\"cpu\") first");
}

}  // namespace

Value to_value(py::handle object, std::string_view where) {
  if (object.is_none()) return Value();
  if (PyBool_Check(object.ptr())) return Value(object.ptr() == Py_True);
  if (PyLong_Check(object.ptr())) {
    int overflow = 0;
    const long long v = PyLong_AsLongLongAndOverflow(object.ptr(), &overflow);
    if (overflow != 0)
      throw TypeError(std::string(where) + ": the integer " +
                      printable(py::str(object).cast<std::string>(), 40) + " does not fit 64 bits");
    return Value(static_cast<std::int64_t>(v));
  }
  if (PyFloat_Check(object.ptr())) return Value(PyFloat_AS_DOUBLE(object.ptr()));
  if (PyUnicode_Check(object.ptr())) return Value(object.cast<std::string>());
  if (PyBytes_Check(object.ptr())) {
    const std::string raw = object.cast<py::bytes>();
    return Value(Bytes{std::vector<std::uint8_t>(raw.begin(), raw.end())});
  }
  if (py::isinstance<py::array>(object)) return array_value(py::reinterpret_borrow<py::array>(object), where);
  if (PyList_Check(object.ptr()) || PyTuple_Check(object.ptr())) {
    auto sequence = py::reinterpret_borrow<py::sequence>(object);
    Value::List list;
    list.reserve(sequence.size());
    std::size_t i = 0;
    for (auto item : sequence)
      list.push_back(to_value(item, std::string(where) + "[" + std::to_string(i++) + "]"));
    return Value(std::move(list));
  }
  // NumPy scalars (numpy.float32, numpy.int64, numpy.bool_): their Python value.
  // Never released: a py::object here would be let go after the interpreter finalized.
  static const py::handle numpy_generic = py::object(py::module_::import("numpy").attr("generic")).release();
  if (py::isinstance(object, numpy_generic)) return to_value(object.attr("item")(), where);
  refuse(object, where,
         "has no Tessera form (None, bool, int, float, str, bytes, lists, tuples and NumPy arrays do)");
}

py::object from_value(const Value& value) {
  switch (value.kind()) {
    case ValueKind::none:
      return py::none();
    case ValueKind::integer:
      return py::int_(value.as_int());
    case ValueKind::real:
      return py::float_(value.as_double());
    case ValueKind::boolean:
      return py::bool_(value.as_bool());
    case ValueKind::string:
      return py::str(value.as_string());
    case ValueKind::bytes: {
      const auto& data = value.as_bytes().data;
      return py::bytes(reinterpret_cast<const char*>(data.data()), data.size());
    }
    case ValueKind::doubles: {
      const auto& d = value.as_doubles();
      return view<double>(d.data(), {static_cast<py::ssize_t>(d.size())}, {sizeof(double)}, value);
    }
    case ValueKind::vector: {
      const auto& v = value.as_vector();
      return view<double>(v.data(), {v.size()}, {sizeof(double)}, value);
    }
    case ValueKind::matrix:
      return dense_view(value.as_matrix(), value);
    case ValueKind::list: {
      const auto& items = value.as_list();
      py::list out(items.size());
      for (std::size_t i = 0; i < items.size(); ++i) out[i] = from_value(items[i]);
      return out;
    }
    case ValueKind::custom: {
      const auto& custom = value.as_custom();
      return py::make_tuple(custom.type_name, custom.payload ? from_value(*custom.payload) : py::none());
    }
    case ValueKind::chunk:
      return chunk_value(value);
  }
  throw TypeError("a value of an unknown kind");
}

Config to_config(py::handle mapping, std::string_view where) {
  Config config;
  if (mapping.is_none()) return config;
  if (!PyDict_Check(mapping.ptr())) refuse(mapping, where, "is not a dict of str to values");
  for (auto [key, item] : py::reinterpret_borrow<py::dict>(mapping)) {
    if (!PyUnicode_Check(key.ptr())) refuse(key, std::string(where), "is not a str key");
    const auto name = key.cast<std::string>();
    config.set(name, to_value(item, std::string(where) + "[" + in_quotes(name) + "]"));
  }
  return config;
}

py::array adopt_matrix(Eigen::MatrixXd&& matrix, bool as_vector) {
  auto* owned = new Eigen::MatrixXd(std::move(matrix));
  py::capsule base(owned, [](void* p) { delete static_cast<Eigen::MatrixXd*>(p); });
  const auto item = static_cast<py::ssize_t>(sizeof(double));
  if (as_vector) return py::array(py::dtype::of<double>(), {owned->size()}, {item}, owned->data(), base);
  return py::array(py::dtype::of<double>(), {owned->rows(), owned->cols()}, {item, item * owned->rows()},
                   owned->data(), base);
}

}  // namespace tessera::python

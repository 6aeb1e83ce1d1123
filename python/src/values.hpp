// Python objects to Tessera Values and back: None, bool, int, float, str, bytes, lists and tuples, and
// NumPy arrays (1-D as vector<double>, 2-D as a matrix) and scalars.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <string>
#include <string_view>

#include "graph/simulation.hpp"
#include "graph/value.hpp"

namespace tessera::python {

namespace py = pybind11;

// `where` names the argument in the error a value that has no Value form gets ("argument 1 of
// submit('inc')"): a TypeError naming the Python type.
Value to_value(py::handle object, std::string_view where);
// Matrices, vectors and chunks come back as read-only NumPy arrays over the Value's own storage (no
// copy; .copy() makes a writable one), lists as lists.
py::object from_value(const Value& value);
// A dict of str to values, for a stream's or a generator's config.
Config to_config(py::handle mapping, std::string_view where);

// A NumPy array that owns `matrix` (moved, not copied): what compute() returns.
py::array adopt_matrix(Eigen::MatrixXd&& matrix, bool as_vector);

}  // namespace tessera::python

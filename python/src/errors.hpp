// The Python exception for a failed task (tessera.TaskFailed), for Future.exception() to return.
#pragma once

#include <pybind11/pybind11.h>

#include "graph/errors.hpp"

namespace tessera::python {

pybind11::object task_failed_object(const TaskFailed& failure);

}  // namespace tessera::python

// What the module's files share: the state a Python client keeps, and one bind_* function per file.
#pragma once

#include <pybind11/pybind11.h>

#include <memory>

#include "tessera/client.hpp"
#include "tessera/local_cluster.hpp"

namespace tessera::python {

namespace py = pybind11;

// A client and what it runs on. Futures, streams and queries hold it, so that a cluster closed while
// they live is only let go after them (members are destroyed bottom up: the client before the cluster).
struct ClientState {
  std::shared_ptr<LocalCluster> cluster;  // null for a client of a scheduler node
  Client client;
};
using ClientPtr = std::shared_ptr<ClientState>;

// A future on one task's result, as Python holds it: the argument futures it was given stay alive until
// it does (their results are its inputs).
struct PyFuture {
  ClientPtr owner;
  Future<Value> future;
  std::string function;
  py::list inputs;
};

// A program simulation's set's outcome as a dict {exit_status, signal, stdout, stderr}; None for a
// compiled simulation's set (results.cpp).
py::object program_dict(const std::shared_ptr<const ProgramOutcome>& program);

void bind_errors(py::module_& m);
void bind_cluster(py::module_& m);
void bind_futures(py::module_& m);
void bind_streams(py::module_& m);
void bind_results(py::module_& m);
void bind_arrays(py::module_& m);
void bind_glm(py::module_& m);
void bind_worker(py::module_& m);

}  // namespace tessera::python

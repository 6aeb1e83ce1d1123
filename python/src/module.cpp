// tessera._tessera: the compiled half of `import tessera` (python/tessera/__init__.py is the other).
#include <pybind11/pybind11.h>

#include "bindings.hpp"

PYBIND11_MODULE(_tessera, m) {
  m.doc() = "Tessera's client library: clusters, futures, streams, result queries, arrays and GLMs";
  m.attr("__version__") = TESSERA_VERSION;
  tessera::python::bind_errors(m);
  tessera::python::bind_cluster(m);
  tessera::python::bind_futures(m);
  tessera::python::bind_streams(m);
  tessera::python::bind_results(m);
  tessera::python::bind_arrays(m);
  tessera::python::bind_glm(m);
  tessera::python::bind_worker(m);
}

// What an Array holds (detail::ArrayData, client/array_graph.hpp), for the client library's own files.
// Not part of the public API: nothing in client/tessera/ includes it. Tests, examples and benchmarks use
// the public operations instead.
#pragma once

#include <memory>
#include <utility>

#include "tessera/array.hpp"

namespace tessera::detail {

struct ArrayAccess {
  static const std::shared_ptr<const ArrayData>& data(const Array& array) { return array.data_; }
  static Array make(std::shared_ptr<const ArrayData> data) { return Array(std::move(data)); }
};

}  // namespace tessera::detail

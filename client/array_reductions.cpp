// Reductions of chunked arrays: a partial per chunk, then a combination tree per output chunk.
#include "backends/operations.hpp"
#include "client/array_graph.hpp"

namespace tessera {

using namespace detail;

namespace {

// Which reduction: all elements (-1), down the rows (0) or along the columns (1), by the array's ndim.
int normalized_axis(const Array& x, std::optional<int> axis, const char* what) {
  if (!axis) return -1;
  const int a = *axis < 0 ? *axis + std::max(1, x.ndim()) : *axis;
  if (a < 0 || a >= std::max(1, x.ndim()))
    throw SubmissionError(std::string(what) + ": axis " + std::to_string(*axis) + " is out of range for " +
                          x.describe());
  if (x.ndim() < 2) return -1;  // the only axis of a 1-D array is all of it
  return a;
}

Array reduce_with(const Array& x, const std::string& name, int axis, const char* what) {
  const auto& d = *ArrayAccess::data(x);
  const Backend backend = d.meta.backend;
  const bool arg = name == "argmax" || name == "argmin";
  const char* op = arg ? backends::ops::argreduce : backends::ops::reduce;
  require_kernel(op, backend, what);
  if (x.rows() == 0 || x.cols() == 0) {
    if (name != "sum" && name != "sumsq")
      throw SubmissionError(std::string(what) + " of the empty " + x.describe() + " has no value");
  }
  const Backend partial_backend = backend == Backend::sparse ? Backend::cpu : backend;
  const Meta meta{partial_backend, arg ? DType::float64 : d.meta.dtype};
  const auto row_offsets = chunk_offsets(d.row_chunks), col_offsets = chunk_offsets(d.col_chunks);
  const std::int64_t total_cols = d.cols();
  // A reduction of a fused elementwise chain reads the chain's source once, making no chunk in between.
  const ElementwiseChain* chain = d.chain.get();
  const bool fuse = !arg && chain && backends::Dispatch::global().has(backends::ops::chain_reduce, backend) &&
                    chain->source->meta.backend == backend;
  auto partial = [&](std::size_t i, std::size_t j) {
    if (fuse)
      return kernel(backend, backends::ChainReduceParams{chain->steps, name, axis},
                    {chain->source->block(i, j)});
    if (arg)
      return kernel(backend,
                    backends::ArgreduceParams{name, axis, row_offsets[i], col_offsets[j], total_cols},
                    {d.block(i, j)});
    return kernel(backend, backends::ReduceParams{name, axis}, {d.block(i, j)});
  };
  // The value (or index) part of a combined partial, in the result's orientation.
  auto finish = [&](DelayedArg combined, std::int64_t length) -> DelayedArg {
    if (axis == 0) {
      DelayedArg values = arg ? sub_block(combined, partial_backend, 1, 0, 1, length) : combined;
      return kernel(backends::ops::transpose, partial_backend, {}, {values});
    }
    if (arg && axis == 1) return sub_block(combined, partial_backend, 0, 1, length, 1);
    if (arg) return sub_block(combined, partial_backend, 0, 1, 1, 1);
    return combined;
  };
  std::vector<DelayedArg> blocks;
  if (axis == 0) {
    for (std::size_t j = 0; j < d.grid_cols(); ++j) {
      std::vector<DelayedArg> parts;
      for (std::size_t i = 0; i < d.grid_rows(); ++i) parts.push_back(partial(i, j));
      blocks.push_back(finish(combine_tree(name, axis, std::move(parts), partial_backend), d.col_chunks[j]));
    }
    return make_array(1, d.col_chunks, {1}, meta, std::move(blocks));
  }
  if (axis == 1) {
    for (std::size_t i = 0; i < d.grid_rows(); ++i) {
      std::vector<DelayedArg> parts;
      for (std::size_t j = 0; j < d.grid_cols(); ++j) parts.push_back(partial(i, j));
      blocks.push_back(finish(combine_tree(name, axis, std::move(parts), partial_backend), d.row_chunks[i]));
    }
    return make_array(1, d.row_chunks, {1}, meta, std::move(blocks));
  }
  std::vector<DelayedArg> parts;
  for (std::size_t i = 0; i < d.grid_rows(); ++i)
    for (std::size_t j = 0; j < d.grid_cols(); ++j) parts.push_back(partial(i, j));
  blocks.push_back(finish(combine_tree(name, axis, std::move(parts), partial_backend), 1));
  return make_array(0, {1}, {1}, meta, std::move(blocks));
}

}  // namespace

Array Array::sum(std::optional<int> axis) const {
  return reduce_with(*this, "sum", normalized_axis(*this, axis, "sum"), "sum");
}
Array Array::min(std::optional<int> axis) const {
  return reduce_with(*this, "min", normalized_axis(*this, axis, "min"), "min");
}
Array Array::max(std::optional<int> axis) const {
  return reduce_with(*this, "max", normalized_axis(*this, axis, "max"), "max");
}
Array Array::argmax(std::optional<int> axis) const {
  return reduce_with(*this, "argmax", normalized_axis(*this, axis, "argmax"), "argmax");
}
Array Array::argmin(std::optional<int> axis) const {
  return reduce_with(*this, "argmin", normalized_axis(*this, axis, "argmin"), "argmin");
}

Array Array::mean(std::optional<int> axis) const {
  const int a = normalized_axis(*this, axis, "mean");
  const std::int64_t count = a == -1 ? rows() * cols() : (a == 0 ? rows() : cols());
  if (count == 0) throw SubmissionError("mean of the empty " + describe() + " has no value");
  return reduce_with(*this, "sum", a, "mean") / static_cast<double>(count);
}

Array Array::norm(std::optional<int> axis) const {
  return reduce_with(*this, "sumsq", normalized_axis(*this, axis, "norm"), "norm").sqrt();
}

}  // namespace tessera

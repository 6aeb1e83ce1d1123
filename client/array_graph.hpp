// What an Array is inside: a grid of chunk tasks plus what is known of them, and the helpers that add
// kernel tasks to a graph. Internal to client/.
#pragma once

#include <string_view>
#include <vector>

#include "backends/dispatch.hpp"
#include "backends/kernel_params.hpp"
#include "client/array_access.hpp"
#include "tessera/array.hpp"
#include "tessera/delayed.hpp"

namespace tessera::detail {

using backends::Backend;
using backends::DType;
using backends::Params;

// A run of unary and scalar steps from a source array, computed as one fused kernel per chunk.
struct ElementwiseChain {
  std::shared_ptr<const struct ArrayData> source;
  std::vector<backends::ChainStep> steps;
};

struct ArrayData {
  int ndim = 2;                          // 0, 1 or 2; 1-D arrays are stored as n x 1 columns
  std::vector<std::int64_t> row_chunks;  // extents; a 0-d array has {1}
  std::vector<std::int64_t> col_chunks;  // {1} for 1-D and 0-d arrays
  Meta meta;
  std::vector<DelayedArg> blocks;  // row-major grid: block (i, j) at i * col_chunks.size() + j
  // Set when this array is the transpose of another: products read the source with a transpose flag
  // instead of materialising the transpose.
  std::shared_ptr<const ArrayData> transpose_of;
  // Set when this array is elementwise steps applied to another: the next step extends the chain.
  std::shared_ptr<const ElementwiseChain> chain;

  std::int64_t rows() const;
  std::int64_t cols() const;
  std::size_t grid_rows() const { return row_chunks.size(); }
  std::size_t grid_cols() const { return col_chunks.size(); }
  const DelayedArg& block(std::size_t i, std::size_t j) const { return blocks[i * col_chunks.size() + j]; }
};

Array make_array(int ndim, std::vector<std::int64_t> row_chunks, std::vector<std::int64_t> col_chunks,
                 Meta meta, std::vector<DelayedArg> blocks);

// Chunk extents covering `extent` with chunks of `chunk` (0: one chunk); the last may be ragged.
std::vector<std::int64_t> regular_chunks(std::int64_t extent, std::int64_t chunk, const char* where);
std::vector<std::int64_t> chunk_offsets(const std::vector<std::int64_t>& chunks);  // size + 1 entries

// Throws SubmissionError, at graph-building time, when `backend` has no kernel for `operation` or cannot
// run here; `context` names the user's call.
void require_kernel(std::string_view operation, Backend backend, std::string_view context);

// A task running `operation` on `inputs` (at most max_kernel_inputs).
DelayedArg kernel(std::string_view operation, Backend backend, const Params& params,
                  std::vector<DelayedArg> inputs);
// The same for an operation with parameters, given as its struct (backends/kernel_params.hpp).
template <class OperationParams>
DelayedArg kernel(Backend backend, const OperationParams& params, std::vector<DelayedArg> inputs) {
  return kernel(OperationParams::operation, backend, params.to_params(), std::move(inputs));
}
// Result `index` of a kernel with several results.
DelayedArg pick(const DelayedArg& multi, int index);
// What one task of an array graph takes as inputs at most where the graph can choose how many chunks a
// task gathers (products, combining trees, TSQR stages): a worker whose memory limit is a few times this
// runs such tasks side by side, and admission (actors/compute_pool.hpp) orders them when it does not.
// A task always takes at least one chunk pair (two partials).
inline constexpr std::uint64_t kTaskInputBytes = 64ull << 20;
// How many inputs of `bytes_each` a task takes: as many as fit kTaskInputBytes, at least `least`, at most
// `most`.
std::size_t fan_in_for(std::uint64_t bytes_each, std::size_t least, std::size_t most);
std::uint64_t dtype_bytes(DType dtype);
// Combines partial results (sum, sumsq, min, max, argmax, argmin) with a tree of fan-in max_kernel_inputs,
// or fewer when the partials are large (`partial_bytes`, 0: small).
DelayedArg combine_tree(const std::string& name, int axis, std::vector<DelayedArg> partials, Backend backend,
                        std::uint64_t partial_bytes = 0);
// A task copying the block [row, row+rows) x [col, col+cols) of one chunk.
DelayedArg sub_block(const DelayedArg& chunk, Backend backend, std::int64_t row, std::int64_t col,
                     std::int64_t rows, std::int64_t cols);

// The array re-gridded to the given chunks over its rows [row0, row0 + sum(row_chunks)) and columns likewise:
// blocks that already match are reused, the others are assembled from the pieces that overlap them.
Array regrid(const Array& array, std::int64_t row0, std::int64_t col0,
             const std::vector<std::int64_t>& row_chunks, const std::vector<std::int64_t>& col_chunks);

Backend backend_of(const std::string& name, const char* where);
DType dtype_of(const std::string& name, const char* where);
std::string shape_text(const Array& array);

}  // namespace tessera::detail

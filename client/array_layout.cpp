// Array layout: transpose, slices, rechunking, concatenation, and a 1-D array seen as a row.
#include "backends/operations.hpp"
#include "client/array_graph.hpp"

namespace tessera {

using namespace detail;

Array Array::T() const {
  if (data_->ndim < 2) return *this;
  if (data_->transpose_of) return Array(data_->transpose_of);  // the transpose of a transpose
  require_kernel(backends::ops::transpose, data_->meta.backend, "T()");
  std::vector<DelayedArg> blocks;
  blocks.reserve(data_->blocks.size());
  for (std::size_t j = 0; j < data_->grid_cols(); ++j)
    for (std::size_t i = 0; i < data_->grid_rows(); ++i)
      blocks.push_back(kernel(backends::ops::transpose, data_->meta.backend, {}, {data_->block(i, j)}));
  auto data = std::make_shared<ArrayData>();
  data->ndim = 2;
  data->row_chunks = data_->col_chunks;
  data->col_chunks = data_->row_chunks;
  data->meta = data_->meta;
  data->blocks = std::move(blocks);
  // Products read the source with a transpose flag instead: these transpose tasks then never run.
  data->transpose_of = data_;
  return Array(std::move(data));
}

Array Array::reshape_row() const {
  if (data_->ndim != 1) throw SubmissionError("reshape_row: " + describe() + " is not 1-D");
  require_kernel(backends::ops::transpose, data_->meta.backend, "reshape_row");
  std::vector<DelayedArg> blocks;
  for (const auto& b : data_->blocks)
    blocks.push_back(kernel(backends::ops::transpose, data_->meta.backend, {}, {b}));
  return make_array(2, {1}, data_->row_chunks, data_->meta, std::move(blocks));
}

namespace {

// The chunks of [begin, end) cut from `chunks`: the original boundaries inside the range are kept.
std::vector<std::int64_t> cut(const std::vector<std::int64_t>& chunks, std::int64_t begin, std::int64_t end) {
  std::vector<std::int64_t> out;
  std::int64_t offset = 0;
  for (auto c : chunks) {
    const auto lo = std::max(begin, offset), hi = std::min(end, offset + c);
    if (lo < hi) out.push_back(hi - lo);
    offset += c;
  }
  if (out.empty()) out.push_back(0);
  return out;
}

void check_range(const Array& a, std::int64_t begin, std::int64_t end, std::int64_t extent,
                 const char* what) {
  if (begin < 0 || end < begin || end > extent)
    throw SubmissionError(std::string(what) + "(" + std::to_string(begin) + ", " + std::to_string(end) +
                          "): out of range for " + a.describe());
}

}  // namespace

Array Array::slice_rows(std::int64_t begin, std::int64_t end) const {
  check_range(*this, begin, end, rows(), "slice_rows");
  return regrid(*this, begin, 0, cut(data_->row_chunks, begin, end), data_->col_chunks);
}

Array Array::slice_cols(std::int64_t begin, std::int64_t end) const {
  if (data_->ndim != 2) throw SubmissionError("slice_cols: " + describe() + " has no columns");
  check_range(*this, begin, end, cols(), "slice_cols");
  return regrid(*this, 0, begin, data_->row_chunks, cut(data_->col_chunks, begin, end));
}

Array Array::rechunk(const std::vector<std::int64_t>& chunks) const {
  if (chunks.size() > static_cast<std::size_t>(std::max(1, data_->ndim)))
    throw SubmissionError("rechunk: " + std::to_string(chunks.size()) + " chunk sizes for " + describe());
  const auto rows_chunks = regular_chunks(rows(), chunks.empty() ? 0 : chunks[0], "rechunk");
  const auto cols_chunks = data_->ndim == 2
                               ? regular_chunks(cols(), chunks.size() > 1 ? chunks[1] : cols(), "rechunk")
                               : data_->col_chunks;
  return regrid(*this, 0, 0, rows_chunks, cols_chunks);
}

Array concatenate(const std::vector<Array>& arrays, int axis) {
  if (arrays.empty()) throw SubmissionError("concatenate: no arrays");
  if (axis != 0 && axis != 1)
    throw SubmissionError("concatenate: axis must be 0 or 1, got " + std::to_string(axis));
  const Array& first = arrays.front();
  if (axis == 1 && first.ndim() != 2)
    throw SubmissionError("concatenate: axis 1 needs 2-D arrays, got " + first.describe());
  std::vector<std::int64_t> row_chunks, col_chunks;
  std::vector<Array> parts;
  for (const auto& a : arrays) {
    if (a.ndim() != first.ndim() || (axis == 0 ? a.cols() != first.cols() : a.rows() != first.rows()))
      throw SubmissionError("concatenate along axis " + std::to_string(axis) + ": shapes " +
                            shape_text(first) + " and " + shape_text(a) + " do not match");
    if (a.meta().dtype != first.meta().dtype || a.meta().backend != first.meta().backend)
      throw SubmissionError("concatenate: " + a.describe() + " differs from " + first.describe() +
                            " in backend or dtype; convert with to_backend() or astype()");
    // The other dimension takes the first array's chunks, so the blocks line up.
    parts.push_back(
        axis == 0 ? regrid(a, 0, 0, ArrayAccess::data(a)->row_chunks, ArrayAccess::data(first)->col_chunks)
                  : regrid(a, 0, 0, ArrayAccess::data(first)->row_chunks, ArrayAccess::data(a)->col_chunks));
    auto& grow = axis == 0 ? row_chunks : col_chunks;
    const auto& add = axis == 0 ? ArrayAccess::data(a)->row_chunks : ArrayAccess::data(a)->col_chunks;
    grow.insert(grow.end(), add.begin(), add.end());
  }
  if (axis == 0)
    col_chunks = ArrayAccess::data(first)->col_chunks;
  else
    row_chunks = ArrayAccess::data(first)->row_chunks;
  // Row-major: stacked parts follow each other; side-by-side parts interleave row by row.
  std::vector<DelayedArg> blocks;
  blocks.reserve(row_chunks.size() * col_chunks.size());
  if (axis == 0) {
    for (const auto& p : parts)
      for (const auto& block : ArrayAccess::data(p)->blocks) blocks.push_back(block);
  } else {
    for (std::size_t i = 0; i < row_chunks.size(); ++i)
      for (const auto& p : parts)
        for (std::size_t j = 0; j < ArrayAccess::data(p)->grid_cols(); ++j)
          blocks.push_back(ArrayAccess::data(p)->block(i, j));
  }
  return make_array(first.ndim(), std::move(row_chunks), std::move(col_chunks), first.meta(),
                    std::move(blocks));
}

}  // namespace tessera

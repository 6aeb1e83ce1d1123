#include "client/array_graph.hpp"

#include <algorithm>
#include <numeric>

#include "backends/operations.hpp"
#include "graph/array_tasks.hpp"

namespace tessera::detail {

std::int64_t ArrayData::rows() const {
  return std::accumulate(row_chunks.begin(), row_chunks.end(), std::int64_t{0});
}
std::int64_t ArrayData::cols() const {
  return std::accumulate(col_chunks.begin(), col_chunks.end(), std::int64_t{0});
}

Array make_array(int ndim, std::vector<std::int64_t> row_chunks, std::vector<std::int64_t> col_chunks,
                 Meta meta, std::vector<DelayedArg> blocks) {
  auto data = std::make_shared<ArrayData>();
  data->ndim = ndim;
  data->row_chunks = std::move(row_chunks);
  data->col_chunks = std::move(col_chunks);
  data->meta = meta;
  data->blocks = std::move(blocks);
  return ArrayAccess::make(std::move(data));
}

std::vector<std::int64_t> regular_chunks(std::int64_t extent, std::int64_t chunk, const char* where) {
  if (extent < 0) throw SubmissionError(std::string(where) + ": negative extent " + std::to_string(extent));
  if (chunk < 0) throw SubmissionError(std::string(where) + ": negative chunk size " + std::to_string(chunk));
  if (chunk == 0 || chunk >= extent) return {extent};
  std::vector<std::int64_t> out(static_cast<std::size_t>(extent / chunk), chunk);
  if (extent % chunk) out.push_back(extent % chunk);
  return out;
}

std::vector<std::int64_t> chunk_offsets(const std::vector<std::int64_t>& chunks) {
  std::vector<std::int64_t> out{0};
  for (auto c : chunks) out.push_back(out.back() + c);
  return out;
}

void require_kernel(std::string_view operation, Backend backend, std::string_view context) {
  auto& dispatch = backends::Dispatch::global();
  const auto availability = dispatch.availability(backend);
  if (!availability.available)
    throw SubmissionError(std::string(context) + ": the " + std::string(backends::backend_name(backend)) +
                          " backend is unavailable: " + availability.reason);
  if (!dispatch.has(operation, backend))
    throw SubmissionError(std::string(context) + ": operation '" + std::string(operation) +
                          "' has no kernel for the " + std::string(backends::backend_name(backend)) +
                          " backend; move the array with to_backend()");
}

DelayedArg kernel(std::string_view operation, Backend backend, const Params& params,
                  std::vector<DelayedArg> inputs) {
  std::vector<DelayedArg> args;
  args.reserve(inputs.size() + 1);
  args.emplace_back(encode_kernel_call(operation, backend, params));
  for (auto& in : inputs) args.push_back(std::move(in));
  const TaskFunction* fn = &array_kernel_function(inputs.size());
  return DelayedArg(std::shared_ptr<DelayedNode>(new DelayedNode{fn, std::move(args)}));
}

DelayedArg pick(const DelayedArg& multi, int index) {
  return DelayedArg(std::shared_ptr<DelayedNode>(
      new DelayedNode{&array_pick_function(), {multi, Value(static_cast<std::int64_t>(index))}}));
}

std::size_t fan_in_for(std::uint64_t bytes_each, std::size_t least, std::size_t most) {
  if (bytes_each == 0) return most;
  return std::clamp<std::size_t>(static_cast<std::size_t>(kTaskInputBytes / bytes_each), least, most);
}

std::uint64_t dtype_bytes(DType dtype) {
  return dtype == DType::float32 ? 4 : 8;
}

DelayedArg combine_tree(const std::string& name, int axis, std::vector<DelayedArg> partials, Backend backend,
                        std::uint64_t partial_bytes) {
  const backends::CombineParams params{name, axis};
  const std::size_t fan_in = fan_in_for(partial_bytes, 2, max_kernel_inputs);
  while (partials.size() > 1) {
    std::vector<DelayedArg> next;
    for (std::size_t i = 0; i < partials.size(); i += fan_in) {
      const std::size_t end = std::min(partials.size(), i + fan_in);
      if (end - i == 1) {
        next.push_back(partials[i]);
        continue;
      }
      next.push_back(kernel(backend, params,
                            std::vector<DelayedArg>(partials.begin() + static_cast<std::ptrdiff_t>(i),
                                                    partials.begin() + static_cast<std::ptrdiff_t>(end))));
    }
    partials = std::move(next);
  }
  return partials.front();
}

DelayedArg sub_block(const DelayedArg& chunk, Backend backend, std::int64_t row, std::int64_t col,
                     std::int64_t rows, std::int64_t cols) {
  return kernel(backend, backends::AssembleParams{rows, cols, {{row, col, rows, cols, 0, 0}}}, {chunk});
}

Array regrid(const Array& array, std::int64_t row0, std::int64_t col0,
             const std::vector<std::int64_t>& row_chunks, const std::vector<std::int64_t>& col_chunks) {
  const auto& src = *ArrayAccess::data(array);
  if (row_chunks == src.row_chunks && col_chunks == src.col_chunks && row0 == 0 && col0 == 0) return array;
  const auto src_rows = chunk_offsets(src.row_chunks), src_cols = chunk_offsets(src.col_chunks);
  const auto dst_rows = chunk_offsets(row_chunks), dst_cols = chunk_offsets(col_chunks);
  const Backend backend = src.meta.backend;
  std::vector<DelayedArg> blocks;
  blocks.reserve(row_chunks.size() * col_chunks.size());
  for (std::size_t i = 0; i < row_chunks.size(); ++i) {
    for (std::size_t j = 0; j < col_chunks.size(); ++j) {
      const std::int64_t r_begin = row0 + dst_rows[i], r_end = row0 + dst_rows[i + 1];
      const std::int64_t c_begin = col0 + dst_cols[j], c_end = col0 + dst_cols[j + 1];
      std::vector<DelayedArg> pieces;
      backends::AssembleParams assemble{r_end - r_begin, c_end - c_begin, {}};
      bool whole_source_chunk = false;  // the last piece is a source chunk entire
      for (std::size_t si = 0; si < src.grid_rows(); ++si) {
        const auto lo_r = std::max(r_begin, src_rows[si]), hi_r = std::min(r_end, src_rows[si + 1]);
        if (lo_r >= hi_r) continue;
        for (std::size_t sj = 0; sj < src.grid_cols(); ++sj) {
          const auto lo_c = std::max(c_begin, src_cols[sj]), hi_c = std::min(c_end, src_cols[sj + 1]);
          if (lo_c >= hi_c) continue;
          pieces.push_back(src.block(si, sj));
          whole_source_chunk = lo_r == src_rows[si] && hi_r == src_rows[si + 1] && lo_c == src_cols[sj] &&
                               hi_c == src_cols[sj + 1];
          assemble.blocks.push_back(backends::AssembleBlock{lo_r - src_rows[si], lo_c - src_cols[sj],
                                                            hi_r - lo_r, hi_c - lo_c, lo_r - r_begin,
                                                            lo_c - c_begin});
        }
      }
      // One whole source chunk that is the whole output chunk: reuse it, no task.
      if (pieces.size() == 1 && whole_source_chunk) {
        blocks.push_back(pieces.front());
        continue;
      }
      if (pieces.empty()) {  // an empty block (zero rows or columns)
        blocks.push_back(
            kernel(backend, backends::FullParams{r_end - r_begin, c_end - c_begin, src.meta.dtype, 0.0}, {}));
        continue;
      }
      if (pieces.size() > max_kernel_inputs)
        throw SubmissionError("rechunk: an output chunk of " + std::to_string(r_end - r_begin) + " x " +
                              std::to_string(c_end - c_begin) + " gathers " + std::to_string(pieces.size()) +
                              " input chunks (at most " + std::to_string(max_kernel_inputs) +
                              "); rechunk in steps");
      blocks.push_back(kernel(backend, assemble, std::move(pieces)));
    }
  }
  return make_array(src.ndim, row_chunks, col_chunks, src.meta, std::move(blocks));
}

Backend backend_of(const std::string& name, const char* where) {
  if (auto b = backends::parse_backend(name)) return *b;
  throw SubmissionError(std::string(where) + ": unknown backend '" + name + "' (known: cpu, sparse, cuda)");
}

DType dtype_of(const std::string& name, const char* where) {
  if (auto d = backends::parse_dtype(name)) return *d;
  throw SubmissionError(std::string(where) + ": unknown dtype '" + name + "' (known: float64, float32)");
}

std::string shape_text(const Array& array) {
  const auto shape = array.shape();
  std::string text(1, '(');
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i) text += ", ";
    text += std::to_string(shape[i]);
  }
  if (shape.size() == 1) text += ',';
  text += ')';
  return text;
}

}  // namespace tessera::detail

// Array creation, what is known without computing, and running (compute, persist).
#include "tessera/array.hpp"

#include <algorithm>

#include "backends/operations.hpp"
#include "client/array_graph.hpp"
#include "graph/array_tasks.hpp"

namespace tessera {

using namespace detail;

namespace {

// The shape and the chunk grid of a new array.
struct Grid {
  int ndim;
  std::vector<std::int64_t> row_chunks, col_chunks;
};

Grid make_grid(const std::vector<std::int64_t>& shape, const ArrayOptions& options, const char* where) {
  if (shape.empty() || shape.size() > 2)
    throw SubmissionError(std::string(where) + ": arrays are 1-D or 2-D, got a shape of " +
                          std::to_string(shape.size()) + " dimensions");
  if (options.chunks.size() > shape.size())
    throw SubmissionError(std::string(where) + ": " + std::to_string(options.chunks.size()) +
                          " chunk sizes for a " + std::to_string(shape.size()) + "-D shape");
  auto chunk = [&](std::size_t d) { return d < options.chunks.size() ? options.chunks[d] : 0; };
  Grid g{static_cast<int>(shape.size()), regular_chunks(shape[0], chunk(0), where), {1}};
  if (shape.size() == 2) g.col_chunks = regular_chunks(shape[1], chunk(1), where);
  return g;
}

// One task per chunk of `grid`, made by `make(row0, col0, rows, cols)`.
template <class Make>
Array build(const Grid& grid, Meta meta, Make&& make) {
  const auto row_offsets = chunk_offsets(grid.row_chunks), col_offsets = chunk_offsets(grid.col_chunks);
  std::vector<DelayedArg> blocks;
  blocks.reserve(grid.row_chunks.size() * grid.col_chunks.size());
  for (std::size_t i = 0; i < grid.row_chunks.size(); ++i)
    for (std::size_t j = 0; j < grid.col_chunks.size(); ++j)
      blocks.push_back(make(row_offsets[i], col_offsets[j], grid.row_chunks[i], grid.col_chunks[j]));
  return make_array(grid.ndim, grid.row_chunks, grid.col_chunks, meta, std::move(blocks));
}

Meta options_meta(const ArrayOptions& options, const char* where) {
  return Meta{backend_of(options.backend, where), dtype_of(options.dtype, where)};
}

Array filled(const std::vector<std::int64_t>& shape, double value, const ArrayOptions& options,
             const char* where) {
  const Grid grid = make_grid(shape, options, where);
  const Meta meta = options_meta(options, where);
  require_kernel(backends::ops::full, meta.backend, where);
  return build(grid, meta, [&](std::int64_t, std::int64_t, std::int64_t rows, std::int64_t cols) {
    return kernel(meta.backend, backends::FullParams{rows, cols, meta.dtype, value}, {});
  });
}

// One block of `matrix` as a chunk's column-major matrix. A row-major source (a C-ordered NumPy array)
// is copied in bands of 64 rows, so that what a column of the band reads stays in the L1 cache.
template <class T, class Matrix>
backends::DenseMatrix<T> copy_block(const Matrix& matrix, std::int64_t r0, std::int64_t c0, std::int64_t rows,
                                    std::int64_t cols) {
  if constexpr (!Matrix::IsRowMajor) {
    return backends::DenseMatrix<T>(matrix.block(r0, c0, rows, cols));
  } else {
    backends::DenseMatrix<T> out(rows, cols);
    constexpr std::int64_t kBand = 64;
    for (std::int64_t i = 0; i < rows; i += kBand) {
      const std::int64_t h = std::min(kBand, rows - i);
      out.middleRows(i, h) = matrix.block(r0 + i, c0, h, cols);
    }
    return out;
  }
}

template <class T, class Matrix>
Array from_dense(const Matrix& matrix, int ndim, const ArrayOptions& options) {
  std::vector<std::int64_t> shape{matrix.rows()};
  if (ndim == 2) shape.push_back(matrix.cols());
  const Grid grid = make_grid(shape, options, "Array::from_eigen");
  Meta meta = options_meta(options, "Array::from_eigen");
  const Backend target = meta.backend;
  meta.backend = Backend::cpu;
  Array out =
      build(grid, Meta{Backend::cpu, backends::dtype_of<T>()},
            [&](std::int64_t r0, std::int64_t c0, std::int64_t rows, std::int64_t cols) {
              return DelayedArg(Value(backends::Chunk::dense<T>(copy_block<T>(matrix, r0, c0, rows, cols))));
            });
  if (meta.dtype != backends::dtype_of<T>()) out = out.astype(options.dtype);
  return target == Backend::cpu ? out : out.to_backend(options.backend);
}

}  // namespace

Array Array::from_eigen(const Eigen::MatrixXd& matrix, const ArrayOptions& options) {
  return from_dense<double>(matrix, 2, options);
}
Array Array::from_view(const MatrixView& view, int ndim, const ArrayOptions& options) {
  if (ndim != 1 && ndim != 2)
    throw SubmissionError("Array::from_view: arrays are 1-D or 2-D, got ndim " + std::to_string(ndim));
  if (ndim == 1 && view.cols() != 1)
    throw SubmissionError("Array::from_view: a 1-D array needs a one-column view, got " +
                          std::to_string(view.cols()) + " columns");
  // Contiguous columns or rows are read as such (vectorized copies); other strides element by element.
  using Columns = Eigen::Map<const Eigen::MatrixXd, 0, Eigen::OuterStride<>>;
  using Rows = Eigen::Map<const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>, 0,
                          Eigen::OuterStride<>>;
  if (view.innerStride() == 1)
    return from_dense<double>(
        Columns(view.data(), view.rows(), view.cols(), Eigen::OuterStride<>(view.outerStride())), ndim,
        options);
  if (view.outerStride() == 1)
    return from_dense<double>(
        Rows(view.data(), view.rows(), view.cols(), Eigen::OuterStride<>(view.innerStride())), ndim, options);
  return from_dense<double>(view, ndim, options);
}
Array Array::from_eigen(const Eigen::MatrixXf& matrix, const ArrayOptions& options) {
  ArrayOptions o = options;
  if (o.dtype == "float64") o.dtype = "float32";  // the matrix's own type unless asked otherwise
  return from_dense<float>(matrix, 2, o);
}
Array Array::from_eigen(const Eigen::VectorXd& vector, const ArrayOptions& options) {
  return from_dense<double>(backends::DenseMatrix<double>(vector), 1, options);
}

Array Array::from_sparse(const Eigen::SparseMatrix<double>& matrix, const ArrayOptions& options) {
  const Grid grid = make_grid({matrix.rows(), matrix.cols()}, options, "Array::from_sparse");
  const backends::SparseMatrix<double> converted(matrix);
  Array out =
      build(grid, Meta{Backend::sparse, DType::float64},
            [&](std::int64_t r0, std::int64_t c0, std::int64_t rows, std::int64_t cols) {
              return DelayedArg(Value(backends::Chunk::sparse<double>(converted.block(r0, c0, rows, cols))));
            });
  // Sparse it stays: options.backend's default ("cpu") would otherwise densify it; to_backend() moves it.
  return options.dtype != "float64" ? out.astype(options.dtype) : out;
}

Array Array::random(const std::vector<std::int64_t>& shape, const ArrayOptions& options) {
  const Grid grid = make_grid(shape, options, "Array::random");
  const Meta meta = options_meta(options, "Array::random");
  require_kernel(backends::ops::random, meta.backend, "Array::random");
  const bool normal = options.distribution == "normal";
  if (!normal && options.distribution != "uniform")
    throw SubmissionError("Array::random: unknown distribution '" + options.distribution +
                          "' (known: uniform, normal)");
  const std::int64_t total_cols = shape.size() == 2 ? shape[1] : 1;
  return build(grid, meta, [&](std::int64_t r0, std::int64_t c0, std::int64_t rows, std::int64_t cols) {
    return kernel(meta.backend,
                  backends::RandomParams{.rows = rows,
                                         .cols = cols,
                                         .first_row = r0,
                                         .first_col = c0,
                                         .total_cols = total_cols,
                                         .seed = options.seed,
                                         .dtype = meta.dtype,
                                         .normal = normal,
                                         .low = options.low,
                                         .high = options.high,
                                         .density = options.density},
                  {});
  });
}

Array Array::zeros(const std::vector<std::int64_t>& shape, const ArrayOptions& options) {
  return filled(shape, 0.0, options, "Array::zeros");
}
Array Array::ones(const std::vector<std::int64_t>& shape, const ArrayOptions& options) {
  return filled(shape, 1.0, options, "Array::ones");
}
Array Array::full(const std::vector<std::int64_t>& shape, double value, const ArrayOptions& options) {
  return filled(shape, value, options, "Array::full");
}

Array Array::from_function(const std::string& function, const std::vector<std::int64_t>& shape,
                           const ArrayOptions& options) {
  const Grid grid = make_grid(shape, options, "Array::from_function");
  const TaskFunction& fn = Registry::global().get(function);  // names the function when unknown
  if (fn.arity() != 4)
    throw SubmissionError("Array::from_function: " + fn.signature() +
                          " must take (row0, col0, rows, cols) and return an Eigen::MatrixXd");
  const TaskFunction& block_fn = array_block_function();
  Array out = build(grid, Meta{Backend::cpu, DType::float64},
                    [&](std::int64_t r0, std::int64_t c0, std::int64_t rows, std::int64_t cols) {
                      return DelayedArg(std::shared_ptr<DelayedNode>(new DelayedNode{
                          &block_fn, {Value(function), Value(r0), Value(c0), Value(rows), Value(cols)}}));
                    });
  if (options.dtype != "float64") out = out.astype(options.dtype);
  return options.backend == "cpu" ? out : out.to_backend(options.backend);
}

int Array::ndim() const {
  return data_->ndim;
}

std::vector<std::int64_t> Array::shape() const {
  if (data_->ndim == 0) return {};
  if (data_->ndim == 1) return {data_->rows()};
  return {data_->rows(), data_->cols()};
}

std::int64_t Array::rows() const {
  return data_->rows();
}
std::int64_t Array::cols() const {
  return data_->cols();
}

std::vector<std::vector<std::int64_t>> Array::chunks() const {
  if (data_->ndim == 0) return {};
  if (data_->ndim == 1) return {data_->row_chunks};
  return {data_->row_chunks, data_->col_chunks};
}

std::size_t Array::nchunks() const {
  return data_->blocks.size();
}
Meta Array::meta() const {
  return data_->meta;
}

std::string Array::describe() const {
  std::string text = "Array(shape=" + shape_text(*this) + ", chunks=(";
  const auto c = chunks();
  for (std::size_t d = 0; d < c.size(); ++d) {
    if (d) text += ", ";
    text += std::to_string(c[d].front());
  }
  text += "), ";
  text += backends::to_string(data_->meta);
  text += ')';
  return text;
}

namespace {

// Writes a chunk's values, as doubles, into `out`, whatever its backend and element type.
void copy_to_host(const backends::ChunkPtr& chunk, Eigen::Block<Eigen::MatrixXd> out) {
  backends::ChunkPtr c = chunk;
  auto& dispatch = backends::Dispatch::global();
  if (c->backend() == Backend::cuda) c = dispatch.run(backends::ops::to_host, std::array{c}, {}).front();
  if (c->backend() == Backend::sparse) c = dispatch.run(backends::ops::to_dense, std::array{c}, {}).front();
  if (c->dtype() == DType::float64)
    out = c->dense<double>();
  else
    out = c->dense<float>().cast<double>();
}

// Every chunk of every array as a root of one graph.
std::vector<Delayed<Value>> roots_of(const std::vector<Array>& arrays) {
  std::vector<Delayed<Value>> roots;
  for (const auto& a : arrays)
    for (const auto& block : ArrayAccess::data(a)->blocks) {
      if (const auto* node = std::get_if<DelayedNodePtr>(&block)) {
        roots.emplace_back(*node);
      } else {
        roots.emplace_back(
            std::shared_ptr<DelayedNode>(new DelayedNode{&array_identity_function(), {block}}));
      }
    }
  return roots;
}

}  // namespace

std::vector<Eigen::MatrixXd> compute(Client& client, const std::vector<Array>& arrays) {
  auto values = client.compute(roots_of(arrays));
  std::vector<Eigen::MatrixXd> out;
  std::size_t next = 0;
  for (const auto& a : arrays) {
    const auto& d = *ArrayAccess::data(a);
    Eigen::MatrixXd m(d.rows(), d.cols());
    const auto row_offsets = chunk_offsets(d.row_chunks), col_offsets = chunk_offsets(d.col_chunks);
    for (std::size_t i = 0; i < d.grid_rows(); ++i)
      for (std::size_t j = 0; j < d.grid_cols(); ++j) {
        const auto& chunk = values[next++].as_chunk();
        if (chunk->rows() != d.row_chunks[i] || chunk->cols() != d.col_chunks[j])
          throw backends::KernelError("chunk (" + std::to_string(i) + ", " + std::to_string(j) + ") of " +
                                      a.describe() + " came back " + chunk->describe());
        copy_to_host(chunk, m.block(row_offsets[i], col_offsets[j], chunk->rows(), chunk->cols()));
      }
    out.push_back(std::move(m));
  }
  return out;
}

Eigen::MatrixXd Array::compute(Client& client) const {
  return std::move(tessera::compute(client, {*this}).front());
}

Eigen::VectorXd Array::compute_vector(Client& client) const {
  if (data_->cols() != 1)
    throw SubmissionError("compute_vector: " + describe() + " is not a vector; use compute()");
  return compute(client).col(0);
}

double Array::compute_scalar(Client& client) const {
  if (data_->rows() != 1 || data_->cols() != 1)
    throw SubmissionError("compute_scalar: " + describe() + " is not a single value; use compute()");
  return compute(client)(0, 0);
}

Eigen::SparseMatrix<double> Array::compute_sparse(Client& client) const {
  auto values = client.compute(roots_of({*this}));
  const auto& d = *data_;
  const auto row_offsets = chunk_offsets(d.row_chunks), col_offsets = chunk_offsets(d.col_chunks);
  std::vector<Eigen::Triplet<double>> triplets;
  std::size_t next = 0;
  for (std::size_t i = 0; i < d.grid_rows(); ++i)
    for (std::size_t j = 0; j < d.grid_cols(); ++j) {
      backends::ChunkPtr c = values[next++].as_chunk();
      if (c->backend() == Backend::cuda)
        c = backends::Dispatch::global().run(backends::ops::to_host, std::array{c}, {}).front();
      if (c->backend() != Backend::sparse)
        c = backends::Dispatch::global().run(backends::ops::to_sparse, std::array{c}, {}).front();
      backends::visit_sparse(*c, [&](const auto& m) {
        for (Eigen::Index col = 0; col < m.outerSize(); ++col)
          for (typename std::decay_t<decltype(m)>::InnerIterator it(m, col); it; ++it)
            triplets.emplace_back(row_offsets[i] + it.row(), col_offsets[j] + it.col(),
                                  static_cast<double>(it.value()));
      });
    }
  Eigen::SparseMatrix<double> out(d.rows(), d.cols());
  out.setFromTriplets(triplets.begin(), triplets.end());
  return out;
}

Array Array::persist(Client& client, PersistOptions options) const {
  auto futures = client.persist(roots_of({*this}), options);
  std::vector<DelayedArg> blocks;
  blocks.reserve(futures.size());
  for (auto& f : futures) blocks.emplace_back(f.handle());
  auto data = std::make_shared<ArrayData>(*data_);
  data->blocks = std::move(blocks);
  data->transpose_of = nullptr;
  data->chain = nullptr;  // later steps start from the persisted chunks
  return Array(std::move(data));
}

}  // namespace tessera

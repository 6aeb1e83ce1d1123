// Array: a 1-D or 2-D chunked array (Dask's dask.array). Its chunks live on a backend — cpu (dense, Eigen +
// OpenBLAS), sparse (Eigen sparse) or cuda (device memory) — chosen when the array is made or by
// to_backend(); every operation dispatches on that backend, so the same code runs on all three. Operations
// only build a graph (one task per output chunk); compute() runs it on a client's cluster.
#pragma once

#include <Eigen/Core>
#include <Eigen/SparseCore>
#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backends/chunk.hpp"
#include "tessera/client.hpp"

namespace tessera {

namespace detail {
struct ArrayData;    // what an Array holds (internal)
struct ArrayAccess;  // the library's own files reach it through client/array_access.hpp
}  // namespace detail

using Meta = backends::Meta;

struct ArrayOptions {
  // Chunk extent per dimension (rows, then columns for 2-D); missing or 0 means the whole extent.
  std::vector<std::int64_t> chunks{};
  std::string backend = "cpu";           // cpu, sparse or cuda
  std::string dtype = "float64";         // float64 or float32
  std::uint64_t seed = 0;                // random
  std::string distribution = "uniform";  // random: uniform in [low, high) or normal(mean=low, stddev=high)
  double low = 0.0, high = 1.0;
  double density = 0.01;  // random on the sparse backend: the fraction of stored entries
};

class Array {
 public:
  // --- creation ---
  static Array from_eigen(const Eigen::MatrixXd& matrix, const ArrayOptions& options = {});
  static Array from_eigen(const Eigen::MatrixXf& matrix, const ArrayOptions& options = {});
  static Array from_eigen(const Eigen::VectorXd& vector, const ArrayOptions& options = {});  // 1-D
  // Elements someone else owns (a NumPy array in C or Fortran order, or any strides the Map describes),
  // copied once, block by block, into the array's chunks. `ndim` 1 makes a 1-D array of a one-column view.
  using MatrixView = Eigen::Map<const Eigen::MatrixXd, 0, Eigen::Stride<Eigen::Dynamic, Eigen::Dynamic>>;
  static Array from_view(const MatrixView& view, int ndim, const ArrayOptions& options = {});
  // A sparse array whatever options.backend says (only chunks and dtype are read); to_backend() moves it.
  static Array from_sparse(const Eigen::SparseMatrix<double>& matrix, const ArrayOptions& options = {});
  // Seeded: element (i, j) depends only on (seed, i, j), whatever the chunks and the number of workers.
  static Array random(const std::vector<std::int64_t>& shape, const ArrayOptions& options = {});
  static Array zeros(const std::vector<std::int64_t>& shape, const ArrayOptions& options = {});
  static Array ones(const std::vector<std::int64_t>& shape, const ArrayOptions& options = {});
  static Array full(const std::vector<std::int64_t>& shape, double value, const ArrayOptions& options = {});
  // Each chunk from a registered task function (std::int64_t row0, std::int64_t col0, std::int64_t rows,
  // std::int64_t cols) -> Eigen::MatrixXd, run where the chunk is made.
  static Array from_function(const std::string& function, const std::vector<std::int64_t>& shape,
                             const ArrayOptions& options = {});

  // --- what is known without computing ---
  int ndim() const;
  std::vector<std::int64_t> shape() const;
  std::int64_t rows() const;  // shape[0] (1 for a 0-d array)
  std::int64_t cols() const;  // shape[1] (1 for 1-D and 0-d arrays)
  // Chunk extents per dimension, e.g. {{5000, 5000}, {1000}}.
  std::vector<std::vector<std::int64_t>> chunks() const;
  std::size_t nchunks() const;
  Meta meta() const;
  std::string describe() const;  // e.g. "Array(shape=(10000, 1000), chunks=(5000, 1000), cpu float64)"

  // --- elementwise (shapes broadcast: equal, or 1 along a dimension; a 1-D array is a row) ---
  friend Array operator+(const Array& a, const Array& b);
  friend Array operator-(const Array& a, const Array& b);
  friend Array operator*(const Array& a, const Array& b);
  friend Array operator/(const Array& a, const Array& b);
  friend Array operator+(const Array& a, double s);
  friend Array operator-(const Array& a, double s);
  friend Array operator*(const Array& a, double s);
  friend Array operator/(const Array& a, double s);
  friend Array operator+(double s, const Array& a);
  friend Array operator-(double s, const Array& a);
  friend Array operator*(double s, const Array& a);
  friend Array operator/(double s, const Array& a);
  friend Array operator-(const Array& a);
  // Comparisons give masks: 1 where true, 0 elsewhere, in the operands' element type.
  friend Array operator<(const Array& a, const Array& b);
  friend Array operator<=(const Array& a, const Array& b);
  friend Array operator>(const Array& a, const Array& b);
  friend Array operator>=(const Array& a, const Array& b);
  friend Array operator<(const Array& a, double s);
  friend Array operator<=(const Array& a, double s);
  friend Array operator>(const Array& a, double s);
  friend Array operator>=(const Array& a, double s);
  Array eq(const Array& other) const;
  Array ne(const Array& other) const;
  Array pow(double exponent) const;
  Array pow(const Array& exponent) const;
  Array minimum(const Array& other) const;
  Array maximum(const Array& other) const;
  Array exp() const;
  Array log() const;
  Array abs() const;
  Array sqrt() const;
  Array sigmoid() const;
  Array square() const;
  Array astype(const std::string& dtype) const;
  Array to_backend(const std::string& backend) const;

  // --- layout ---
  Array T() const;  // transpose (free for 1-D)
  Array slice_rows(std::int64_t begin, std::int64_t end) const;
  Array slice_cols(std::int64_t begin, std::int64_t end) const;
  Array rechunk(const std::vector<std::int64_t>& chunks) const;
  Array reshape_row() const;  // a 1-D array as a 1 x n 2-D array

  // --- products ---
  Array dot(const Array& other) const;  // matmul: 2-D x 2-D, 2-D x 1-D, 1-D x 2-D, 1-D x 1-D (0-d)

  // --- reductions: axis 0 (down the rows), 1 (along the columns) or none (all) ---
  Array sum(std::optional<int> axis = std::nullopt) const;
  Array mean(std::optional<int> axis = std::nullopt) const;
  Array min(std::optional<int> axis = std::nullopt) const;
  Array max(std::optional<int> axis = std::nullopt) const;
  Array norm(std::optional<int> axis = std::nullopt) const;    // 2-norm of vectors, Frobenius of matrices
  Array argmax(std::optional<int> axis = std::nullopt) const;  // float64 indices (flat, row-major for none)
  Array argmin(std::optional<int> axis = std::nullopt) const;

  // --- running ---
  // Computes every chunk and assembles them: n x 1 for 1-D, 1 x 1 for 0-d. float32 widens to double.
  Eigen::MatrixXd compute(Client& client) const;
  Eigen::VectorXd compute_vector(Client& client) const;  // a 1-D (or n x 1) array
  double compute_scalar(Client& client) const;           // a 0-d (or 1 x 1) array
  // Computes a sparse array without densifying it (dense chunks contribute their nonzeros).
  Eigen::SparseMatrix<double> compute_sparse(Client& client) const;
  // Computes the chunks and keeps them on the workers: the result's chunks are futures. With
  // options.checkpoint, they are also stored as checkpoints (see PersistOptions).
  Array persist(Client& client, PersistOptions options = {}) const;

 private:
  friend struct detail::ArrayAccess;
  explicit Array(std::shared_ptr<const detail::ArrayData> data) : data_(std::move(data)) {}

  std::shared_ptr<const detail::ArrayData> data_;
};

Array where(const Array& mask, const Array& a, const Array& b);
Array where(const Array& mask, double a, const Array& b);
Array where(const Array& mask, const Array& a, double b);
Array matmul(const Array& a, const Array& b);
// Joins arrays along an axis (0: stack rows, 1: side by side); the other extents must agree.
Array concatenate(const std::vector<Array>& arrays, int axis = 0);
// Computes several arrays in one graph (they share what they have in common).
std::vector<Eigen::MatrixXd> compute(Client& client, const std::vector<Array>& arrays);
template <class... A>
requires(sizeof...(A) > 1 && (std::is_same_v<A, Array> &&
                              ...)) std::array<Eigen::MatrixXd, sizeof...(A)> compute(Client& client,
                                                                                      const A&... arrays) {
  auto all = compute(client, std::vector<Array>{arrays...});
  std::array<Eigen::MatrixXd, sizeof...(A)> out;
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = std::move(all[i]);
  return out;
}

}  // namespace tessera

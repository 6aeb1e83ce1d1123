// Chunk: one block of an array — its shape, element type, backend and storage. Immutable once made and
// shared by pointer, so passing a chunk between tasks in one process never copies its elements.
#pragma once

#include <Eigen/Core>
#include <Eigen/SparseCore>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <variant>

namespace tessera::backends {

enum class Backend : std::uint8_t { cpu, sparse, cuda };
enum class DType : std::uint8_t { float64, float32 };

std::string_view backend_name(Backend backend);
std::string_view dtype_name(DType dtype);
std::optional<Backend> parse_backend(std::string_view name);
std::optional<DType> parse_dtype(std::string_view name);
std::size_t dtype_size(DType dtype);

// What is known about an array's chunks without computing them (the role of Dask's `_meta`).
struct Meta {
  Backend backend = Backend::cpu;
  DType dtype = DType::float64;
  bool operator==(const Meta&) const = default;
};
std::string to_string(const Meta& meta);

// A kernel's complaint: a wrong shape, a missing kernel, a backend that is unavailable.
class KernelError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

template <class T>
using DenseMatrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic>;  // column-major
template <class T>
using SparseMatrix = Eigen::SparseMatrix<T, Eigen::ColMajor, std::int64_t>;

// Device memory owned by a GPU backend; the chunk only keeps it alive.
class DeviceStorage {
 public:
  virtual ~DeviceStorage() = default;
  virtual int device() const = 0;
  virtual const void* data() const = 0;
};

class Chunk;
using ChunkPtr = std::shared_ptr<const Chunk>;

// A dense chunk's elements as kernels read them: over the chunk's own matrix, or over memory it adopted.
template <class T>
using DenseView = Eigen::Map<const DenseMatrix<T>>;

class Chunk {
 public:
  template <class T>
  static ChunkPtr dense(DenseMatrix<T> matrix) {
    return std::make_shared<const Chunk>(Private{}, std::move(matrix));
  }
  template <class T>
  static ChunkPtr sparse(SparseMatrix<T> matrix) {
    matrix.makeCompressed();
    return std::make_shared<const Chunk>(Private{}, std::move(matrix));
  }
  static ChunkPtr device(std::shared_ptr<const DeviceStorage> storage, std::int64_t rows, std::int64_t cols,
                         DType dtype) {
    return std::make_shared<const Chunk>(Private{}, DeviceBlock{std::move(storage), rows, cols, dtype});
  }
  // A dense chunk over rows x cols elements (column-major) that `owner` keeps alive, which are not copied:
  // a received message's frame becomes the chunk's storage.
  template <class T>
  static ChunkPtr adopt_dense(std::shared_ptr<const void> owner, const T* data, std::int64_t rows,
                              std::int64_t cols) {
    return std::make_shared<const Chunk>(Private{}, Adopted<T>{std::move(owner), data, rows, cols});
  }

  std::int64_t rows() const;
  std::int64_t cols() const;
  std::int64_t size() const { return rows() * cols(); }
  DType dtype() const;
  Backend backend() const;
  Meta meta() const { return {backend(), dtype()}; }
  // The bytes this chunk keeps alive (stored entries only, for sparse chunks).
  std::size_t bytes() const;
  std::string describe() const;  // e.g. "cpu float64 1000x1000"

  // Typed access; each throws KernelError naming what was expected and what the chunk is. dense() is a view
  // into the chunk (its matrix, or adopted memory): `auto m = chunk->dense<T>()` does not copy, so keep
  // the chunk alive while m is used.
  template <class T>
  DenseView<T> dense() const {
    if (auto* m = std::get_if<DenseMatrix<T>>(&storage_))
      return DenseView<T>(m->data(), m->rows(), m->cols());
    if (auto* a = std::get_if<Adopted<T>>(&storage_)) return DenseView<T>(a->data, a->rows, a->cols);
    throw_access(std::is_same_v<T, double> ? "cpu float64" : "cpu float32");
  }
  // Whether the elements are adopted memory (a received frame) rather than the chunk's own matrix.
  bool adopted() const { return storage_.index() >= 5; }
  template <class T>
  const SparseMatrix<T>& sparse() const {
    if (auto* m = std::get_if<SparseMatrix<T>>(&storage_)) return *m;
    throw_access(std::is_same_v<T, double> ? "sparse float64" : "sparse float32");
  }
  const DeviceStorage& device_storage() const;
  std::shared_ptr<const DeviceStorage> device_storage_ptr() const;

  // Chunk::dense etc. construct through make_shared; the tag keeps construction to these factories.
  struct Private {};
  struct DeviceBlock {
    std::shared_ptr<const DeviceStorage> storage;
    std::int64_t rows, cols;
    DType dtype;
  };
  template <class T>
  struct Adopted {
    std::shared_ptr<const void> owner;
    const T* data;
    std::int64_t rows, cols;
  };
  template <class S>
  Chunk(Private, S storage) : storage_(std::move(storage)) {}

 private:
  [[noreturn]] void throw_access(const char* expected) const;
  // The order is dtype()'s and backend()'s: cpu float64, cpu float32, sparse, sparse, cuda, then adopted cpu
  // float64 and float32.
  std::variant<DenseMatrix<double>, DenseMatrix<float>, SparseMatrix<double>, SparseMatrix<float>,
               DeviceBlock, Adopted<double>, Adopted<float>>
      storage_;
};

// Calls fn with the chunk's dense matrix, whichever its element type.
template <class F>
decltype(auto) visit_dense(const Chunk& chunk, F&& fn) {
  if (chunk.dtype() == DType::float64) return fn(chunk.dense<double>());
  return fn(chunk.dense<float>());
}
template <class F>
decltype(auto) visit_sparse(const Chunk& chunk, F&& fn) {
  if (chunk.dtype() == DType::float64) return fn(chunk.sparse<double>());
  return fn(chunk.sparse<float>());
}

template <class T>
constexpr DType dtype_of() {
  return std::is_same_v<T, double> ? DType::float64 : DType::float32;
}

}  // namespace tessera::backends

#include "backends/chunk.hpp"

namespace tessera::backends {

std::string_view backend_name(Backend backend) {
  switch (backend) {
    case Backend::cpu:
      return "cpu";
    case Backend::sparse:
      return "sparse";
    case Backend::cuda:
      return "cuda";
  }
  return "unknown";
}

std::string_view dtype_name(DType dtype) {
  return dtype == DType::float64 ? "float64" : "float32";
}

std::optional<Backend> parse_backend(std::string_view name) {
  for (Backend b : {Backend::cpu, Backend::sparse, Backend::cuda})
    if (backend_name(b) == name) return b;
  return std::nullopt;
}

std::optional<DType> parse_dtype(std::string_view name) {
  if (name == "float64" || name == "f8" || name == "double") return DType::float64;
  if (name == "float32" || name == "f4" || name == "float") return DType::float32;
  return std::nullopt;
}

std::size_t dtype_size(DType dtype) {
  return dtype == DType::float64 ? 8 : 4;
}

std::string to_string(const Meta& meta) {
  return std::string(backend_name(meta.backend)) + " " + std::string(dtype_name(meta.dtype));
}

std::int64_t Chunk::rows() const {
  return std::visit(
      [](const auto& s) -> std::int64_t {
        using S = std::decay_t<decltype(s)>;
        if constexpr (std::is_same_v<S, Chunk::DeviceBlock> || std::is_same_v<S, Chunk::Adopted<double>> ||
                      std::is_same_v<S, Chunk::Adopted<float>>) {
          return s.rows;
        } else {
          return s.rows();
        }
      },
      storage_);
}

std::int64_t Chunk::cols() const {
  return std::visit(
      [](const auto& s) -> std::int64_t {
        using S = std::decay_t<decltype(s)>;
        if constexpr (std::is_same_v<S, Chunk::DeviceBlock> || std::is_same_v<S, Chunk::Adopted<double>> ||
                      std::is_same_v<S, Chunk::Adopted<float>>) {
          return s.cols;
        } else {
          return s.cols();
        }
      },
      storage_);
}

DType Chunk::dtype() const {
  switch (storage_.index()) {
    case 0:
    case 2:
    case 5:
      return DType::float64;
    case 1:
    case 3:
    case 6:
      return DType::float32;
    default:
      return std::get<DeviceBlock>(storage_).dtype;
  }
}

Backend Chunk::backend() const {
  switch (storage_.index()) {
    case 0:
    case 1:
    case 5:
    case 6:
      return Backend::cpu;
    case 2:
    case 3:
      return Backend::sparse;
    default:
      return Backend::cuda;
  }
}

std::size_t Chunk::bytes() const {
  const std::size_t element = dtype_size(dtype());
  if (backend() == Backend::sparse) {
    const auto nonzeros = static_cast<std::size_t>(std::visit(
        [](const auto& s) -> std::int64_t {
          if constexpr (std::is_same_v<std::decay_t<decltype(s)>, SparseMatrix<double>> ||
                        std::is_same_v<std::decay_t<decltype(s)>, SparseMatrix<float>>) {
            return s.nonZeros();
          } else {
            return 0;
          }
        },
        storage_));
    return nonzeros * (element + sizeof(std::int64_t)) + static_cast<std::size_t>(cols() + 1) * 8;
  }
  return static_cast<std::size_t>(size()) * element;
}

std::string Chunk::describe() const {
  return to_string(meta()) + " " + std::to_string(rows()) + "x" + std::to_string(cols());
}

const DeviceStorage& Chunk::device_storage() const {
  if (auto* block = std::get_if<DeviceBlock>(&storage_)) return *block->storage;
  throw_access("cuda");
}

std::shared_ptr<const DeviceStorage> Chunk::device_storage_ptr() const {
  if (auto* block = std::get_if<DeviceBlock>(&storage_)) return block->storage;
  throw_access("cuda");
}

void Chunk::throw_access(const char* expected) const {
  throw KernelError("expected a " + std::string(expected) + " chunk, got " + describe());
}

}  // namespace tessera::backends

// Helpers the cuda host kernels share: input checks, the device a kernel runs on, and cuBLAS/cuSOLVER
// dimensions.
#pragma once

#include <climits>
#include <span>
#include <string>
#include <string_view>

#include "backends/cpu/dense_util.hpp"  // shape_text, with_dtype, require_inputs, ... (header-only)
#include "backends/cuda/device_buffer.hpp"
#include "backends/dispatch.hpp"

namespace tessera::backends::cuda {

using cpu::broadcast_extent;
using cpu::require_inputs;
using cpu::require_same_dtype;
using cpu::shape_text;
using cpu::with_dtype;

// The device a kernel runs on: that of its inputs, which must all be cuda chunks on one device.
inline int input_device(std::string_view op, std::span<const ChunkPtr> inputs) {
  int device = -1;
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    const Chunk& chunk = *inputs[k];
    if (chunk.backend() != Backend::cuda)
      throw KernelError(std::string(op) + ": input " + std::to_string(k) + " is a " + chunk.describe() +
                        " chunk; the cuda kernel takes cuda chunks (convert with to_cuda)");
    const int chunk_device = chunk.device_storage().device();
    if (device >= 0 && chunk_device != device)
      throw KernelError(std::string(op) + ": inputs on cuda devices " + std::to_string(device) + " and " +
                        std::to_string(chunk_device) + "; a kernel runs on one device");
    device = chunk_device;
  }
  if (device < 0) throw KernelError(std::string(op) + " needs at least one input");
  return device;
}

// A dimension as cuBLAS and cuSOLVER take it (int), or a KernelError saying it is too large.
inline int blas_int(std::int64_t value, std::string_view op) {
  if (value < 0 || value > INT_MAX)
    throw KernelError(std::string(op) + ": dimension " + std::to_string(value) +
                      " does not fit cuBLAS/cuSOLVER's 32-bit int");
  return static_cast<int>(value);
}

// A leading dimension: at least 1, as BLAS requires even of empty matrices.
inline int leading_dimension(std::int64_t rows, std::string_view op) {
  return blas_int(std::max<std::int64_t>(1, rows), op);
}

void register_elementwise(Dispatch& dispatch);
void register_layout(Dispatch& dispatch);
void register_reductions(Dispatch& dispatch);
void register_linalg(Dispatch& dispatch);

}  // namespace tessera::backends::cuda

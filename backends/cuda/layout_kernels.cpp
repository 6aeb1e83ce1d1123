// Creation, layout and conversion cuda kernels: random, full, transpose, assemble, to_host and to_cuda.
#include "backends/cuda/blas.hpp"
#include "backends/cuda/device_kernels.hpp"
#include "backends/cuda/kernel_util.hpp"
#include "backends/kernel_params.hpp"
#include "backends/operations.hpp"

namespace tessera::backends::cuda {
namespace {

void require_shape(std::string_view op, std::int64_t rows, std::int64_t cols) {
  if (rows < 0 || cols < 0) throw KernelError(std::string(op) + ": negative shape " + shape_text(rows, cols));
}

// Uploads a cpu chunk to the calling thread's current device.
ChunkPtr upload_to_current_device(const Chunk& chunk) {
  KernelStream stream(current_device());
  return with_dtype(chunk.dtype(), [&](auto t) {
    using T = decltype(t);
    ChunkPtr out = enqueue_upload<T>(stream, chunk.dense<T>());
    stream.synchronize();  // always (in a queue too): the caller may free the host chunk once this returns
    return out;
  });
}

// The values are made on the host by the cpu kernel, with the same counter-based generator, so cuda and cpu
// arrays with one seed hold identical values whatever their chunking.
Chunks random(std::span<const ChunkPtr> in, const Params& p) {
  const Chunks host = Dispatch::global().get(ops::random, Backend::cpu)(in, p);
  return {upload_to_current_device(*host.at(0))};
}

Chunks full(std::span<const ChunkPtr>, const Params& params) {
  const auto p = FullParams::from(params);
  const auto rows = p.rows, cols = p.cols;
  require_shape("full", rows, cols);
  KernelStream stream(current_device());
  return {with_dtype(p.dtype, [&](auto t) {
    using T = decltype(t);
    DeviceOutput<T> out(stream, rows, cols);
    launch_fill<T>(out.data(), rows * cols, static_cast<T>(p.value), stream.stream());
    stream.finish();
    return out.chunk();
  })};
}

Chunks transpose(std::span<const ChunkPtr> in, const Params&) {
  require_inputs("transpose", in, 1);
  KernelStream stream(input_device("transpose", in));
  const auto rows = in[0]->rows(), cols = in[0]->cols();
  return {with_dtype(in[0]->dtype(), [&](auto t) {
    using T = decltype(t);
    DeviceOutput<T> out(stream, cols, rows);
    if (rows > 0 && cols > 0)
      blas::transpose(stream.blas(), blas_int(cols, "transpose"), blas_int(rows, "transpose"),
                      device_data<T>(*in[0], "transpose"), leading_dimension(rows, "transpose"), out.data(),
                      leading_dimension(cols, "transpose"));
    stream.finish();
    return out.chunk();
  })};
}

Chunks assemble(std::span<const ChunkPtr> in, const Params& params) {
  if (in.empty()) throw KernelError("assemble needs at least one chunk");
  KernelStream stream(input_device("assemble", in));
  const auto p = AssembleParams::from(params);
  cpu::check_assemble(in, p);
  const auto& blocks = p.blocks;
  const auto rows = p.rows, cols = p.cols;
  // A block that is a whole chunk's whole extent is that chunk: no copy.
  if (in.size() == 1 && blocks[0].rows == in[0]->rows() && blocks[0].cols == in[0]->cols() &&
      rows == blocks[0].rows && cols == blocks[0].cols)
    return {in[0]};
  return {with_dtype(in[0]->dtype(), [&](auto t) {
    using T = decltype(t);
    DeviceOutput<T> out(stream, rows, cols);
    // Elements no block covers are zero, as on cpu; skip the fill when one block covers everything.
    const bool one_block_covers_all = std::any_of(blocks.begin(), blocks.end(), [&](const AssembleBlock& b) {
      return b.rows == rows && b.cols == cols;
    });
    if (!one_block_covers_all && rows * cols > 0)
      check_cuda(
          cudaMemsetAsync(out.data(), 0, static_cast<std::size_t>(rows * cols) * sizeof(T), stream.stream()),
          "cudaMemsetAsync");
    for (std::size_t k = 0; k < in.size(); ++k) {
      const auto& b = blocks[k];
      if (b.rows == 0 || b.cols == 0) continue;
      const T* source = device_data<T>(*in[k], "assemble") + b.src_row + b.src_col * in[k]->rows();
      // Column-major: each column of the block is one contiguous run of b.rows elements.
      check_cuda(cudaMemcpy2DAsync(
                     out.data() + b.dst_row + b.dst_col * rows, static_cast<std::size_t>(rows) * sizeof(T),
                     source, static_cast<std::size_t>(in[k]->rows()) * sizeof(T),
                     static_cast<std::size_t>(b.rows) * sizeof(T), static_cast<std::size_t>(b.cols),
                     cudaMemcpyDeviceToDevice, stream.stream()),
                 "cudaMemcpy2DAsync");
    }
    stream.finish();
    return out.chunk();
  })};
}

Chunks to_host(std::span<const ChunkPtr> in, const Params&) {
  require_inputs("to_host", in, 1);
  KernelStream stream(input_device("to_host", in));
  return {with_dtype(in[0]->dtype(), [&](auto t) {
    using T = decltype(t);
    return Chunk::dense<T>(download<T>(stream, *in[0], "to_host"));
  })};
}

// cpu or sparse -> cuda, on the calling thread's current device; sparse chunks are densified first.
Chunks to_cuda_from_host(std::span<const ChunkPtr> in, const Params& p) {
  require_inputs("to_cuda", in, 1);
  if (in[0]->backend() == Backend::sparse) {
    const Chunks dense = Dispatch::global().get(ops::to_dense, Backend::sparse)(in, p);
    return {upload_to_current_device(*dense.at(0))};
  }
  return {upload_to_current_device(*in[0])};
}

Chunks to_cuda_identity(std::span<const ChunkPtr> in, const Params&) {
  require_inputs("to_cuda", in, 1);
  return {in[0]};
}

}  // namespace

void register_layout(Dispatch& d) {
  d.add(ops::random, Backend::cuda, random);
  d.add(ops::full, Backend::cuda, full);
  d.add(ops::transpose, Backend::cuda, transpose);
  d.add(ops::assemble, Backend::cuda, assemble);
  d.add(ops::to_host, Backend::cuda, to_host);
  d.add(ops::to_cuda, Backend::cpu, to_cuda_from_host);
  d.add(ops::to_cuda, Backend::sparse, to_cuda_from_host);  // Dispatch::run picks by the input's backend
  d.add(ops::to_cuda, Backend::cuda, to_cuda_identity);
}

}  // namespace tessera::backends::cuda

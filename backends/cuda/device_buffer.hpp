// Device memory behind cuda chunks, and the copies between host and device.
#pragma once

#include <cstddef>
#include <memory>

#include "backends/chunk.hpp"
#include "backends/cuda/context.hpp"

namespace tessera::backends::cuda {

// One allocation on one device: a chunk's elements or a kernel's workspace. It is taken from the device's
// memory pool in the order of the allocating kernel's stream (a thread's or a DeviceQueue's), and given back
// in that same stream's order when the last holder lets go, from whichever thread (streams are never
// destroyed, see DeviceContext::lease). So a workspace freed as its kernel ends, or dropped by an exception,
// is only reused after the work already enqueued that uses it, even when the kernel did not wait for it (in a
// queue). That order covers the allocating stream only: a buffer read by work on another stream must stay
// held until that work is done. Kernels outside queues wait for their work before returning; a queue's user
// keeps a job's inputs until its `done`, and uses its outputs only after it.
class DeviceBuffer final : public DeviceStorage {
 public:
  DeviceBuffer(const KernelStream& stream, std::size_t bytes);
  ~DeviceBuffer() override;  // errors are ignored: the process may be ending
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  int device() const override { return device_; }
  const void* data() const override { return data_; }
  void* mutable_data() { return data_; }
  std::size_t bytes() const { return bytes_; }

 private:
  void* data_ = nullptr;
  std::size_t bytes_;
  int device_;
  cudaStream_t stream_;  // the stream it was allocated on; nullptr when it came from plain cudaMalloc
};

// A kernel's fresh rows x cols output of element type T, written before it becomes a chunk.
template <class T>
class DeviceOutput {
 public:
  DeviceOutput(const KernelStream& stream, std::int64_t rows, std::int64_t cols)
      : buffer_(std::make_shared<DeviceBuffer>(stream, static_cast<std::size_t>(rows * cols) * sizeof(T))),
        rows_(rows),
        cols_(cols) {}

  T* data() const { return static_cast<T*>(buffer_->mutable_data()); }
  std::int64_t rows() const { return rows_; }
  std::int64_t cols() const { return cols_; }
  // The chunk, once the work writing it is enqueued (the kernel still calls finish() before returning it).
  ChunkPtr chunk() const { return Chunk::device(buffer_, rows_, cols_, dtype_of<T>()); }

 private:
  std::shared_ptr<DeviceBuffer> buffer_;
  std::int64_t rows_, cols_;
};

// A cuda chunk's elements as T, checking that it is one. `op` names the kernel for the error message.
template <class T>
const T* device_data(const Chunk& chunk, std::string_view op) {
  if (chunk.backend() != Backend::cuda || chunk.dtype() != dtype_of<T>())
    throw KernelError(std::string(op) + ": expected a cuda " + std::string(dtype_name(dtype_of<T>())) +
                      " chunk, got " + chunk.describe());
  return static_cast<const T*>(chunk.device_storage().data());
}

// Copies a dense host matrix to a new chunk on the stream's device (enqueued; the caller synchronizes before
// the host matrix may be freed: from pageable memory the copy need not have read it all on return).
template <class T>
ChunkPtr enqueue_upload(const KernelStream& stream, DenseView<T> matrix) {
  DeviceOutput<T> out(stream, matrix.rows(), matrix.cols());
  if (matrix.size() > 0)
    check_cuda(cudaMemcpyAsync(out.data(), matrix.data(), static_cast<std::size_t>(matrix.size()) * sizeof(T),
                               cudaMemcpyHostToDevice, stream.stream()),
               "cudaMemcpyAsync(host to device)");
  return out.chunk();
}

// Copies a cuda chunk into a host matrix, waiting for the stream (inside a queue too: the host reads it).
template <class T>
DenseMatrix<T> download(const KernelStream& stream, const Chunk& chunk, std::string_view op) {
  DenseMatrix<T> matrix(chunk.rows(), chunk.cols());
  if (matrix.size() > 0)
    check_cuda(cudaMemcpyAsync(matrix.data(), device_data<T>(chunk, op),
                               static_cast<std::size_t>(matrix.size()) * sizeof(T), cudaMemcpyDeviceToHost,
                               stream.stream()),
               "cudaMemcpyAsync(device to host)");
  stream.synchronize();
  return matrix;
}

}  // namespace tessera::backends::cuda

#include "backends/cuda/device_buffer.hpp"

namespace tessera::backends::cuda {

DeviceBuffer::DeviceBuffer(const KernelStream& stream, std::size_t bytes)
    : bytes_(bytes),
      device_(stream.device()),
      stream_(stream.has_memory_pools() ? stream.stream() : nullptr) {
  if (bytes == 0) return;  // empty chunks own no memory
  if (stream_)
    check_cuda(cudaMallocAsync(&data_, bytes, stream_), "cudaMallocAsync");
  else
    check_cuda(cudaMalloc(&data_, bytes), "cudaMalloc");
}

DeviceBuffer::~DeviceBuffer() {
  if (!data_) return;
  int previous = -1;
  const bool switch_device = cudaGetDevice(&previous) == cudaSuccess && previous != device_;
  if (switch_device) cudaSetDevice(device_);
  if (stream_)
    cudaFreeAsync(data_, stream_);
  else
    cudaFree(data_);
  if (switch_device) cudaSetDevice(previous);
  cudaGetLastError();  // a failure here must not surface as a later kernel's error
}

}  // namespace tessera::backends::cuda

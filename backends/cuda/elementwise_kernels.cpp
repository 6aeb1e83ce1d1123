// Elementwise cuda kernels: unary functions, operations with a scalar, broadcasting binary operations, where
// and astype. The device code is in elementwise.cu; here are the checks, as in the cpu kernels.
#include "backends/cuda/device_kernels.hpp"
#include "backends/cuda/kernel_util.hpp"
#include "backends/kernel_params.hpp"
#include "backends/operations.hpp"

namespace tessera::backends::cuda {
namespace {

template <class T>
Operand<T> operand(const Chunk& chunk, std::string_view op) {
  return {device_data<T>(chunk, op), chunk.rows(), chunk.cols()};
}

Chunks unary(std::span<const ChunkPtr> in, const Params& params) {
  require_inputs("unary", in, 1);
  const auto p = UnaryParams::from(params);
  KernelStream stream(input_device("unary", in));
  return {with_dtype(in[0]->dtype(), [&](auto t) {
    using T = decltype(t);
    DeviceOutput<T> out(stream, in[0]->rows(), in[0]->cols());
    launch_unary<T>(p.function, device_data<T>(*in[0], "unary"), out.data(), in[0]->size(), stream.stream());
    stream.finish();
    return out.chunk();
  })};
}

Chunks scalar(std::span<const ChunkPtr> in, const Params& params) {
  require_inputs("scalar", in, 1);
  const auto p = ScalarParams::from(params);
  KernelStream stream(input_device("scalar", in));
  return {with_dtype(in[0]->dtype(), [&](auto t) {
    using T = decltype(t);
    DeviceOutput<T> out(stream, in[0]->rows(), in[0]->cols());
    launch_scalar<T>(p.function, device_data<T>(*in[0], "scalar"), static_cast<T>(p.scalar), p.scalar_left,
                     out.data(), in[0]->size(), stream.stream());
    stream.finish();
    return out.chunk();
  })};
}

Chunks binary(std::span<const ChunkPtr> in, const Params& params) {
  require_inputs("binary", in, 2);
  const std::string& name = BinaryParams::from(params).function;
  KernelStream stream(input_device("binary", in));
  require_same_dtype(name, *in[0], *in[1]);
  const auto rows = broadcast_extent(name, in[0]->rows(), in[1]->rows(), *in[0], *in[1]);
  const auto cols = broadcast_extent(name, in[0]->cols(), in[1]->cols(), *in[0], *in[1]);
  return {with_dtype(in[0]->dtype(), [&](auto t) {
    using T = decltype(t);
    DeviceOutput<T> out(stream, rows, cols);
    launch_binary<T>(name, operand<T>(*in[0], "binary"), operand<T>(*in[1], "binary"), out.data(), rows, cols,
                     stream.stream());
    stream.finish();
    return out.chunk();
  })};
}

Chunks where(std::span<const ChunkPtr> in, const Params&) {
  const auto [rows, cols] = cpu::where_shape(in);
  KernelStream stream(input_device("where", in));
  return {with_dtype(in[1]->dtype(), [&](auto t) {
    using T = decltype(t);
    DeviceOutput<T> out(stream, rows, cols);
    with_dtype(in[0]->dtype(), [&](auto m) {
      using M = decltype(m);
      launch_where<M, T>(operand<M>(*in[0], "where"), operand<T>(*in[1], "where"),
                         operand<T>(*in[2], "where"), out.data(), rows, cols, stream.stream());
    });
    stream.finish();
    return out.chunk();
  })};
}

Chunks astype(std::span<const ChunkPtr> in, const Params& params) {
  require_inputs("astype", in, 1);
  const auto target = AstypeParams::from(params).dtype;
  if (target == in[0]->dtype()) return {in[0]};
  KernelStream stream(input_device("astype", in));
  const auto count = in[0]->size();
  if (target == DType::float32) {
    DeviceOutput<float> out(stream, in[0]->rows(), in[0]->cols());
    launch_convert(device_data<double>(*in[0], "astype"), out.data(), count, stream.stream());
    stream.finish();
    return {out.chunk()};
  }
  DeviceOutput<double> out(stream, in[0]->rows(), in[0]->cols());
  launch_convert(device_data<float>(*in[0], "astype"), out.data(), count, stream.stream());
  stream.finish();
  return {out.chunk()};
}

}  // namespace

void register_elementwise(Dispatch& d) {
  d.add(ops::unary, Backend::cuda, unary);
  d.add(ops::scalar, Backend::cuda, scalar);
  d.add(ops::binary, Backend::cuda, binary);
  d.add(ops::where, Backend::cuda, where);
  d.add(ops::astype, Backend::cuda, astype);
}

}  // namespace tessera::backends::cuda

// Reduction cuda kernels: per-chunk partials (sum, sumsq, min, max, argmax, argmin) on the device, and the
// combination of partials, which are small, on the host by the cpu kernel.
#include "backends/cuda/device_kernels.hpp"
#include "backends/cuda/kernel_util.hpp"
#include "backends/kernel_params.hpp"
#include "backends/operations.hpp"

namespace tessera::backends::cuda {
namespace {

Chunks reduce(std::span<const ChunkPtr> in, const Params& params) {
  require_inputs("reduce", in, 1);
  const auto p = ReduceParams::from(params);
  const auto axis = p.axis;
  const std::string& name = p.reduction;
  KernelStream stream(input_device("reduce", in));
  const auto rows = in[0]->rows(), cols = in[0]->cols();
  if ((name == "min" || name == "max") && in[0]->size() == 0 &&
      (axis == -1 || (axis == 0 ? rows : cols) == 0))
    throw KernelError("reduce " + name + " of an empty chunk " + shape_text(rows, cols) + " has no value");
  return {with_dtype(in[0]->dtype(), [&](auto t) {
    using T = decltype(t);
    DeviceOutput<T> out(stream, axis == 1 ? rows : 1, axis == 0 ? cols : 1);
    DeviceBuffer workspace(stream, axis == -1 ? kReductionWorkspaceBytes : 0);
    launch_reduce<T>(name, device_data<T>(*in[0], "reduce"), rows, cols, static_cast<int>(axis), out.data(),
                     workspace.mutable_data(), stream.stream());
    stream.finish();
    return out.chunk();
  })};
}

Chunks argreduce(std::span<const ChunkPtr> in, const Params& params) {
  require_inputs("argreduce", in, 1);
  const auto p = ArgreduceParams::from(params);
  const auto axis = p.axis, row0 = p.first_row, col0 = p.first_col, total_cols = p.total_cols;
  const std::string& name = p.reduction;
  if (name != "argmax" && name != "argmin")
    throw KernelError("unknown arg reduction '" + name + "' (known: argmax, argmin)");
  KernelStream stream(input_device("argreduce", in));
  const auto rows = in[0]->rows(), cols = in[0]->cols();
  if (in[0]->size() == 0) throw KernelError(name + " of an empty chunk");
  // Indices beyond 2^24 do not fit a float exactly, so arg partials are float64 whatever the input.
  DeviceOutput<double> out(stream, axis == 0 ? 2 : (axis == 1 ? rows : 1), axis == 0 ? cols : 2);
  DeviceBuffer workspace(stream, axis == -1 ? kReductionWorkspaceBytes : 0);
  with_dtype(in[0]->dtype(), [&](auto t) {
    using T = decltype(t);
    launch_argreduce<T>(name == "argmax", device_data<T>(*in[0], "argreduce"), rows, cols,
                        static_cast<int>(axis), row0, col0, total_cols, out.data(), workspace.mutable_data(),
                        stream.stream());
  });
  stream.finish();
  return {out.chunk()};
}

// Partials are a few values per row or column: combining them on the host with the cpu kernel costs a copy of
// each and keeps exactly the cpu's rules (ties, NaN, error messages).
Chunks combine(std::span<const ChunkPtr> in, const Params& params) {
  if (in.empty()) throw KernelError("combine needs at least one partial result");
  CombineParams::from(params);  // checked here, read by the cpu kernel
  KernelStream stream(input_device("combine", in));
  if (in.size() == 1) return {in[0]};
  Chunks host;
  host.reserve(in.size());
  for (const auto& chunk : in)
    host.push_back(with_dtype(chunk->dtype(), [&](auto t) {
      using T = decltype(t);
      return Chunk::dense<T>(download<T>(stream, *chunk, "combine"));
    }));
  const Chunks combined = Dispatch::global().get(ops::combine, Backend::cpu)(host, params);
  return with_dtype(combined.at(0)->dtype(), [&](auto t) -> Chunks {
    using T = decltype(t);
    ChunkPtr out = enqueue_upload<T>(stream, combined[0]->dense<T>());
    stream.synchronize();  // always (in a queue too): `combined`, which the copy reads, is freed on return
    return {out};
  });
}

}  // namespace

void register_reductions(Dispatch& d) {
  d.add(ops::reduce, Backend::cuda, reduce);
  d.add(ops::argreduce, Backend::cuda, argreduce);
  d.add(ops::combine, Backend::cuda, combine);
}

}  // namespace tessera::backends::cuda

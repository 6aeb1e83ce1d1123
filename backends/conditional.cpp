#include "backends/conditional.hpp"

#include "backends/kernel_params.hpp"
#include "backends/operations.hpp"

namespace tessera::backends {
namespace {

Chunks gated(std::span<const ChunkPtr> in, const Params& params) {
  if (in.empty()) throw KernelError("gated needs the flag");
  const auto p = GatedParams::from(params);
  if (flag_is_set(in[0]) == p.run_when_set)
    return Dispatch::global().run(p.inner_operation, in.subspan(1), p.inner);
  Chunks empty;
  for (int i = 0; i < p.outputs; ++i) empty.push_back(Chunk::dense<double>(DenseMatrix<double>(0, 0)));
  return empty;
}

Chunks choose(std::span<const ChunkPtr> in, const Params& params) {
  if (in.size() != 3) throw KernelError("choose needs the flag, A and B, got " + std::to_string(in.size()));
  if (flag_is_set(in[0])) return {in[1]};
  const auto p = ChooseParams::from(params);
  const ChunkPtr& b = in[2];
  if (p.rows < 0) return {b};
  if (p.offset < 0 || p.offset + p.rows > b->rows())
    throw KernelError("choose: rows [" + std::to_string(p.offset) + ", " + std::to_string(p.offset + p.rows) +
                      ") of a " + b->describe() + " chunk");
  if (p.offset == 0 && p.rows == b->rows()) return {b};
  const std::vector<ChunkPtr> one{b};
  return Dispatch::global().run(
      ops::assemble, one,
      AssembleParams{p.rows, b->cols(), {{p.offset, 0, p.rows, b->cols(), 0, 0}}}.to_params());
}

}  // namespace

bool flag_is_set(const ChunkPtr& flag) {
  ChunkPtr host = flag;
  if (host->backend() == Backend::cuda) {
    const std::vector<ChunkPtr> one{host};
    host = Dispatch::global().run(ops::to_host, one, {}).front();
  }
  if (host->backend() != Backend::cpu || host->size() != 1)
    throw KernelError("a flag must be a 1 x 1 dense chunk, got " + host->describe());
  return visit_dense(*host, [](const auto& m) { return m(0, 0) != 0; });
}

void register_conditional_kernels(Dispatch& dispatch) {
  for (Backend b : {Backend::cpu, Backend::sparse, Backend::cuda}) {
    dispatch.add(ops::gated, b, gated);
    dispatch.add(ops::choose, b, choose);
  }
}

}  // namespace tessera::backends

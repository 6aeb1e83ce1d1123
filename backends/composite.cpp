#include "backends/composite.hpp"

#include <array>
#include <limits>

#include "backends/operations.hpp"

namespace tessera::backends {
namespace {

ChunkPtr run1(std::string_view op, std::initializer_list<ChunkPtr> inputs, const Params& params = {}) {
  const std::vector<ChunkPtr> in(inputs);
  return Dispatch::global().run(op, in, params).front();
}

ChunkPtr rows_of(const ChunkPtr& c, std::int64_t offset, std::int64_t rows) {
  if (offset < 0 || rows < 0 || offset + rows > c->rows())
    throw KernelError("qr_descend: rows [" + std::to_string(offset) + ", " + std::to_string(offset + rows) +
                      ") of a " + c->describe() + " chunk");
  return run1(ops::assemble, {c}, Params{{}, {rows, c->cols(), offset, 0, rows, c->cols(), 0, 0}, {}});
}

// Applies the levels below the root, from `first` on, to C.
ChunkPtr descend(ChunkPtr c, std::span<const ChunkPtr> levels, const std::vector<std::int64_t>& ints) {
  if (levels.size() % 2 != 0 || ints.size() != levels.size())
    throw KernelError("qr_descend: " + std::to_string(levels.size()) + " factor chunks and " +
                      std::to_string(ints.size()) + " offsets do not pair up");
  for (std::size_t l = 0; l < levels.size(); l += 2) {
    const ChunkPtr part = rows_of(c, ints[l], ints[l + 1]);
    c = run1(ops::qr_apply, {levels[l], levels[l + 1], part});
  }
  return c;
}

Chunks qr_descend(std::span<const ChunkPtr> in, const Params& p) {
  if (in.empty()) throw KernelError("qr_descend needs C");
  return {descend(in[0], in.subspan(1), p.ints)};
}

// The largest over the smallest singular value (infinity when the smallest is zero).
double condition_number(const ChunkPtr& s_chunk) {
  ChunkPtr s = s_chunk;
  if (s->backend() == Backend::cuda) s = run1(ops::to_host, {s});
  return visit_dense(*s, [](const auto& m) {
    if (m.size() == 0) return 1.0;
    const double largest = static_cast<double>(m.maxCoeff()), smallest = static_cast<double>(m.minCoeff());
    return smallest > 0 ? largest / smallest : std::numeric_limits<double>::infinity();
  });
}

Chunks svd_left(std::span<const ChunkPtr> in, const Params& p) {
  if (in.size() < 6) throw KernelError("svd_left needs X, S, Vt, U_R and the root's factor");
  const ChunkPtr &x = in[0], &s = in[1], &vt = in[2], &u_r = in[3], &root_packed = in[4], &root_tau = in[5];
  const double limit = p.reals.empty() ? 0.0 : p.reals[0];
  if (condition_number(s) <= limit) {
    // V S^-1 first (n x k, small): U is then one product, with no pass over it afterwards.
    const ChunkPtr v_scaled = run1(ops::scale_columns, {run1(ops::transpose, {vt}), s}, Params{{}, {1}, {}});
    return {run1(ops::matmul, {x, v_scaled}, Params{{}, {0, 0}, {}})};
  }
  const ChunkPtr c = run1(ops::qr_apply, {root_packed, root_tau, u_r});
  return {descend(c, in.subspan(6), p.ints)};
}

}  // namespace

void register_composite_kernels(Dispatch& dispatch) {
  for (Backend b : {Backend::cpu, Backend::sparse, Backend::cuda}) {
    const bool has_parts =
        dispatch.has(ops::assemble, b) && dispatch.has(ops::qr_apply, b) && dispatch.has(ops::transpose, b);
    if (!has_parts) continue;
    dispatch.add(ops::qr_descend, b, qr_descend);
    if (dispatch.has(ops::matmul, b) && dispatch.has(ops::scale_columns, b))
      dispatch.add(ops::svd_left, b, svd_left);
  }
}

}  // namespace tessera::backends

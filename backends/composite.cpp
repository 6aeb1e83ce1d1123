#include "backends/composite.hpp"

#include <array>
#include <limits>

#include "backends/kernel_params.hpp"
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
  return run1(ops::assemble, {c},
              AssembleParams{rows, c->cols(), {{offset, 0, rows, c->cols(), 0, 0}}}.to_params());
}

// Applies the levels below the root to C: each level's (packed, tau) chunks with its part of C.
ChunkPtr descend(ChunkPtr c, std::span<const ChunkPtr> factors, const std::vector<DescentLevel>& levels) {
  if (factors.size() != 2 * levels.size())
    throw KernelError("qr_descend: " + std::to_string(factors.size()) + " factor chunks and " +
                      std::to_string(2 * levels.size()) + " offsets do not pair up");
  for (std::size_t l = 0; l < levels.size(); ++l) {
    const ChunkPtr part = rows_of(c, levels[l].offset, levels[l].rows);
    c = run1(ops::qr_apply, {factors[2 * l], factors[2 * l + 1], part});
  }
  return c;
}

Chunks qr_descend(std::span<const ChunkPtr> in, const Params& params) {
  if (in.empty()) throw KernelError("qr_descend needs C");
  return {descend(in[0], in.subspan(1), QrDescendParams::from(params).levels)};
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

// X Vt^T S^-1, with V S^-1 formed first (n x k, small): U is then one product, with no pass over it
// afterwards.
ChunkPtr project(const ChunkPtr& x, const ChunkPtr& s, const ChunkPtr& vt) {
  const ChunkPtr v_scaled =
      run1(ops::scale_columns, {run1(ops::transpose, {vt}), s}, ScaleColumnsParams{true}.to_params());
  return run1(ops::matmul, {x, v_scaled}, MatmulParams{false, false}.to_params());
}

Chunks gram_left(std::span<const ChunkPtr> in, const Params&) {
  if (in.size() != 3)
    throw KernelError("gram_left needs X, S and Vt, got " + std::to_string(in.size()) + " inputs");
  return {project(in[0], in[1], in[2])};
}

Chunks svd_left(std::span<const ChunkPtr> in, const Params& params) {
  if (in.size() < 6) throw KernelError("svd_left needs X, S, Vt, U_R and the root's factor");
  const auto p = SvdLeftParams::from(params);
  const ChunkPtr &x = in[0], &s = in[1], &vt = in[2], &u_r = in[3], &root_packed = in[4], &root_tau = in[5];
  if (condition_number(s) <= p.max_condition) return {project(x, s, vt)};
  const ChunkPtr c = run1(ops::qr_apply, {root_packed, root_tau, u_r});
  return {descend(c, in.subspan(6), p.levels)};
}

}  // namespace

void register_composite_kernels(Dispatch& dispatch) {
  for (Backend b : {Backend::cpu, Backend::sparse, Backend::cuda}) {
    const bool has_parts =
        dispatch.has(ops::assemble, b) && dispatch.has(ops::qr_apply, b) && dispatch.has(ops::transpose, b);
    if (!has_parts) continue;
    dispatch.add(ops::qr_descend, b, qr_descend);
    if (dispatch.has(ops::matmul, b) && dispatch.has(ops::scale_columns, b)) {
      dispatch.add(ops::svd_left, b, svd_left);
      dispatch.add(ops::gram_left, b, gram_left);
    }
  }
}

}  // namespace tessera::backends

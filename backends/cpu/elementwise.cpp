// Dense elementwise kernels: unary functions, operations with a scalar, broadcasting binary operations,
// where and astype.
#include <limits>

#include "backends/cpu/dense_util.hpp"
#include "backends/cpu/elementwise_ops.hpp"
#include "backends/donation.hpp"
#include "backends/kernel_params.hpp"
#include "backends/operations.hpp"

namespace tessera::backends::cpu {
namespace {

template <class T, class F>
DenseMatrix<T> broadcast_binary(const std::string& op, const Chunk& x, const Chunk& y, F f) {
  const auto& a = x.dense<T>();
  const DenseMatrix<T> b_storage = y.backend() == Backend::sparse ? to_dense_copy<T>(y) : DenseMatrix<T>();
  const auto& b = y.backend() == Backend::sparse ? b_storage : y.dense<T>();
  if (a.rows() == b.rows() && a.cols() == b.cols()) return a.binaryExpr(b, f);
  const auto rows = broadcast_extent(op, a.rows(), b.rows(), x, y);
  const auto cols = broadcast_extent(op, a.cols(), b.cols(), x, y);
  DenseMatrix<T> out(rows, cols);
  const bool ar = a.rows() == 1, ac = a.cols() == 1, br = b.rows() == 1, bc = b.cols() == 1;
  for (Eigen::Index j = 0; j < cols; ++j)
    for (Eigen::Index i = 0; i < rows; ++i)
      out(i, j) = f(a(ar ? 0 : i, ac ? 0 : j), b(br ? 0 : i, bc ? 0 : j));
  return out;
}

// y = f(x) elementwise: into x's own matrix when x is donated (backends/donation.hpp), else a new one.
template <class T, class F>
ChunkPtr map_elements(const ChunkPtr& x, F f) {
  if (T* elements = donated_elements<T>(x)) {
    Eigen::Map<DenseMatrix<T>> in_place(elements, x->rows(), x->cols());
    in_place = in_place.unaryExpr(f);
    return x;
  }
  return Chunk::dense<T>(x->dense<T>().unaryExpr(f));
}

Chunks unary(std::span<const ChunkPtr> in, const Params& params) {
  require_inputs("unary", in, 1);
  const auto p = UnaryParams::from(params);
  return {with_dtype(in[0]->dtype(), [&](auto t) {
    using T = decltype(t);
    return with_unary<T>(p.function, [&](auto f) { return map_elements<T>(in[0], f); });
  })};
}

Chunks scalar(std::span<const ChunkPtr> in, const Params& params) {
  require_inputs("scalar", in, 1);
  const auto p = ScalarParams::from(params);
  return {with_dtype(in[0]->dtype(), [&](auto t) {
    using T = decltype(t);
    const T s = static_cast<T>(p.scalar);
    return with_binary<T>(p.function, [&](auto f) {
      if (p.scalar_left) return map_elements<T>(in[0], [&](T x) { return f(s, x); });
      return map_elements<T>(in[0], [&](T x) { return f(x, s); });
    });
  })};
}

Chunks binary(std::span<const ChunkPtr> in, const Params& params) {
  require_inputs("binary", in, 2);
  const auto p = BinaryParams::from(params);
  require_same_dtype(p.function, *in[0], *in[1]);
  return {with_dtype(in[0]->dtype(), [&](auto t) {
    using T = decltype(t);
    return with_binary<T>(p.function, [&](auto f) -> ChunkPtr {
      // Same shapes, one of them donated: into its matrix (a + b with a an intermediate of a fused chain).
      if (in[0]->backend() == Backend::cpu && in[1]->backend() == Backend::cpu &&
          in[0]->rows() == in[1]->rows() && in[0]->cols() == in[1]->cols())
        for (std::size_t d = 0; d < 2; ++d)
          if (T* elements = donated_elements<T>(in[d])) {
            Eigen::Map<DenseMatrix<T>> out(elements, in[d]->rows(), in[d]->cols());
            out = in[0]->dense<T>().binaryExpr(in[1]->dense<T>(), f);
            return in[d];
          }
      return Chunk::dense<T>(broadcast_binary<T>(p.function, *in[0], *in[1], f));
    });
  })};
}

Chunks where(std::span<const ChunkPtr> in, const Params&) {
  const auto [rows, cols] = where_shape(in);
  return {with_dtype(in[1]->dtype(), [&](auto t) {
    using T = decltype(t);
    const DenseMatrix<T> mask = with_dtype(in[0]->dtype(), [&](auto m) -> DenseMatrix<T> {
      return to_dense_copy<decltype(m)>(*in[0]).template cast<T>();
    });
    const auto& a = in[1]->dense<T>();
    const auto& b = in[2]->dense<T>();
    auto at = [](const DenseMatrix<T>& x, Eigen::Index i, Eigen::Index j) {
      return x(x.rows() == 1 ? 0 : i, x.cols() == 1 ? 0 : j);
    };
    DenseMatrix<T> out(rows, cols);
    for (Eigen::Index j = 0; j < cols; ++j)
      for (Eigen::Index i = 0; i < rows; ++i) out(i, j) = at(mask, i, j) != T(0) ? at(a, i, j) : at(b, i, j);
    return Chunk::dense<T>(std::move(out));
  })};
}

// The common steps as Eigen's SIMD expressions (unaryExpr with a lambda runs one element at a time);
// false for the others.
template <class T, class Part>
bool apply_vectorized(Part& part, const std::string& name, bool is_scalar, T s, bool scalar_left) {
  if (!is_scalar) {
    if (name == "exp")
      part = part.exp();
    else if (name == "log")
      part = part.log();
    else if (name == "sqrt")
      part = part.sqrt();
    else if (name == "abs")
      part = part.abs();
    else if (name == "neg")
      part = -part;
    else if (name == "square")
      part = part.square();
    else if (name == "sigmoid")
      part = T(1) / (T(1) + (-part).exp());
    else
      return false;
    return true;
  }
  if (name == "add")
    part += s;
  else if (name == "mul")
    part *= s;
  else if (name == "sub")
    part = scalar_left ? (s - part).eval() : (part - s).eval();
  else if (name == "div")
    part = scalar_left ? (s / part).eval() : (part / s).eval();
  else if (name == "minimum")
    part = part.min(s);
  else if (name == "maximum")
    part = part.max(s);
  else
    return false;
  return true;
}

template <class T, class Part>
void apply_steps(Part& part, const std::vector<ChainStep>& steps) {
  for (const auto& step : steps) {
    const T s = static_cast<T>(step.scalar);
    const bool is_scalar = step.kind == ChainStep::Kind::scalar;
    if (apply_vectorized<T>(part, step.function, is_scalar, s, step.scalar_left)) continue;
    if (!is_scalar) {
      with_unary<T>(step.function, [&](auto f) { part = part.unaryExpr(f); });
    } else {
      with_binary<T>(step.function, [&](auto f) {
        if (step.scalar_left)
          part = part.unaryExpr([&](T x) { return f(s, x); });
        else
          part = part.unaryExpr([&](T x) { return f(x, s); });
      });
    }
  }
}

constexpr Eigen::Index chain_block = 2048;  // elements per pass: stays in L1 across the steps

// Applies every step to a cache-sized block before moving to the next, so the chunk is read and written
// once however many steps there are.
Chunks chain(std::span<const ChunkPtr> in, const Params& params) {
  require_inputs("chain", in, 1);
  const auto c = ChainParams::from(params);
  return {with_dtype(in[0]->dtype(), [&](auto t) {
    using T = decltype(t);
    DenseMatrix<T> out = in[0]->dense<T>();
    auto flat = out.reshaped();
    for (Eigen::Index begin = 0; begin < flat.size(); begin += chain_block) {
      auto part = flat.segment(begin, std::min(chain_block, flat.size() - begin)).array();
      apply_steps<T>(part, c.steps);
    }
    return Chunk::dense<T>(std::move(out));
  })};
}

// The chain's steps, then a reduction, block by block: the chain's result never exists as a chunk.
Chunks chain_reduce(std::span<const ChunkPtr> in, const Params& params) {
  require_inputs("chain_reduce", in, 1);
  const auto c = ChainReduceParams::from(params);
  const std::string& reduction = c.reduction;
  const std::int64_t axis = c.axis;
  return {with_dtype(in[0]->dtype(), [&](auto t) {
    using T = decltype(t);
    const auto& x = in[0]->dense<T>();
    const T start = reduction == "min"   ? std::numeric_limits<T>::infinity()
                    : reduction == "max" ? -std::numeric_limits<T>::infinity()
                                         : T(0);
    if ((reduction == "min" || reduction == "max") && x.size() == 0)
      throw KernelError("reduce " + reduction + " of an empty chunk has no value");
    DenseMatrix<T> out = axis == 0   ? DenseMatrix<T>::Constant(1, x.cols(), start)
                         : axis == 1 ? DenseMatrix<T>::Constant(x.rows(), 1, start)
                                     : DenseMatrix<T>::Constant(1, 1, start);
    Eigen::Array<T, Eigen::Dynamic, 1> buffer(
        std::min<Eigen::Index>(chain_block, std::max<Eigen::Index>(1, x.rows())));
    for (Eigen::Index j = 0; j < x.cols(); ++j)
      for (Eigen::Index begin = 0; begin < x.rows(); begin += chain_block) {
        const Eigen::Index n = std::min(chain_block, x.rows() - begin);
        auto part = buffer.head(n);
        part = x.col(j).segment(begin, n).array();
        apply_steps<T>(part, c.steps);
        if (axis == 1) {
          auto target = out.col(0).segment(begin, n).array();
          if (reduction == "sum")
            target += part;
          else if (reduction == "sumsq")
            target += part.square();
          else if (reduction == "min")
            target = target.min(part);
          else
            target = target.max(part);
          continue;
        }
        T& acc = axis == 0 ? out(0, j) : out(0, 0);
        if (reduction == "sum")
          acc += part.sum();
        else if (reduction == "sumsq")
          acc += part.square().sum();
        else if (reduction == "min")
          acc = std::min(acc, part.minCoeff());
        else
          acc = std::max(acc, part.maxCoeff());
      }
    return Chunk::dense<T>(std::move(out));
  })};
}

Chunks astype(std::span<const ChunkPtr> in, const Params& params) {
  require_inputs("astype", in, 1);
  const auto target = AstypeParams::from(params).dtype;
  if (target == in[0]->dtype()) return {in[0]};
  if (target == DType::float32) return {Chunk::dense<float>(in[0]->dense<double>().cast<float>())};
  return {Chunk::dense<double>(in[0]->dense<float>().cast<double>())};
}

}  // namespace

void register_elementwise(Dispatch& d) {
  d.add(ops::unary, Backend::cpu, unary);
  d.add(ops::scalar, Backend::cpu, scalar);
  d.add(ops::binary, Backend::cpu, binary);
  d.add(ops::where, Backend::cpu, where);
  d.add(ops::chain, Backend::cpu, chain);
  d.add(ops::chain_reduce, Backend::cpu, chain_reduce);
  d.add(ops::astype, Backend::cpu, astype);
}

}  // namespace tessera::backends::cpu

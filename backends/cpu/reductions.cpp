// Dense reductions: per-chunk partials (sum, sumsq, min, max, argmax, argmin) and the combination of
// partials.
#include <limits>

#include "backends/cpu/dense_util.hpp"
#include "backends/operations.hpp"

namespace tessera::backends::cpu {
namespace {

template <class T, class M>
DenseMatrix<T> reduce_dense(const M& m, const std::string& name, std::int64_t axis) {
  auto empty_error = [&] {
    return KernelError("reduce " + name + " of an empty chunk " + shape_text(m.rows(), m.cols()) +
                       " has no value");
  };
  if (name == "sum") {
    if (axis == 0) return m.colwise().sum();
    if (axis == 1) return m.rowwise().sum();
    return DenseMatrix<T>::Constant(1, 1, m.sum());
  }
  if (name == "sumsq") {
    if (axis == 0) return m.colwise().squaredNorm();
    if (axis == 1) return m.rowwise().squaredNorm();
    return DenseMatrix<T>::Constant(1, 1, m.squaredNorm());
  }
  if (name == "min" || name == "max") {
    const bool is_min = name == "min";
    if (m.size() == 0 && (axis == -1 || (axis == 0 ? m.rows() : m.cols()) == 0)) throw empty_error();
    if (axis == 0)
      return is_min ? DenseMatrix<T>(m.colwise().minCoeff()) : DenseMatrix<T>(m.colwise().maxCoeff());
    if (axis == 1)
      return is_min ? DenseMatrix<T>(m.rowwise().minCoeff()) : DenseMatrix<T>(m.rowwise().maxCoeff());
    return DenseMatrix<T>::Constant(1, 1, is_min ? m.minCoeff() : m.maxCoeff());
  }
  throw KernelError("unknown reduction '" + name + "' (known: sum, sumsq, min, max)");
}

Chunks reduce(std::span<const ChunkPtr> in, const Params& params) {
  require_inputs("reduce", in, 1);
  const auto p = ReduceParams::from(params);
  return {with_dtype(in[0]->dtype(), [&](auto t) {
    using T = decltype(t);
    return Chunk::dense<T>(reduce_dense<T>(in[0]->dense<T>(), p.reduction, p.axis));
  })};
}

// Whether `candidate` beats `best` for argmax/argmin; NaN wins, as in NumPy.
template <class T>
bool better(T candidate, T best, bool is_max) {
  if (std::isnan(best)) return false;
  if (std::isnan(candidate)) return true;
  return is_max ? candidate > best : candidate < best;
}

Chunks argreduce(std::span<const ChunkPtr> in, const Params& params) {
  require_inputs("argreduce", in, 1);
  const auto p = ArgreduceParams::from(params);
  const auto axis = p.axis, row0 = p.first_row, col0 = p.first_col, total_cols = p.total_cols;
  if (p.reduction != "argmax" && p.reduction != "argmin")
    throw KernelError("unknown arg reduction '" + p.reduction + "' (known: argmax, argmin)");
  const bool is_max = p.reduction == "argmax";
  // Indices beyond 2^24 do not fit a float exactly, so arg partials are float64 whatever the input.
  return {with_dtype(in[0]->dtype(), [&](auto t) {
    using T = decltype(t);
    const auto& m = in[0]->dense<T>();
    if (m.size() == 0) throw KernelError(p.reduction + " of an empty chunk");
    if (axis == 0) {
      DenseMatrix<double> out(2, m.cols());
      for (Eigen::Index j = 0; j < m.cols(); ++j) {
        Eigen::Index best = 0;
        for (Eigen::Index i = 1; i < m.rows(); ++i)
          if (better(m(i, j), m(best, j), is_max)) best = i;
        out(0, j) = static_cast<double>(m(best, j));
        out(1, j) = static_cast<double>(row0 + best);
      }
      return Chunk::dense<double>(std::move(out));
    }
    if (axis == 1) {
      DenseMatrix<double> out(m.rows(), 2);
      for (Eigen::Index i = 0; i < m.rows(); ++i) {
        Eigen::Index best = 0;
        for (Eigen::Index j = 1; j < m.cols(); ++j)
          if (better(m(i, j), m(i, best), is_max)) best = j;
        out(i, 0) = static_cast<double>(m(i, best));
        out(i, 1) = static_cast<double>(col0 + best);
      }
      return Chunk::dense<double>(std::move(out));
    }
    // Row-major order, as NumPy's flat index, so ties resolve to the first in that order.
    Eigen::Index best_i = 0, best_j = 0;
    for (Eigen::Index i = 0; i < m.rows(); ++i)
      for (Eigen::Index j = 0; j < m.cols(); ++j)
        if (better(m(i, j), m(best_i, best_j), is_max)) best_i = i, best_j = j;
    DenseMatrix<double> out(1, 2);
    out(0, 0) = static_cast<double>(m(best_i, best_j));
    out(0, 1) = static_cast<double>((row0 + best_i) * total_cols + col0 + best_j);
    return Chunk::dense<double>(std::move(out));
  })};
}

Chunks combine(std::span<const ChunkPtr> in, const Params& params) {
  if (in.empty()) throw KernelError("combine needs at least one partial result");
  const auto p = CombineParams::from(params);
  const auto axis = p.axis;
  const std::string& name = p.reduction;
  for (const auto& c : in) {
    if (c->rows() != in[0]->rows() || c->cols() != in[0]->cols())
      throw KernelError("combine " + name + ": partial " + c->describe() + " differs from " +
                        in[0]->describe());
    require_same_dtype("combine", *in[0], *c);
  }
  if (in.size() == 1) return {in[0]};
  return {with_dtype(in[0]->dtype(), [&](auto t) {
    using T = decltype(t);
    DenseMatrix<T> out = in[0]->dense<T>();
    if (name == "sum" || name == "sumsq") {
      for (std::size_t k = 1; k < in.size(); ++k) out += in[k]->dense<T>();
    } else if (name == "min") {
      for (std::size_t k = 1; k < in.size(); ++k) out = out.cwiseMin(in[k]->dense<T>());
    } else if (name == "max") {
      for (std::size_t k = 1; k < in.size(); ++k) out = out.cwiseMax(in[k]->dense<T>());
    } else if (name == "argmax" || name == "argmin") {
      const bool is_max = name == "argmax";
      // Partials come in index order, so keeping the first of equals keeps the smallest index.
      for (std::size_t k = 1; k < in.size(); ++k) {
        const auto& m = in[k]->dense<T>();
        // Axis 0 partials are (values; indices) columns; the others (value, index) rows.
        if (axis == 0) {
          for (Eigen::Index j = 0; j < m.cols(); ++j)
            if (better(m(0, j), out(0, j), is_max)) out.col(j) = m.col(j);
        } else {
          for (Eigen::Index i = 0; i < m.rows(); ++i)
            if (better(m(i, 0), out(i, 0), is_max)) out.row(i) = m.row(i);
        }
      }
    } else {
      throw KernelError("unknown combination '" + name + "' (known: sum, sumsq, min, max, argmax, argmin)");
    }
    return Chunk::dense<T>(std::move(out));
  })};
}

}  // namespace

void register_reductions(Dispatch& d) {
  d.add(ops::reduce, Backend::cpu, reduce);
  d.add(ops::argreduce, Backend::cpu, argreduce);
  d.add(ops::combine, Backend::cpu, combine);
}

}  // namespace tessera::backends::cpu

#include "tessera/linalg.hpp"

#include <limits>

#include "backends/composite.hpp"
#include "backends/kernel_params.hpp"
#include "backends/operations.hpp"
#include "client/array_graph.hpp"
#include "graph/array_tasks.hpp"

namespace tessera::linalg {

using namespace tessera::detail;

namespace {

// One node of the reduction tree: its factor, its R's row count, and (below the root) where its R sits
// in its parent's stack.
struct TreeNode {
  DelayedArg packed, tau;
  std::int64_t r_rows = 0;
  int parent = -1;
  std::int64_t offset_in_parent = 0;
};

struct Tree {
  std::vector<TreeNode> nodes;  // leaves first, root last
  std::vector<int> leaves;      // node index of each leaf, in row order
  std::vector<std::int64_t> leaf_rows;
  std::vector<DelayedArg> leaf_chunks;                           // the rows each leaf factored
  std::vector<std::pair<std::size_t, std::size_t>> leaf_groups;  // each leaf's input chunks [first, last)
  Backend backend = Backend::cpu;
  std::int64_t n = 0;
  int root() const { return static_cast<int>(nodes.size()) - 1; }
};

// Builds tasks either plainly or gated on a flag, so that a graph holding two ways to one result runs only
// the one the flag picks (the tasks of the other give empty chunks at once).
struct Tasks {
  const DelayedArg* gate = nullptr;  // when set, these tasks run only if this flag is clear
  std::size_t max_inputs() const { return max_kernel_inputs - (gate ? 1 : 0); }
  DelayedArg operator()(std::string_view operation, Backend backend, const Params& params,
                        std::vector<DelayedArg> inputs, int outputs = 1) const {
    if (!gate) return kernel(operation, backend, params, std::move(inputs));
    inputs.insert(inputs.begin(), *gate);
    return kernel(backend, backends::GatedParams{std::string(operation), false, outputs, params},
                  std::move(inputs));
  }
  template <class OperationParams>
  DelayedArg operator()(Backend backend, const OperationParams& params,
                        std::vector<DelayedArg> inputs) const {
    return (*this)(OperationParams::operation, backend, params.to_params(), std::move(inputs));
  }
};

DelayedArg packed_r(const TreeNode& node, Backend backend, const Tasks& tasks = {}) {
  return tasks(backends::ops::qr_r, backend, {}, {node.packed});
}

Array one_column_of_chunks(const Array& a) {
  return ArrayAccess::data(a)->grid_cols() == 1
             ? a
             : regrid(a, 0, 0, ArrayAccess::data(a)->row_chunks, {a.cols()});
}

// Factors a one-column-of-chunks array: leaves (groups of adjacent chunks), then stacks of R up to the root.
Tree factor(const Array& a_in, const TsqrOptions& options, const char* what, const Tasks& tasks = {}) {
  if (a_in.ndim() != 2)
    throw SubmissionError(std::string(what) + ": needs a 2-D array, got " + a_in.describe());
  if (options.fan_in < 2) throw SubmissionError(std::string(what) + ": fan_in must be at least 2");
  const Array a = one_column_of_chunks(a_in);
  const std::size_t max_inputs = tasks.max_inputs();
  const auto& d = *ArrayAccess::data(a);
  Tree tree;
  tree.backend = d.meta.backend;
  tree.n = d.cols();
  for (const char* op :
       {backends::ops::qr_factor, backends::ops::qr_r, backends::ops::assemble, backends::ops::qr_apply})
    require_kernel(op, tree.backend, what);
  const std::int64_t leaf_target =
      options.leaf_rows > 0 ? options.leaf_rows : 4 * std::max<std::int64_t>(1, tree.n);
  // Leaves: as many as fit leaf_target rows each (at least one), then adjacent chunks shared out evenly by
  // rows, so the leaves' factorizations take about the same time.
  const std::int64_t total_rows = d.rows();
  std::size_t leaf_count = static_cast<std::size_t>(std::max<std::int64_t>(1, total_rows / leaf_target));
  leaf_count = std::min(leaf_count, d.grid_rows());
  leaf_count = std::max(leaf_count, (d.grid_rows() + max_inputs - 1) / max_inputs);
  std::vector<std::pair<std::size_t, std::size_t>> groups;
  {
    const auto offsets = chunk_offsets(d.row_chunks);
    std::size_t first = 0;
    for (std::size_t g = 1; g <= leaf_count; ++g) {
      const std::int64_t boundary =
          total_rows * static_cast<std::int64_t>(g) / static_cast<std::int64_t>(leaf_count);
      std::size_t last = first + 1;
      while (last < d.grid_rows() && offsets[last] < boundary && last - first < max_inputs) ++last;
      if (g == leaf_count) last = d.grid_rows();
      if (first >= d.grid_rows()) break;
      // A group past the kernel's input limit (very uneven chunks) is split.
      for (std::size_t begin = first; begin < last; begin += max_inputs)
        groups.emplace_back(begin, std::min(last, begin + max_inputs));
      first = last;
    }
  }
  const auto offsets = chunk_offsets(d.row_chunks);
  std::vector<int> level;
  for (const auto& [first, last] : groups) {
    const std::int64_t rows = offsets[last] - offsets[first];
    DelayedArg leaf = d.block(first, 0);
    if (last - first > 1) {
      backends::AssembleParams assemble{rows, tree.n, {}};
      std::vector<DelayedArg> parts;
      for (std::size_t i = first; i < last; ++i) {
        assemble.blocks.push_back({0, 0, d.row_chunks[i], tree.n, offsets[i] - offsets[first], 0});
        parts.push_back(d.block(i, 0));
      }
      leaf = tasks(tree.backend, assemble, std::move(parts));
    }
    const DelayedArg f = tasks(backends::ops::qr_factor, tree.backend, {}, {leaf}, 2);
    tree.nodes.push_back(TreeNode{pick(f, 0), pick(f, 1), std::min(rows, tree.n)});
    tree.leaves.push_back(static_cast<int>(tree.nodes.size()) - 1);
    tree.leaf_groups.emplace_back(first, last);
    tree.leaf_rows.push_back(rows);
    tree.leaf_chunks.push_back(leaf);
    level.push_back(static_cast<int>(tree.nodes.size()) - 1);
  }
  // Each stage stacks R factors of n x n: as many as fit a task's input bytes.
  const std::size_t fan_in =
      std::min(options.fan_in, fan_in_for(dtype_bytes(d.meta.dtype) * static_cast<std::uint64_t>(tree.n) *
                                              static_cast<std::uint64_t>(tree.n),
                                          2, max_inputs));
  while (level.size() > 1) {
    std::vector<int> next;
    for (std::size_t g = 0; g < level.size(); g += fan_in) {
      const std::size_t end = std::min(level.size(), g + fan_in);
      if (end - g == 1) {
        next.push_back(level[g]);
        continue;
      }
      std::int64_t stacked = 0;
      backends::AssembleParams assemble{0, tree.n, {}};
      std::vector<DelayedArg> rs;
      for (std::size_t k = g; k < end; ++k) {
        auto& child = tree.nodes[static_cast<std::size_t>(level[k])];
        assemble.blocks.push_back({0, 0, child.r_rows, tree.n, stacked, 0});
        rs.push_back(packed_r(child, tree.backend, tasks));
        child.offset_in_parent = stacked;
        child.parent = static_cast<int>(tree.nodes.size());
        stacked += child.r_rows;
      }
      assemble.rows = stacked;
      const DelayedArg stack = tasks(tree.backend, assemble, std::move(rs));
      const DelayedArg f = tasks(backends::ops::qr_factor, tree.backend, {}, {stack}, 2);
      tree.nodes.push_back(TreeNode{pick(f, 0), pick(f, 1), std::min(stacked, tree.n)});
      next.push_back(static_cast<int>(tree.nodes.size()) - 1);
    }
    level = std::move(next);
  }
  if (tree.nodes.size() > 1 && level.front() != tree.root())
    throw std::logic_error("tsqr: the root is not the last node");
  return tree;
}

// The (packed, tau) pairs and (offset, rows) below the root on the way to `leaf`.
void path_below_root(const Tree& tree, int leaf, std::vector<DelayedArg>& factors,
                     std::vector<backends::DescentLevel>& levels) {
  std::vector<int> path;
  for (int node = leaf; node != tree.root(); node = tree.nodes[static_cast<std::size_t>(node)].parent)
    path.push_back(node);
  for (auto it = path.rbegin(); it != path.rend(); ++it) {
    const auto& node = tree.nodes[static_cast<std::size_t>(*it)];
    factors.push_back(node.packed);
    factors.push_back(node.tau);
    levels.push_back({node.offset_in_parent,
                      tree.nodes[static_cast<std::size_t>(node.parent)].r_rows == 0 ? 0 : node.r_rows});
  }
}

// Each leaf's rows of Q_tree C, from `make_leaf`: chunked by leaves, or regridded to `like`'s row chunks.
template <class MakeLeaf>
Array leaf_array(const Tree& tree, const Array* like, std::int64_t cols, MakeLeaf&& make_leaf, Meta meta) {
  std::vector<DelayedArg> blocks;
  for (std::size_t i = 0; i < tree.leaves.size(); ++i) blocks.push_back(make_leaf(i));
  Array by_leaf = make_array(2, tree.leaf_rows, {cols}, meta, std::move(blocks));
  return like ? regrid(by_leaf, 0, 0, ArrayAccess::data(*like)->row_chunks, {cols}) : by_leaf;
}

// Rows of the root's stack that are the R of each node directly below it, are found by the descent; the
// root's own C is given.
Array descend_all(const Tree& tree, const Array& like, const DelayedArg& root_c, std::int64_t cols,
                  Meta meta) {
  return leaf_array(
      tree, &like, cols,
      [&](std::size_t i) {
        std::vector<DelayedArg> inputs{root_c};
        backends::QrDescendParams descend;
        path_below_root(tree, tree.leaves[i], inputs, descend.levels);
        return kernel(tree.backend, descend, std::move(inputs));
      },
      meta);
}

Array single_chunk(DelayedArg block, std::int64_t rows, std::int64_t cols, Meta meta, int ndim = 2) {
  std::vector<DelayedArg> blocks;
  blocks.push_back(std::move(block));
  return make_array(ndim, {rows}, {ndim == 2 ? cols : 1}, meta, std::move(blocks));
}

Array as_2d_column(const Array& v) {
  auto data = std::make_shared<ArrayData>(*ArrayAccess::data(v));
  data->ndim = 2;
  return ArrayAccess::make(std::move(data));
}

}  // namespace

QR tsqr(const Array& a, const TsqrOptions& options) {
  if (a.ndim() == 2 && a.rows() < a.cols())
    throw SubmissionError("tsqr: " + a.describe() +
                          " is short-fat; tsqr factors tall-skinny arrays (use qr)");
  const Tree tree = factor(a, options, "tsqr");
  const Meta meta{tree.backend, a.meta().dtype};
  const auto& root = tree.nodes.back();
  const std::int64_t k = std::min(a.rows(), a.cols());
  require_kernel(backends::ops::qr_q, tree.backend, "tsqr");
  const DelayedArg root_q = kernel(backends::ops::qr_q, tree.backend, {}, {root.packed, root.tau});
  Array q = descend_all(tree, a, root_q, k, meta);
  Array r = single_chunk(packed_r(root, tree.backend), k, a.cols(), meta);
  return {std::move(q), std::move(r)};
}

QR qr(const Array& a) {
  if (a.ndim() != 2) throw SubmissionError("qr: needs a 2-D array, got " + a.describe());
  if (a.rows() >= a.cols()) return tsqr(a);
  const Array one = regrid(a, 0, 0, {a.rows()}, {a.cols()});
  const Backend backend = a.meta().backend;
  for (const char* op : {backends::ops::qr_factor, backends::ops::qr_r, backends::ops::qr_q})
    require_kernel(op, backend, "qr");
  const DelayedArg f = kernel(backends::ops::qr_factor, backend, {}, {ArrayAccess::data(one)->block(0, 0)});
  const DelayedArg packed = pick(f, 0), tau = pick(f, 1);
  const Meta meta{backend, a.meta().dtype};
  return {single_chunk(kernel(backends::ops::qr_q, backend, {}, {packed, tau}), a.rows(), a.rows(), meta),
          single_chunk(kernel(backends::ops::qr_r, backend, {}, {packed}), a.rows(), a.cols(), meta)};
}

namespace {

// The largest condition number for which U = X V S^-1 is accurate enough (rounding times its square).
double max_condition(DType dtype) {
  return dtype == DType::float64 ? 100.0 : 4.0;
}

// The TSQR SVD: the stable path, accurate whatever the condition number. With a gate its tasks run only
// when the gate is clear. U is chunked by the tree's leaves.
struct TsqrSvd {
  Tree tree;
  Array u;
  DelayedArg s, vt;
};

TsqrSvd tsqr_svd(const Array& a, const TsqrOptions& options, const Tasks& tasks) {
  Tree tree = factor(a, options, "svd", tasks);
  require_kernel(backends::ops::svd, tree.backend, "svd");
  require_kernel(backends::ops::svd_left, tree.backend, "svd");
  const Meta meta{tree.backend, a.meta().dtype};
  const auto& root = tree.nodes.back();
  const std::int64_t k = a.cols();
  const DelayedArg small =
      tasks(backends::ops::svd, tree.backend, {}, {packed_r(root, tree.backend, tasks)}, 3);
  const DelayedArg u_r = pick(small, 0), s = pick(small, 1), vt = pick(small, 2);
  // U keeps the leaves' chunks: splitting them back into the input's chunks would copy U once more.
  Array u = leaf_array(
      tree, nullptr, k,
      [&](std::size_t i) {
        std::vector<DelayedArg> inputs{tree.leaf_chunks[i], s, vt, u_r, root.packed, root.tau};
        backends::SvdLeftParams left{{}, max_condition(a.meta().dtype)};
        path_below_root(tree, tree.leaves[i], inputs, left.levels);
        return tasks(tree.backend, left, std::move(inputs));
      },
      meta);
  return TsqrSvd{std::move(tree), std::move(u), s, vt};
}

// The Gram path: X^T X summed over the chunks, its eigendecomposition, U = X V S^-1: half TSQR's flops and
// all of them in matrix products. Accepted only when S's condition number is at most max_condition: the
// small singular values then keep relative accuracy of rounding times its square (1e-12 for float64). The
// graph also holds the TSQR path, gated on the same flag: it runs only when the Gram path is refused, and
// per output a choose task passes on the result of the path that ran.
bool gram_path_available(const Array& a) {
  const Backend backend = a.meta().backend;
  auto& dispatch = backends::Dispatch::global();
  return a.meta().dtype == DType::float64 && dispatch.has(backends::ops::gram_svd, backend) &&
         dispatch.has(backends::ops::gram_left, backend) && dispatch.has(backends::ops::matmul, backend) &&
         dispatch.has(backends::ops::combine, backend);
}

SVD svd_with_gram_path(const Array& a_in, const TsqrOptions& options) {
  const Array a = one_column_of_chunks(a_in);
  const auto& d = *ArrayAccess::data(a);
  const Backend backend = d.meta.backend;
  const Meta meta{backend, a.meta().dtype};
  std::vector<DelayedArg> grams;
  for (std::size_t i = 0; i < d.grid_rows(); ++i)
    grams.push_back(kernel(backend, backends::MatmulParams{true, false}, {d.block(i, 0), d.block(i, 0)}));
  const DelayedArg gram =
      combine_tree("sum", -1, std::move(grams), backend,
                   8 * static_cast<std::uint64_t>(d.cols()) * static_cast<std::uint64_t>(d.cols()));
  const DelayedArg eig = kernel(backend, backends::GramSvdParams{max_condition(DType::float64)}, {gram});
  const DelayedArg s_gram = pick(eig, 0), vt_gram = pick(eig, 1), accepted = pick(eig, 2);

  const Tasks when_refused{&accepted};
  const TsqrSvd stable = tsqr_svd(a, options, when_refused);
  const auto& stable_u = *ArrayAccess::data(stable.u);

  // U in the input's row chunks: each from the Gram path, or its rows of the stable path's leaf.
  const auto offsets = chunk_offsets(d.row_chunks);
  std::vector<DelayedArg> u_blocks;
  for (std::size_t leaf = 0; leaf < stable.tree.leaf_groups.size(); ++leaf) {
    const auto [first, last] = stable.tree.leaf_groups[leaf];
    for (std::size_t i = first; i < last; ++i) {
      const DelayedArg u_gram = kernel(backend, backends::GatedParams{backends::ops::gram_left, true, 1, {}},
                                       {accepted, d.block(i, 0), s_gram, vt_gram});
      u_blocks.push_back(kernel(backend, backends::ChooseParams{offsets[i] - offsets[first], d.row_chunks[i]},
                                {accepted, u_gram, stable_u.block(leaf, 0)}));
    }
  }
  const std::int64_t k = a.cols();
  Array u = make_array(2, d.row_chunks, {k}, meta, std::move(u_blocks));
  const DelayedArg s = kernel(backend, backends::ChooseParams{}, {accepted, s_gram, stable.s});
  const DelayedArg vt = kernel(backend, backends::ChooseParams{}, {accepted, vt_gram, stable.vt});
  return {std::move(u), single_chunk(s, k, 1, meta, 1), single_chunk(vt, k, a.cols(), meta)};
}

}  // namespace

SVD svd(const Array& a, const TsqrOptions& options) {
  if (a.ndim() != 2) throw SubmissionError("svd: needs a 2-D array, got " + a.describe());
  if (a.rows() < a.cols()) {
    SVD t =
        svd(a.T().rechunk({a.cols(), a.rows()}).rechunk({ArrayAccess::data(a)->col_chunks.front(), a.rows()}),
            options);
    return {t.vt.T(), t.s, t.u.T()};
  }
  if (gram_path_available(a)) return svd_with_gram_path(a, options);
  TsqrSvd stable = tsqr_svd(a, options, {});
  const Meta meta{stable.tree.backend, a.meta().dtype};
  const std::int64_t k = a.cols();
  return {std::move(stable.u), single_chunk(stable.s, k, 1, meta, 1),
          single_chunk(stable.vt, k, a.cols(), meta)};
}

SVD svd_compressed(const Array& a, std::int64_t k, const SvdCompressedOptions& options) {
  if (a.ndim() != 2) throw SubmissionError("svd_compressed: needs a 2-D array, got " + a.describe());
  const std::int64_t smallest = std::min(a.rows(), a.cols());
  if (k < 1 || k > smallest)
    throw SubmissionError("svd_compressed: rank " + std::to_string(k) + " is out of range [1, " +
                          std::to_string(smallest) + "] for " + a.describe());
  if (options.oversampling < 0 || options.power_iterations < 0)
    throw SubmissionError("svd_compressed: oversampling and power_iterations must not be negative");
  const std::int64_t l = std::min(smallest, k + options.oversampling);
  ArrayOptions omega_options;
  omega_options.distribution = "normal";
  omega_options.seed = options.seed;
  omega_options.dtype = std::string(backends::dtype_name(a.meta().dtype));
  omega_options.backend = a.meta().backend == Backend::cuda ? "cuda" : "cpu";
  omega_options.chunks = {ArrayAccess::data(a)->col_chunks.front(), l};
  Array omega = Array::random({a.cols(), l}, omega_options);
  Array y = a.dot(omega);
  for (int i = 0; i < options.power_iterations; ++i) {
    const Array q = tsqr(y).q;
    const Array z = tsqr(a.T().dot(q)).q;
    y = a.dot(z);
  }
  const Array q = tsqr(y).q;
  const Array b = q.T().dot(a);  // l x n, small
  const Array b_one = regrid(b, 0, 0, {b.rows()}, {b.cols()});
  const Backend backend = b_one.meta().backend == Backend::sparse ? Backend::cpu : b_one.meta().backend;
  const Array b_dense = b_one.meta().backend == Backend::sparse ? b_one.to_backend("cpu") : b_one;
  require_kernel(backends::ops::svd, backend, "svd_compressed");
  const DelayedArg small = kernel(backends::ops::svd, backend, {}, {ArrayAccess::data(b_dense)->block(0, 0)});
  const Meta meta{backend, a.meta().dtype};
  const Array ub = single_chunk(pick(small, 0), l, l, meta);
  const Array s = single_chunk(pick(small, 1), l, 1, meta, 1);
  const Array vt = single_chunk(pick(small, 2), l, a.cols(), meta);
  const Array u = q.dot(ub);
  return {u.slice_cols(0, k), s.slice_rows(0, k), vt.slice_rows(0, k)};
}

Lstsq lstsq(const Array& a, const Array& b, double rcond) {
  if (a.ndim() != 2) throw SubmissionError("lstsq: a must be 2-D, got " + a.describe());
  if (b.ndim() == 0 || b.rows() != a.rows())
    throw SubmissionError("lstsq: a " + shape_text(a) + " and b " + shape_text(b) +
                          " have different row counts");
  const SVD f = svd(a);
  if (rcond < 0)
    rcond = std::numeric_limits<double>::epsilon() * static_cast<double>(std::max(a.rows(), a.cols()));
  const Array tolerance = f.s.max() * rcond;
  const Array keep = f.s > tolerance;
  const Array inverse = where(keep, 1.0 / f.s, 0.0);
  Array c = f.u.T().dot(b);  // k (or k x nrhs)
  c = b.ndim() == 1 ? c * inverse : c * as_2d_column(inverse);
  const Array x = f.vt.T().dot(c);
  const Array residual = a.dot(x) - b;
  return {x, residual.square().sum(b.ndim() == 1 ? std::nullopt : std::optional<int>(0)), keep.sum(), f.s};
}

}  // namespace tessera::linalg

// Matrix products of chunked arrays: each output chunk contracts its row of A's chunks with its column of
// B's, in one task (up to 8 pairs, as many as fit kTaskInputBytes, at least one) or as partial products
// summed by a tree.
#include <algorithm>

#include "backends/operations.hpp"
#include "backends/result_meta.hpp"
#include "client/array_graph.hpp"
#include "graph/array_tasks.hpp"

namespace tessera {

using namespace detail;

namespace {

constexpr std::size_t max_pairs = max_kernel_inputs / 2;

// op(X) = X or X^T, read from the stored grid without materialising the transpose.
struct Operand {
  std::shared_ptr<const ArrayData> data;
  bool transposed;
  const std::vector<std::int64_t>& outer() const { return transposed ? data->col_chunks : data->row_chunks; }
  const std::vector<std::int64_t>& inner() const { return transposed ? data->row_chunks : data->col_chunks; }
  const DelayedArg& block(std::size_t outer_index, std::size_t inner_index) const {
    return transposed ? data->block(inner_index, outer_index) : data->block(outer_index, inner_index);
  }
};

Operand operand_of(const Array& x, bool transposed) {
  if (ArrayAccess::data(x)->transpose_of) return {ArrayAccess::data(x)->transpose_of, !transposed};
  return {ArrayAccess::data(x), transposed};
}

// The product op(A) op(B), with B's inner chunks brought to A's. Result blocks (i, j) over A's outer chunks
// and B's outer chunks; `ndim` is the result's.
Array product(const Array& a_in, bool ta, const Array& b_in, bool tb, int ndim) {
  Array a_array = a_in, b_array = b_in;
  if (a_array.meta().dtype != b_array.meta().dtype) {
    a_array = a_array.astype("float64");
    b_array = b_array.astype("float64");
  }
  const bool a_cuda = a_array.meta().backend == Backend::cuda,
             b_cuda = b_array.meta().backend == Backend::cuda;
  if (a_cuda != b_cuda)
    throw SubmissionError("matmul: operands live on different backends (" +
                          backends::to_string(a_array.meta()) + " and " +
                          backends::to_string(b_array.meta()) + "); move one with to_backend()");
  // A as op(A) (outer: result rows), B as op(B)^T (outer: result columns); both inner: the contraction.
  Operand a = operand_of(a_array, ta), b = operand_of(b_array, !tb);
  const auto inner_a = detail::chunk_offsets(a.inner()).back(),
             inner_b = detail::chunk_offsets(b.inner()).back();
  if (inner_a != inner_b)
    throw SubmissionError("matmul: shapes " + shape_text(a_in) + " and " + shape_text(b_in) +
                          " do not contract (" + std::to_string(inner_a) + " against " +
                          std::to_string(inner_b) + ")");
  if (a.inner() != b.inner()) {
    const Array source = ArrayAccess::make(b.data);
    Array regridded = b.transposed ? regrid(source, 0, 0, a.inner(), b.data->col_chunks)
                                   : regrid(source, 0, 0, b.data->row_chunks, a.inner());
    b.data = ArrayAccess::data(regridded);
  }
  const Backend backend = a.data->meta.backend;
  require_kernel(backends::ops::matmul, backend, "matmul");
  std::vector<Backend> in_backends{backend, b.data->meta.backend};
  const Backend result_backend = backends::result_backend(backends::ops::matmul, "", in_backends);
  // b holds op(B)^T: B is transposed in the product exactly when b is not.
  const backends::MatmulParams params{a.transposed, !b.transposed};
  const std::size_t inner_chunks = a.inner().size();
  // Sized by the largest chunks: a task's inputs are pairs (A's block, B's block).
  const auto largest = [](const std::vector<std::int64_t>& extents) {
    return static_cast<std::uint64_t>(*std::max_element(extents.begin(), extents.end()));
  };
  const std::uint64_t element = dtype_bytes(a.data->meta.dtype);
  const std::uint64_t inner_extent = largest(a.inner());
  const std::uint64_t pair_bytes = element * inner_extent * (largest(a.outer()) + largest(b.outer()));
  const std::size_t pairs = fan_in_for(pair_bytes, 1, max_pairs);
  const std::uint64_t result_bytes = element * largest(a.outer()) * largest(b.outer());
  std::vector<DelayedArg> blocks;
  for (std::size_t i = 0; i < a.outer().size(); ++i)
    for (std::size_t j = 0; j < b.outer().size(); ++j) {
      std::vector<DelayedArg> partials;
      for (std::size_t k0 = 0; k0 < inner_chunks; k0 += pairs) {
        const std::size_t k1 = std::min(inner_chunks, k0 + pairs);
        std::vector<DelayedArg> inputs;
        for (std::size_t k = k0; k < k1; ++k) inputs.push_back(a.block(i, k));
        for (std::size_t k = k0; k < k1; ++k) inputs.push_back(b.block(j, k));
        partials.push_back(kernel(backend, params, std::move(inputs)));
      }
      blocks.push_back(combine_tree("sum", -1, std::move(partials), result_backend, result_bytes));
    }
  std::vector<std::int64_t> col_chunks = b.outer();
  if (ndim < 2) col_chunks = {1};
  return make_array(ndim, a.outer(), std::move(col_chunks), Meta{result_backend, a.data->meta.dtype},
                    std::move(blocks));
}

}  // namespace

Array Array::dot(const Array& other) const {
  const int na = ndim(), nb = other.ndim();
  if (na == 0 || nb == 0)
    throw SubmissionError("matmul: " + describe() + " and " + other.describe() + ": use * for scalars");
  if (na == 2 && nb == 2) return product(*this, false, other, false, 2);
  if (na == 2 && nb == 1) return product(*this, false, other, false, 1);
  if (na == 1 && nb == 2) return product(other, true, *this, false, 1);  // (v^T B)^T = B^T v
  return product(*this, true, other, false, 0);                          // v . w
}

Array matmul(const Array& a, const Array& b) {
  return a.dot(b);
}

}  // namespace tessera

// Elementwise Array operations: broadcasting binary operations, scalars, unary functions, where, astype and
// moving between backends.
#include "backends/cpu/elementwise_ops.hpp"
#include "backends/operations.hpp"
#include "backends/result_meta.hpp"
#include "client/array_graph.hpp"

namespace tessera {

using namespace detail;

namespace {

// A 1-D operand meets a 2-D one as a row, as in NumPy.
Array as_operand(const Array& x, int result_ndim) {
  return x.ndim() == 1 && result_ndim == 2 ? x.reshape_row() : x;
}

std::string shapes_text(const std::vector<Array>& arrays) {
  std::string text;
  for (std::size_t i = 0; i < arrays.size(); ++i) {
    if (i) text += i + 1 == arrays.size() ? " and " : ", ";
    text += shape_text(arrays[i]);
  }
  return text;
}

// Operands brought to one grid (broadcast dimensions keep their single chunk), one dtype and one backend
// family; the result's grid and meta.
struct Aligned {
  std::vector<Array> operands;
  std::vector<std::int64_t> row_chunks, col_chunks;
  int ndim = 0;
};

Aligned align(std::vector<Array> operands, const std::string& op) {
  Aligned out;
  for (const auto& a : operands) out.ndim = std::max(out.ndim, a.ndim());
  for (auto& a : operands) a = as_operand(a, out.ndim);
  std::int64_t rows = 1, cols = 1;
  for (const auto& a : operands) {
    rows = std::max(rows, a.rows());
    cols = std::max(cols, a.cols());
  }
  if (rows == 1 || cols == 1) {  // a zero extent wins over a one
    for (const auto& a : operands) {
      if (a.rows() == 0) rows = 0;
      if (a.cols() == 0) cols = 0;
    }
  }
  for (const auto& a : operands)
    if ((a.rows() != rows && a.rows() != 1) || (a.cols() != cols && a.cols() != 1))
      throw SubmissionError(op + ": shapes " + shapes_text(operands) + " do not broadcast");
  // The grid of the first operand that spans each dimension.
  for (const auto& a : operands)
    if (a.rows() == rows) {
      out.row_chunks = ArrayAccess::data(a)->row_chunks;
      break;
    }
  for (const auto& a : operands)
    if (a.cols() == cols) {
      out.col_chunks = ArrayAccess::data(a)->col_chunks;
      break;
    }
  // One element type (float64 if any operand is) and no mixing of device and host backends.
  bool any_double = false, any_cuda = false, any_host = false;
  for (const auto& a : operands) {
    any_double |= a.meta().dtype == DType::float64;
    (a.meta().backend == Backend::cuda ? any_cuda : any_host) = true;
  }
  if (any_cuda && any_host) {
    std::string backends_text;
    for (const auto& a : operands)
      backends_text += std::string(backends_text.empty() ? "" : ", ") + backends::to_string(a.meta());
    throw SubmissionError(op + ": operands live on different backends (" + backends_text +
                          "); move one with to_backend()");
  }
  for (auto& a : operands) {
    if (any_double && a.meta().dtype != DType::float64) a = a.astype("float64");
    a = regrid(a, 0, 0, a.rows() == rows ? out.row_chunks : ArrayAccess::data(a)->row_chunks,
               a.cols() == cols ? out.col_chunks : ArrayAccess::data(a)->col_chunks);
  }
  out.operands = std::move(operands);
  return out;
}

Array elementwise(const std::string& op, const std::string& name, const std::vector<Array>& inputs) {
  const std::string context = name.empty() ? op : name;
  Aligned aligned = align(inputs, context);
  std::vector<Backend> backends_in;
  for (const auto& a : aligned.operands) backends_in.push_back(a.meta().backend);
  const Backend dispatch_backend = backends_in.front();
  require_kernel(op, dispatch_backend, context);
  const Meta meta{backends::result_backend(op, name, backends_in), aligned.operands.front().meta().dtype};
  // binary takes its function; where takes no parameters.
  const Params params = op == backends::ops::binary ? backends::BinaryParams{name}.to_params() : Params{};
  std::vector<DelayedArg> blocks;
  for (std::size_t i = 0; i < aligned.row_chunks.size(); ++i)
    for (std::size_t j = 0; j < aligned.col_chunks.size(); ++j) {
      std::vector<DelayedArg> in;
      for (const auto& a : aligned.operands) {
        const auto& d = *ArrayAccess::data(a);
        in.push_back(d.block(d.grid_rows() == 1 ? 0 : i, d.grid_cols() == 1 ? 0 : j));
      }
      blocks.push_back(kernel(op, dispatch_backend, params, std::move(in)));
    }
  return make_array(aligned.ndim, aligned.row_chunks, aligned.col_chunks, meta, std::move(blocks));
}

// One kernel per chunk with the same parameters; `meta` is the result's.
Array per_chunk(const Array& x, std::string_view op, const Params& params, Meta meta,
                std::string_view context) {
  const auto& d = *ArrayAccess::data(x);
  require_kernel(op, d.meta.backend, context);
  std::vector<DelayedArg> blocks;
  blocks.reserve(d.blocks.size());
  for (const auto& b : d.blocks) blocks.push_back(kernel(op, d.meta.backend, params, {b}));
  return make_array(d.ndim, d.row_chunks, d.col_chunks, meta, std::move(blocks));
}

// The same for an operation with parameters, given as its struct (backends/kernel_params.hpp).
template <class OperationParams>
Array per_chunk(const Array& x, const OperationParams& params, Meta meta, std::string_view context) {
  return per_chunk(x, OperationParams::operation, params.to_params(), meta, context);
}

Array binary(const Array& a, const Array& b, const std::string& name) {
  return elementwise(backends::ops::binary, name, {a, b});
}

// Extends (or starts) a fused chain of elementwise steps where the backend has a chain kernel; each chunk
// then makes one pass however many steps follow each other.
std::optional<Array> chained(const Array& a, backends::ChainStep step, Meta meta) {
  const Backend backend = a.meta().backend;
  if (meta.backend != backend || !backends::Dispatch::global().has(backends::ops::chain, backend))
    return std::nullopt;
  // Validate the step's name now, as the unchained kernels would.
  if (step.kind == backends::ChainStep::Kind::unary)
    backends::with_unary<double>(step.function, [](auto) { return 0; });
  else
    backends::with_binary<double>(step.function, [](auto) { return 0; });
  auto chain = std::make_shared<ElementwiseChain>();
  const auto& from = ArrayAccess::data(a);
  chain->source = from->chain ? from->chain->source : from;
  if (from->chain) chain->steps = from->chain->steps;
  chain->steps.push_back(std::move(step));
  const Params params = backends::ChainParams{chain->steps}.to_params();
  const auto& source = *chain->source;
  std::vector<DelayedArg> blocks;
  blocks.reserve(source.blocks.size());
  for (const auto& b : source.blocks) blocks.push_back(kernel(backends::ops::chain, backend, params, {b}));
  auto data = std::make_shared<ArrayData>();
  data->ndim = a.ndim();
  data->row_chunks = source.row_chunks;
  data->col_chunks = source.col_chunks;
  data->meta = meta;
  data->blocks = std::move(blocks);
  data->chain = std::move(chain);
  return ArrayAccess::make(std::move(data));
}

Array with_scalar(const Array& a, double s, const std::string& name, bool scalar_left) {
  const Backend backend = a.meta().backend;
  const Meta meta{backends::result_backend(backends::ops::scalar, name, std::array{backend}, scalar_left),
                  a.meta().dtype};
  try {
    if (auto fused = chained(a, {backends::ChainStep::Kind::scalar, name, s, scalar_left}, meta))
      return *fused;
  } catch (const backends::KernelError& e) {
    throw SubmissionError(e.what());
  }
  return per_chunk(a, backends::ScalarParams{name, s, scalar_left}, meta, name);
}

Array unary(const Array& a, const std::string& name) {
  const Backend backend = a.meta().backend;
  const Meta meta{backends::result_backend(backends::ops::unary, name, std::array{backend}), a.meta().dtype};
  try {
    if (auto fused = chained(a, {backends::ChainStep::Kind::unary, name, 0.0, false}, meta)) return *fused;
  } catch (const backends::KernelError& e) {
    throw SubmissionError(e.what());
  }
  return per_chunk(a, backends::UnaryParams{name}, meta, name);
}

// A 0-d array holding one value, for where() with a scalar branch.
Array scalar_array(double value, Meta like) {
  ArrayOptions o;
  o.dtype = std::string(backends::dtype_name(like.dtype));
  o.backend = like.backend == Backend::cuda ? "cuda" : "cpu";
  Array one = Array::full({1}, value, o);
  auto data = std::make_shared<ArrayData>(*ArrayAccess::data(one));
  data->ndim = 0;
  return ArrayAccess::make(std::move(data));
}

}  // namespace

Array operator+(const Array& a, const Array& b) {
  return binary(a, b, "add");
}
Array operator-(const Array& a, const Array& b) {
  return binary(a, b, "sub");
}
Array operator*(const Array& a, const Array& b) {
  return binary(a, b, "mul");
}
Array operator/(const Array& a, const Array& b) {
  return binary(a, b, "div");
}
Array operator+(const Array& a, double s) {
  return with_scalar(a, s, "add", false);
}
Array operator-(const Array& a, double s) {
  return with_scalar(a, s, "sub", false);
}
Array operator*(const Array& a, double s) {
  return with_scalar(a, s, "mul", false);
}
Array operator/(const Array& a, double s) {
  return with_scalar(a, s, "div", false);
}
Array operator+(double s, const Array& a) {
  return with_scalar(a, s, "add", true);
}
Array operator-(double s, const Array& a) {
  return with_scalar(a, s, "sub", true);
}
Array operator*(double s, const Array& a) {
  return with_scalar(a, s, "mul", true);
}
Array operator/(double s, const Array& a) {
  return with_scalar(a, s, "div", true);
}
Array operator-(const Array& a) {
  return unary(a, "neg");
}
Array operator<(const Array& a, const Array& b) {
  return binary(a, b, "lt");
}
Array operator<=(const Array& a, const Array& b) {
  return binary(a, b, "le");
}
Array operator>(const Array& a, const Array& b) {
  return binary(a, b, "gt");
}
Array operator>=(const Array& a, const Array& b) {
  return binary(a, b, "ge");
}
Array operator<(const Array& a, double s) {
  return with_scalar(a, s, "lt", false);
}
Array operator<=(const Array& a, double s) {
  return with_scalar(a, s, "le", false);
}
Array operator>(const Array& a, double s) {
  return with_scalar(a, s, "gt", false);
}
Array operator>=(const Array& a, double s) {
  return with_scalar(a, s, "ge", false);
}
Array Array::eq(const Array& other) const {
  return binary(*this, other, "eq");
}
Array Array::ne(const Array& other) const {
  return binary(*this, other, "ne");
}
Array Array::pow(double exponent) const {
  return with_scalar(*this, exponent, "pow", false);
}
Array Array::pow(const Array& exponent) const {
  return binary(*this, exponent, "pow");
}
Array Array::minimum(const Array& other) const {
  return binary(*this, other, "minimum");
}
Array Array::maximum(const Array& other) const {
  return binary(*this, other, "maximum");
}
Array Array::exp() const {
  return unary(*this, "exp");
}
Array Array::log() const {
  return unary(*this, "log");
}
Array Array::abs() const {
  return unary(*this, "abs");
}
Array Array::sqrt() const {
  return unary(*this, "sqrt");
}
Array Array::sigmoid() const {
  return unary(*this, "sigmoid");
}
Array Array::square() const {
  return unary(*this, "square");
}

Array where(const Array& mask, const Array& a, const Array& b) {
  return elementwise(backends::ops::where, "", {mask, a, b});
}
Array where(const Array& mask, double a, const Array& b) {
  return where(mask, scalar_array(a, b.meta()), b);
}
Array where(const Array& mask, const Array& a, double b) {
  return where(mask, a, scalar_array(b, a.meta()));
}

Array Array::astype(const std::string& dtype) const {
  const DType target = dtype_of(dtype, "astype");
  if (target == data_->meta.dtype) return *this;
  return per_chunk(*this, backends::AstypeParams{target}, Meta{data_->meta.backend, target}, "astype");
}

Array Array::to_backend(const std::string& backend) const {
  const Backend target = backend_of(backend, "to_backend");
  const Backend source = data_->meta.backend;
  if (target == source) return *this;
  const DType dtype = data_->meta.dtype;
  // Through the host: cuda <-> sparse goes by way of a dense cpu chunk.
  if (source == Backend::cuda)
    return per_chunk(*this, backends::ops::to_host, {}, Meta{Backend::cpu, dtype}, "to_backend")
        .to_backend(backend);
  if (source == Backend::sparse)
    return per_chunk(*this, backends::ops::to_dense, {}, Meta{Backend::cpu, dtype}, "to_backend")
        .to_backend(backend);
  if (target == Backend::sparse)
    return per_chunk(*this, backends::ops::to_sparse, {}, Meta{Backend::sparse, dtype}, "to_backend");
  require_kernel(backends::ops::to_cuda, Backend::cuda, "to_backend(\"cuda\")");
  return per_chunk(*this, backends::ops::to_cuda, {}, Meta{Backend::cuda, dtype}, "to_backend(\"cuda\")");
}

}  // namespace tessera

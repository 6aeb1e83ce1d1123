#include "backends/kernel_params.hpp"

#include <span>

namespace tessera::backends {
namespace {

// Reads one operation's Params; every error names the operation and the field.
class Fields {
 public:
  Fields(const char* operation, const Params& params) : operation_(operation), params_(params) {}

  [[noreturn]] void fail(const std::string& what) const {
    throw KernelError(std::string(operation_) + ": " + what);
  }

  std::int64_t integer(std::size_t index, const char* field) const {
    if (index >= params_.ints.size())
      fail(std::string(field) + " is missing (integer " + std::to_string(index) + ", " +
           std::to_string(params_.ints.size()) + " given)");
    return params_.ints[index];
  }
  std::int64_t integer_or(std::size_t index, std::int64_t fallback) const {
    return index < params_.ints.size() ? params_.ints[index] : fallback;
  }
  bool flag(std::size_t index, const char* field) const { return integer(index, field) != 0; }
  bool flag_or(std::size_t index, bool fallback) const { return integer_or(index, fallback ? 1 : 0) != 0; }

  double real(std::size_t index, const char* field) const {
    if (index >= params_.reals.size())
      fail(std::string(field) + " is missing (real " + std::to_string(index) + ", " +
           std::to_string(params_.reals.size()) + " given)");
    return params_.reals[index];
  }
  double real_or(std::size_t index, double fallback) const {
    return index < params_.reals.size() ? params_.reals[index] : fallback;
  }

  DType dtype(std::size_t index, const char* field) const {
    const auto value = integer(index, field);
    if (value != static_cast<std::int64_t>(DType::float64) &&
        value != static_cast<std::int64_t>(DType::float32))
      fail(std::string(field) + " must be 0 (float64) or 1 (float32), got " + std::to_string(value));
    return static_cast<DType>(value);
  }

  // 0 (down the rows), 1 (along the columns) or -1 (all).
  std::int64_t axis(std::int64_t value) const {
    if (value < -1 || value > 1) fail("axis must be 0, 1 or -1 (all), got " + std::to_string(value));
    return value;
  }

  // The name, which this operation needs (a function or a reduction).
  const std::string& name(const char* field) const {
    if (params_.name.empty()) fail(std::string(field) + " is missing (the name)");
    return params_.name;
  }

 private:
  const char* operation_;
  const Params& params_;
};

void write_chain(const std::vector<ChainStep>& steps, Params& out) {
  std::vector<std::int64_t> lefts;
  for (const auto& s : steps) {
    out.name += (out.name.empty() ? "" : ",") + s.function;
    out.ints.push_back(static_cast<std::int64_t>(s.kind));
    lefts.push_back(s.scalar_left ? 1 : 0);
    out.reals.push_back(s.scalar);
  }
  out.ints.insert(out.ints.end(), lefts.begin(), lefts.end());
}

std::vector<ChainStep> read_chain(const Fields& fields, const std::string& names,
                                  std::span<const std::int64_t> ints, std::span<const double> reals) {
  std::vector<ChainStep> steps;
  for (std::size_t begin = 0; begin <= names.size();) {
    const auto end = std::min(names.find(',', begin), names.size());
    steps.push_back(ChainStep{ChainStep::Kind::unary, names.substr(begin, end - begin), 0, false});
    begin = end + 1;
  }
  const std::size_t n = steps.size();
  if (ints.size() != 2 * n || reals.size() != n)
    fields.fail(std::to_string(n) + " steps need " + std::to_string(2 * n) + " integers and " +
                std::to_string(n) + " reals, got " + std::to_string(ints.size()) + " and " +
                std::to_string(reals.size()));
  for (std::size_t k = 0; k < n; ++k) {
    auto& step = steps[k];
    if (step.function.empty()) fields.fail("the function of step " + std::to_string(k) + " is missing");
    if (ints[k] != 0 && ints[k] != 1)
      fields.fail("the kind of step " + std::to_string(k) + " must be 0 (unary) or 1 (scalar), got " +
                  std::to_string(ints[k]));
    step.kind = ints[k] == 0 ? ChainStep::Kind::unary : ChainStep::Kind::scalar;
    step.scalar_left = ints[n + k] != 0;
    step.scalar = reals[k];
  }
  return steps;
}

void write_levels(const std::vector<DescentLevel>& levels, Params& out) {
  for (const auto& level : levels) out.ints.insert(out.ints.end(), {level.offset, level.rows});
}

std::vector<DescentLevel> read_levels(const Fields& fields, const Params& params) {
  if (params.ints.size() % 2 != 0)
    fields.fail("levels are (offset, rows) pairs, got " + std::to_string(params.ints.size()) + " integers");
  std::vector<DescentLevel> levels;
  for (std::size_t i = 0; i < params.ints.size(); i += 2)
    levels.push_back(DescentLevel{params.ints[i], params.ints[i + 1]});
  return levels;
}

std::int64_t dtype_code(DType dtype) {
  return static_cast<std::int64_t>(dtype);
}

}  // namespace

Params RandomParams::to_params() const {
  return Params{{},
                {rows, cols, first_row, first_col, total_cols, static_cast<std::int64_t>(seed),
                 dtype_code(dtype), normal ? 1 : 0},
                {low, high, density}};
}

RandomParams RandomParams::from(const Params& params) {
  const Fields f(operation, params);
  RandomParams p;
  p.rows = f.integer(0, "rows");
  p.cols = f.integer(1, "cols");
  p.first_row = f.integer(2, "first_row");
  p.first_col = f.integer(3, "first_col");
  p.total_cols = f.integer(4, "total_cols");
  p.seed = static_cast<std::uint64_t>(f.integer(5, "seed"));
  p.dtype = f.dtype(6, "dtype");
  p.normal = f.flag(7, "normal");
  p.low = f.real(0, "low");
  p.high = f.real(1, "high");
  p.density = f.real_or(2, p.density);
  return p;
}

Params FullParams::to_params() const {
  return Params{{}, {rows, cols, dtype_code(dtype)}, {value}};
}

FullParams FullParams::from(const Params& params) {
  const Fields f(operation, params);
  FullParams p;
  p.rows = f.integer(0, "rows");
  p.cols = f.integer(1, "cols");
  p.dtype = f.dtype(2, "dtype");
  p.value = f.real(0, "value");
  return p;
}

Params UnaryParams::to_params() const {
  return Params{function, {}, {}};
}

UnaryParams UnaryParams::from(const Params& params) {
  return UnaryParams{Fields(operation, params).name("function")};
}

Params ScalarParams::to_params() const {
  return Params{function, {scalar_left ? 1 : 0}, {scalar}};
}

ScalarParams ScalarParams::from(const Params& params) {
  const Fields f(operation, params);
  ScalarParams p;
  p.function = f.name("function");
  p.scalar = f.real(0, "scalar");
  p.scalar_left = f.flag_or(0, false);
  return p;
}

Params BinaryParams::to_params() const {
  return Params{function, {}, {}};
}

BinaryParams BinaryParams::from(const Params& params) {
  return BinaryParams{Fields(operation, params).name("function")};
}

Params ChainParams::to_params() const {
  Params out;
  write_chain(steps, out);
  return out;
}

ChainParams ChainParams::from(const Params& params) {
  return ChainParams{read_chain(Fields(operation, params), params.name, params.ints, params.reals)};
}

Params ChainReduceParams::to_params() const {
  Params out;
  write_chain(steps, out);
  out.name += "|" + reduction;
  out.ints.push_back(axis);
  return out;
}

ChainReduceParams ChainReduceParams::from(const Params& params) {
  const Fields f(operation, params);
  const auto bar = params.name.rfind('|');
  if (bar == std::string::npos || params.ints.empty()) f.fail("no reduction given");
  ChainReduceParams p;
  p.steps = read_chain(f, params.name.substr(0, bar), std::span(params.ints).first(params.ints.size() - 1),
                       params.reals);
  p.reduction = params.name.substr(bar + 1);
  if (p.reduction != "sum" && p.reduction != "sumsq" && p.reduction != "min" && p.reduction != "max")
    f.fail("unknown reduction '" + p.reduction + "' (known: sum, sumsq, min, max)");
  p.axis = f.axis(params.ints.back());
  return p;
}

Params AstypeParams::to_params() const {
  return Params{{}, {dtype_code(dtype)}, {}};
}

AstypeParams AstypeParams::from(const Params& params) {
  return AstypeParams{Fields(operation, params).dtype(0, "dtype")};
}

Params AssembleParams::to_params() const {
  Params out{{}, {rows, cols}, {}};
  out.ints.reserve(2 + 6 * blocks.size());
  for (const auto& b : blocks)
    out.ints.insert(out.ints.end(), {b.src_row, b.src_col, b.rows, b.cols, b.dst_row, b.dst_col});
  return out;
}

AssembleParams AssembleParams::from(const Params& params) {
  const Fields f(operation, params);
  AssembleParams p;
  p.rows = f.integer(0, "rows");
  p.cols = f.integer(1, "cols");
  const std::size_t rest = params.ints.size() - 2;
  if (rest % 6 != 0)
    f.fail("blocks are six integers each (src_row, src_col, rows, cols, dst_row, dst_col), got " +
           std::to_string(rest) + " after rows and cols");
  for (std::size_t i = 2; i < params.ints.size(); i += 6) {
    const auto* v = &params.ints[i];
    p.blocks.push_back(AssembleBlock{v[0], v[1], v[2], v[3], v[4], v[5]});
  }
  return p;
}

Params MatmulParams::to_params() const {
  return Params{{}, {transpose_a ? 1 : 0, transpose_b ? 1 : 0}, {}};
}

MatmulParams MatmulParams::from(const Params& params) {
  const Fields f(operation, params);
  return MatmulParams{f.flag_or(0, false), f.flag_or(1, false)};
}

Params ReduceParams::to_params() const {
  return Params{reduction, {axis}, {}};
}

ReduceParams ReduceParams::from(const Params& params) {
  const Fields f(operation, params);
  ReduceParams p;
  p.reduction = f.name("reduction");
  p.axis = f.axis(f.integer(0, "axis"));
  return p;
}

Params ArgreduceParams::to_params() const {
  return Params{reduction, {axis, first_row, first_col, total_cols}, {}};
}

ArgreduceParams ArgreduceParams::from(const Params& params) {
  const Fields f(operation, params);
  ArgreduceParams p;
  p.reduction = f.name("reduction");
  p.axis = f.axis(f.integer(0, "axis"));
  p.first_row = f.integer(1, "first_row");
  p.first_col = f.integer(2, "first_col");
  p.total_cols = f.integer(3, "total_cols");
  return p;
}

Params CombineParams::to_params() const {
  return Params{reduction, {axis}, {}};
}

CombineParams CombineParams::from(const Params& params) {
  const Fields f(operation, params);
  CombineParams p;
  p.reduction = f.name("reduction");
  p.axis = f.axis(f.integer(0, "axis"));
  return p;
}

Params ScaleColumnsParams::to_params() const {
  return Params{{}, {divide ? 1 : 0}, {}};
}

ScaleColumnsParams ScaleColumnsParams::from(const Params& params) {
  return ScaleColumnsParams{Fields(operation, params).flag_or(0, false)};
}

Params QrDescendParams::to_params() const {
  Params out;
  write_levels(levels, out);
  return out;
}

QrDescendParams QrDescendParams::from(const Params& params) {
  return QrDescendParams{read_levels(Fields(operation, params), params)};
}

Params SvdLeftParams::to_params() const {
  Params out;
  write_levels(levels, out);
  out.reals.push_back(max_condition);
  return out;
}

SvdLeftParams SvdLeftParams::from(const Params& params) {
  const Fields f(operation, params);
  return SvdLeftParams{read_levels(f, params), f.real_or(0, 0.0)};
}

Params GramSvdParams::to_params() const {
  return Params{{}, {}, {max_condition}};
}

GramSvdParams GramSvdParams::from(const Params& params) {
  const Fields f(operation, params);
  const double limit = f.real(0, "max_condition");
  if (!(limit >= 1)) f.fail("max_condition must be at least 1, got " + std::to_string(limit));
  return GramSvdParams{limit};
}

Params GatedParams::to_params() const {
  if (!inner.name.empty())
    throw KernelError(std::string(operation) + ": " + inner_operation +
                      " takes a name, which gated cannot carry");
  Params out{inner_operation, {run_when_set ? 1 : 0, outputs}, inner.reals};
  out.ints.insert(out.ints.end(), inner.ints.begin(), inner.ints.end());
  return out;
}

GatedParams GatedParams::from(const Params& params) {
  const Fields f(operation, params);
  GatedParams p;
  p.inner_operation = f.name("inner operation");
  if (p.inner_operation == operation) f.fail("cannot gate itself");
  p.run_when_set = f.flag(0, "run_when_set");
  const auto outputs = f.integer(1, "outputs");
  if (outputs < 0 || outputs > 16) f.fail("outputs must be in [0, 16], got " + std::to_string(outputs));
  p.outputs = static_cast<int>(outputs);
  p.inner.ints.assign(params.ints.begin() + 2, params.ints.end());
  p.inner.reals = params.reals;
  return p;
}

Params ChooseParams::to_params() const {
  return Params{{}, {offset, rows}, {}};
}

ChooseParams ChooseParams::from(const Params& params) {
  const Fields f(operation, params);
  return ChooseParams{f.integer_or(0, 0), f.integer_or(1, -1)};
}

Params GlmPartialsParams::to_params() const {
  return Params{{}, {static_cast<std::int64_t>(family), order}, {}};
}

GlmPartialsParams GlmPartialsParams::from(const Params& params) {
  const Fields f(operation, params);
  const auto family = f.integer(0, "family");
  if (family < 0 || family > static_cast<std::int64_t>(glm::Family::poisson))
    f.fail("unknown family " + std::to_string(family) + " (0 logistic, 1 normal, 2 poisson)");
  const auto order = f.integer(1, "order");
  if (order < 0 || order > 2) f.fail("order must be 0, 1 or 2, got " + std::to_string(order));
  return GlmPartialsParams{static_cast<glm::Family>(family), static_cast<int>(order)};
}

}  // namespace tessera::backends

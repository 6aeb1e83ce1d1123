// Each kernel operation's parameters as a struct with named fields: builders fill the struct, kernels read
// it. Between the two the parameters travel as the positional Params container (in array tasks' Values and
// on the wire, unchanged), whose layout each struct's to_params() writes and from() reads back. from() is
// checked: a missing or bad field is a KernelError naming the operation and the field. Operations without
// parameters (where, transpose, the conversions, the QR and SVD factors) have no struct.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "backends/composite.hpp"
#include "backends/conditional.hpp"
#include "backends/dispatch.hpp"
#include "backends/glm_partials.hpp"
#include "backends/operations.hpp"

namespace tessera::backends {

// random: element (i, j) of the whole array depends only on (seed, i, j), whatever the chunking.
struct RandomParams {
  static constexpr const char* operation = ops::random;
  std::int64_t rows = 0, cols = 0;            // this chunk's shape
  std::int64_t first_row = 0, first_col = 0;  // its place in the whole array
  std::int64_t total_cols = 0;                // the whole array's columns
  std::uint64_t seed = 0;
  DType dtype = DType::float64;
  bool normal = false;       // normal instead of uniform
  double low = 0, high = 1;  // uniform on [low, high); normal: the mean and the standard deviation
  double density = 0.01;     // sparse only: the chance that an element is stored
  Params to_params() const;  // ints {rows, cols, first_row, first_col, total_cols, seed, dtype, normal},
  static RandomParams from(const Params& params);  // reals {low, high, density}
};

struct FullParams {
  static constexpr const char* operation = ops::full;
  std::int64_t rows = 0, cols = 0;
  DType dtype = DType::float64;
  double value = 0;
  Params to_params() const;  // ints {rows, cols, dtype}, reals {value}
  static FullParams from(const Params& params);
};

struct UnaryParams {
  static constexpr const char* operation = ops::unary;
  std::string function;      // exp, log, abs, sqrt, sigmoid, neg, square
  Params to_params() const;  // name {function}
  static UnaryParams from(const Params& params);
};

struct ScalarParams {
  static constexpr const char* operation = ops::scalar;
  std::string function;  // a binary operation's name
  double scalar = 0;
  bool scalar_left = false;  // scalar op x instead of x op scalar
  Params to_params() const;  // name {function}, ints {scalar_left}, reals {scalar}
  static ScalarParams from(const Params& params);
};

struct BinaryParams {
  static constexpr const char* operation = ops::binary;
  std::string function;      // add, sub, mul, div, pow, minimum, maximum, lt, le, gt, ge, eq, ne
  Params to_params() const;  // name {function}
  static BinaryParams from(const Params& params);
};

// One step of a fused elementwise chain: a unary function, or a binary one with a scalar operand.
struct ChainStep {
  enum class Kind : std::uint8_t { unary = 0, scalar = 1 };
  Kind kind = Kind::unary;
  std::string function;
  double scalar = 0;  // 0 for unary steps
  bool scalar_left = false;
};

struct ChainParams {
  static constexpr const char* operation = ops::chain;
  std::vector<ChainStep> steps;  // at least one
  // name: the functions joined by ','; ints {kind per step, then scalar_left per step}; reals {scalar per
  // step}
  Params to_params() const;
  static ChainParams from(const Params& params);
};

// A chain's steps, then a reduction of their result, in one pass.
struct ChainReduceParams {
  static constexpr const char* operation = ops::chain_reduce;
  std::vector<ChainStep> steps;
  std::string reduction;   // sum, sumsq, min or max
  std::int64_t axis = -1;  // 0 down the rows, 1 along the columns, -1 all
  // The chain's, with '|' and the reduction after its name and the axis after its ints.
  Params to_params() const;
  static ChainReduceParams from(const Params& params);
};

struct AstypeParams {
  static constexpr const char* operation = ops::astype;
  DType dtype = DType::float64;  // the target
  Params to_params() const;      // ints {dtype}
  static AstypeParams from(const Params& params);
};

// One block copy of `assemble`: rows x cols from (src_row, src_col) of an input to (dst_row, dst_col) of
// the result.
struct AssembleBlock {
  std::int64_t src_row = 0, src_col = 0, rows = 0, cols = 0, dst_row = 0, dst_col = 0;
};

struct AssembleParams {
  static constexpr const char* operation = ops::assemble;
  std::int64_t rows = 0, cols = 0;    // the result's shape
  std::vector<AssembleBlock> blocks;  // one per input, in order
  Params to_params() const;           // ints {rows, cols, then per block its six fields}
  static AssembleParams from(const Params& params);
};

struct MatmulParams {
  static constexpr const char* operation = ops::matmul;
  bool transpose_a = false, transpose_b = false;
  Params to_params() const;  // ints {transpose_a, transpose_b}
  static MatmulParams from(const Params& params);
};

struct ReduceParams {
  static constexpr const char* operation = ops::reduce;
  std::string reduction;     // sum, sumsq, min, max
  std::int64_t axis = -1;    // 0 -> 1 x cols, 1 -> rows x 1, -1 -> 1 x 1
  Params to_params() const;  // name {reduction}, ints {axis}
  static ReduceParams from(const Params& params);
};

struct ArgreduceParams {
  static constexpr const char* operation = ops::argreduce;
  std::string reduction;  // argmax or argmin
  std::int64_t axis = -1;
  // The chunk's place in the whole array, so that the indices are global.
  std::int64_t first_row = 0, first_col = 0, total_cols = 0;
  Params to_params() const;  // name {reduction}, ints {axis, first_row, first_col, total_cols}
  static ArgreduceParams from(const Params& params);
};

struct CombineParams {
  static constexpr const char* operation = ops::combine;
  std::string reduction;  // what the partials are: sum, sumsq, min, max, argmax, argmin
  std::int64_t axis = -1;
  Params to_params() const;  // name {reduction}, ints {axis}
  static CombineParams from(const Params& params);
};

struct ScaleColumnsParams {
  static constexpr const char* operation = ops::scale_columns;
  bool divide = false;       // by the scales instead of times them
  Params to_params() const;  // ints {divide}
  static ScaleColumnsParams from(const Params& params);
};

// One level of a TSQR descent: rows [offset, offset + rows) of the current C are that node's part.
struct DescentLevel {
  std::int64_t offset = 0, rows = 0;
};

struct QrDescendParams {
  static constexpr const char* operation = ops::qr_descend;
  std::vector<DescentLevel> levels;  // from below the root down to the leaf
  Params to_params() const;          // ints {offset_1, rows_1, offset_2, rows_2, ...}
  static QrDescendParams from(const Params& params);
};

struct SvdLeftParams {
  static constexpr const char* operation = ops::svd_left;
  std::vector<DescentLevel> levels;  // as qr_descend's
  double max_condition = 0;          // S's condition number up to which U is X Vt^T S^-1
  Params to_params() const;          // ints as qr_descend's, reals {max_condition}
  static SvdLeftParams from(const Params& params);
};

struct GramSvdParams {
  static constexpr const char* operation = ops::gram_svd;
  double max_condition = 0;  // S's condition number up to which the result is accepted
  Params to_params() const;  // reals {max_condition}
  static GramSvdParams from(const Params& params);
};

// gated: another operation's call, run only when the flag agrees.
struct GatedParams {
  static constexpr const char* operation = ops::gated;
  std::string inner_operation;  // an operation without a name parameter
  bool run_when_set = true;
  int outputs = 1;  // the inner operation's result count (as many empty chunks when it does not run)
  Params inner;
  Params to_params()
      const;  // name {inner_operation}, ints {run_when_set, outputs, inner ints}, reals inner's
  static GatedParams from(const Params& params);
};

struct ChooseParams {
  static constexpr const char* operation = ops::choose;
  std::int64_t offset = 0, rows = -1;  // B's rows taken when the flag is clear (rows -1: all)
  Params to_params() const;            // ints {offset, rows}
  static ChooseParams from(const Params& params);
};

struct GlmPartialsParams {
  static constexpr const char* operation = glm::ops::glm_partials;
  glm::Family family = glm::Family::logistic;
  int order = 0;             // 0 the loss, 1 with the gradient, 2 with the Hessian
  Params to_params() const;  // ints {family, order}
  static GlmPartialsParams from(const Params& params);
};

}  // namespace tessera::backends

// The operations every backend may implement, with the parameters each takes. Inputs are chunks; `ints`,
// `reals` and `name` are Params' fields, which each operation's struct in backends/kernel_params.hpp writes
// and reads by name. Masks are 0/1 chunks of the operands' element type.
#pragma once

namespace tessera::backends::ops {

// Creation (no inputs; the backend comes from the caller).
// random: ints {rows, cols, first_row, first_col, total_cols, seed, dtype, normal?}, reals {low, high} or
//         {mean, stddev}. Element (i, j) of the whole array depends only on (seed, i, j).
inline constexpr const char* random = "random";
// full: ints {rows, cols, dtype}, reals {value}.
inline constexpr const char* full = "full";

// Elementwise. unary: name in exp, log, abs, sqrt, sigmoid, neg, square.
inline constexpr const char* unary = "unary";
// scalar: name a binary operation; reals {scalar}; ints {1 when the scalar is the left operand}.
inline constexpr const char* scalar = "scalar";
// binary: name in add, sub, mul, div, pow, minimum, maximum, lt, le, gt, ge, eq, ne; two chunks whose shapes
//         broadcast (equal, or 1 along a dimension).
inline constexpr const char* binary = "binary";
// chain: one chunk through several unary and scalar steps in one pass (fused elementwise operations);
//        name: the steps' names joined by ','; ints {kind per step (0 unary, 1 scalar), scalar_left per
//        step}; reals {scalar per step (0 for unary steps)}.
inline constexpr const char* chain = "chain";
// chain_reduce: a chain's steps followed by reduce, in one pass and without the chain's output chunk;
//               name: the steps' names joined by ',', then '|' and sum, sumsq, min or max; ints: the chain's,
//               then the axis; reals: the chain's.
inline constexpr const char* chain_reduce = "chain_reduce";
// where: mask, a, b (shapes broadcast) -> a where mask != 0, else b.
inline constexpr const char* where = "where";
// astype: ints {dtype}.
inline constexpr const char* astype = "astype";

// Layout. transpose: one chunk.
inline constexpr const char* transpose = "transpose";
// assemble: ints {rows, cols, then per input: src_row, src_col, nrows, ncols, dst_row, dst_col}: copies a
//           block of each input into a new chunk (slicing, concatenation and rechunking are all this).
inline constexpr const char* assemble = "assemble";

// matmul: inputs A_0..A_{k-1}, B_0..B_{k-1} -> sum_i op(A_i) op(B_i); ints {transpose_a, transpose_b}.
inline constexpr const char* matmul = "matmul";

// Reductions. reduce: name in sum, sumsq, min, max; ints {axis}: 0 -> 1 x cols, 1 -> rows x 1, -1 -> 1 x 1.
inline constexpr const char* reduce = "reduce";
// argreduce: name argmax or argmin; ints {axis, first_row, first_col, total_cols}: 0 -> 2 x cols (values;
//            global row indices), 1 -> rows x 2 (values, global column indices), -1 -> 1 x 2 (value, flat
//            row-major index).
inline constexpr const char* argreduce = "argreduce";
// combine: name in sum, min, max, argmax, argmin; ints {axis}; partial results of equal shape -> one.
inline constexpr const char* combine = "combine";

// Conversion between backends: to_sparse (cpu -> sparse), to_dense (sparse or cpu -> cpu),
// to_host (cuda -> cpu), to_cuda (cpu -> cuda).
inline constexpr const char* to_sparse = "to_sparse";
inline constexpr const char* to_dense = "to_dense";
inline constexpr const char* to_host = "to_host";
inline constexpr const char* to_cuda = "to_cuda";

// Factorizations. qr_factor: A (m x n) -> {packed Householder factor (m x n), tau (min(m,n) x 1)}.
inline constexpr const char* qr_factor = "qr_factor";
// qr_r: packed -> R (min(m,n) x n, upper triangular).
inline constexpr const char* qr_r = "qr_r";
// qr_q: packed, tau -> Q (m x min(m,n)) with orthonormal columns.
inline constexpr const char* qr_q = "qr_q";
// qr_apply: packed, tau, C (k x c) with k <= m -> Q [C; 0] (m x c).
inline constexpr const char* qr_apply = "qr_apply";
// svd: A (m x n) -> {U (m x k), S (k x 1), Vt (k x n)}, k = min(m, n), S descending.
inline constexpr const char* svd = "svd";
// gram_svd: G = X^T X (n x n) -> {S (n x 1, descending), Vt (n x n), accepted (1 x 1: 1 when S's condition
//           number is at most reals {max condition}, else 0)}: X's singular values and right vectors.
inline constexpr const char* gram_svd = "gram_svd";
// scale_columns: A, s (n x 1) -> A * diag(s); ints {1 to divide instead}.
inline constexpr const char* scale_columns = "scale_columns";

}  // namespace tessera::backends::ops

// Operations composed from other operations of the table, so that they run on every backend that has
// the parts. TSQR's back-substitution lives here: it walks from the root of the reduction tree to one leaf.
#pragma once

#include "backends/dispatch.hpp"

namespace tessera::backends {

namespace ops {
// qr_descend: C (rows of the root stack x c), then (packed, tau) per level below the root down to a leaf;
// ints {offset_1, rows_1, offset_2, rows_2, ...}: at each level, rows [offset, offset + rows) of the current
// C are that node's part, and C becomes Q_node [part; 0]. Gives the leaf's rows of Q_tree C.
inline constexpr const char* qr_descend = "qr_descend";
// svd_left: X (the leaf's rows), S (k x 1), Vt (k x n), U_R (R's left vectors), the root's packed factor and
// tau, then (packed, tau) per level below the root; ints as qr_descend; reals {max condition number}.
// Gives the leaf's rows of U = Q U_R. When S's condition number is at most the limit this is X Vt^T S^-1
// (half the flops, accurate to rounding times the condition number); otherwise it is the descent.
inline constexpr const char* svd_left = "svd_left";
// gram_left: X (rows of the input), S (k x 1), Vt (k x n) -> X Vt^T S^-1, those rows of U when S and Vt come
// from gram_svd (which accepts them only when that is accurate).
inline constexpr const char* gram_left = "gram_left";
}  // namespace ops

// Registers the composite operations for every backend that has their parts.
void register_composite_kernels(Dispatch& dispatch);

}  // namespace tessera::backends

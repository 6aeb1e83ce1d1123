// Operations that run or pick by a flag computed in the same graph, so a graph built ahead of time can hold
// two ways to one result and take one at run time (the SVD's Gram path, with TSQR where it is refused).
// A flag is a 1 x 1 chunk: nonzero is set.
#pragma once

#include "backends/dispatch.hpp"

namespace tessera::backends {

namespace ops {
// gated: flag, then the inputs of another operation; name {that operation}, ints {1 to run it when the flag
// is set or 0 when it is clear, its result count, then its ints}, reals {its reals}. Runs the operation when
// the flag agrees; otherwise gives as many empty (0 x 0) chunks, at no cost.
inline constexpr const char* gated = "gated";
// choose: flag, A, B -> A when the flag is set, else rows [offset, offset + rows) of B; ints {offset, rows}
// (rows -1: all of B).
inline constexpr const char* choose = "choose";
}  // namespace ops

// Registers gated and choose for every backend (they only move chunk pointers, or run another kernel).
void register_conditional_kernels(Dispatch& dispatch);

// Whether a flag chunk (1 x 1, on any backend) is set.
bool flag_is_set(const ChunkPtr& flag);

}  // namespace tessera::backends

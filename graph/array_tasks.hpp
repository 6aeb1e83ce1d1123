// The task functions behind Array: "tessera.array.kernel<N>" runs one dispatch-table operation on N chunk
// inputs; "tessera.array.pick" takes one result of a kernel with several. Registered in every process.
#pragma once

#include <string>

#include "backends/dispatch.hpp"
#include "graph/registry.hpp"

namespace tessera {

// The most chunk inputs one kernel task takes; callers combine more through a tree.
inline constexpr std::size_t max_kernel_inputs = 16;

void register_array_tasks(Registry& registry);

// The registered function for a kernel of `inputs` chunk inputs.
const TaskFunction& array_kernel_function(std::size_t inputs);
const TaskFunction& array_pick_function();
const TaskFunction& array_identity_function();
// (chunk, chunk) -> a list of the two.
const TaskFunction& array_pair_function();
// (function name, row0, col0, rows, cols): a chunk from a registered block function.
const TaskFunction& array_block_function();
// (path, row0, rows, col0, cols): a block of an .npy file.
const TaskFunction& array_npy_function();

// A kernel call's fixed arguments as one Value: (operation, backend, name, ints, reals).
Value encode_kernel_call(std::string_view operation, backends::Backend backend,
                         const backends::Params& params);

}  // namespace tessera

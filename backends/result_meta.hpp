// Which backend an operation's result lives on, known before anything runs (an Array's meta). The sparse
// kernels follow the same rule: operations that keep zeros zero stay sparse, the others give dense chunks.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "backends/chunk.hpp"

namespace tessera::backends {

Backend result_backend(std::string_view operation, const std::string& name, std::span<const Backend> inputs,
                       bool scalar_left = false);

// Whether a unary function maps 0 to 0 (so a sparse chunk stays sparse).
bool keeps_zero(const std::string& unary_name);

}  // namespace tessera::backends

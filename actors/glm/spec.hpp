// What a GLM fit asks for: family, regularizer, solver and their settings. The client builds it from an
// estimator's Options (graph/glm_options.hpp, the public part), it travels to the scheduler
// inside a GlmFitRequest (actors/glm/messages.hpp), and the solver actor reads it there.
#pragma once

#include <cstdint>
#include <string>

#include "backends/glm_partials.hpp"
#include "graph/glm_options.hpp"

namespace tessera::glm {

using backends::glm::Family;

// What travels to the solver: the options with the family and the data's shape.
struct GlmSpec : Options {
  Family family = Family::logistic;
  std::int64_t rows = 0;
  std::int64_t cols = 0;

  std::int64_t iteration_limit() const;
  bool smooth_regularizer() const { return regularizer == "none" || regularizer == "l2"; }
};

// Throws std::invalid_argument naming the first bad setting (unknown solver or regularizer, a solver
// that cannot take the regularizer, a negative lambda, ...).
void validate(const GlmSpec& spec);

}  // namespace tessera::glm

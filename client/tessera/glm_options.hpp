// An estimator's glm::Options (graph/glm_options.hpp): solver, regularizer and stopping rules.
#pragma once

#include "graph/glm_options.hpp"

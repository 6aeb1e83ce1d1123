// The messages of a GLM fit, one envelope for every hop (client -> scheduler -> solver actor -> workers'
// partition actors and back), so that the same struct crosses processes as one Cap'n Proto message.
// Payloads are Values (lists of numbers, vectors and matrices), laid out per kind as below.
#pragma once

#include <caf/all.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "graph/value.hpp"

namespace tessera {

enum class GlmKind : std::uint32_t {
  fit = 0,       // client -> scheduler: [spec, [[op, task, first_row], ...]] (persisted partition tasks)
  fitted = 1,    // scheduler -> client: [error, beta, iterations, converged, objective, evaluations,
                 //                       seconds, rounds, round_seconds, worker_seconds]
  load = 2,      // solver -> worker: [spec, [[op, slot, index, first_row], ...]]
  loaded = 3,    // worker -> solver: [worker id, error]
  evaluate = 4,  // solver -> worker: [seq, order, beta]
  partials = 5,  // worker -> solver: [seq, error, loss, gradient, hessian or none, worker_seconds]
  solve = 6,     // solver -> worker: [seq, rho, scale, [[index, target, start], ...]]
  solved = 7,    // worker -> solver: [seq, error, [[index, x], ...], worker_seconds]
  release = 8,   // solver -> worker: the session is over
  finished = 9,  // solver -> scheduler: the session is over
  lost = 10,     // scheduler -> solver: [worker id] left the cluster (its partitions with it)
};
inline constexpr std::uint32_t kLastGlmKind = 10;

struct GlmMessage {
  std::uint64_t session = 0;  // the fit's id on the scheduler (fit/fitted: the client's request id)
  GlmKind kind = GlmKind::fit;
  Value payload;
};

// Where a fit's answer goes: a waiting client thread, or a client connection of a scheduler node.
struct GlmReply {
  std::function<void(Value)> deliver;
};

using glm_atom = caf::atom_constant<caf::atom("glm")>;
using glm_fit_atom = caf::atom_constant<caf::atom("glmfit")>;
using fetch_atom = caf::atom_constant<caf::atom("fetch")>;

}  // namespace tessera

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tessera::GlmMessage)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(std::shared_ptr<tessera::GlmReply>)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(std::vector<tessera::Value>)

// The messages of a GLM fit: one struct per kind, carried as GlmMessage{session, body} on every hop
// (client -> scheduler -> solver actor -> workers' partition actors and back), so that the same struct
// crosses processes as one Cap'n Proto message (nodes/glm_codec, messages/protocol.capnp).
#pragma once

#include <Eigen/Dense>
#include <caf/all.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "actors/glm/spec.hpp"
#include "graph/operation.hpp"
#include "graph/value.hpp"

namespace tessera {

// client -> scheduler: a persisted task holding one partition (its rows of X and y, as one pair).
struct GlmPartitionTask {
  OpId op = 0;
  std::uint32_t task = 0;
  std::int64_t first_row = 0;  // its first row in X
};
struct GlmFitRequest {
  glm::GlmSpec spec;
  std::vector<GlmPartitionTask> partitions;  // in row order
};

// scheduler -> client: the fit's answer. When `error` is set, the rest is left at its defaults.
struct GlmFitted {
  std::string error;
  Eigen::VectorXd beta;  // p + 1, the intercept first
  std::int64_t iterations = 0;
  bool converged = false;
  double objective = 0;
  std::int64_t evaluations = 0;
  double seconds = 0;
  std::int64_t rounds = 0;
  double round_seconds = 0;
  double worker_seconds = 0;
};

// solver -> worker: where each of the worker's partitions is held (an operation's slot there).
struct GlmHeldPartition {
  OpId op = 0;
  std::uint32_t slot = 0;
  std::int64_t index = 0;  // its place among the fit's partitions
  std::int64_t first_row = 0;
};
struct GlmLoad {
  glm::GlmSpec spec;
  std::vector<GlmHeldPartition> partitions;
};
// worker -> solver: the partitions are resident and checked (or why not).
struct GlmLoaded {
  std::uint32_t worker = 0;
  std::string error;
};

// solver -> worker: one round's coefficients. `round` numbers the solver's rounds: an answer to an older
// round is ignored.
struct GlmEvaluate {
  std::int64_t round = 0;
  int order = 0;  // 0 the loss, 1 with the gradient, 2 with the Hessian
  Eigen::VectorXd beta;
};
// worker -> solver: the sums over the worker's partitions.
struct GlmPartials {
  std::int64_t round = 0;
  std::string error;
  double loss = 0;
  Eigen::VectorXd gradient;
  std::optional<Eigen::MatrixXd> hessian;  // when order 2 was asked for
  double worker_seconds = 0;
};

// solver -> worker: ADMM's local step for each of the worker's partitions.
struct GlmLocalTarget {
  std::int64_t index = 0;  // the partition
  Eigen::VectorXd target, start;
};
struct GlmSolve {
  std::int64_t round = 0;
  double rho = 0;
  double scale = 0;
  std::vector<GlmLocalTarget> partitions;
};
struct GlmLocalSolution {
  std::int64_t index = 0;
  Eigen::VectorXd solution;
};
// worker -> solver
struct GlmSolved {
  std::int64_t round = 0;
  std::string error;
  std::vector<GlmLocalSolution> solutions;
  double worker_seconds = 0;
};

// solver -> worker: the session is over, its partitions may go.
struct GlmRelease {};
// solver -> scheduler: the session is over.
struct GlmFinished {};
// scheduler -> solver: a worker left the cluster (its partitions with it).
struct GlmLost {
  std::uint32_t worker = 0;
};

// The kinds in the order of GlmBody's alternatives.
enum class GlmKind : std::uint8_t {
  fit,
  fitted,
  load,
  loaded,
  evaluate,
  partials,
  solve,
  solved,
  release,
  finished,
  lost,
};
using GlmBody = std::variant<GlmFitRequest, GlmFitted, GlmLoad, GlmLoaded, GlmEvaluate, GlmPartials, GlmSolve,
                             GlmSolved, GlmRelease, GlmFinished, GlmLost>;
static_assert(std::variant_size_v<GlmBody> == static_cast<std::size_t>(GlmKind::lost) + 1);

constexpr std::string_view glm_kind_name(GlmKind kind) {
  constexpr std::string_view names[] = {"fit",   "fitted", "load",    "loaded",   "evaluate", "partials",
                                        "solve", "solved", "release", "finished", "lost"};
  return names[static_cast<std::size_t>(kind)];
}

struct GlmMessage {
  std::uint64_t session = 0;  // the fit's id on the scheduler (fit/fitted: the client's request id)
  GlmBody body;

  GlmKind kind() const { return static_cast<GlmKind>(body.index()); }
};

// Where a fit's answer goes: a waiting client thread, or a client connection of a scheduler node.
struct GlmReply {
  std::function<void(GlmFitted)> deliver;
};

using glm_atom = caf::atom_constant<caf::atom("glm")>;
using glm_fit_atom = caf::atom_constant<caf::atom("glmfit")>;
using fetch_atom = caf::atom_constant<caf::atom("fetch")>;

}  // namespace tessera

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tessera::GlmMessage)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tessera::GlmFitRequest)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(std::shared_ptr<tessera::GlmReply>)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(std::vector<tessera::Value>)

#include "actors/glm/partition_actor.hpp"

#include <chrono>
#include <cmath>
#include <optional>
#include <unordered_map>

#include "actors/glm/messages.hpp"
#include "actors/messages.hpp"
#include "actors/protocols/glm.hpp"
#include "actors/stray_errors.hpp"
#include "backends/glm_partials.hpp"

namespace tessera {

namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

// What one partition's job gives back to the actor.
struct GlmPartOutcome {
  std::int64_t seq = 0;
  std::size_t position = 0;  // in the actor's partitions
  backends::glm::Partials partials;
  Eigen::VectorXd solution;
  std::string error;
};

}  // namespace tessera

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tessera::GlmPartOutcome)

namespace tessera {
namespace {

struct RoundState {
  std::int64_t seq = -1;
  GlmKind kind = GlmKind::evaluate;
  std::size_t pending = 0;
  bool has_hessian = false;
  backends::glm::Partials sum;
  std::vector<GlmLocalSolution> solutions;
  std::string error;
  Clock::time_point started;
};

struct PartitionState {
  GlmPartitionArgs args;
  RoundState round;
};

using PartitionActor = protocols::glm_partition_type::stateful_base<PartitionState>;

std::string describe(const std::exception& e, const GlmPartition& part) {
  return std::string(e.what()) + " (partition " + std::to_string(part.index) + ", rows from " +
         std::to_string(part.first_row) + ")";
}

void reply(PartitionActor* self, GlmBody answer) {
  caf::anon_send(self->state.args.reply_to, glm_atom::value,
                 GlmMessage{self->state.args.session, std::move(answer)});
}

// Starts a round: one job per partition on the worker's compute threads.
template <class Job>
void start_round(PartitionActor* self, GlmKind kind, std::int64_t seq, Job job) {
  auto& st = self->state;
  st.round = RoundState{};
  st.round.seq = seq;
  st.round.kind = kind;
  st.round.pending = st.args.partitions.size();
  st.round.started = Clock::now();
  caf::actor me = caf::actor_cast<caf::actor>(self);
  for (std::size_t i = 0; i < st.args.partitions.size(); ++i) {
    st.args.pool->submit([me, i, seq, job, part = st.args.partitions[i]] {
      GlmPartOutcome out;
      out.seq = seq;
      out.position = i;
      try {
        job(part, out);
      } catch (const std::exception& e) {
        out.error = describe(e, part);
      }
      caf::anon_send(me, glm_part_atom::value, std::move(out));
    });
  }
}

void finish_round(PartitionActor* self) {
  auto& r = self->state.round;
  const double seconds = std::chrono::duration<double>(Clock::now() - r.started).count();
  switch (r.kind) {
    case GlmKind::load:
      reply(self, GlmLoaded{self->state.args.worker_id, r.error});
      break;
    case GlmKind::evaluate: {
      std::optional<Eigen::MatrixXd> hessian;
      if (r.has_hessian) hessian = std::move(r.sum.hessian);
      reply(self,
            GlmPartials{r.seq, r.error, r.sum.loss, std::move(r.sum.gradient), std::move(hessian), seconds});
      break;
    }
    default:
      reply(self, GlmSolved{r.seq, r.error, std::move(r.solutions), seconds});
      break;
  }
}

void accept(PartitionActor* self, GlmPartOutcome& out) {
  auto& r = self->state.round;
  if (out.seq != r.seq || r.pending == 0) return;  // a round that was already answered
  if (!out.error.empty() && r.error.empty()) r.error = std::move(out.error);
  if (r.kind == GlmKind::evaluate && r.error.empty()) {
    if (r.sum.gradient.size() == 0) {
      r.sum = std::move(out.partials);
      r.has_hessian = r.sum.hessian.size() > 0;
    } else {
      r.sum.loss += out.partials.loss;
      r.sum.gradient += out.partials.gradient;
      if (r.has_hessian) r.sum.hessian += out.partials.hessian;
    }
  }
  if (r.kind == GlmKind::solve && out.error.empty()) {
    const auto index = self->state.args.partitions[out.position].index;
    r.solutions.push_back(GlmLocalSolution{index, std::move(out.solution)});
  }
  if (--r.pending == 0) finish_round(self);
}

// Checks the partitions' labels: the round that answers `loaded`. X is not read here: a non-finite value
// in it makes every result computed from it non-finite (0 * inf and 0 * nan are nan), so X is scanned only
// when a partition's result is, to name the value (see finite_or_named) — a whole pass over X saved.
void start_load(PartitionActor* self) {
  const auto family = self->state.args.spec.family;
  start_round(self, GlmKind::load, 0, [family](const GlmPartition& part, GlmPartOutcome& out) {
    if (auto problem = backends::glm::check_labels(*part.y, family, part.first_row)) out.error = *problem;
  });
}

// A result that is not finite may come from X: then the fit fails naming X's first non-finite value (a
// loss that overflows on finite data is the solver's to handle).
void finite_or_named(bool finite, const GlmPartition& part, GlmPartOutcome& out) {
  if (finite) return;
  if (auto problem = backends::glm::check_values(*part.x, part.first_row)) out.error = *problem;
}

void handle(PartitionActor* self, GlmMessage& message) {
  auto& st = self->state;
  const auto family = st.args.spec.family;
  if (const auto* evaluate = std::get_if<GlmEvaluate>(&message.body)) {
    const int order = evaluate->order;
    auto beta = std::make_shared<const Eigen::VectorXd>(evaluate->beta);
    start_round(self, GlmKind::evaluate, evaluate->round,
                [family, order, beta](const GlmPartition& part, GlmPartOutcome& out) {
                  out.partials = backends::glm::evaluate(part.x, part.y, *beta, family, order);
                  finite_or_named(std::isfinite(out.partials.loss) && out.partials.gradient.allFinite() &&
                                      out.partials.hessian.allFinite(),
                                  part, out);
                });
  } else if (auto* solve = std::get_if<GlmSolve>(&message.body)) {
    // Targets and starts by partition index.
    auto work =
        std::make_shared<std::unordered_map<std::int64_t, std::pair<Eigen::VectorXd, Eigen::VectorXd>>>();
    for (auto& local : solve->partitions)
      (*work)[local.index] = {std::move(local.target), std::move(local.start)};
    const double rho = solve->rho, scale = solve->scale;
    const bool intercept = st.args.spec.fit_intercept;
    start_round(self, GlmKind::solve, solve->round,
                [family, rho, scale, intercept, work](const GlmPartition& part, GlmPartOutcome& out) {
                  const auto it = work->find(part.index);
                  if (it == work->end())
                    throw std::invalid_argument("no target for partition " + std::to_string(part.index));
                  out.solution = backends::glm::local_solve(part.x, part.y, family, scale, rho,
                                                            it->second.first, it->second.second, intercept);
                  finite_or_named(out.solution.allFinite(), part, out);
                });
  }
}

protocols::glm_partition_type::behavior_type partition_actor(PartitionActor* self, GlmPartitionArgs args) {
  self->state.args = std::move(args);
  survive_stray_errors(self, "GLM partition");
  start_load(self);
  return {
      [=](glm_atom, GlmMessage& message) { handle(self, message); },
      [=](glm_part_atom, GlmPartOutcome& out) { accept(self, out); },
      [=](shutdown_atom) { self->quit(); },
  };
}

}  // namespace

caf::actor spawn_glm_partitions(caf::actor_system& system, GlmPartitionArgs args) {
  return caf::actor_cast<caf::actor>(system.spawn(partition_actor, std::move(args)));
}

}  // namespace tessera

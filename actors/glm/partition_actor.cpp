#include "actors/glm/partition_actor.hpp"

#include <chrono>

#include "actors/glm/messages.hpp"
#include "actors/messages.hpp"
#include "backends/glm_partials.hpp"

namespace tessera {

namespace {

using Clock = std::chrono::steady_clock;

// What one partition's job gives back to the actor.
struct PartOutcome {
  std::int64_t seq = 0;
  std::size_t position = 0;  // in the actor's partitions
  backends::glm::Partials partials;
  Eigen::VectorXd solution;
  std::string error;
};

}  // namespace
}  // namespace tessera

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tessera::PartOutcome)

namespace tessera {
namespace {

using part_atom = caf::atom_constant<caf::atom("glmpart")>;

struct RoundState {
  std::int64_t seq = -1;
  GlmKind kind = GlmKind::evaluate;
  std::size_t pending = 0;
  bool has_hessian = false;
  backends::glm::Partials sum;
  Value::List solutions;
  std::string error;
  Clock::time_point started;
};

struct PartitionState {
  GlmPartitionArgs args;
  RoundState round;
};

using PartitionActor = caf::stateful_actor<PartitionState>;

std::string describe(const std::exception& e, const GlmPartition& part) {
  return std::string(e.what()) + " (partition " + std::to_string(part.index) + ", rows from " +
         std::to_string(part.first_row) + ")";
}

void reply(PartitionActor* self, GlmKind kind, Value payload) {
  self->send(self->state.args.reply_to, glm_atom::value,
             GlmMessage{self->state.args.session, kind, std::move(payload)});
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
      PartOutcome out;
      out.seq = seq;
      out.position = i;
      try {
        job(part, out);
      } catch (const std::exception& e) {
        out.error = describe(e, part);
      }
      caf::anon_send(me, part_atom::value, std::move(out));
    });
  }
}

void finish_round(PartitionActor* self) {
  auto& r = self->state.round;
  const double seconds = std::chrono::duration<double>(Clock::now() - r.started).count();
  switch (r.kind) {
    case GlmKind::load:
      reply(self, GlmKind::loaded,
            Value(Value::List{Value(static_cast<std::int64_t>(self->state.args.worker_id)), Value(r.error)}));
      break;
    case GlmKind::evaluate:
      reply(
          self, GlmKind::partials,
          Value(Value::List{Value(r.seq), Value(r.error), Value(r.sum.loss), Value(std::move(r.sum.gradient)),
                            r.has_hessian ? Value(std::move(r.sum.hessian)) : Value(), Value(seconds)}));
      break;
    default:
      reply(self, GlmKind::solved,
            Value(Value::List{Value(r.seq), Value(r.error), Value(std::move(r.solutions)), Value(seconds)}));
      break;
  }
}

void accept(PartitionActor* self, PartOutcome& out) {
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
    r.solutions.push_back(Value(Value::List{Value(index), Value(std::move(out.solution))}));
  }
  if (--r.pending == 0) finish_round(self);
}

void handle(PartitionActor* self, GlmMessage& message) {
  auto& st = self->state;
  const auto family = st.args.spec.family;
  try {
    switch (message.kind) {
      case GlmKind::load:
        start_round(self, GlmKind::load, 0, [family](const GlmPartition& part, PartOutcome& out) {
          if (auto problem = backends::glm::check_partition(*part.x, *part.y, family, part.first_row))
            out.error = *problem;
        });
        return;
      case GlmKind::evaluate: {
        const auto& f = message.payload.as_list();
        const std::int64_t seq = f.at(0).as_int();
        const int order = static_cast<int>(f.at(1).as_int());
        auto beta = std::make_shared<const Eigen::VectorXd>(f.at(2).as_vector());
        start_round(self, GlmKind::evaluate, seq,
                    [family, order, beta](const GlmPartition& part, PartOutcome& out) {
                      out.partials = backends::glm::evaluate(part.x, part.y, *beta, family, order);
                    });
        return;
      }
      case GlmKind::solve: {
        const auto& f = message.payload.as_list();
        const std::int64_t seq = f.at(0).as_int();
        const double rho = f.at(1).as_double();
        const double scale = f.at(2).as_double();
        // Targets and starts by partition index.
        auto work =
            std::make_shared<std::unordered_map<std::int64_t, std::pair<Eigen::VectorXd, Eigen::VectorXd>>>();
        for (const auto& entry : f.at(3).as_list()) {
          const auto& e = entry.as_list();
          (*work)[e.at(0).as_int()] = {e.at(1).as_vector(), e.at(2).as_vector()};
        }
        const bool intercept = st.args.spec.fit_intercept;
        start_round(self, GlmKind::solve, seq,
                    [family, rho, scale, intercept, work](const GlmPartition& part, PartOutcome& out) {
                      const auto it = work->find(part.index);
                      if (it == work->end())
                        throw std::invalid_argument("no target for partition " + std::to_string(part.index));
                      out.solution = backends::glm::local_solve(
                          part.x, part.y, family, scale, rho, it->second.first, it->second.second, intercept);
                    });
        return;
      }
      default:
        return;
    }
  } catch (const std::exception& e) {
    // A malformed request: answer it with the error so the solver does not wait.
    const std::int64_t seq = message.payload.kind() == ValueKind::list &&
                                     !message.payload.as_list().empty() &&
                                     message.payload.as_list()[0].kind() == ValueKind::integer
                                 ? message.payload.as_list()[0].as_int()
                                 : -1;
    const std::string error = std::string("glm: a malformed request: ") + e.what();
    if (message.kind == GlmKind::evaluate)
      reply(self, GlmKind::partials,
            Value(Value::List{Value(seq), Value(error), Value(0.0), Value(), Value(), Value(0.0)}));
    else if (message.kind == GlmKind::solve)
      reply(self, GlmKind::solved,
            Value(Value::List{Value(seq), Value(error), Value(Value::List{}), Value(0.0)}));
  }
}

caf::behavior partition_actor(PartitionActor* self, GlmPartitionArgs args) {
  self->state.args = std::move(args);
  return {
      [=](glm_atom, GlmMessage& message) { handle(self, message); },
      [=](part_atom, PartOutcome& out) { accept(self, out); },
      [=](shutdown_atom) { self->quit(); },
  };
}

}  // namespace

caf::actor spawn_glm_partitions(caf::actor_system& system, GlmPartitionArgs args) {
  return system.spawn(partition_actor, std::move(args));
}

}  // namespace tessera

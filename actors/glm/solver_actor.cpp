#include "actors/glm/solver_actor.hpp"

#include <chrono>
#include <map>
#include <set>
#include <stdexcept>

#include "actors/glm/solvers.hpp"

namespace tessera {

namespace {

using Clock = std::chrono::steady_clock;

// How long a round may wait for a worker before the fit fails (a worker lost mid-fit).
constexpr auto kRoundTimeout = std::chrono::seconds(600);

struct WorkerShare {
  caf::actor worker;
  std::vector<const GlmPartitionLocation*> partitions;
};

class DistributedObjective final : public glm::GlmObjective {
 public:
  DistributedObjective(caf::blocking_actor* self, std::uint64_t session, std::vector<WorkerShare> shares,
                       std::set<std::uint32_t> workers, std::size_t partitions)
      : self_(self),
        session_(session),
        shares_(std::move(shares)),
        workers_(std::move(workers)),
        partitions_(partitions) {}

  backends::glm::Partials evaluate(const Eigen::VectorXd& beta, int order) override {
    const std::int64_t seq = ++seq_;
    const Value payload(Value::List{Value(seq), Value(static_cast<std::int64_t>(order)), Value(beta)});
    const auto started = Clock::now();
    for (auto& share : shares_)
      self_->send(share.worker, glm_atom::value, GlmMessage{session_, GlmKind::evaluate, payload});
    backends::glm::Partials sum;
    double slowest = 0;
    for (std::size_t answered = 0; answered < shares_.size(); ++answered) {
      const auto f = await(GlmKind::partials, seq);
      slowest = std::max(slowest, f.at(5).as_double());
      if (answered == 0) {
        sum.loss = f.at(2).as_double();
        sum.gradient = f.at(3).as_vector();
        if (!f.at(4).is_none()) sum.hessian = f.at(4).as_matrix();
      } else {
        sum.loss += f.at(2).as_double();
        sum.gradient += f.at(3).as_vector();
        if (!f.at(4).is_none()) sum.hessian += f.at(4).as_matrix();
      }
    }
    record(started, slowest);
    return sum;
  }

  std::vector<Eigen::VectorXd> local_solve(const std::vector<Eigen::VectorXd>& targets,
                                           const std::vector<Eigen::VectorXd>& starts, double rho,
                                           double scale) override {
    const std::int64_t seq = ++seq_;
    const auto started = Clock::now();
    for (auto& share : shares_) {
      Value::List work;
      for (const auto* part : share.partitions) {
        const auto i = static_cast<std::size_t>(part->index);
        work.push_back(Value(Value::List{Value(part->index), Value(targets[i]), Value(starts[i])}));
      }
      self_->send(
          share.worker, glm_atom::value,
          GlmMessage{session_, GlmKind::solve,
                     Value(Value::List{Value(seq), Value(rho), Value(scale), Value(std::move(work))})});
    }
    std::vector<Eigen::VectorXd> out(partitions_);
    double slowest = 0;
    for (std::size_t answered = 0; answered < shares_.size(); ++answered) {
      const auto f = await(GlmKind::solved, seq);
      slowest = std::max(slowest, f.at(3).as_double());
      for (const auto& entry : f.at(2).as_list()) {
        const auto& e = entry.as_list();
        const auto index = e.at(0).as_int();
        if (index < 0 || static_cast<std::size_t>(index) >= partitions_)
          throw std::runtime_error("glm: a worker answered for partition " + std::to_string(index) + " of " +
                                   std::to_string(partitions_));
        out[static_cast<std::size_t>(index)] = e.at(1).as_vector();
      }
    }
    for (std::size_t i = 0; i < partitions_; ++i)
      if (out[i].size() != targets[i].size())
        throw std::runtime_error("glm: no local solution for partition " + std::to_string(i));
    record(started, slowest);
    return out;
  }

  std::size_t partitions() const override { return partitions_; }

  // Waits for the `kind` answer of round `seq` from one worker; an answer carrying an error ends the fit.
  Value::List await(GlmKind kind, std::int64_t seq) {
    for (;;) {
      bool timed_out = false;
      GlmMessage got;
      self_->receive([&](glm_atom, GlmMessage& m) { got = std::move(m); },
                     caf::after(kRoundTimeout) >> [&] { timed_out = true; });
      if (timed_out)
        throw std::runtime_error("glm: no answer from the workers within " +
                                 std::to_string(kRoundTimeout.count()) + " s (was a worker lost?)");
      if (got.kind == GlmKind::lost && got.payload.kind() == ValueKind::list) {
        const auto worker = got.payload.as_list().at(0).as_int();
        if (workers_.count(static_cast<std::uint32_t>(worker)))
          throw std::runtime_error("glm: worker " + std::to_string(worker) +
                                   " left the cluster during the fit, with partitions of the data; fit again "
                                   "(the cluster recomputes them)");
        continue;
      }
      if (got.kind != kind || got.payload.kind() != ValueKind::list) continue;
      auto f = got.payload.as_list();
      if (kind != GlmKind::loaded && (f.empty() || f[0].as_int() != seq)) continue;  // a stale round
      if (const auto& error = f.at(1); error.kind() == ValueKind::string && !error.as_string().empty())
        throw std::runtime_error(error.as_string());
      return f;
    }
  }

  std::int64_t rounds() const { return rounds_; }
  double round_seconds() const { return round_seconds_; }
  double worker_seconds() const { return worker_seconds_; }

 private:
  void record(Clock::time_point started, double slowest_worker) {
    ++rounds_;
    round_seconds_ += std::chrono::duration<double>(Clock::now() - started).count();
    worker_seconds_ += slowest_worker;
  }

  caf::blocking_actor* self_;
  std::uint64_t session_;
  std::vector<WorkerShare> shares_;
  std::set<std::uint32_t> workers_;  // the ids of the shares' workers
  std::size_t partitions_;
  std::int64_t seq_ = 0;
  std::int64_t rounds_ = 0;
  double round_seconds_ = 0, worker_seconds_ = 0;
};

void solver_main(caf::blocking_actor* self, GlmSolverArgs args) {
  const auto started = Clock::now();
  std::map<std::uint32_t, WorkerShare> by_worker;
  for (const auto& part : args.partitions) {
    auto& share = by_worker[part.worker_id];
    share.worker = part.worker;
    share.partitions.push_back(&part);
  }
  std::vector<WorkerShare> shares;
  std::set<std::uint32_t> workers;
  for (auto& [id, share] : by_worker) {
    shares.push_back(std::move(share));
    workers.insert(id);
  }
  DistributedObjective objective(self, args.session, shares, std::move(workers), args.partitions.size());

  Value result;
  try {
    const Value spec = glm::to_value(args.spec);
    for (const auto& share : shares) {
      Value::List entries;
      for (const auto* part : share.partitions)
        entries.push_back(Value(Value::List{Value(static_cast<std::int64_t>(part->op)),
                                            Value(static_cast<std::int64_t>(part->slot)), Value(part->index),
                                            Value(part->first_row)}));
      self->send(
          share.worker, glm_atom::value,
          GlmMessage{args.session, GlmKind::load, Value(Value::List{spec, Value(std::move(entries))})});
    }
    for (std::size_t i = 0; i < shares.size(); ++i) objective.await(GlmKind::loaded, 0);
    const auto outcome = glm::solve(args.spec, objective);
    result = Value(Value::List{Value(std::string()), Value(outcome.beta), Value(outcome.iterations),
                               Value(outcome.converged), Value(outcome.objective), Value(outcome.evaluations),
                               Value(std::chrono::duration<double>(Clock::now() - started).count()),
                               Value(objective.rounds()), Value(objective.round_seconds()),
                               Value(objective.worker_seconds())});
  } catch (const std::exception& e) {
    result = glm_error_result(e.what());
  }
  for (const auto& share : shares)
    self->send(share.worker, glm_atom::value, GlmMessage{args.session, GlmKind::release, Value()});
  if (args.reply && args.reply->deliver) args.reply->deliver(std::move(result));
  self->send(args.scheduler, glm_atom::value, GlmMessage{args.session, GlmKind::finished, Value()});
}

}  // namespace

Value glm_error_result(const std::string& error) {
  return Value(Value::List{Value(error)});
}

caf::actor spawn_glm_solver(caf::actor_system& system, GlmSolverArgs args) {
  return system.spawn(solver_main, std::move(args));
}

}  // namespace tessera

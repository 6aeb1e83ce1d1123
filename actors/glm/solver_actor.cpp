#include "actors/glm/solver_actor.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <set>
#include <stdexcept>
#include <type_traits>

#include "actors/glm/solvers.hpp"
#include "backends/glm_partials.hpp"

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
                       std::set<std::uint32_t> workers, std::size_t partitions,
                       std::shared_ptr<monitor::GlmBoard> board)
      : self_(self),
        session_(session),
        shares_(std::move(shares)),
        workers_(std::move(workers)),
        partitions_(partitions),
        board_(std::move(board)) {}

  backends::glm::Partials evaluate(const Eigen::VectorXd& beta, int order) override {
    const std::int64_t round = ++round_;
    const GlmMessage request{session_, GlmEvaluate{round, order, beta}};
    const auto started = Clock::now();
    for (auto& share : shares_) self_->send(share.worker, glm_atom::value, request);
    backends::glm::Partials sum;
    double slowest = 0;
    for (std::size_t answered = 0; answered < shares_.size(); ++answered) {
      auto answer = await<GlmPartials>(round);
      slowest = std::max(slowest, answer.worker_seconds);
      if (answered == 0) {
        sum.loss = answer.loss;
        sum.gradient = std::move(answer.gradient);
        if (answer.hessian) sum.hessian = std::move(*answer.hessian);
      } else {
        sum.loss += answer.loss;
        sum.gradient += answer.gradient;
        if (answer.hessian) sum.hessian += *answer.hessian;
      }
    }
    record(started, slowest);
    if (board_) board_->round(session_, sum.loss);
    return sum;
  }

  std::vector<Eigen::VectorXd> local_solve(const std::vector<Eigen::VectorXd>& targets,
                                           const std::vector<Eigen::VectorXd>& starts, double rho,
                                           double scale) override {
    const std::int64_t round = ++round_;
    const auto started = Clock::now();
    for (auto& share : shares_) {
      GlmSolve work{round, rho, scale, {}};
      for (const auto* part : share.partitions) {
        const auto i = static_cast<std::size_t>(part->index);
        work.partitions.push_back(GlmLocalTarget{part->index, targets[i], starts[i]});
      }
      self_->send(share.worker, glm_atom::value, GlmMessage{session_, std::move(work)});
    }
    std::vector<Eigen::VectorXd> out(partitions_);
    double slowest = 0;
    for (std::size_t answered = 0; answered < shares_.size(); ++answered) {
      auto answer = await<GlmSolved>(round);
      slowest = std::max(slowest, answer.worker_seconds);
      for (auto& solved : answer.solutions) {
        if (solved.index < 0 || static_cast<std::size_t>(solved.index) >= partitions_)
          throw std::runtime_error("glm: a worker answered for partition " + std::to_string(solved.index) +
                                   " of " + std::to_string(partitions_));
        out[static_cast<std::size_t>(solved.index)] = std::move(solved.solution);
      }
    }
    for (std::size_t i = 0; i < partitions_; ++i)
      if (out[i].size() != targets[i].size())
        throw std::runtime_error("glm: no local solution for partition " + std::to_string(i));
    record(started, slowest);
    return out;
  }

  std::size_t partitions() const override { return partitions_; }

  // Waits for one worker's `Answer` to `round` (GlmLoaded: to the load); an answer carrying an error ends
  // the fit.
  template <class Answer>
  Answer await(std::int64_t round) {
    for (;;) {
      bool timed_out = false;
      GlmMessage got;
      self_->receive([&](glm_atom, GlmMessage& m) { got = std::move(m); },
                     caf::after(kRoundTimeout) >> [&] { timed_out = true; });
      if (timed_out)
        throw std::runtime_error("glm: no answer from the workers within " +
                                 std::to_string(kRoundTimeout.count()) + " s (was a worker lost?)");
      if (const auto* lost = std::get_if<GlmLost>(&got.body)) {
        if (workers_.count(lost->worker))
          throw std::runtime_error("glm: worker " + std::to_string(lost->worker) +
                                   " left the cluster during the fit, with partitions of the data; fit again "
                                   "(the cluster recomputes them)");
        continue;
      }
      auto* answer = std::get_if<Answer>(&got.body);
      if (!answer) continue;
      if constexpr (!std::is_same_v<Answer, GlmLoaded>)
        if (answer->round != round) continue;  // a stale round
      if (!answer->error.empty()) throw std::runtime_error(answer->error);
      return std::move(*answer);
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
  std::shared_ptr<monitor::GlmBoard> board_;
  std::int64_t round_ = 0;
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
  DistributedObjective objective(self, args.session, shares, std::move(workers), args.partitions.size(),
                                 args.board);
  if (args.board)
    args.board->started(args.session, args.spec.solver,
                        std::string(backends::glm::family_name(args.spec.family)), args.partitions.size());

  GlmFitted result;
  try {
    for (const auto& share : shares) {
      GlmLoad load{args.spec, {}};
      for (const auto* part : share.partitions)
        load.partitions.push_back(GlmHeldPartition{part->op, part->slot, part->index, part->first_row});
      self->send(share.worker, glm_atom::value, GlmMessage{args.session, std::move(load)});
    }
    for (std::size_t i = 0; i < shares.size(); ++i) objective.await<GlmLoaded>(0);
    const auto outcome = glm::solve(args.spec, objective);
    result.beta = outcome.beta;
    result.iterations = outcome.iterations;
    result.converged = outcome.converged;
    result.objective = outcome.objective;
    result.evaluations = outcome.evaluations;
    result.seconds = std::chrono::duration<double>(Clock::now() - started).count();
    result.rounds = objective.rounds();
    result.round_seconds = objective.round_seconds();
    result.worker_seconds = objective.worker_seconds();
  } catch (const std::exception& e) {
    result = glm_error_result(e.what());
  }
  for (const auto& share : shares)
    self->send(share.worker, glm_atom::value, GlmMessage{args.session, GlmRelease{}});
  if (args.board)
    args.board->ended(args.session, result.converged,
                      static_cast<std::uint64_t>(std::max<std::int64_t>(0, result.iterations)),
                      result.objective, result.error);
  if (args.reply && args.reply->deliver) args.reply->deliver(std::move(result));
  self->send(args.scheduler, glm_atom::value, GlmMessage{args.session, GlmFinished{}});
}

}  // namespace

GlmFitted glm_error_result(const std::string& error) {
  GlmFitted fitted;
  fitted.error = error;
  return fitted;
}

caf::actor spawn_glm_solver(caf::actor_system& system, GlmSolverArgs args) {
  return system.spawn(solver_main, std::move(args));
}

}  // namespace tessera

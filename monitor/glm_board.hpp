// The GLM fits' progress for the dashboard: per fit, its solver and family, the rounds over the data so
// far and the loss the last one returned, and how it ended. The solver actor updates its fit each round;
// the board keeps the running fits and the last kKept that ended.
#pragma once

#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <vector>

namespace tessera::monitor {

struct GlmFitFigures {
  std::uint64_t session = 0;
  std::string solver;
  std::string family;
  std::uint64_t partitions = 0;
  std::uint64_t rounds = 0;    // evaluations (or ADMM local solves) over every partition so far
  double loss = 0;             // the data loss the latest evaluation returned (NaN before the first)
  std::vector<double> losses;  // every evaluation's loss, at most kLossesKept (the latest)
  double started_at = 0;       // seconds since the Unix epoch
  double seconds = 0;          // running time, or how long it took
  bool running = true;
  bool converged = false;
  std::uint64_t iterations = 0;  // the solver's, once it ended
  double objective = 0;          // the objective it ended at (loss + penalty)
  std::string error;

  static constexpr std::size_t kLossesKept = 512;
};

class GlmBoard {
 public:
  static constexpr std::size_t kKept = 32;

  void started(std::uint64_t session, std::string solver, std::string family, std::uint64_t partitions);
  void round(std::uint64_t session, double loss);
  void ended(std::uint64_t session, bool converged, std::uint64_t iterations, double objective,
             std::string error);

  // Running fits first, then ended ones, newest first.
  std::vector<GlmFitFigures> figures() const;

 private:
  mutable std::mutex mutex_;
  std::deque<GlmFitFigures> fits_;  // newest at the front

  GlmFitFigures* find(std::uint64_t session);
};

}  // namespace tessera::monitor

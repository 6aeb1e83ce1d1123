// Aposmm: the generator Tessera ships as "aposmm", after libEnsemble's APOSMM (Asynchronously Parallel
// Optimization Solver for finding Multiple Minima, Larson & Wild 2018). It minimizes a function over a box
// with many concurrent local Nelder–Mead searches, started from a space-filling sample, and keeps every
// evaluation slot busy:
//   - the sample is a scrambled Halton sequence (a random linear digit scramble per dimension and digit,
//     derived from `seed`), drawn without end: it fills every slot no local run can use;
//   - once `sample_size` sample points are evaluated, a sample point starts a local run MLSL-style: when no
//     evaluated point within the critical radius r_k (shrinking as the sample grows) is lower, no found
//     minimum and no active run's best point is within r_k, and it has not started a run before;
//   - each run is an asynchronous Nelder–Mead state machine (adaptive coefficients, Gao & Han 2012): the
//     initial simplex's and a shrink's points are all asked at once; a reflection, expansion or contraction
//     waits for the one before. Points are clamped into the box;
//   - a run has converged when its simplex is no larger than `xtol` and its values spread no more than
//     `ftol`; its best vertex joins the minima (one per minimum: near duplicates keep the lower).
// ask serves ready local runs first, then starts new runs, then fills with sample points. A failed
// evaluation (no result, or a non-finite one) counts as +inf: a run moves away from it, never waits on it.
// Everything is deterministic given the config and the order of tells; save() holds the whole state.
//
// Config keys (lengths relative to the box: 1 is the box's edge in each coordinate; counts may be integers
// or whole doubles, at most 1e6 but for max_run_evaluations (1e9) and seed (2^63)):
//   lower, upper         required: vectors of one length (1 to 1000), finite, lower < upper elementwise
//   sample_size          sample points evaluated before the first run starts (default 10·(dim+1))
//   max_active_runs      local runs in progress at once (default 4)
//   max_local_runs       done() once this many runs have ended and none is active (default 0: unlimited)
//   xtol                 simplex size (largest coordinate distance to its best vertex) of convergence
//                        (default 1e-8)
//   ftol                 spread of the simplex's values of convergence, relative to max(1, |best value|)
//                        (default 1e-12)
//   initial_step         edge of a run's first simplex (default 0.05)
//   max_run_evaluations  evaluations after which a run that has not converged is stopped
//                        (default 500·(dim+1))
//   seed                 scrambles the sample (default 0)
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "graph/simulation.hpp"

namespace tessera {

class Aposmm {
 public:
  struct Minimum {
    std::vector<double> point;
    double value;
  };

  // Throws std::invalid_argument "generator 'aposmm': ..." naming the key of a bad config.
  explicit Aposmm(const Config& config);

  // Exactly n points while not done(); none once done().
  std::vector<std::vector<double>> ask(std::size_t n);
  // The result of point `id` (nullopt when it failed). `parameters` is not read: the generator keeps every
  // point it asked. A repeated tell is ignored; one for an id never asked throws std::invalid_argument.
  void tell(std::uint64_t id, const std::vector<double>& parameters, const std::optional<double>& result,
            const std::string& error);
  // Only with max_local_runs: that many runs have ended and none is active.
  bool done() const;
  // The whole state as text; load takes it into an Aposmm built from the same config, and throws
  // std::invalid_argument naming "generator 'aposmm'" for a corrupt, truncated or foreign state.
  std::string save() const;
  void load(const std::string& state);

  std::size_t dimension() const { return lower_.size(); }
  // +inf and an empty point before a first successful evaluation.
  double best_value() const;
  std::vector<double> best_point() const;
  std::uint64_t points_asked() const { return state_.evaluations.size(); }
  std::uint64_t results_told() const { return state_.results_told; }
  std::uint64_t sample_points_asked() const { return state_.next_sample_index; }
  std::size_t local_runs_started() const { return state_.runs.size(); }
  std::size_t local_runs_active() const { return active_runs_.size(); }
  std::size_t local_runs_converged() const { return state_.runs_converged; }
  // Runs ended by max_run_evaluations before converging (not among the minima).
  std::size_t local_runs_stopped() const { return state_.runs_stopped; }
  // The minima of converged runs, in the order found, in the box's coordinates.
  std::vector<Minimum> minima() const;
  // The MLSL critical radius r_k now, relative to the box.
  double start_radius() const;

 private:
  enum class Phase : std::uint8_t {
    initializing,  // the first simplex's vertices are being evaluated
    reflecting,
    expanding,
    contracting_outside,
    contracting_inside,
    shrinking,
    converged,
    stopped,
  };
  static constexpr std::uint32_t kTrialSlot = 0xFFFFFFFFu;  // a reflect/expand/contract point, no vertex
  static constexpr std::uint64_t kNoRun = 0xFFFFFFFFFFFFFFFFull;

  // One asked point; all coordinates in the unit cube.
  struct Evaluation {
    std::vector<double> unit;
    double value = 0;  // +inf when failed; meaningless until told
    bool told = false;
    bool started_run = false;  // a sample point that started a local run
    std::uint64_t run = kNoRun;
    std::uint32_t slot = kTrialSlot;    // the simplex vertex it fills (initial simplex, shrink)
    double distance_to_better = 1e300;  // to the nearest lower evaluated point
  };
  struct QueuedPoint {
    std::uint32_t slot;
    std::vector<double> unit;
  };
  struct LocalRun {
    Phase phase = Phase::initializing;
    std::vector<std::vector<double>> vertices;  // dim+1, sorted by value after each step
    std::vector<double> values;
    std::vector<double> centroid;  // of all vertices but the worst, for the step in progress
    std::vector<double> reflected;
    double reflected_value = 0;
    std::deque<QueuedPoint> queued;  // computed, not yet asked
    std::uint64_t awaiting = 0;      // evaluations the step in progress still needs (asked or queued)
    std::uint64_t evaluations = 0;   // points it has queued, over its life
    std::uint64_t start_id = 0;
  };
  struct MinimumFound {
    std::vector<double> unit;
    double value;
  };
  struct State {
    std::vector<Evaluation> evaluations;  // indexed by id
    std::vector<LocalRun> runs;
    std::vector<MinimumFound> minima;
    std::uint64_t next_sample_index = 0;
    std::uint64_t sample_points_told = 0;
    std::uint64_t sample_points_finite = 0;
    std::uint64_t results_told = 0;
    std::uint64_t best_id = kNoRun;
    std::uint64_t runs_converged = 0;
    std::uint64_t runs_stopped = 0;
  };

  std::vector<double> sample_point(std::uint64_t index) const;
  std::vector<double> to_box(const std::vector<double>& unit) const;
  std::uint64_t add_evaluation(std::vector<double> unit, std::uint64_t run, std::uint32_t slot);
  bool try_start_run();
  void start_run(std::uint64_t start_id);
  void queue_point(LocalRun& run, std::uint32_t slot, std::vector<double> unit);
  void advance_run(std::uint64_t run_index, std::uint64_t id);
  void next_iteration(std::uint64_t run_index);
  void accept(LocalRun& run, const std::vector<double>& unit, double value);
  void shrink(LocalRun& run);
  void record_minimum(const std::vector<double>& unit, double value);
  void update_distances(std::uint64_t id);
  void rebuild_derived();
  std::uint64_t config_fingerprint() const;

  // From the config.
  std::vector<double> lower_, upper_;
  std::uint64_t sample_size_, max_active_runs_, max_local_runs_, max_run_evaluations_, seed_;
  double xtol_, ftol_, initial_step_;
  double start_radius_constant_;
  double duplicate_radius_;           // minima closer than this are one minimum
  std::vector<std::uint64_t> bases_;  // the Halton base (a prime) of each coordinate
  // NM coefficients for this dimension.
  double reflection_, expansion_, contraction_, shrinkage_;

  State state_;
  // Derived from state_ (rebuilt by load).
  std::set<std::uint64_t> active_runs_;                          // served in this order
  std::set<std::pair<double, std::uint64_t>> start_candidates_;  // evaluated sample points, no run yet
  std::vector<std::uint64_t> finite_ids_;                        // evaluated points with a finite value
};

}  // namespace tessera

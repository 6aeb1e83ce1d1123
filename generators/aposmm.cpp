#include "generators/aposmm.hpp"

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <limits>
#include <numbers>
#include <numeric>
#include <stdexcept>
#include <string_view>

namespace tessera {
namespace {

constexpr const char* kPrefix = "generator 'aposmm': ";
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kMaxCount = 1e6;
// The simplex holds dim+1 points of dim coordinates: beyond this Nelder–Mead is neither cheap nor useful.
constexpr std::size_t kMaxDimension = 1000;
constexpr std::string_view kStateMagic = "tessera-aposmm-state";
constexpr std::uint64_t kStateVersion = 1;

[[noreturn]] void fail(const std::string& message) {
  throw std::invalid_argument(kPrefix + message);
}

std::string quoted(std::string_view key) {
  // Appended piecewise: "'" + std::string(key) trips GCC 12's false -Wrestrict.
  std::string out;
  out.reserve(key.size() + 2);
  out += '\'';
  out += key;
  out += '\'';
  return out;
}

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

std::uint64_t fnv1a(std::string_view bytes) {
  std::uint64_t hash = 0xCBF29CE484222325ull;
  for (unsigned char c : bytes) hash = (hash ^ c) * 0x100000001B3ull;
  return hash;
}

std::uint64_t bits_of(double x) {
  return std::bit_cast<std::uint64_t>(x);
}

// The shortest text that reads back as x.
std::string text_of(double x) {
  char buffer[64];
  const auto result = std::to_chars(buffer, buffer + sizeof buffer, x);
  return std::string(buffer, result.ptr);
}

double distance(const std::vector<double>& a, const std::vector<double>& b) {
  double sum = 0;
  for (std::size_t k = 0; k < a.size(); ++k) sum += (a[k] - b[k]) * (a[k] - b[k]);
  return std::sqrt(sum);
}

void clamp_to_unit(std::vector<double>& x) {
  for (double& v : x) v = std::clamp(v, 0.0, 1.0);
}

// a + t·(b - a), coordinatewise.
std::vector<double> along(const std::vector<double>& a, const std::vector<double>& b, double t) {
  std::vector<double> out(a.size());
  for (std::size_t k = 0; k < a.size(); ++k) out[k] = a[k] + t * (b[k] - a[k]);
  return out;
}

std::vector<std::uint64_t> first_primes(std::size_t count) {
  std::vector<std::uint64_t> primes;
  for (std::uint64_t candidate = 2; primes.size() < count; ++candidate) {
    bool prime = true;
    for (std::uint64_t p : primes) {
      if (p * p > candidate) break;
      if (candidate % p == 0) {
        prime = false;
        break;
      }
    }
    if (prime) primes.push_back(candidate);
  }
  return primes;
}

std::vector<double> read_bound(const Config& config, const char* key) {
  if (!config.has(key))
    fail("missing required key " + quoted(key) + " (a vector of numbers, one per dimension)");
  std::vector<double> bound;
  try {
    bound = config.get<std::vector<double>>(key, {});
  } catch (const std::exception& e) {
    fail(quoted(key) + " must be a vector of numbers: " + e.what());
  }
  if (bound.empty()) fail(quoted(key) + " must have at least one element");
  if (bound.size() > kMaxDimension)
    fail(quoted(key) + " has " + std::to_string(bound.size()) + " elements, more than the " +
         std::to_string(kMaxDimension) + " this generator handles");
  for (std::size_t i = 0; i < bound.size(); ++i)
    if (!std::isfinite(bound[i]))
      fail(quoted(key) + "[" + std::to_string(i) + "] must be finite, got " + text_of(bound[i]));
  return bound;
}

// A count or seed: an integer, or a double that is a whole number.
std::uint64_t read_whole(const Config& config, const char* key, std::uint64_t fallback, std::uint64_t minimum,
                         double maximum) {
  if (!config.has(key)) return fallback;
  const Value& value = config.entries().at(key);
  double x = 0;
  if (value.kind() == ValueKind::integer) {
    const std::int64_t i = value.as_int();
    if (i < 0) fail(quoted(key) + " must not be negative, got " + std::to_string(i));
    if (static_cast<double>(i) > maximum)
      fail(quoted(key) + " must be at most " + std::to_string(static_cast<std::uint64_t>(maximum)) +
           ", got " + std::to_string(i));
    if (static_cast<std::uint64_t>(i) < minimum)
      fail(quoted(key) + " must be at least " + std::to_string(minimum) + ", got " + std::to_string(i));
    return static_cast<std::uint64_t>(i);
  }
  if (value.kind() != ValueKind::real)
    fail(quoted(key) + " must be a whole number, got " + value.to_string());
  x = value.as_double();
  if (!std::isfinite(x) || x != std::floor(x))
    fail(quoted(key) + " must be a whole number, got " + value.to_string());
  if (x < 0) fail(quoted(key) + " must not be negative, got " + value.to_string());
  if (x > maximum)
    fail(quoted(key) + " must be at most " + std::to_string(static_cast<std::uint64_t>(maximum)) + ", got " +
         value.to_string());
  if (x < static_cast<double>(minimum))
    fail(quoted(key) + " must be at least " + std::to_string(minimum) + ", got " + value.to_string());
  return static_cast<std::uint64_t>(x);
}

// A length or tolerance: finite, in [minimum, maximum], and above minimum unless minimum_allowed.
double read_real(const Config& config, const char* key, double fallback, double minimum, bool minimum_allowed,
                 double maximum) {
  if (!config.has(key)) return fallback;
  const Value& value = config.entries().at(key);
  if (value.kind() != ValueKind::real && value.kind() != ValueKind::integer)
    fail(quoted(key) + " must be a number, got " + value.to_string());
  const double x = value.as_double();
  const bool low = minimum_allowed ? x < minimum : x <= minimum;
  if (!std::isfinite(x) || low || x > maximum)
    fail(quoted(key) + " must be finite, " + (minimum_allowed ? "at least " : "above ") + text_of(minimum) +
         " and at most " + text_of(maximum) + ", got " + value.to_string());
  return x;
}

// The saved state: whitespace-separated words; doubles in hexadecimal, exact and locale-free.
class StateWriter {
 public:
  void word(std::string_view w) {
    if (!out_.empty() && out_.back() != '\n') out_ += ' ';
    out_ += w;
  }
  void count(std::uint64_t x) { word(std::to_string(x)); }
  void real(double x) {
    char buffer[64];
    const auto result = std::to_chars(buffer, buffer + sizeof buffer, x, std::chars_format::hex);
    word(std::string_view(buffer, static_cast<std::size_t>(result.ptr - buffer)));
  }
  void reals(const std::vector<double>& xs) {
    for (double x : xs) real(x);
  }
  void sized_reals(const std::vector<double>& xs) {
    count(xs.size());
    reals(xs);
  }
  void end_line() { out_ += '\n'; }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

class StateReader {
 public:
  explicit StateReader(std::string_view text) : text_(text) {}
  std::string_view word() {
    while (pos_ < text_.size() && is_space(text_[pos_])) ++pos_;
    if (pos_ >= text_.size()) fail("corrupt state: it ends early");
    const std::size_t start = pos_;
    while (pos_ < text_.size() && !is_space(text_[pos_])) ++pos_;
    return text_.substr(start, pos_ - start);
  }
  void expect(std::string_view expected) {
    const auto w = word();
    if (w != expected)
      fail("corrupt state: expected '" + std::string(expected) + "', found '" + std::string(w.substr(0, 40)) +
           "'");
  }
  std::uint64_t count(std::uint64_t maximum = std::numeric_limits<std::uint64_t>::max()) {
    const auto w = word();
    std::uint64_t x = 0;
    const auto result = std::from_chars(w.data(), w.data() + w.size(), x);
    if (result.ec != std::errc() || result.ptr != w.data() + w.size() || x > maximum)
      fail("corrupt state: bad count '" + std::string(w.substr(0, 40)) + "'");
    return x;
  }
  double real() {
    const auto w = word();
    double x = 0;
    const auto result = std::from_chars(w.data(), w.data() + w.size(), x, std::chars_format::hex);
    if (result.ec != std::errc() || result.ptr != w.data() + w.size() || std::isnan(x))
      fail("corrupt state: bad number '" + std::string(w.substr(0, 40)) + "'");
    return x;
  }
  std::vector<double> reals(std::size_t n) {
    std::vector<double> xs(n);
    for (double& x : xs) x = real();
    return xs;
  }
  // A vector of `size` coordinates, or none.
  std::vector<double> sized_reals(std::size_t size) {
    const auto n = count();
    if (n != 0 && n != size) fail("corrupt state: a vector of " + std::to_string(n) + " coordinates");
    return reals(n);
  }
  bool at_end() {
    while (pos_ < text_.size() && is_space(text_[pos_])) ++pos_;
    return pos_ == text_.size();
  }

 private:
  static bool is_space(char c) { return c == ' ' || c == '\n'; }
  std::string_view text_;
  std::size_t pos_ = 0;
};

void check_unit(const std::vector<double>& x) {
  for (double v : x)
    if (!(v >= 0 && v <= 1)) fail("corrupt state: a point outside the box");
}

}  // namespace

Aposmm::Aposmm(const Config& config) {
  lower_ = read_bound(config, "lower");
  upper_ = read_bound(config, "upper");
  if (lower_.size() != upper_.size())
    fail("'lower' has " + std::to_string(lower_.size()) + " elements but 'upper' has " +
         std::to_string(upper_.size()));
  for (std::size_t i = 0; i < lower_.size(); ++i) {
    if (!(lower_[i] < upper_[i]))
      fail("'lower' must be below 'upper' in every coordinate; at " + std::to_string(i) + " 'lower' is " +
           text_of(lower_[i]) + " and 'upper' " + text_of(upper_[i]));
    if (!std::isfinite(upper_[i] - lower_[i]))
      fail("the box from 'lower' to 'upper' is wider than a double holds at coordinate " + std::to_string(i));
  }
  const std::size_t dim = lower_.size();
  sample_size_ = read_whole(config, "sample_size", 10 * (dim + 1), 1, kMaxCount);
  max_active_runs_ = read_whole(config, "max_active_runs", 4, 1, kMaxCount);
  max_local_runs_ = read_whole(config, "max_local_runs", 0, 0, kMaxCount);
  max_run_evaluations_ = read_whole(config, "max_run_evaluations", 500 * (dim + 1), 1, 1e9);
  seed_ = read_whole(config, "seed", 0, 0, 0x1p63);
  xtol_ = read_real(config, "xtol", 1e-8, 0, false, 1);
  ftol_ = read_real(config, "ftol", 1e-12, 0, true, 1e300);
  initial_step_ = read_real(config, "initial_step", 0.05, 0, false, 1);

  // libEnsemble's r_k = rk_const·(log k / k)^(1/d) in the unit cube, k the evaluated sample size; the
  // constant from Γ(1 + d/2)·5, in logarithms so a large d does not overflow.
  const double d = static_cast<double>(dim);
  start_radius_constant_ =
      0.5 * std::exp((std::lgamma(1 + d / 2) + std::log(5.0)) / d) / std::sqrt(std::numbers::pi);
  // Converged runs end within about xtol of their minimum; two closer than this found one.
  duplicate_radius_ = std::clamp(10 * xtol_, 1e-4, 0.1);
  bases_ = first_primes(dim);
  // Gao & Han's coefficients keep the simplex from collapsing in higher dimensions; at d ≤ 2 they are
  // the classic 1, 2, 1/2, 1/2 (and at d = 1 their shrink factor would be 0).
  reflection_ = 1;
  expansion_ = dim <= 2 ? 2 : 1 + 2 / d;
  contraction_ = dim <= 2 ? 0.5 : 0.75 - 1 / (2 * d);
  shrinkage_ = dim <= 2 ? 0.5 : 1 - 1 / d;
}

std::vector<std::vector<double>> Aposmm::ask(std::size_t n) {
  std::vector<std::vector<double>> out;
  if (done()) return out;
  out.reserve(std::min<std::size_t>(n, 4096));  // n is the caller's: reserve no absurd amount
  auto serve = [&](std::uint64_t run_index) {
    auto& queued = state_.runs[run_index].queued;
    while (out.size() < n && !queued.empty()) {
      QueuedPoint point = std::move(queued.front());
      queued.pop_front();
      out.push_back(to_box(point.unit));
      add_evaluation(std::move(point.unit), run_index, point.slot);
    }
  };
  for (std::uint64_t run_index : active_runs_) {
    if (out.size() >= n) break;
    serve(run_index);
  }
  while (out.size() < n && try_start_run()) serve(state_.runs.size() - 1);
  while (out.size() < n) {
    auto unit = sample_point(state_.next_sample_index++);
    out.push_back(to_box(unit));
    add_evaluation(std::move(unit), kNoRun, kTrialSlot);
  }
  return out;
}

void Aposmm::tell(std::uint64_t id, const std::vector<double>& /*parameters*/,
                  const std::optional<double>& result, const std::string& /*error*/) {
  if (id >= state_.evaluations.size())
    fail("tell for id " + std::to_string(id) + ", which was never asked (" +
         std::to_string(state_.evaluations.size()) + " points asked)");
  Evaluation& evaluation = state_.evaluations[id];
  if (evaluation.told) return;  // a repeat (a result delivered twice across a restart) changes nothing
  evaluation.told = true;
  // A failure, and a non-finite value, is a point no run may choose.
  evaluation.value = result && std::isfinite(*result) ? *result : kInf;
  ++state_.results_told;
  const bool finite = std::isfinite(evaluation.value);
  if (finite) {
    update_distances(id);
    finite_ids_.push_back(id);
    if (state_.best_id == kNoRun || evaluation.value < state_.evaluations[state_.best_id].value)
      state_.best_id = id;
  }
  if (evaluation.run == kNoRun) {
    ++state_.sample_points_told;
    if (finite) {
      ++state_.sample_points_finite;
      start_candidates_.insert({evaluation.value, id});
    }
  } else {
    advance_run(evaluation.run, id);
  }
}

bool Aposmm::done() const {
  return max_local_runs_ > 0 && state_.runs.size() >= max_local_runs_ && active_runs_.empty();
}

double Aposmm::best_value() const {
  return state_.best_id == kNoRun ? kInf : state_.evaluations[state_.best_id].value;
}

std::vector<double> Aposmm::best_point() const {
  return state_.best_id == kNoRun ? std::vector<double>{} : to_box(state_.evaluations[state_.best_id].unit);
}

std::vector<Aposmm::Minimum> Aposmm::minima() const {
  std::vector<Minimum> out;
  for (const auto& minimum : state_.minima) out.push_back({to_box(minimum.unit), minimum.value});
  return out;
}

double Aposmm::start_radius() const {
  const double k = static_cast<double>(std::max<std::uint64_t>(state_.sample_points_finite, 2));
  return start_radius_constant_ * std::pow(std::log(k) / k, 1.0 / static_cast<double>(dimension()));
}

// Halton point `index`, each digit d of coordinate j in base b mapped to (m·d + s) mod b with m, s drawn
// from (seed, j, digit position): a permutation (b is prime) that breaks Halton's correlations between
// high dimensions. Digits past the index's length still carry s, so every point is fully scrambled.
std::vector<double> Aposmm::sample_point(std::uint64_t index) const {
  std::vector<double> unit(dimension());
  const std::uint64_t seed_hash = splitmix64(seed_);
  for (std::size_t j = 0; j < unit.size(); ++j) {
    const std::uint64_t base = bases_[j];
    const std::uint64_t dimension_hash = splitmix64(seed_hash + j);
    std::uint64_t rest = index;
    double u = 0;
    double weight = 1.0 / static_cast<double>(base);
    for (std::uint64_t position = 0; weight > 1e-17; ++position) {
      const std::uint64_t digit = rest % base;
      rest /= base;
      const std::uint64_t h = splitmix64(dimension_hash + position);
      const std::uint64_t multiplier = 1 + h % (base - 1);
      const std::uint64_t shift = (h >> 32) % base;
      u += static_cast<double>((multiplier * digit + shift) % base) * weight;
      weight /= static_cast<double>(base);
    }
    unit[j] = std::min(u, 1.0);
  }
  return unit;
}

std::vector<double> Aposmm::to_box(const std::vector<double>& unit) const {
  std::vector<double> x(unit.size());
  for (std::size_t k = 0; k < unit.size(); ++k)
    x[k] = std::clamp(lower_[k] + unit[k] * (upper_[k] - lower_[k]), lower_[k], upper_[k]);
  return x;
}

std::uint64_t Aposmm::add_evaluation(std::vector<double> unit, std::uint64_t run, std::uint32_t slot) {
  Evaluation evaluation;
  evaluation.unit = std::move(unit);
  evaluation.run = run;
  evaluation.slot = slot;
  state_.evaluations.push_back(std::move(evaluation));
  return state_.evaluations.size() - 1;
}

// MLSL: the lowest evaluated sample point with no lower point, found minimum or active run's best point
// within r_k starts a run, once the initial sample is in.
bool Aposmm::try_start_run() {
  if (state_.sample_points_told < sample_size_) return false;
  if (active_runs_.size() >= max_active_runs_) return false;
  if (max_local_runs_ > 0 && state_.runs.size() >= max_local_runs_) return false;
  const double radius = start_radius();
  for (const auto& [value, id] : start_candidates_) {
    const Evaluation& candidate = state_.evaluations[id];
    if (candidate.distance_to_better <= radius) continue;
    const auto near = [&](const std::vector<double>& point) {
      return distance(point, candidate.unit) <= radius;
    };
    if (std::any_of(state_.minima.begin(), state_.minima.end(),
                    [&](const MinimumFound& minimum) { return near(minimum.unit); }))
      continue;
    if (std::any_of(active_runs_.begin(), active_runs_.end(),
                    [&](std::uint64_t run) { return near(state_.runs[run].vertices[0]); }))
      continue;
    start_run(id);
    return true;
  }
  return false;
}

void Aposmm::start_run(std::uint64_t start_id) {
  Evaluation& start = state_.evaluations[start_id];
  start_candidates_.erase({start.value, start_id});
  start.started_run = true;
  const std::size_t dim = dimension();
  LocalRun run;
  run.start_id = start_id;
  run.vertices.assign(dim + 1, start.unit);
  run.values.assign(dim + 1, kInf);
  run.values[0] = start.value;
  // One step along each axis, inward where the box ends; all of them asked at once.
  for (std::size_t k = 0; k < dim; ++k) {
    auto& vertex = run.vertices[k + 1];
    const bool room_above = vertex[k] + initial_step_ <= 1;
    vertex[k] += room_above ? initial_step_ : -initial_step_;
    clamp_to_unit(vertex);
    queue_point(run, static_cast<std::uint32_t>(k + 1), vertex);
  }
  run.awaiting = dim;
  run.phase = Phase::initializing;
  state_.runs.push_back(std::move(run));
  active_runs_.insert(state_.runs.size() - 1);
}

void Aposmm::queue_point(LocalRun& run, std::uint32_t slot, std::vector<double> unit) {
  run.queued.push_back({slot, std::move(unit)});
  ++run.evaluations;
}

void Aposmm::advance_run(std::uint64_t run_index, std::uint64_t id) {
  LocalRun& run = state_.runs[run_index];
  const Evaluation& evaluation = state_.evaluations[id];
  const std::size_t dim = dimension();
  const double value = evaluation.value;
  switch (run.phase) {
    case Phase::initializing:
    case Phase::shrinking:
      run.values[evaluation.slot] = value;
      if (--run.awaiting == 0) next_iteration(run_index);
      return;
    case Phase::reflecting: {
      run.reflected = evaluation.unit;
      run.reflected_value = value;
      if (value < run.values[0]) {
        auto expanded = along(run.centroid, run.reflected, expansion_);
        clamp_to_unit(expanded);
        queue_point(run, kTrialSlot, std::move(expanded));
        run.phase = Phase::expanding;
      } else if (value < run.values[dim - 1]) {
        accept(run, run.reflected, value);
        next_iteration(run_index);
      } else if (value < run.values[dim]) {
        queue_point(run, kTrialSlot, along(run.centroid, run.reflected, contraction_));
        run.phase = Phase::contracting_outside;
      } else {
        queue_point(run, kTrialSlot, along(run.centroid, run.vertices[dim], contraction_));
        run.phase = Phase::contracting_inside;
      }
      return;
    }
    case Phase::expanding:
      if (value < run.reflected_value)
        accept(run, evaluation.unit, value);
      else
        accept(run, run.reflected, run.reflected_value);
      next_iteration(run_index);
      return;
    case Phase::contracting_outside:
      if (value <= run.reflected_value) {
        accept(run, evaluation.unit, value);
        next_iteration(run_index);
      } else {
        shrink(run);
      }
      return;
    case Phase::contracting_inside:
      if (value < run.values[dim]) {
        accept(run, evaluation.unit, value);
        next_iteration(run_index);
      } else {
        shrink(run);
      }
      return;
    case Phase::converged:
    case Phase::stopped:
      return;  // an ended run has nothing outstanding
  }
}

// The step is complete: order the simplex, end the run if it has converged or spent its evaluations, or
// ask for the next reflection.
void Aposmm::next_iteration(std::uint64_t run_index) {
  LocalRun& run = state_.runs[run_index];
  const std::size_t dim = dimension();
  std::vector<std::size_t> order(dim + 1);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return run.values[a] < run.values[b]; });
  std::vector<std::vector<double>> vertices(dim + 1);
  std::vector<double> values(dim + 1);
  for (std::size_t i = 0; i <= dim; ++i) {
    vertices[i] = std::move(run.vertices[order[i]]);
    values[i] = run.values[order[i]];
  }
  run.vertices = std::move(vertices);
  run.values = std::move(values);

  double diameter = 0;
  for (std::size_t i = 1; i <= dim; ++i)
    for (std::size_t k = 0; k < dim; ++k)
      diameter = std::max(diameter, std::abs(run.vertices[i][k] - run.vertices[0][k]));
  const double spread = run.values[dim] - run.values[0];
  if (diameter <= xtol_ && spread <= ftol_ * std::max(1.0, std::abs(run.values[0]))) {
    run.phase = Phase::converged;
    ++state_.runs_converged;
    active_runs_.erase(run_index);
    record_minimum(run.vertices[0], run.values[0]);
    return;
  }
  if (run.evaluations >= max_run_evaluations_) {
    run.phase = Phase::stopped;
    ++state_.runs_stopped;
    active_runs_.erase(run_index);
    return;
  }
  run.centroid.assign(dim, 0.0);
  for (std::size_t i = 0; i < dim; ++i)
    for (std::size_t k = 0; k < dim; ++k) run.centroid[k] += run.vertices[i][k] / static_cast<double>(dim);
  auto reflected = along(run.centroid, run.vertices[dim], -reflection_);
  clamp_to_unit(reflected);
  queue_point(run, kTrialSlot, std::move(reflected));
  run.awaiting = 1;
  run.phase = Phase::reflecting;
}

void Aposmm::accept(LocalRun& run, const std::vector<double>& unit, double value) {
  run.vertices.back() = unit;
  run.values.back() = value;
}

// Every vertex but the best moves halfway (or by the shrink factor) towards it; all asked at once.
void Aposmm::shrink(LocalRun& run) {
  const std::size_t dim = dimension();
  for (std::size_t i = 1; i <= dim; ++i) {
    run.vertices[i] = along(run.vertices[0], run.vertices[i], shrinkage_);
    run.values[i] = kInf;
    queue_point(run, static_cast<std::uint32_t>(i), run.vertices[i]);
  }
  run.awaiting = dim;
  run.phase = Phase::shrinking;
}

void Aposmm::record_minimum(const std::vector<double>& unit, double value) {
  for (auto& minimum : state_.minima) {
    if (distance(minimum.unit, unit) <= duplicate_radius_) {
      if (value < minimum.value) minimum = {unit, value};
      return;
    }
  }
  state_.minima.push_back({unit, value});
}

// Each evaluated point keeps its distance to the nearest lower one (ties broken by id), which only
// shrinks as points arrive: the MLSL test against r_k is then a comparison.
void Aposmm::update_distances(std::uint64_t id) {
  Evaluation& fresh = state_.evaluations[id];
  for (std::uint64_t other_id : finite_ids_) {
    Evaluation& other = state_.evaluations[other_id];
    const double d = distance(fresh.unit, other.unit);
    const bool other_lower = other.value < fresh.value || (other.value == fresh.value && other_id < id);
    if (other_lower)
      fresh.distance_to_better = std::min(fresh.distance_to_better, d);
    else
      other.distance_to_better = std::min(other.distance_to_better, d);
  }
}

std::uint64_t Aposmm::config_fingerprint() const {
  std::uint64_t hash = splitmix64(dimension());
  auto mix = [&](std::uint64_t x) { hash = splitmix64(hash ^ x); };
  for (double x : lower_) mix(bits_of(x));
  for (double x : upper_) mix(bits_of(x));
  for (std::uint64_t x : {sample_size_, max_active_runs_, max_local_runs_, max_run_evaluations_, seed_})
    mix(x);
  for (double x : {xtol_, ftol_, initial_step_}) mix(bits_of(x));
  return hash;
}

// Header line: magic, version, the body's length and checksum (a truncated or altered state is refused
// before it is parsed). Body: the config's fingerprint, then every field of State.
std::string Aposmm::save() const {
  const std::size_t dim = dimension();
  StateWriter body;
  body.word("config");
  body.count(config_fingerprint());
  body.count(dim);
  body.end_line();
  body.word("counters");
  for (std::uint64_t x : {state_.next_sample_index, state_.sample_points_told, state_.sample_points_finite,
                          state_.results_told, state_.best_id, state_.runs_converged, state_.runs_stopped})
    body.count(x);
  body.end_line();
  body.word("evaluations");
  body.count(state_.evaluations.size());
  body.end_line();
  for (const auto& e : state_.evaluations) {
    body.word("e");
    body.count(e.told);
    body.count(e.started_run);
    body.count(e.run);
    body.count(e.slot);
    body.real(e.value);
    body.real(e.distance_to_better);
    body.reals(e.unit);
    body.end_line();
  }
  body.word("runs");
  body.count(state_.runs.size());
  body.end_line();
  for (const auto& run : state_.runs) {
    body.word("r");
    body.count(static_cast<std::uint64_t>(run.phase));
    body.count(run.awaiting);
    body.count(run.evaluations);
    body.count(run.start_id);
    body.real(run.reflected_value);
    for (const auto& vertex : run.vertices) body.reals(vertex);
    body.reals(run.values);
    body.sized_reals(run.centroid);
    body.sized_reals(run.reflected);
    body.count(run.queued.size());
    for (const auto& point : run.queued) {
      body.count(point.slot);
      body.reals(point.unit);
    }
    body.end_line();
  }
  body.word("minima");
  body.count(state_.minima.size());
  body.end_line();
  for (const auto& minimum : state_.minima) {
    body.word("m");
    body.real(minimum.value);
    body.reals(minimum.unit);
    body.end_line();
  }
  body.word("end");
  body.end_line();
  const std::string text = body.take();
  return std::string(kStateMagic) + " " + std::to_string(kStateVersion) + " " + std::to_string(text.size()) +
         " " + std::to_string(fnv1a(text)) + "\n" + text;
}

void Aposmm::load(const std::string& saved) {
  const std::size_t header_end = saved.find('\n');
  if (header_end == std::string::npos) fail("corrupt state: no header line");
  {
    StateReader header(std::string_view(saved).substr(0, header_end));
    if (header.word() != kStateMagic) fail("corrupt state: not a saved aposmm state");
    if (header.count() != kStateVersion) fail("saved state of another version");
    const auto length = header.count();
    const auto checksum = header.count();
    const std::string_view text = std::string_view(saved).substr(header_end + 1);
    if (length != text.size())
      fail("corrupt state: " + std::to_string(text.size()) + " bytes after the header, expected " +
           std::to_string(length) + " (truncated?)");
    if (checksum != fnv1a(text)) fail("corrupt state: checksum mismatch");
  }
  StateReader in(std::string_view(saved).substr(header_end + 1));
  const std::size_t dim = dimension();
  in.expect("config");
  if (in.count() != config_fingerprint() || in.count() != dim)
    fail("the saved state is of an aposmm built from another config");

  State loaded;
  in.expect("counters");
  loaded.next_sample_index = in.count();
  loaded.sample_points_told = in.count();
  loaded.sample_points_finite = in.count();
  loaded.results_told = in.count();
  loaded.best_id = in.count();
  loaded.runs_converged = in.count();
  loaded.runs_stopped = in.count();

  in.expect("evaluations");
  const auto evaluation_count = in.count(static_cast<std::uint64_t>(saved.size()));
  loaded.evaluations.resize(evaluation_count);
  std::vector<std::uint64_t> evaluation_runs(evaluation_count);
  for (auto& e : loaded.evaluations) {
    in.expect("e");
    e.told = in.count(1) == 1;
    e.started_run = in.count(1) == 1;
    e.run = in.count();
    e.slot = static_cast<std::uint32_t>(in.count(kTrialSlot));
    e.value = in.real();
    e.distance_to_better = in.real();
    e.unit = in.reals(dim);
    check_unit(e.unit);
    if (e.slot != kTrialSlot && e.slot > dim) fail("corrupt state: a vertex slot out of range");
  }

  in.expect("runs");
  loaded.runs.resize(in.count(evaluation_count));
  for (auto& run : loaded.runs) {
    in.expect("r");
    run.phase = static_cast<Phase>(in.count(static_cast<std::uint64_t>(Phase::stopped)));
    run.awaiting = in.count(dim);
    run.evaluations = in.count();
    run.start_id = in.count();
    if (run.start_id >= evaluation_count) fail("corrupt state: a run's start point out of range");
    run.reflected_value = in.real();
    run.vertices.resize(dim + 1);
    for (auto& vertex : run.vertices) {
      vertex = in.reals(dim);
      check_unit(vertex);
    }
    run.values = in.reals(dim + 1);
    run.centroid = in.sized_reals(dim);
    run.reflected = in.sized_reals(dim);
    const auto queued = in.count(dim);
    for (std::uint64_t q = 0; q < queued; ++q) {
      const auto slot = static_cast<std::uint32_t>(in.count(kTrialSlot));
      if (slot != kTrialSlot && (slot == 0 || slot > dim)) fail("corrupt state: a queued slot out of range");
      auto unit = in.reals(dim);
      check_unit(unit);
      run.queued.push_back({slot, std::move(unit)});
    }
  }
  // Each run's step in progress must be what its outstanding and queued points complete, so that tell
  // never meets a point its run does not expect.
  std::vector<std::uint64_t> outstanding(loaded.runs.size(), 0);
  for (const auto& e : loaded.evaluations) {
    if (e.run == kNoRun) continue;
    if (e.run >= loaded.runs.size()) fail("corrupt state: a point of an unknown run");
    if (e.slot == 0) fail("corrupt state: a vertex slot out of range");
    if (e.told) continue;
    const Phase phase = loaded.runs[e.run].phase;
    const bool vertex_step = phase == Phase::initializing || phase == Phase::shrinking;
    if (vertex_step != (e.slot != kTrialSlot)) fail("corrupt state: a point its run does not expect");
    ++outstanding[e.run];
  }
  for (std::uint64_t r = 0; r < loaded.runs.size(); ++r) {
    const auto& run = loaded.runs[r];
    const bool ended = run.phase == Phase::converged || run.phase == Phase::stopped;
    const bool vertex_step = run.phase == Phase::initializing || run.phase == Phase::shrinking;
    for (const auto& point : run.queued)
      if (vertex_step != (point.slot != kTrialSlot)) fail("corrupt state: a point its run does not expect");
    const std::uint64_t pending = outstanding[r] + run.queued.size();
    if (ended ? pending != 0 : (pending != run.awaiting || pending == 0 || (!vertex_step && pending != 1)))
      fail("corrupt state: a run's step does not match its points");
    if (!ended && !vertex_step && run.centroid.size() != dim)
      fail("corrupt state: a run's step is incomplete");
    if (!ended && !vertex_step && run.phase != Phase::reflecting && run.reflected.size() != dim)
      fail("corrupt state: a run's step is incomplete");
  }
  for (const auto& e : loaded.evaluations) {
    if (e.started_run && (e.run != kNoRun || !e.told || !std::isfinite(e.value)))
      fail("corrupt state: a run started from an unusable point");
    if (e.told && e.value == -kInf) fail("corrupt state: a value of -inf");
  }
  if (loaded.best_id != kNoRun &&
      (loaded.best_id >= evaluation_count || !loaded.evaluations[loaded.best_id].told ||
       !std::isfinite(loaded.evaluations[loaded.best_id].value)))
    fail("corrupt state: the best point is not an evaluated one");
  if (loaded.next_sample_index > evaluation_count) fail("corrupt state: more sample points than points");

  in.expect("minima");
  loaded.minima.resize(in.count(evaluation_count));
  for (auto& minimum : loaded.minima) {
    in.expect("m");
    minimum.value = in.real();
    minimum.unit = in.reals(dim);
    check_unit(minimum.unit);
  }
  in.expect("end");
  if (!in.at_end()) fail("corrupt state: data after the end");

  state_ = std::move(loaded);
  rebuild_derived();
}

void Aposmm::rebuild_derived() {
  active_runs_.clear();
  for (std::uint64_t r = 0; r < state_.runs.size(); ++r)
    if (state_.runs[r].phase != Phase::converged && state_.runs[r].phase != Phase::stopped)
      active_runs_.insert(r);
  start_candidates_.clear();
  finite_ids_.clear();
  for (std::uint64_t id = 0; id < state_.evaluations.size(); ++id) {
    const auto& e = state_.evaluations[id];
    if (!e.told || !std::isfinite(e.value)) continue;
    finite_ids_.push_back(id);
    if (e.run == kNoRun && !e.started_run) start_candidates_.insert({e.value, id});
  }
}

}  // namespace tessera

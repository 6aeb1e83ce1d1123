// Aposmm, driven in-process by an emulated pool of asynchronous evaluation slots: it finds known minima in
// fewer evaluations than a random sweep, keeps every slot busy through failures, resumes exactly from a
// saved state, refuses bad configs by key, and ends after max_local_runs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <iostream>
#include <limits>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "generators/aposmm.hpp"

namespace {

using tessera::Aposmm;
using tessera::Config;
using tessera::Value;
using Point = std::vector<double>;
using Objective = std::function<std::optional<double>(std::uint64_t id, const Point&)>;

constexpr double kCamelMinimum = -1.0316284534898774;
constexpr std::size_t kRandomSweepCap = 20000;

double six_hump_camel(const Point& p) {
  const double x = p[0], y = p[1];
  return (4 - 2.1 * x * x + x * x * x * x / 3) * x * x + x * y + (-4 + 4 * y * y) * y * y;
}

double rosenbrock(const Point& p) {
  double sum = 0;
  for (std::size_t i = 0; i + 1 < p.size(); ++i)
    sum += 100 * (p[i + 1] - p[i] * p[i]) * (p[i + 1] - p[i] * p[i]) + (1 - p[i]) * (1 - p[i]);
  return sum;
}

Config box_config(const Point& lower, const Point& upper, std::int64_t seed) {
  Config config;
  config.set("lower", Value(lower)).set("upper", Value(upper)).set("seed", Value(seed));
  return config;
}

// S slots kept full: each step one outstanding point, chosen by a seeded RNG, completes and is told, and
// the freed slot is asked for again. It holds no generator, so a copy can drive a twin (save/load).
class SlotPool {
 public:
  SlotPool(std::size_t slots, std::uint64_t seed, Objective objective)
      : slots_(slots), rng_(seed), objective_(std::move(objective)) {}

  // Asks for every free slot; returns the points asked.
  std::vector<Point> refill(Aposmm& generator) {
    const std::size_t wanted = slots_ - outstanding_.size();
    auto points = generator.ask(wanted);
    if (!generator.done()) {
      EXPECT_EQ(points.size(), wanted) << "ask left a slot idle";
    }
    for (const auto& point : points) outstanding_.push_back({next_id_++, point});
    return points;
  }

  // Completes one evaluation and refills; returns the points asked.
  std::vector<Point> step(Aposmm& generator) {
    if (outstanding_.empty()) return refill(generator);
    const std::size_t pick = rng_() % outstanding_.size();
    const auto [id, point] = outstanding_[pick];
    outstanding_[pick] = outstanding_.back();
    outstanding_.pop_back();
    EXPECT_TRUE(told_.insert(id).second) << "id " << id << " completed twice";
    generator.tell(id, point, objective_(id, point), "");
    ++evaluations_;
    return refill(generator);
  }

  // Steps until the best value is within `tolerance` of `target`; the evaluations that took (or `cap`).
  std::size_t evaluations_to_reach(Aposmm& generator, double target, double tolerance, std::size_t cap) {
    refill(generator);
    while (generator.best_value() > target + tolerance && evaluations_ < cap) step(generator);
    return generator.best_value() <= target + tolerance ? evaluations_ : cap;
  }

  std::size_t evaluations() const { return evaluations_; }
  std::uint64_t next_id() const { return next_id_; }
  std::size_t outstanding() const { return outstanding_.size(); }
  const std::set<std::uint64_t>& told() const { return told_; }

 private:
  std::size_t slots_;
  std::mt19937_64 rng_;
  Objective objective_;
  std::vector<std::pair<std::uint64_t, Point>> outstanding_;
  std::set<std::uint64_t> told_;
  std::uint64_t next_id_ = 0;
  std::size_t evaluations_ = 0;
};

Objective always(double (*f)(const Point&)) {
  return [f](std::uint64_t, const Point& p) -> std::optional<double> { return f(p); };
}

// Uniform random points in the box until one is within `tolerance` of `target` (or the cap).
std::size_t random_sweep(double (*f)(const Point&), const Point& lower, const Point& upper, double target,
                         double tolerance, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  Point p(lower.size());
  for (std::size_t n = 1; n <= kRandomSweepCap; ++n) {
    for (std::size_t k = 0; k < p.size(); ++k) p[k] = lower[k] + unit(rng) * (upper[k] - lower[k]);
    if (f(p) <= target + tolerance) return n;
  }
  return kRandomSweepCap;
}

// APOSMM to 1e-6 (the worst of three seeds) against random search to 1e-2 (the mean of five seeds).
void compare_with_random(const char* name, double (*f)(const Point&), const Point& lower, const Point& upper,
                         double minimum, std::size_t slots) {
  double random_mean = 0;
  std::string random_counts;
  for (std::uint64_t seed = 0; seed < 5; ++seed) {
    const auto n = random_sweep(f, lower, upper, minimum, 1e-2, 100 + seed);
    random_mean += static_cast<double>(n) / 5;
    (random_counts += ' ') += std::to_string(n);
  }
  std::size_t aposmm_worst = 0;
  std::string aposmm_counts;
  for (std::int64_t seed = 0; seed < 3; ++seed) {
    Aposmm generator(box_config(lower, upper, seed));
    SlotPool pool(slots, 7 + static_cast<std::uint64_t>(seed), always(f));
    const auto n = pool.evaluations_to_reach(generator, minimum, 1e-6, kRandomSweepCap);
    EXPECT_LE(generator.best_value(), minimum + 1e-6) << name << " seed " << seed;
    aposmm_worst = std::max(aposmm_worst, n);
    (aposmm_counts += ' ') += std::to_string(n);
  }
  std::cout << name << " (" << slots << " slots): aposmm evaluations to 1e-6:" << aposmm_counts
            << "; random sweep to 1e-2:" << random_counts << " (mean " << random_mean << ", cap "
            << kRandomSweepCap << ")\n";
  EXPECT_LT(static_cast<double>(aposmm_worst), random_mean) << name;
}

TEST(Aposmm, SixHumpCamelBeatsRandomSweep) {
  compare_with_random("six-hump camel", six_hump_camel, {-3, -2}, {3, 2}, kCamelMinimum, 4);
}

TEST(Aposmm, RosenbrockBeatsRandomSweep) {
  compare_with_random("rosenbrock 2-D", rosenbrock, {-2, -2}, {2, 2}, 0.0, 4);
  compare_with_random("rosenbrock 3-D", rosenbrock, {-2, -2, -2}, {2, 2, 2}, 0.0, 8);
}

TEST(Aposmm, OneDimension) {
  Aposmm generator(box_config({0}, {1}, 0));
  SlotPool pool(2, 1, [](std::uint64_t, const Point& p) -> std::optional<double> {
    return (p[0] - 0.3) * (p[0] - 0.3);
  });
  EXPECT_LT(pool.evaluations_to_reach(generator, 0, 1e-12, 2000), 2000u);
  EXPECT_NEAR(generator.best_point().at(0), 0.3, 1e-5);
}

TEST(Aposmm, SlotsStayBusyThroughFailures) {
  Aposmm generator(box_config({-3, -2}, {3, 2}, 5));
  // A fifth of the points fail outright, and so does every point of a strip holding one of the two global
  // minima: runs heading there must turn back, and the other is found.
  SlotPool pool(8, 11, [](std::uint64_t id, const Point& p) -> std::optional<double> {
    if (id % 5 == 3) return std::nullopt;
    if (p[0] > -0.3 && p[0] < 0.0) return std::nullopt;
    return six_hump_camel(p);
  });
  pool.refill(generator);
  for (int i = 0; i < 3000; ++i) pool.step(generator);
  EXPECT_EQ(pool.outstanding(), 8u);
  EXPECT_EQ(generator.points_asked(), pool.next_id());
  EXPECT_EQ(generator.results_told(), pool.told().size());
  EXPECT_EQ(pool.told().size() + pool.outstanding(), pool.next_id());
  EXPECT_GT(generator.local_runs_converged(), 0u);
  EXPECT_LT(generator.best_value(), kCamelMinimum + 1e-6);
  // Every slot of a burst is filled, and a point told twice changes nothing.
  EXPECT_EQ(generator.ask(50).size(), 50u);
  EXPECT_TRUE(generator.ask(0).empty());
  const auto before = generator.save();
  generator.tell(*pool.told().begin(), {0, 0}, 123.0, "");
  EXPECT_EQ(generator.save(), before);
  EXPECT_THROW(generator.tell(generator.points_asked(), {0, 0}, 1.0, ""), std::invalid_argument);
  // Points stay inside the box.
  for (const auto& p : generator.ask(200)) {
    EXPECT_GE(p[0], -3);
    EXPECT_LE(p[0], 3);
    EXPECT_GE(p[1], -2);
    EXPECT_LE(p[1], 2);
  }
}

TEST(Aposmm, EverythingFailingNeverStalls) {
  Aposmm generator(box_config({-1, -1}, {1, 1}, 0));
  SlotPool pool(4, 3, [](std::uint64_t, const Point&) -> std::optional<double> { return std::nullopt; });
  pool.refill(generator);
  for (int i = 0; i < 500; ++i) pool.step(generator);
  EXPECT_EQ(pool.outstanding(), 4u);
  EXPECT_EQ(generator.local_runs_started(), 0u);
  EXPECT_TRUE(std::isinf(generator.best_value()));
}

TEST(Aposmm, SaveLoadResumesIdentically) {
  const auto config = box_config({-3, -2}, {3, 2}, 3);
  const Objective objective = [](std::uint64_t id, const Point& p) -> std::optional<double> {
    if (id % 7 == 0) return std::nullopt;
    return six_hump_camel(p);
  };
  // Saved before anything is asked, in the initial sample, with local runs in progress, and (-1) right
  // after an ask that started a run and left its other initial simplex points queued.
  for (int steps_before : {0, 25, 120, 400, -1}) {
    Aposmm original(config);
    SlotPool pool(8, 17, objective);
    if (steps_before != 0) pool.refill(original);
    for (int i = 0; i < steps_before; ++i) pool.step(original);
    if (steps_before < 0) {
      while (original.local_runs_started() == 0) pool.step(original);
      ASSERT_EQ(original.local_runs_started(), 1u);
    }
    const std::string state = original.save();
    Aposmm resumed(config);
    resumed.load(state);
    EXPECT_EQ(resumed.save(), state);
    SlotPool twin = pool;  // the same outstanding points and completion order
    for (int i = 0; i < 600; ++i) {
      const auto from_original = pool.step(original);
      const auto from_resumed = twin.step(resumed);
      ASSERT_EQ(from_original, from_resumed) << "saved after " << steps_before << " steps, step " << i;
    }
    EXPECT_EQ(original.save(), resumed.save());
    EXPECT_EQ(original.best_value(), resumed.best_value());
    EXPECT_EQ(original.local_runs_started(), resumed.local_runs_started());
  }
}

TEST(Aposmm, LoadRefusesCorruptState) {
  const auto config = box_config({-3, -2}, {3, 2}, 3);
  Aposmm generator(config);
  SlotPool pool(4, 1, always(six_hump_camel));
  pool.refill(generator);
  for (int i = 0; i < 150; ++i) pool.step(generator);
  const std::string state = generator.save();
  std::string flipped = state;
  flipped[flipped.size() / 2] = flipped[flipped.size() / 2] == '1' ? '2' : '1';
  Aposmm other_seed(box_config({-3, -2}, {3, 2}, 4));
  const std::string foreign = other_seed.save();
  for (const std::string& bad : {std::string(), std::string("garbage"), state.substr(0, state.size() / 2),
                                 state.substr(0, state.size() - 1), flipped, state + "x"}) {
    Aposmm target(config);
    try {
      target.load(bad);
      ADD_FAILURE() << "loaded a corrupt state of " << bad.size() << " bytes";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("generator 'aposmm'"), std::string::npos) << e.what();
    }
  }
  // A state of another config is refused, and a refused load leaves the generator as it was.
  try {
    generator.load(foreign);
    ADD_FAILURE() << "loaded the state of another config";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("generator 'aposmm'"), std::string::npos) << e.what();
  }
  EXPECT_EQ(generator.save(), state);
}

void expect_refused(const Config& config, const std::string& key) {
  try {
    Aposmm generator(config);
    ADD_FAILURE() << "accepted a bad '" << key << "'";
  } catch (const std::invalid_argument& e) {
    const std::string message = e.what();
    EXPECT_EQ(message.rfind("generator 'aposmm': ", 0), 0u) << message;
    EXPECT_NE(message.find("'" + key + "'"), std::string::npos) << message;
  }
}

TEST(Aposmm, RefusesBadConfigNamingTheKey) {
  const double nan = std::nan("");
  const double inf = std::numeric_limits<double>::infinity();
  Config missing_upper;
  missing_upper.set("lower", Value(Point{0, 0}));
  expect_refused(missing_upper, "upper");
  Config missing_lower;
  missing_lower.set("upper", Value(Point{1, 1}));
  expect_refused(missing_lower, "lower");
  expect_refused(box_config({0, nan}, {1, 1}, 0), "lower");
  expect_refused(box_config({0, 0}, {1, inf}, 0), "upper");
  expect_refused(box_config({0, 1}, {1, 1}, 0), "lower");
  expect_refused(box_config({0, 2}, {1, 1}, 0), "upper");
  expect_refused(box_config({0, 0}, {1, 1, 1}, 0), "upper");
  expect_refused(box_config({}, {}, 0), "lower");
  expect_refused(box_config({0}, {1}, 0).set("lower", Value("zero")), "lower");
  expect_refused(box_config({0}, {1}, 0).set("sample_size", Value(std::int64_t{-5})), "sample_size");
  expect_refused(box_config({0}, {1}, 0).set("sample_size", Value(-5.0)), "sample_size");
  expect_refused(box_config({0}, {1}, 0).set("sample_size", Value(2.5)), "sample_size");
  expect_refused(box_config({0}, {1}, 0).set("sample_size", Value(0.0)), "sample_size");
  expect_refused(box_config({0}, {1}, 0).set("sample_size", Value("ten")), "sample_size");
  expect_refused(box_config({0}, {1}, 0).set("max_active_runs", Value(std::int64_t{0})), "max_active_runs");
  expect_refused(box_config({0}, {1}, 0).set("max_local_runs", Value(1e7)), "max_local_runs");
  expect_refused(box_config({0}, {1}, 0).set("max_local_runs", Value(nan)), "max_local_runs");
  expect_refused(box_config({0}, {1}, 0).set("xtol", Value(0.0)), "xtol");
  expect_refused(box_config({0}, {1}, 0).set("ftol", Value(-1.0)), "ftol");
  expect_refused(box_config({0}, {1}, 0).set("initial_step", Value(2.0)), "initial_step");
  expect_refused(box_config({0}, {1}, -1), "seed");
  // Counts arrive as integers or as whole doubles.
  Aposmm accepted(box_config({0, 0}, {1, 1}, 2)
                      .set("sample_size", Value(std::int64_t{12}))
                      .set("max_active_runs", Value(3.0))
                      .set("max_local_runs", Value(2.0)));
  EXPECT_EQ(accepted.ask(12).size(), 12u);
}

TEST(Aposmm, MaxLocalRunsEndsTheRun) {
  Aposmm generator(box_config({-3, -2}, {3, 2}, 0).set("max_local_runs", Value(std::int64_t{3})));
  SlotPool pool(4, 5, always(six_hump_camel));
  pool.refill(generator);
  while (!generator.done() && pool.evaluations() < 20000) pool.step(generator);
  ASSERT_TRUE(generator.done());
  EXPECT_EQ(generator.local_runs_started(), 3u);
  EXPECT_EQ(generator.local_runs_active(), 0u);
  EXPECT_EQ(generator.local_runs_converged() + generator.local_runs_stopped(), 3u);
  EXPECT_TRUE(generator.ask(5).empty());
  const auto minima = generator.minima();
  ASSERT_FALSE(minima.empty());
  EXPECT_LE(minima.size(), 3u);
  double lowest = minima[0].value;
  for (const auto& minimum : minima) lowest = std::min(lowest, minimum.value);
  EXPECT_NEAR(lowest, kCamelMinimum, 1e-9);
  EXPECT_NEAR(generator.best_value(), kCamelMinimum, 1e-9);
  std::cout << "max_local_runs 3: done after " << pool.evaluations() << " evaluations, " << minima.size()
            << " minima\n";
  // Late results of the points still out are taken and ignored.
  for (int i = 0; i < 4; ++i) pool.step(generator);
  EXPECT_TRUE(generator.done());
}

TEST(Aposmm, FindsDistinctMinimaOfTheCamel) {
  // The six-hump camel has six local minima in this box: more runs than that find no more minima.
  Aposmm generator(box_config({-3, -2}, {3, 2}, 1).set("max_local_runs", Value(std::int64_t{10})));
  SlotPool pool(8, 2, always(six_hump_camel));
  pool.refill(generator);
  while (!generator.done() && pool.evaluations() < 8000) pool.step(generator);
  const auto minima = generator.minima();
  std::cout << "camel: " << generator.local_runs_started() << " runs started, "
            << generator.local_runs_converged() << " converged, " << minima.size() << " minima after "
            << pool.evaluations() << " evaluations:";
  for (const auto& m : minima)
    std::cout << " (" << m.point[0] << ", " << m.point[1] << ") " << m.value << ";";
  std::cout << "\n";
  EXPECT_GE(minima.size(), 2u);
  EXPECT_LE(minima.size(), 6u);
  for (std::size_t i = 0; i < minima.size(); ++i)
    for (std::size_t j = 0; j < i; ++j)
      EXPECT_GT(std::hypot(minima[i].point[0] - minima[j].point[0], minima[i].point[1] - minima[j].point[1]),
                1e-3);
}

}  // namespace

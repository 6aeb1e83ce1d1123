// An adaptive ensemble against a random sweep of the same budget: aposmm (many concurrent Nelder-Mead
// searches from a space-filling sample) looks for the minimum of the six-hump camel function, and the
// program prints how many simulations each needed to come within a tolerance of the known minimum, and
// how busy the slots were.
#include <algorithm>
#include <chrono>
#include <iostream>
#include <random>
#include <tessera/tessera.hpp>
#include <thread>
#include <vector>

#include "cli_options.hpp"

namespace {

constexpr double kMinimum = -1.0316284534898774;  // at (0.0898, -0.7126) and (-0.0898, 0.7126)

// The test function as a simulation that takes `sleep_ms` to run, as a real one would take longer.
struct SixHumpCamel {
  explicit SixHumpCamel(const tessera::Config& config) : sleep_ms(config.get<std::int64_t>("sleep_ms", 0)) {}
  double run(const std::vector<double>& p) {
    if (sleep_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(sleep_ms));
    const double x = p.at(0), y = p.at(1);
    return (4 - 2.1 * x * x + x * x * x * x / 3) * x * x + x * y + (-4 + 4 * y * y) * y * y;
  }
  static constexpr std::size_t arity = 2;
  std::int64_t sleep_ms;
};
TESSERA_SIMULATION(SixHumpCamel, "example_six_hump_camel");

struct Summary {
  std::size_t to_tolerance;  // results stored until the first within the tolerance; 0: none
  double least, utilisation;
};

// In completion order: when the tolerance was first met, the least value, and the share of the slots'
// time spent running simulations.
Summary summarise(tessera::Stream& stream, double tolerance, std::size_t slots) {
  Summary s{0, 1e300, 0};
  double busy = 0, first = 1e300, last = 0;
  std::size_t count = 0;
  for (const auto& r : stream.results()) {
    ++count;
    busy += r.timeline.finished - r.timeline.started;
    first = std::min(first, r.timeline.started);
    last = std::max(last, r.timeline.finished);
    if (r.failed) continue;
    const double value = tessera::from_value<double>(r.value);
    s.least = std::min(s.least, value);
    if (!s.to_tolerance && value - kMinimum < tolerance) s.to_tolerance = count;
  }
  s.utilisation = last > first ? busy / (double(slots) * (last - first)) : 0;
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  std::uint64_t budget = 2000, seed = 1;
  std::uint32_t slots = 4, sleep_ms = 2;
  CLI::App app{"aposmm against a random sweep of the same budget on the six-hump camel function"};
  app.add_option("--budget", budget, "simulations each may run (default 2000)")
      ->check(tessera::cli::unsigned_in(10, 1'000'000));
  app.add_option("--slots", slots, "compute threads of the embedded cluster's worker (default 4)")
      ->check(tessera::cli::unsigned_in(1, 256));
  app.add_option("--sleep-ms", sleep_ms, "milliseconds one simulation takes (default 2)")
      ->check(tessera::cli::unsigned_in(0, 10'000));
  app.add_option("--seed", seed, "of the sample and of the sweep (default 1)");
  CLI11_PARSE(app, argc, argv);

  tessera::LocalCluster cluster{{.workers = 1, .threads_per_worker = slots}};
  tessera::Client client{cluster};
  tessera::StreamOptions simulation;
  simulation.config.set("sleep_ms", tessera::to_value(std::int64_t(sleep_ms)));
  tessera::Config box;
  box.set("lower", tessera::to_value(std::vector<double>{-3, -2}));
  box.set("upper", tessera::to_value(std::vector<double>{3, 2}));
  box.set("seed", tessera::to_value(static_cast<std::int64_t>(seed)));

  auto ensemble = client.ensemble("aposmm", "example_six_hump_camel",
                                  {.budget = budget, .config = box, .stream = simulation});
  const auto adaptive = summarise(ensemble, 1e-6, slots);
  if (!ensemble.error().empty()) {
    std::cerr << "the ensemble failed: " << ensemble.error() << "\n";
    return 1;
  }

  auto sweep = client.stream("example_six_hump_camel", simulation);
  std::mt19937_64 random(seed);
  std::uniform_real_distribution<double> x(-3, 3), y(-2, 2);
  for (std::uint64_t i = 0; i < budget; ++i) sweep.push(std::vector<double>{x(random), y(random)});
  sweep.close();
  const auto uniform = summarise(sweep, 1e-2, slots);

  const auto sets = [](std::size_t n) { return n ? std::to_string(n) : std::string("not reached"); };
  std::cout.precision(12);
  std::cout << "aposmm:       least " << adaptive.least << ", within 1e-6 after "
            << sets(adaptive.to_tolerance) << " simulations, slots " << adaptive.utilisation * 100
            << "% busy\n"
            << "random sweep: least " << uniform.least << ", within 1e-2 after " << sets(uniform.to_tolerance)
            << " simulations, slots " << uniform.utilisation * 100 << "% busy\n";
  return adaptive.to_tolerance ? 0 : 1;
}

// Newton's law of cooling as a Tessera simulation and a task function, in a project of its own.
// Each parameter set is (initial temperature, ambient temperature, rate k per second, time t); the
// simulation integrates dT/dt = -k (T - ambient) with explicit Euler steps of `dt` seconds (from the
// stream's config) and answers the temperature at t.
#include <cmath>
#include <stdexcept>
#include <tessera/tessera.hpp>
#include <vector>

namespace cooling {

struct Cooling {
  explicit Cooling(const tessera::Config& config) : dt(config.get<double>("dt", 1e-3)) {
    if (!(dt > 0) || !std::isfinite(dt)) throw std::invalid_argument("cooling: dt must be a positive number");
  }
  double run(const std::vector<double>& p) {
    const double initial = p[0], ambient = p[1], k = p[2], t = p[3];
    if (!(k >= 0) || !(t >= 0) || !std::isfinite(t))
      throw std::invalid_argument("cooling: k and t must be >= 0");
    double temperature = initial;
    const auto steps = static_cast<long>(std::ceil(t / dt));
    const double step = steps ? t / static_cast<double>(steps) : 0;
    for (long i = 0; i < steps; ++i) temperature -= step * k * (temperature - ambient);
    return temperature;
  }
  static constexpr std::size_t arity = 4;
  double dt;
};
TESSERA_SIMULATION(Cooling, "cooling");

// The closed form, for checking the simulation against: T(t) = ambient + (initial - ambient) e^(-k t).
double cooling_exact(double initial, double ambient, double k, double t) {
  return ambient + (initial - ambient) * std::exp(-k * t);
}
TESSERA_TASK(cooling_exact);

}  // namespace cooling

// Task functions and a simulation that only the tessera-node a test starts loads: the test's client
// process defines none of them (node_only_square and node_only_sum it defines differently, on purpose),
// so calls by name resolve on the scheduler and differing definitions are refused.
#include <numeric>
#include <tessera/tessera.hpp>
#include <vector>

namespace node_only {

std::int64_t node_only_cube(std::int64_t x) {
  return x * x * x;
}
TESSERA_TASK(node_only_cube);

double node_only_weighted(const std::vector<double>& xs, double weight) {
  return weight * std::accumulate(xs.begin(), xs.end(), 0.0);
}
TESSERA_TASK(node_only_weighted);

std::int64_t node_only_square(std::int64_t x) {
  return x * x;
}
TESSERA_TASK(node_only_square);

struct NodeOnlySum {
  explicit NodeOnlySum(const tessera::Config&) {}
  double run(const std::vector<double>& xs) { return std::accumulate(xs.begin(), xs.end(), 0.0); }
};
TESSERA_SIMULATION(NodeOnlySum, "node_only_sum");

}  // namespace node_only

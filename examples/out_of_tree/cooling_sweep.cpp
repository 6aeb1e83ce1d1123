// A program of one's own on Tessera's client library (Tessera::tessera): a LocalCluster in this process
// loads the cooling plugin, streams a sweep of parameter sets through its simulation and compares each
// result with the closed form.
//   cooling_sweep PLUGIN SETS
#include <cmath>
#include <iostream>
#include <string>
#include <tessera/tessera.hpp>
#include <vector>

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: cooling_sweep PLUGIN SETS\n";
    return 2;
  }
  const int sets = std::stoi(argv[2]);
  if (sets < 1) {
    std::cerr << "cooling_sweep: SETS must be >= 1\n";
    return 2;
  }
  try {
    tessera::load_plugin(argv[1]);
    tessera::LocalCluster cluster{{.workers = 2, .threads_per_worker = 2}};
    tessera::Client client{cluster};
    tessera::StreamOptions options;
    options.config.set("dt", 1e-3);
    auto stream = client.stream("cooling", options);
    std::vector<std::vector<double>> pushed;
    for (int i = 0; i < sets; ++i) {
      pushed.push_back({70.0 + i % 30, 15.0, 0.02 + 0.001 * (i % 50), 0.25 * (i % 40)});
      stream.push(pushed.back());
    }
    stream.close();
    int answered = 0;
    double worst = 0;
    for (const auto& record : stream.results()) {
      const auto& p = pushed.at(record.id);
      const double exact = p[1] + (p[0] - p[1]) * std::exp(-p[2] * p[3]);
      worst = std::max(worst, std::abs(tessera::result_as<double>(record) - exact));
      ++answered;
    }
    std::cout << "cooling_sweep: " << answered << " results, largest error " << worst << "\n";
    return answered == sets && worst < 5e-3 ? 0 : 1;
  } catch (const std::exception& e) {
    std::cerr << "cooling_sweep: " << e.what() << "\n";
    return 1;
  }
}

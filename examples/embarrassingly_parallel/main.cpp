// The embarrassingly parallel notebook in C++: 500 parameter sets through costly_simulation, computed
// three ways (delayed, futures, a bag), checked against each other, summarised and written to CSV.
#include <unistd.h>

#include <charconv>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <limits>
#include <optional>
#include <string>
#include <variant>

#include "../example_output.hpp"
#include "cli_options.hpp"
#include "simulation.hpp"

namespace {

struct Options {
  std::size_t sets = 500;
  double max_sleep = 0.05;
  std::uint32_t workers = 10, threads = 4;
  std::string output;             // empty: example::default_output("results.csv")
  std::string scheduler;          // empty: an embedded local cluster
  tessera::cli::KeyOptions keys;  // CURVE keys for --scheduler
  std::uint64_t seed = 0;
  std::string params_csv;  // set: only write the parameter sets there (for `tessera stream push`)
  std::string dashboard;   // set: the embedded cluster serves its dashboard there ("127.0.0.1:8790")
  bool hold = false;       // with a dashboard: keep it up until Enter is pressed (or stdin closes)
};

// The options, or the exit code: 0 after --help, 2 for a bad flag (named, with its accepted range).
std::variant<Options, int> parse(int argc, char** argv) {
  using tessera::cli::real_in;
  using tessera::cli::unsigned_in;
  Options o;
  CLI::App app{
      "The seed notebook: N parameter sets through costly_simulation, three ways (delayed, futures, a bag), "
      "checked against each other and written to CSV. With --scheduler it runs on a tessera-node that loads "
      "the examples plugin (build/lib/libtessera_examples.so; the node's own max sleep applies, 0.05 s); "
      "otherwise on an embedded cluster of W workers x T threads. --params-csv only writes the parameter "
      "sets "
      "(for `tessera stream push`).",
      "embarrassingly_parallel"};
  app.add_option("--sets", o.sets, "parameter sets (default 500)")->check(unsigned_in(1, 10'000'000));
  app.add_option("--max-sleep", o.max_sleep, "seconds a simulation sleeps at most (default 0.05)")
      ->check(real_in(0, 60));
  app.add_option("--workers", o.workers, "embedded workers (default 10)")->check(unsigned_in(1, 1024));
  app.add_option("--threads", o.threads, "threads per embedded worker (default 4)")
      ->check(unsigned_in(1, 1024));
  app.add_option("--output", o.output,
                 "the results' CSV file (default: results.csv in TMPDIR/tessera-examples, outside the source "
                 "tree)");
  app.add_option("--seed", o.seed, "the parameter sets' seed (default 0)")
      ->check(unsigned_in(0, std::numeric_limits<std::uint64_t>::max()));
  app.add_option("--scheduler", o.scheduler, "run on this tessera-node, tcp://HOST:PORT");
  app.add_option("--params-csv", o.params_csv, "only write the parameter sets to this CSV file");
  app.add_option("--dashboard", o.dashboard,
                 "serve the embedded cluster's dashboard at HOST:PORT (e.g. 127.0.0.1:8790; port 0: any free "
                 "one) and print its link");
  app.add_flag("--hold", o.hold,
               "with --dashboard: keep the dashboard up after the run until Enter is pressed");
  o.keys.add_to(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return tessera::cli::parse_failure(app, e);
  }
  if (o.output.empty()) o.output = example::default_output("results.csv");
  if (o.keys.given() && o.scheduler.empty()) {
    std::cerr << "embarrassingly_parallel: the CURVE key options need --scheduler\n";
    return 2;
  }
  return o;
}

}  // namespace

int main(int argc, char** argv) try {
  using example::costly_simulation;
  const auto parsed = parse(argc, argv);
  if (const int* exit_code = std::get_if<int>(&parsed)) return *exit_code;
  const Options& o = std::get<Options>(parsed);
  example::max_sleep_seconds = o.max_sleep;
  const auto params = example::random_rows(o.sets, 4, o.seed);
  if (!o.params_csv.empty()) {
    // The shortest text that reads back as the same double, so a stream of these gives these results.
    std::ofstream out(o.params_csv);
    if (!out) throw std::runtime_error("cannot write " + o.params_csv);
    out << "a,b,c,d\n";
    for (const auto& row : params) {
      for (std::size_t i = 0; i < row.size(); ++i) {
        char text[32];
        auto end = std::to_chars(text, text + sizeof text, row[i]).ptr;
        out << (i ? "," : "") << std::string_view(text, static_cast<std::size_t>(end - text));
      }
      out << "\n";
    }
    std::cout << tessera::grouped(params.size()) << " parameter sets written to " << o.params_csv
              << std::endl;
    return 0;
  }

  // The same program runs embedded or against a node: only the client's construction differs.
  std::optional<tessera::LocalCluster> cluster;
  if (o.scheduler.empty()) {
    tessera::ClusterOptions options{.workers = o.workers, .threads_per_worker = o.threads};
    options.dashboard = o.dashboard;  // prints "tessera: dashboard at http://..." as Dask's Client shows it
    cluster.emplace(options);
  } else if (!o.dashboard.empty()) {
    std::cerr << "embarrassingly_parallel: --dashboard is for the embedded cluster; a node serves its own "
                 "([dashboard] in its config)\n";
    return 2;
  }
  tessera::Client client =
      o.scheduler.empty() ? tessera::Client(*cluster)
                          : tessera::Client(o.scheduler, o.keys.connect_options("embarrassingly_parallel"));
  const bool terminal = isatty(STDOUT_FILENO);

  // 1. delayed + compute
  auto start = std::chrono::steady_clock::now();
  std::vector<tessera::Delayed<double>> lazy;
  for (const auto& p : params) lazy.push_back(tessera::delayed(costly_simulation)(p));
  const std::vector<double> a = client.compute(lazy);
  const double t_delayed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  // 2. futures: map + gather (with a progress bar as they complete)
  start = std::chrono::steady_clock::now();
  auto futures = client.map(costly_simulation, params);
  if (terminal) tessera::progress(futures, {.label = "costly_simulation"});
  const std::vector<double> b = client.gather(futures);
  const double t_futures = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  // 3. a bag of 100 partitions
  start = std::chrono::steady_clock::now();
  const std::vector<double> c =
      tessera::Bag<std::vector<double>>::from_sequence(params, 100).map(costly_simulation).compute(client);
  const double t_bag = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  if (a != b || b != c) {
    std::cerr << "embarrassingly_parallel: the three ways disagree\n";
    return 1;
  }
  std::ofstream csv(o.output);
  if (!csv) throw std::runtime_error("cannot write " + o.output);
  csv << "p0,p1,p2,p3,result\n";
  csv.precision(17);
  for (std::size_t i = 0; i < params.size(); ++i)
    csv << params[i][0] << ',' << params[i][1] << ',' << params[i][2] << ',' << params[i][3] << ',' << a[i]
        << '\n';

  const double mean = std::accumulate(a.begin(), a.end(), 0.0) / static_cast<double>(a.size());
  const auto above = std::count_if(a.begin(), a.end(), [](double r) { return r > 2; });
  if (o.scheduler.empty()) {
    std::printf("%s simulations on %u workers x %u threads (max sleep %.3f s)\n",
                tessera::grouped(a.size()).c_str(), o.workers, o.threads, o.max_sleep);
  } else {
    std::printf("%s simulations on the node at %s\n", tessera::grouped(a.size()).c_str(),
                o.scheduler.c_str());
  }
  std::printf("delayed %.3f s, futures %.3f s, bag %.3f s: all three agree\n", t_delayed, t_futures, t_bag);
  std::printf("mean %.6f; results > 2: %s of %s (%.1f%%)\nwritten to %s\n", mean,
              tessera::grouped(static_cast<std::uint64_t>(above)).c_str(), tessera::grouped(a.size()).c_str(),
              100.0 * static_cast<double>(above) / static_cast<double>(a.size()), o.output.c_str());
  if (o.hold && cluster && !cluster->dashboard_link().empty()) {
    std::printf("the dashboard stays at %s; press Enter to stop\n", cluster->dashboard_link().c_str());
    std::fflush(stdout);
    std::string line;
    std::getline(std::cin, line);
  }
  return 0;
} catch (const std::exception& e) {
  std::cerr << "embarrassingly_parallel: " << e.what() << "\n";
  return 2;
}

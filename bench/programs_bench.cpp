// tessera-bench-programs: what running a program per parameter set costs a stream. Each set renders the
// declaration, makes its working directory, starts the program (no shell), reads its result and stores it
// durably in RocksDB (the cluster's data_dir). "trivial": a program that prints a number, sets/s.
// "floor": a program that sleeps S ms, against the floor N * S / K. "mpi": a program run by mpirun with
// --ranks ranks, sets/s. One JSON line per run.
#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <tessera/tessera.hpp>

#include "bench_util.hpp"
#include "cli_options.hpp"

int main(int argc, char** argv) try {
  tessera::cli::FlagTable flags("tessera-bench-programs",
                                "a stream of program simulations: sets/s, or overhead against the floor. "
                                "Prints one JSON line per measurement.");
  flags
      .choice("mode", "trivial", {"trivial", "floor", "mpi"},
              "trivial: echo; floor: sleep; mpi: --program under mpirun")
      .integer("sets", 20000, 1, 100000000, "parameter sets")
      .real("sleep-ms", 50, 0, 60000, "floor: milliseconds each set sleeps")
      .integer("slots", 2, 1, 1024, "compute threads of the one worker (cores the sets share)")
      .integer("ranks", 2, 1, 4096, "mpi: ranks per set")
      .text("program", "", "mpi: the MPI program (it is given the set's one parameter)")
      .integer("repeat", 1, 1, 1000, "repetitions (the median is reported)");
  if (const auto exit_code = flags.parse(argc, argv)) return *exit_code;
  const std::string mode = flags.str("mode");
  const auto sets = static_cast<std::uint64_t>(flags.integer("sets"));
  const auto slots = static_cast<std::uint32_t>(flags.integer("slots"));
  const double sleep_ms = flags.real("sleep-ms");
  const auto data_dir =
      std::filesystem::temp_directory_path() / ("tessera-bench-programs-" + std::to_string(getpid()));

  tessera::ProgramSpec spec;
  spec.parameters = {"x"};
  spec.keep = tessera::KeepDirectories::never;
  spec.workdir_root = (data_dir / "runs").string();
  if (mode == "trivial") {
    spec.command = {"echo", "{x}"};
  } else if (mode == "floor") {
    // One exec and one sleep (bench/tools/sleep_print.c): beyond the sleep, what is measured is ours.
    spec.command = {TESSERA_BENCH_SLEEPER, tessera::render_number(sleep_ms), "{x}"};
  } else {
    if (flags.str("program").empty()) throw std::invalid_argument("--mode mpi needs --program");
    // The set runs in its own directory: a relative path would not be found there.
    spec.command = {std::filesystem::absolute(flags.str("program")).string(), "{x}"};
    spec.ranks = static_cast<std::uint32_t>(flags.integer("ranks"));
    spec.launcher = "mpirun";
    spec.env = {{"OMPI_ALLOW_RUN_AS_ROOT", "1"}, {"OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1"}};
  }
  tessera::register_program("bench_program", spec);
  tessera::ClusterOptions options{.workers = 1, .threads_per_worker = slots};
  options.data_dir = data_dir.string();
  tessera::LocalCluster cluster{options};
  tessera::Client client{cluster};

  const auto run = [&] {
    tessera::StreamOptions stream_options;
    stream_options.max_in_flight = 1 << 16;
    auto stream = client.stream("bench_program", std::move(stream_options));
    std::uint64_t failed = 0;
    std::string first_error;
    const auto start = std::chrono::steady_clock::now();
    for (std::uint64_t i = 0; i < sets; ++i) stream.push(double(i));
    stream.close();
    for (const auto& r : stream.results())
      if (r.failed && failed++ == 0) first_error = r.error;
    const double seconds = tessera::bench::seconds_since(start);
    if (failed) throw std::runtime_error(std::to_string(failed) + " sets failed, the first: " + first_error);
    return seconds;
  };
  std::vector<double> runs;
  for (long long r = 0; r < flags.integer("repeat"); ++r) runs.push_back(run());
  const double seconds = tessera::bench::median(runs);
  std::cout << "{\"bench\":\"programs\",\"mode\":\"" << mode << "\",\"sets\":" << sets
            << ",\"slots\":" << slots;
  if (mode == "floor") {
    const double floor = double(sets) * sleep_ms / 1000 / slots;
    std::cout << ",\"sleep_ms\":" << sleep_ms << ",\"floor_seconds\":" << floor << ",\"seconds\":" << seconds
              << ",\"overhead_percent\":" << (seconds / floor - 1) * 100;
  } else {
    if (mode == "mpi") std::cout << ",\"ranks\":" << spec.ranks;
    std::cout << ",\"seconds\":" << seconds << ",\"sets_per_second\":" << double(sets) / seconds;
  }
  std::cout << "}" << std::endl;
  std::filesystem::remove_all(data_dir);
  return 0;
} catch (const std::exception& e) {
  std::cerr << "tessera-bench-programs: " << e.what() << "\n";
  return 2;
}

// tessera: the command line over a scheduler node (`tessera --help`, `tessera COMMAND --help`).
//   tessera keygen [--out PREFIX]                 a CURVE key pair: PREFIX.key (secret), PREFIX.pub
//   tessera --scheduler ADDR status [--json]      what the scheduler is doing
//   tessera --scheduler ADDR workers [--json]     its workers: name, address, threads, memory, tasks
//   tessera --scheduler ADDR simulations [--json] what streams may name: compiled ones and programs
//   tessera --scheduler ADDR functions [--json]   the task functions it can run, with signatures
//   tessera --scheduler ADDR map FUNCTION --input FILE.csv [--output FILE.csv]   one task per row
//   tessera --scheduler ADDR stream push --simulation NAME --input FILE.csv [--output FILE.csv]
//   tessera --scheduler ADDR stream cancel --stream ID [--ids 10-99 | --where 'id >= 100']
//   tessera --scheduler ADDR results --stream ID [--where FILTER] [--format summary|count|csv|json]
// With CURVE on the node: --public-key FILE --secret-key FILE --scheduler-key KEY_OR_FILE, or
// --client-config FILE.toml. Exit codes: 0 done, 1 the command failed, 2 bad usage or a refused input.
#include <sys/stat.h>
#include <zmq.h>

#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <limits>

#include "cli_checkpoints.hpp"
#include "cli_memory.hpp"
#include "cli_options.hpp"
#include "cli_registry.hpp"
#include "cli_slurm.hpp"
#include "cli_stream_store.hpp"
#include "cli_streams.hpp"
#include "dashboard/status_json.hpp"
#include "graph/builtin_names.hpp"
#include "graph/printable.hpp"
#include "nodes/transport.hpp"

namespace {

using tessera::cli::excerpt;
using tessera::cli::print_json;
using Json = nlohmann::ordered_json;

// Text a peer chose (a node's or a worker's name) is shown escaped and bounded.
std::string shown(std::string_view text) {
  return excerpt(text, 256);
}

void write_key_file(const std::string& path, const std::string& key) {
  std::ofstream file(path);
  file << key << "\n";
  file.close();
  if (!file) throw std::runtime_error("cannot write " + path + ": " + std::strerror(errno));
}

int keygen(const std::string& prefix) {
  const auto keys = tessera::transport::generate_curve_keys();
  write_key_file(prefix + ".key", keys.secret_key);
  chmod((prefix + ".key").c_str(), S_IRUSR | S_IWUSR);  // the secret stays private
  write_key_file(prefix + ".pub", keys.public_key);
  std::cout << "wrote " << prefix << ".key (secret) and " << prefix << ".pub; public key " << keys.public_key
            << "\n";
  return 0;
}

std::string bytes_text(std::uint64_t bytes) {
  if (bytes == 0) return "no limit";
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024 && unit < 4) value /= 1024, ++unit;
  char text[32];
  std::snprintf(text, sizeof text, "%.1f %s", value, units[unit]);
  return text;
}

int workers(const tessera::cli::Target& target, bool json) {
  auto client = tessera::cli::connect(target);
  const auto list = client.workers();
  if (json) {
    print_json(tessera::dashboard::workers_json(list));
    return 0;
  }
  std::printf("%-4s %-16s %-28s %7s %12s %8s\n", "id", "name", "address", "threads", "memory", "tasks");
  for (const auto& w : list) {
    std::printf("%-4u %-16s %-28s %7u %12s %8llu%s\n", w.id, shown(w.name).c_str(), shown(w.address).c_str(),
                w.threads, bytes_text(w.memory_limit).c_str(),
                static_cast<unsigned long long>(w.tasks_assigned), w.retiring ? " (retiring)" : "");
    std::printf("     %s\n", tessera::cli::memory_text(w.memory).c_str());
  }
  return 0;
}

int status(const tessera::cli::Target& target, bool json) {
  auto client = tessera::cli::connect(target);
  const auto status = client.status();
  // What clients may call and stream by name here.
  std::vector<std::string> functions, simulations;
  for (const auto& f : client.functions()) functions.push_back(f.name);
  for (const auto& s : client.simulations()) simulations.push_back(s.name);
  if (json) {
    auto out = tessera::dashboard::cluster_status_json(status);
    out["functions"] = functions;
    out["simulations"] = simulations;
    print_json(out);
    return 0;
  }
  const auto& s = status.scheduler;
  std::cout << "scheduler " << shown(status.name) << " at " << target.scheduler << "\n"
            << "  workers         " << s.workers << " (" << s.retiring_workers << " retiring)\n"
            << "  clients         " << status.clients << "\n"
            << "  operations      " << s.operations << "\n"
            << "  tasks pending   " << s.tasks_pending << "\n"
            << "  results held    " << s.results_held << "\n"
            << "  tasks done      " << s.tasks_done << ", erred " << s.tasks_erred << ", cancelled "
            << s.tasks_cancelled << ", stolen " << s.tasks_stolen << "\n"
            << "  workers lost    " << s.workers_lost << " (tasks recomputed " << s.tasks_recomputed << ")\n"
            << "  checkpoints     " << s.checkpoints_stored << " stored, " << s.checkpoints_written
            << " written (" << s.checkpoint_bytes_written / 1e6 << " MB), " << s.tasks_from_checkpoint
            << " tasks read from them, " << s.checkpoints_corrupt << " damaged\n";
  if (!s.checkpoint_error.empty()) std::cout << "  checkpoint error " << shown(s.checkpoint_error) << "\n";
  for (const auto& memory : s.memory)
    std::cout << "  worker " << memory.worker << " memory (limit " << bytes_text(memory.limit)
              << "): " << tessera::cli::memory_text(memory) << "\n";
  // A node's own, by name; Tessera's own counted (tessera functions and simulations list them all).
  std::cout << "  functions       " << tessera::printable(tessera::own_and_builtin(functions, 24), 2000)
            << "\n"
            << "  simulations     " << tessera::printable(tessera::own_and_builtin(simulations, 24), 2000)
            << "\n";
  return 0;
}

// A public key that is not the secret key's half fails only as a handshake that never ends: say so now.
void check_key_pair(const tessera::ConnectOptions& keys) {
  if (keys.secret_key.empty()) return;
  char derived[41] = {};
  if (zmq_curve_public(derived, keys.secret_key.c_str()) == 0 && keys.public_key != derived)
    throw std::invalid_argument("--public-key does not hold the public key of the --secret-key pair");
}

constexpr const char* kHeaderHelp =
    "whether the first row names the columns: 'yes', 'no', or 'auto' (default): a header only when none "
    "of its cells is a number. A first row of numbers with another cell is an error naming the cell, so "
    "a row of numbers is never dropped";

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"tessera: the command line over a Tessera scheduler node (tessera-node)", "tessera"};
  app.fallthrough();  // options of `tessera` may also follow the command
  app.require_subcommand(1);
  app.footer(
      "Exit codes: 0 done; 1 the command failed (the node refused, fewer results stored than pushed); 2 bad "
      "usage or a refused input.\nExample: tessera --scheduler tcp://127.0.0.1:7070 stream push --simulation "
      "costly_simulation --input params.csv");
  std::string scheduler;
  double timeout_seconds = 10;
  tessera::cli::KeyOptions keys;
  app.add_option("--scheduler", scheduler, "the scheduler node, tcp://HOST:PORT")
      ->envname("TESSERA_SCHEDULER")
      ->check(tessera::cli::text_at_most(1024));
  app.add_option("--timeout", timeout_seconds,
                 "seconds status and workers wait for the node's handshake and answer (default 10)")
      ->check(tessera::cli::real_in(0.1, 3600));
  double reconnect_timeout_seconds = 30;
  app.add_option("--reconnect-timeout", reconnect_timeout_seconds,
                 "seconds stream push and results reconnect to a scheduler that went away (it may be "
                 "restarting) before giving up with ConnectionLost, exit 1 (default 30)")
      ->check(tessera::cli::real_in(0.1, 86400));
  keys.add_to(app);

  std::string prefix = "tessera";
  auto* keygen_command =
      app.add_subcommand("keygen", "write a CURVE key pair: PREFIX.key (secret) and PREFIX.pub");
  keygen_command->add_option("--out", prefix, "the files' PREFIX (default tessera)")
      ->check(tessera::cli::text_at_most(4096));

  bool json = false;
  auto* status_command = app.add_subcommand("status", "what the scheduler is doing");
  status_command->add_flag("--json", json, "one JSON object");
  auto* workers_command =
      app.add_subcommand("workers", "the scheduler's workers: name, address, threads, memory, tasks");
  workers_command->add_flag("--json", json, "one JSON array");
  auto* simulations_command = app.add_subcommand(
      "simulations",
      "what streams may name: compiled and Python simulations and declared programs, with their parameters");
  simulations_command->add_flag("--json", json, "one JSON array");
  auto* functions_command = app.add_subcommand(
      "functions",
      "the task functions the cluster can run (what map and clients call by name), with signatures");
  functions_command->add_flag("--json", json, "one JSON array");
  tessera::cli::MapOptions map;
  std::string map_header = "auto";
  auto* map_command = app.add_subcommand(
      "map", "run a node's task function on each row of a CSV file (the row's cells are its arguments)");
  map_command->add_option("function", map.function, "the task function's name on the cluster")
      ->required()
      ->check(tessera::cli::text_at_most(256));
  map_command->add_option("--input", map.input, "the CSV file, one task per row")->required();
  map_command->add_option("--header", map_header, kHeaderHelp)->check(CLI::IsMember({"auto", "yes", "no"}));
  map_command->add_option("--output", map.output,
                          "write id, the row, result and error as CSV here (default: stdout)");

  auto* stream_command = app.add_subcommand("stream", "streams of parameter sets");
  stream_command->require_subcommand(1);
  tessera::cli::PushOptions push;
  std::string header = "auto";
  std::uint32_t pool_size = 0;
  auto* push_command = stream_command->add_subcommand(
      "push", "push each row of a CSV file as a parameter set into a simulation, and wait for the results");
  auto* simulation_option =
      push_command->add_option("--simulation", push.simulation, "the simulation's registered name")
          ->check(tessera::cli::text_at_most(256));
  push_command->add_option("--input", push.input, "the CSV file, one parameter set per row")->required();
  push_command->add_option("--header", header, kHeaderHelp)->check(CLI::IsMember({"auto", "yes", "no"}));
  auto* pool_option = push_command
                          ->add_option("--pool-size", pool_size,
                                       "simulation actors per worker (default: one per compute thread)")
                          ->check(tessera::cli::unsigned_in(1, 1024));
  push_command
      ->add_option("--max-in-flight", push.max_in_flight,
                   "parameter sets pushed but not yet answered (default 4096)")
      ->check(tessera::cli::unsigned_in(1, 1'000'000));
  push_command
      ->add_option("--timeout", push.timeout_seconds,
                   "SECONDS a parameter set may run; one that runs longer fails (default: no limit)")
      ->check(tessera::cli::real_in(0, tessera::StreamOptions::kMaxTimeoutSeconds));
  push_command
      ->add_option("--retries", push.retries,
                   "times a failed parameter set runs again (default 0); one that crashes its process "
                   "twice is final")
      ->check(tessera::cli::unsigned_in(0, tessera::StreamOptions::kMaxRetries));
  std::string isolation;
  auto* isolation_option =
      push_command
          ->add_option("--isolation", isolation,
                       "thread (the workers' compute threads) or process (a supervised child process per "
                       "simulation actor; a crash fails only its set); default: the node's "
                       "streams.isolation")
          ->check(CLI::IsMember({"thread", "process"}));
  push_command
      ->add_option("--priority-column", push.priority_column,
                   "a column of the CSV's header whose values are each row's priority (higher runs first "
                   "among queued sets) and not a parameter")
      ->check(tessera::cli::text_at_most(256));
  push_command->add_option("--output", push.output, "also write the stored results there as CSV");
  push_command->add_flag("--quiet", push.quiet, "no progress line");
  auto* push_config_option =
      push_command
          ->add_option("--simulation-config", push.simulation_config,
                       "KEY=VALUE given to the simulation (repeatable); VALUE a number, a comma-separated "
                       "list of numbers, true/false or text")
          ->check(tessera::cli::text_at_most(65536));
  auto* resume_option =
      push_command
          ->add_option("--resume", push.resume,
                       "STREAM: push the rows of --input that this incomplete stream (stopped by Ctrl-C, "
                       "SIGTERM or a lost client) did not accept; the same file, read the same way")
          ->check(tessera::cli::unsigned_in(1, std::numeric_limits<std::uint64_t>::max()));
  push_command->add_flag("--no-check", push.no_check,
                         "push rows as the file is read, without reading it whole first (a malformed row "
                         "then stops the push midway, and the stream cannot be resumed)");
  resume_option->excludes(pool_option);
  resume_option->excludes(isolation_option);
  resume_option->excludes("--timeout");
  resume_option->excludes("--retries");
  resume_option->excludes(push_config_option);
  tessera::cli::RunOptions run;
  std::uint32_t run_pool_size = 0;
  std::string run_isolation;
  auto* run_command = stream_command->add_subcommand(
      "run",
      "run an adaptive ensemble: a generator proposes parameter sets for a simulation, reads their results "
      "and proposes more, until it is done or the budget is spent");
  run_command->add_option("--generator", run.generator, "the generator's registered name (e.g. aposmm)")
      ->required()
      ->check(tessera::cli::text_at_most(256));
  run_command->add_option("--simulation", run.simulation, "the simulation's registered name")
      ->required()
      ->check(tessera::cli::text_at_most(256));
  run_command->add_option("--budget", run.budget, "the most parameter sets the generator may propose")
      ->required()
      ->check(tessera::cli::unsigned_in(1, tessera::EnsembleOptions::kMaxBudget));
  run_command
      ->add_option("--config", run.config,
                   "KEY=VALUE for the generator (repeatable); VALUE a number, a comma-separated list of "
                   "numbers, true/false or text, e.g. lower=-3,-2")
      ->check(tessera::cli::text_at_most(65536));
  run_command
      ->add_option("--simulation-config", run.simulation_config, "KEY=VALUE for the simulation (repeatable)")
      ->check(tessera::cli::text_at_most(65536));
  auto* run_pool_option = run_command
                              ->add_option("--pool-size", run_pool_size,
                                           "simulation actors per worker (default: as threads allow)")
                              ->check(tessera::cli::unsigned_in(1, 1024));
  run_command
      ->add_option("--timeout", run.timeout_seconds,
                   "SECONDS a parameter set may run; one that runs longer fails (default: no limit)")
      ->check(tessera::cli::real_in(0, tessera::StreamOptions::kMaxTimeoutSeconds));
  run_command->add_option("--retries", run.retries, "times a failed parameter set runs again (default 0)")
      ->check(tessera::cli::unsigned_in(0, tessera::StreamOptions::kMaxRetries));
  auto* run_isolation_option =
      run_command->add_option("--isolation", run_isolation, "thread or process (default: the node's)")
          ->check(CLI::IsMember({"thread", "process"}));
  run_command->add_option("--output", run.output, "also write the stored results there as CSV");
  run_command->add_flag("--quiet", run.quiet, "no progress line");

  tessera::cli::CancelOptions cancel;
  auto* cancel_command = stream_command->add_subcommand(
      "cancel",
      "cancel a running stream's parameter sets that have no result yet (those --ids or --where select; "
      "neither: the whole stream, and a client still pushing it is stopped): queued ones never run, running "
      "ones are stopped (process isolation) or abandoned (thread isolation); each is stored as cancelled");
  cancel_command->add_option("--stream", cancel.stream, "the stream's id")
      ->required()
      ->check(tessera::cli::unsigned_in(1, std::numeric_limits<std::uint64_t>::max()));
  auto* ids_option =
      cancel_command->add_option("--ids", cancel.ids, "ids and inclusive ranges, e.g. 10-99 or 3,5,7-9")
          ->check(tessera::cli::text_at_most(65536));
  auto* where_option =
      cancel_command->add_option("--where", cancel.where, "a filter over id and parameters, e.g. 'id >= 100'")
          ->check(tessera::cli::text_at_most(65536));
  ids_option->excludes(where_option);

  bool list_json = false;
  auto* list_command = stream_command->add_subcommand(
      "list", "the streams the node's store holds: id, simulation, state, results stored of sets pushed");
  list_command->add_flag("--json", list_json, "one JSON array");
  std::uint64_t drop_id = 0;
  auto* drop_command = stream_command->add_subcommand(
      "drop", "delete a finished stream: its stored results, its records, and the disk space they took");
  drop_command->add_option("stream", drop_id, "the stream's id (tessera stream list)")
      ->required()
      ->check(tessera::cli::unsigned_in(1, std::numeric_limits<std::uint64_t>::max()));

  tessera::cli::ResultsOptions results;
  auto* results_command = app.add_subcommand("results", "query a stream's stored results");
  results_command->add_option("--stream", results.stream, "the stream's id (tessera stream push prints it)")
      ->required()
      ->check(tessera::cli::unsigned_in(1, std::numeric_limits<std::uint64_t>::max()));
  results_command->add_option("--where", results.where, "a filter, e.g. 'result > 2 and not failed'")
      ->check(tessera::cli::text_at_most(65536));
  results_command
      ->add_option("--format", results.format,
                   "summary (default), count, csv, json, timeline (queue, run and store seconds per set) or "
                   "names (the stream's parameter and result names)")
      ->check(CLI::IsMember({"summary", "count", "csv", "json", "timeline", "names"}));
  results_command
      ->add_option("--field", results.field,
                   "the summary's field: result, result[i], parameters[i], id, or a timeline field "
                   "(queue_seconds, run_seconds, store_seconds, pushed_at, ..., stored_at)")
      ->check(tessera::cli::text_at_most(256));
  results_command->add_option("--bins", results.bins, "the summary's histogram bins (default 10)")
      ->check(tessera::cli::unsigned_in(0, 1'000'000));
  results_command->add_option("--output", results.output, "write the answer there instead of printing it");

  tessera::cli::CheckpointsOptions checkpoints;
  auto* checkpoints_command =
      app.add_subcommand("checkpoints", "the task results the node keeps as checkpoints");
  checkpoints_command->require_subcommand(1);
  auto* list_checkpoints_command =
      checkpoints_command->add_subcommand("list", "key, function, task, bytes and time of each checkpoint");
  list_checkpoints_command->add_option("--function", checkpoints.function, "only this function's")
      ->check(tessera::cli::text_at_most(256));
  list_checkpoints_command->add_flag("--json", checkpoints.json, "one JSON array");
  auto* drop_checkpoints_command = checkpoints_command->add_subcommand(
      "drop", "delete checkpoints: every one (--all), a function's (--function), or the keys given");
  drop_checkpoints_command->add_flag("--all", checkpoints.all, "every checkpoint");
  drop_checkpoints_command->add_option("--function", checkpoints.function, "the function's checkpoints")
      ->check(tessera::cli::text_at_most(256));
  drop_checkpoints_command->add_option("keys", checkpoints.keys, "keys, or prefixes of at least 8 hex digits")
      ->check(tessera::cli::text_at_most(64));

  tessera::cli::SlurmOptions slurm;
  auto* slurm_command = app.add_subcommand(
      "slurm",
      "inside a Slurm allocation (sbatch, salloc): start the scheduler on the first node and a worker on "
      "every node with srun, with CURVE keys made for the job; write the scheduler's address and a client "
      "config; run COMMAND (after --) and stop every node when it ends or the job is cancelled");
  slurm_command->add_option("--config", slurm.config, "the template TOML of every node (tessera-node's keys)")
      ->required()
      ->check(tessera::cli::text_at_most(4096));
  slurm_command
      ->add_option("--job-dir", slurm.job_dir,
                   "keys, node configs, logs and the scheduler's store (default SUBMIT_DIR/tessera-JOBID)")
      ->check(tessera::cli::text_at_most(4096));
  slurm_command
      ->add_option("--address-file", slurm.address_file,
                   "write the scheduler's address there (default JOB_DIR/scheduler.address)")
      ->check(tessera::cli::text_at_most(4096));
  slurm_command->add_option("--port", slurm.port, "the scheduler's port (default 0: any free one)")
      ->check(tessera::cli::unsigned_in(0, 65535));
  slurm_command
      ->add_option("--interface", slurm.network_interface,
                   "the network interface nodes listen on, e.g. ib0 (default: the route to the scheduler)")
      ->check(tessera::cli::text_at_most(64));
  slurm_command
      ->add_option("--startup-timeout", slurm.startup_timeout_seconds,
                   "seconds for the scheduler and every worker to come up (default 120)")
      ->check(tessera::cli::real_in(1, 86400));
  slurm_command
      ->add_option("--stop-timeout", slurm.stop_timeout_seconds,
                   "seconds each node has to stop after SIGTERM before SIGKILL (default 30)")
      ->check(tessera::cli::real_in(0.1, 3600));
  slurm_command->add_option("command", slurm.command,
                            "what to run once the cluster is up, after --; it finds the scheduler in "
                            "TESSERA_SCHEDULER and TESSERA_CLIENT_CONFIG");
  tessera::cli::SlurmStepOptions step;
  auto* step_command = app.add_subcommand(
      "slurm-step", "what tessera slurm runs with srun on each node: that node's config, then tessera-node");
  step_command->group("");  // internal: not listed in --help
  step_command->add_option("--role", step.role)->required()->check(CLI::IsMember({"scheduler", "worker"}));
  step_command->add_option("--config", step.config)->required();
  step_command->add_option("--job-dir", step.job_dir)->required();
  step_command->add_option("--interface", step.network_interface);
  step_command->add_option("--port", step.port)->check(tessera::cli::unsigned_in(0, 65535));
  step_command->add_option("--startup-timeout", step.startup_timeout_seconds)
      ->check(tessera::cli::real_in(1, 86400));

  // Each command's --help ends with an example of it (the scheduler from TESSERA_SCHEDULER or --scheduler).
  const std::vector<std::pair<CLI::App*, std::string>> examples{
      {keygen_command, "tessera keygen --out client    # client.key, client.pub"},
      {status_command, "tessera --scheduler tcp://127.0.0.1:7070 status --json"},
      {workers_command, "tessera --scheduler tcp://127.0.0.1:7070 workers"},
      {simulations_command, "tessera --scheduler tcp://127.0.0.1:7070 simulations"},
      {functions_command, "tessera --scheduler tcp://127.0.0.1:7070 functions --json"},
      {map_command,
       "tessera --scheduler tcp://127.0.0.1:7070 map square --input numbers.csv --output squares.csv"},
      {stream_command,
       "tessera --scheduler tcp://127.0.0.1:7070 stream push --simulation costly_simulation "
       "--input params.csv"},
      {push_command,
       "tessera --scheduler tcp://127.0.0.1:7070 stream push --simulation costly_simulation "
       "--input params.csv --output results.csv\n  tessera --scheduler tcp://127.0.0.1:7070 stream "
       "push --resume 3 --input params.csv    # the rows stream 3 had not accepted"},
      {run_command,
       "tessera --scheduler tcp://127.0.0.1:7070 stream run --generator aposmm --simulation "
       "six_hump_camel --budget 400 --config lower=-3,-2 --config upper=3,2"},
      {cancel_command,
       "tessera --scheduler tcp://127.0.0.1:7070 stream cancel --stream 3 --where 'id >= 1000'\n"
       "  tessera --scheduler tcp://127.0.0.1:7070 stream cancel --stream 3    # the whole stream"},
      {list_command, "tessera --scheduler tcp://127.0.0.1:7070 stream list --json"},
      {drop_command, "tessera --scheduler tcp://127.0.0.1:7070 stream drop 3"},
      {results_command,
       "tessera --scheduler tcp://127.0.0.1:7070 results --stream 3 --where 'result > 20' "
       "--format csv --output big.csv"},
      {checkpoints_command, "tessera --scheduler tcp://127.0.0.1:7070 checkpoints list --function square"},
      {list_checkpoints_command, "tessera --scheduler tcp://127.0.0.1:7070 checkpoints list --json"},
      {drop_checkpoints_command,
       "tessera --scheduler tcp://127.0.0.1:7070 checkpoints drop --function square"},
      {slurm_command, "tessera slurm --config node.toml -- python3 analysis.py    # inside sbatch"},
  };
  for (const auto& [command, example] : examples) command->footer("Example:\n  " + example);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // CLI11 says only "A subcommand is required" for these two: name what was wrong.
    if (dynamic_cast<const CLI::RequiredError*>(&e) && stream_command->parsed() && !push_command->parsed() &&
        !run_command->parsed() && !cancel_command->parsed() && !list_command->parsed() &&
        !drop_command->parsed()) {
      std::cerr
          << "tessera: stream needs a command: push, run, cancel, list or drop (see tessera stream --help)\n";
      return 2;
    }
    if (dynamic_cast<const CLI::RequiredError*>(&e) && checkpoints_command->parsed() &&
        !list_checkpoints_command->parsed() && !drop_checkpoints_command->parsed()) {
      std::cerr << "tessera: checkpoints needs a command: list or drop (see tessera checkpoints --help)\n";
      return 2;
    }
    if (dynamic_cast<const CLI::RequiredError*>(&e) && app.get_subcommands().empty() &&
        !app.remaining().empty()) {
      std::cerr << "tessera: unknown command '" << excerpt(app.remaining().front())
                << "' (keygen, status, workers, simulations, functions, map, stream push, stream run, stream "
                   "cancel, stream list, stream drop, results, "
                   "checkpoints, slurm; see "
                   "tessera --help)\n";
      return 2;
    }
    return tessera::cli::parse_failure(app, e);
  }

  try {
    if (keygen_command->parsed()) return keygen(prefix);
    if (slurm_command->parsed()) return tessera::cli::slurm_launch(slurm);
    if (step_command->parsed()) return tessera::cli::slurm_step(step);
    const std::string command = push_command->parsed()               ? "stream push"
                                : run_command->parsed()              ? "stream run"
                                : cancel_command->parsed()           ? "stream cancel"
                                : list_command->parsed()             ? "stream list"
                                : drop_command->parsed()             ? "stream drop"
                                : list_checkpoints_command->parsed() ? "checkpoints list"
                                : drop_checkpoints_command->parsed()
                                    ? "checkpoints drop"
                                    : app.get_subcommands().front()->get_name();
    if (scheduler.empty()) {
      try {
        scheduler = keys.scheduler_from_config();
      } catch (const std::invalid_argument& e) {
        std::cerr << "tessera: " << e.what() << "\n";
        return 2;
      }
    }
    if (scheduler.empty()) {
      std::cerr << "tessera: " << command
                << " needs --scheduler tcp://HOST:PORT (or TESSERA_SCHEDULER, or [client] scheduler in "
                   "--client-config)\n";
      return 2;
    }
    tessera::cli::Target target{scheduler, {}};
    try {
      target.connect = keys.connect_options("tessera-cli");
      target.connect.reconnect_timeout =
          std::chrono::milliseconds(static_cast<long long>(reconnect_timeout_seconds * 1000));
      check_key_pair(target.connect);
    } catch (const std::invalid_argument& e) {
      std::cerr << "tessera: " << e.what() << "\n";
      return 2;
    }
    try {
      // Questions to the node wait --timeout for its handshake and answer; the stream commands keep their
      // connection's defaults (a long push must not fail on one slow answer).
      if (status_command->parsed() || workers_command->parsed() || simulations_command->parsed() ||
          functions_command->parsed()) {
        const auto timeout = std::chrono::milliseconds(static_cast<long long>(timeout_seconds * 1000));
        target.connect.handshake_timeout = timeout;
        target.connect.request_timeout = timeout;
      }
      if (simulations_command->parsed()) return tessera::cli::list_simulations(target, json);
      if (functions_command->parsed()) return tessera::cli::list_functions(target, json);
      if (map_command->parsed()) {
        map.header = map_header == "yes"  ? tessera::cli::HeaderRule::yes
                     : map_header == "no" ? tessera::cli::HeaderRule::no
                                          : tessera::cli::HeaderRule::automatic;
        return tessera::cli::map_function(target, map);
      }
      if (status_command->parsed()) return status(target, json);
      if (workers_command->parsed()) return workers(target, json);
      if (push_command->parsed()) {
        if (!simulation_option->count() && !resume_option->count()) {
          std::cerr
              << "tessera: stream push needs --simulation NAME (or --resume STREAM, which has its own)\n";
          return 2;
        }
        push.header = header == "yes"  ? tessera::cli::HeaderRule::yes
                      : header == "no" ? tessera::cli::HeaderRule::no
                                       : tessera::cli::HeaderRule::automatic;
        if (pool_option->count()) push.pool_size = pool_size;
        if (isolation_option->count())
          push.isolation = isolation == "process" ? tessera::Isolation::process : tessera::Isolation::thread;
        return tessera::cli::stream_push(target, push);
      }
      if (run_command->parsed()) {
        if (run_pool_option->count()) run.pool_size = run_pool_size;
        if (run_isolation_option->count())
          run.isolation =
              run_isolation == "process" ? tessera::Isolation::process : tessera::Isolation::thread;
        return tessera::cli::stream_run(target, run);
      }
      if (cancel_command->parsed()) {
        cancel.whole = !ids_option->count() && !where_option->count();
        return tessera::cli::stream_cancel(target, cancel);
      }
      if (list_command->parsed()) return tessera::cli::list_streams(target, list_json);
      if (drop_command->parsed()) return tessera::cli::drop_stream(target, drop_id);
      if (list_checkpoints_command->parsed()) return tessera::cli::list_checkpoints(target, checkpoints);
      if (drop_checkpoints_command->parsed()) return tessera::cli::drop_checkpoints(target, checkpoints);
      return tessera::cli::results(target, results);
    } catch (const tessera::ConnectionError& e) {
      std::cerr << "tessera: " << tessera::cli::bounded_message(e.what()) << "\n";
      // Only where CURVE may be why: a node that took the connection and never answered.
      if (!keys.given() && std::string_view(e.what()).find("CURVE") != std::string_view::npos)
        std::cerr << "tessera: if the node has CURVE on, give --public-key, --secret-key and --scheduler-key "
                     "(or --client-config)\n";
      return 1;
    }
  } catch (const std::exception& e) {
    std::cerr << "tessera: " << tessera::cli::bounded_message(e.what()) << "\n";
    return 1;
  }
}

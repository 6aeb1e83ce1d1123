// The tessera CLI's stream commands: `stream push` (a CSV of parameter sets into a simulation) and
// `results` (queries over a stream's stored results). Both speak to the scheduler through the client
// library (tessera::Client, ResultQuery), so the CLI prints what the library answers.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <tessera/client.hpp>
#include <vector>

#include "csv_reader.hpp"

namespace tessera::cli {

// Where a command connects: the scheduler's address and the client's options (name, CURVE keys).
struct Target {
  std::string scheduler;
  ConnectOptions connect;
};

// The CLI's connection: a client of the scheduler like any other, named so in the scheduler's log.
tessera::Client connect(const Target& target);

struct PushOptions {
  std::string simulation, input, output;
  HeaderRule header = HeaderRule::automatic;
  std::optional<std::uint32_t> pool_size;  // unset: one simulation actor per compute thread
  std::size_t max_in_flight = 4096;
  bool quiet = false;
  double timeout_seconds = 0;                  // per set; 0: none
  std::uint32_t retries = 0;                   // attempts after a failure
  std::optional<Isolation> isolation;          // unset: the node's streams.isolation
  std::string priority_column;                 // a column of the header: each row's priority, not a parameter
  std::vector<std::string> simulation_config;  // KEY=VALUE each, given to the simulation
  std::uint64_t resume = 0;                    // an incomplete stream to push the rest of the same file into
  bool no_check = false;                       // push as the file is read, without reading it whole first
};

// `stream run`: an adaptive ensemble (Client::ensemble).
struct RunOptions {
  std::string generator, simulation, output;
  std::uint64_t budget = 0;
  std::vector<std::string> config, simulation_config;  // KEY=VALUE each
  std::optional<std::uint32_t> pool_size;
  double timeout_seconds = 0;
  std::uint32_t retries = 0;
  std::optional<Isolation> isolation;
  bool quiet = false;
};

struct CancelOptions {
  std::uint64_t stream = 0;
  std::string ids;     // "10-99", "3,5,7-9" (inclusive ranges)
  std::string where;   // a filter over id and parameters
  bool whole = false;  // neither flag given: the stream whole
};

struct ResultsOptions {
  std::uint64_t stream = 0;
  std::string where, format = "summary", field = "result", output;
  std::size_t bins = 10;
};

// Pushes every row of the CSV and waits for their results. The file is read whole first (unless
// --no-check), so a malformed one leaves no stream, and the stream knows its input: closed before it
// has every row (Ctrl-C, SIGTERM, a lost client) it is incomplete, and --resume pushes the rows it had
// not accepted. On Ctrl-C it stops pushing and prints how to resume or cancel. Exit codes: 0 when every
// set has a stored result; 2 for an input refused before (empty, header only, a directory, unreadable, a
// malformed row; with --no-check during the push, after the sets before it); 1 when fewer results were
// stored than sets pushed, the stream failed or was cancelled, a resume was refused, or --output could
// not be written; 128 + the signal when interrupted.
int stream_push(const Target& target, const PushOptions& options);
// Runs the ensemble until its generator is done or the budget is spent, and prints how many sets it
// proposed, how many failed and, for numeric results, the least and its parameter set. Exit codes: 0
// every proposed set answered; 2 a malformed --config or --simulation-config; 1 the node refused it (an
// unknown generator or simulation), the generator failed, or results are missing.
int stream_run(const Target& target, const RunOptions& options);
// KEY=VALUE entries as a Config: VALUE is an integer, a number, a comma-separated list of numbers, true or
// false, or else text. Throws std::invalid_argument naming `flag` and the entry (no '=', an empty key, a
// number that is not finite, a key given twice).
Config parse_config_entries(const std::vector<std::string>& entries, std::string_view flag);
// Prints (or writes to --output) the answer; an unknown stream is an error in every format (exit 1).
int results(const Target& target, const ResultsOptions& options);
// Cancels the stream's sets that --ids or --where select, or without them the stream whole (its pusher
// stops), and prints how many. Exit codes: 0 done (also
// when none was left to cancel); 2 malformed --ids or --where; 1 the node refused (no such stream
// running, a filter it cannot read).
int stream_cancel(const Target& target, const CancelOptions& options);
// "10-99,120,130-139" as id ranges [first, last). Throws std::invalid_argument naming --ids and the part.
std::vector<IdRange> parse_id_ranges(std::string_view text);

}  // namespace tessera::cli

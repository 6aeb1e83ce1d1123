// A simulation that is a program: what an operator declares (a node's [simulations.NAME] table, or
// tessera::register_program) so that every parameter set runs an executable, or an MPI job, in a working
// directory of its own, and its result is read from what the program printed or wrote.
//
// Plain data with its checks; what runs it is programs/. The spec travels to workers with a stream's
// setup, so a worker runs only what the scheduler's operator declared, never a command from a client.
//
// Placeholders, in `command`, `launcher` argv templates, `env` values and `files` templates:
//   {NAME}        a parameter (one of `parameters`), rendered shortest-round-trip ("0.1", "1e+300")
//   {id} {stream} the set's id and its stream's
//   {dir}         the set's working directory (absolute)
//   {ranks} {threads}
//   {config.KEY}  a value of the stream's config
//   {{ and }}     a literal brace
// Nothing goes through a shell: the rendered argv is executed as it is.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "graph/value.hpp"

namespace tessera {

class Config;

// Where a set's numbers come from.
enum class ProgramResultFormat : std::uint8_t {
  last_number,  // the last number in the text (stdout by default)
  regex,        // the first match of `regex`: its capture groups, in order
  json,         // a JSON file: a number, an array of numbers, or an object of numbers (in `outputs` order)
  numbers,      // whitespace-separated numbers
};
const char* program_result_format_name(ProgramResultFormat format);

struct ProgramResultSpec {
  ProgramResultFormat format = ProgramResultFormat::last_number;
  std::string file;                  // relative to the set's directory; empty: stdout
  std::string regex;                 // with format regex (ECMAScript syntax)
  std::vector<std::string> outputs;  // the result fields' names (columns of CSV, JSON, to_pandas)
  bool operator==(const ProgramResultSpec&) const = default;
};

// What happens to a set's working directory when the set ends.
enum class KeepDirectories : std::uint8_t { always, failed, never };
const char* keep_directories_name(KeepDirectories keep);

struct ProgramSpec {
  std::vector<std::string> command;     // argv template; command[0] is found on PATH when it has no '/'
  std::vector<std::string> parameters;  // names, and so the arity, of a parameter set
  // File name in the set's directory -> the template's text (read where it was declared).
  std::map<std::string, std::string> files;
  ProgramResultSpec result;
  std::uint32_t ranks = 1;    // MPI processes per set
  std::uint32_t threads = 1;  // per rank: OMP_NUM_THREADS; a set occupies ranks x threads cores
  std::uint32_t gpus = 0;     // devices per set: CUDA_VISIBLE_DEVICES lists the ordinals it owns
  // "mpirun", "srun" or "none" (or empty: "mpirun" when ranks > 1, else "none"); or an argv template
  // that the rendered command is appended to.
  std::string launcher;
  std::vector<std::string> launcher_argv;  // a custom launcher's template (launcher is then empty)
  std::map<std::string, std::string> env;  // added to the worker's environment
  KeepDirectories keep = KeepDirectories::failed;
  double timeout_seconds = 0;  // per set; 0: none (a stream's own timeout wins)
  double grace_seconds = 5;    // between SIGTERM and SIGKILL when a set is ended early
  std::string workdir_root;    // where sets' directories go; empty: the worker's data_dir/runs (or a
                               // temporary directory)

  static constexpr std::uint32_t kMaxRanks = 4096, kMaxThreads = 4096, kMaxGpus = 64;
  static constexpr std::size_t kMaxParameters = 1024;

  // The argv the launcher puts in front of the command (empty: none), as templates.
  std::vector<std::string> launcher_prefix() const;
  // Cores one set occupies.
  std::uint64_t cores() const { return std::uint64_t{ranks} * threads; }
  // Every "{config.KEY}" key used anywhere, so that a stream's config can be checked when it opens.
  std::vector<std::string> config_keys() const;
  bool operator==(const ProgramSpec&) const = default;
};

// Every problem of a declaration, as "KEY: what is wrong" (the caller adds where it was declared);
// empty when the spec can run. Checks placeholders against the parameters, ranges, names and the regex.
std::vector<std::string> check_program_spec(const ProgramSpec& spec);

// The first config key the spec uses that `config` lacks, as a message naming the simulation; empty when
// every one is there.
std::string check_program_config(std::string_view simulation, const ProgramSpec& spec, const Config& config);

// A digest of every field: two specs with the same digest run the same way.
std::string program_spec_digest(const ProgramSpec& spec);

// A number as the shortest text that reads back to the same double ("0.1", "3", "1e+300").
std::string render_number(double value);

// A parameter set as the numbers a program is given: a number, a vector of doubles, an Eigen vector or
// a list of numbers. Throws std::invalid_argument naming the kind otherwise.
std::vector<double> program_parameters(const Value& parameters);

// The values placeholders take for one set.
struct PlaceholderValues {
  const ProgramSpec* spec = nullptr;
  const std::vector<double>* parameters = nullptr;  // aligned with spec->parameters
  std::uint64_t id = 0, stream = 0;
  std::string dir;
  const Config* config = nullptr;
};

// Renders one template. Throws std::invalid_argument naming the placeholder for one that has no value
// (a config key missing, a parameter out of range).
std::string render_template(std::string_view text, const PlaceholderValues& values);

}  // namespace tessera

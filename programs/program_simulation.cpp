#include "programs/program_simulation.hpp"

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <system_error>

#include "graph/printable.hpp"
#include "programs/program_process.hpp"
#include "programs/program_result.hpp"

extern char** environ;

namespace tessera::programs {
namespace {

namespace fs = std::filesystem;

std::atomic<std::uint64_t> next_run{0};

class ProgramSimulation final : public Simulation {
 public:
  ProgramSimulation(std::string name, std::shared_ptr<const ProgramSpec> spec, const Config& config)
      : name_(std::move(name)), spec_(std::move(spec)), config_(config) {
    root_ = spec_->workdir_root;
    if (root_.empty()) root_ = config_.get<std::string>("tessera.runs_dir", default_runs_dir());
    for (char** e = environ; e && *e; ++e) {
      const std::string_view variable(*e);
      // Set per run below; an inherited one would be ambiguous.
      if (variable.starts_with("OMP_NUM_THREADS=") || variable.starts_with("TESSERA_RUN=")) continue;
      if (spec_->gpus > 0 && variable.starts_with("CUDA_VISIBLE_DEVICES=")) continue;
      base_environment_.emplace_back(variable);
    }
    base_environment_.push_back("OMP_NUM_THREADS=" + std::to_string(spec_->threads));
    if (spec_->gpus > 0) {
      std::string devices;
      if (config_.has("tessera.devices"))
        for (double d : config_.get<std::vector<double>>("tessera.devices", {})) {
          // Appended, not "," + ...: GCC 12 warns falsely (-Wrestrict) on operator+(const char*, string&&).
          if (!devices.empty()) devices += ',';
          devices += std::to_string(static_cast<long long>(d));
        }
      base_environment_.push_back("CUDA_VISIBLE_DEVICES=" + devices);
    }
  }

  Value run(const Value& parameters) override { return run_set(parameters, SetContext{}); }

  Value run_set(const Value& parameters, const SetContext& context) override {
    interrupter_.reset();
    const std::vector<double> numbers = program_parameters(parameters);
    if (numbers.size() != spec_->parameters.size())
      throw std::invalid_argument("simulation '" + name_ + "' takes " +
                                  std::to_string(spec_->parameters.size()) + " parameters, got " +
                                  std::to_string(numbers.size()));
    for (std::size_t i = 0; i < numbers.size(); ++i)
      if (!std::isfinite(numbers[i]))
        throw std::invalid_argument("simulation '" + name_ + "': parameter '" + spec_->parameters[i] +
                                    "' is " + render_number(numbers[i]) + "; a program takes finite numbers");
    const fs::path dir = fs::path(root_) / std::to_string(context.stream) / std::to_string(context.id);
    make_fresh(dir);
    PlaceholderValues values{spec_.get(), &numbers, context.id, context.stream, dir.string(), &config_};
    LaunchRequest request;
    request.directory = dir.string();
    request.stderr_capacity = ProgramOutcome::kTailBytes;
    request.grace_seconds = spec_->grace_seconds;
    try {
      for (const auto& [file, text] : spec_->files) write_file(dir / file, render_template(text, values));
      for (const auto& part : spec_->launcher_prefix()) request.argv.push_back(render_template(part, values));
      for (const auto& part : spec_->command) request.argv.push_back(render_template(part, values));
      request.environment = base_environment_;
      // The declaration's value replaces the worker's (a second entry would be ignored: getenv takes
      // the first).
      for (const auto& [key, value] : spec_->env) {
        const std::string prefix = key + "=";
        std::erase_if(request.environment, [&](const std::string& v) { return v.starts_with(prefix); });
        request.environment.push_back(prefix + render_template(value, values));
      }
    } catch (const std::invalid_argument& e) {
      fail(dir, std::string("simulation '") + name_ + "': " + e.what());
    }
    // The run's token is ours alone: the sweep that ends its daemons looks for it.
    std::erase_if(request.environment, [](const std::string& v) { return v.starts_with("TESSERA_RUN="); });
    request.environment.push_back("TESSERA_RUN=" + std::to_string(::getpid()) + "-" +
                                  std::to_string(next_run++));
    Exit exit;
    try {
      exit = run_program(request, interrupter_);
    } catch (const StartError& e) {
      const std::string why = "cannot start '" + printable(request.argv.front(), 200) + "' (" +
                              (spec_->launcher_prefix().empty() ? "command[0]" : "the launcher") +
                              "): " + e.what();
      // An executable that is missing or not executable here fails every set alike: the worker's, not the
      // set's.
      if (not_here(e.error())) {
        finish(dir, false);
        throw SimulationUnavailable(why);
      }
      fail(dir, why);
    }
    if (context.outcome) {
      auto outcome = std::make_shared<ProgramOutcome>();
      outcome->exit_status = exit.signaled ? 0 : exit.code;
      outcome->signal = exit.signaled ? exit.code : 0;
      outcome->stdout_tail = exit.out.last(ProgramOutcome::kTailBytes);
      outcome->stderr_tail = exit.err.last(ProgramOutcome::kTailBytes);
      *context.outcome = std::move(outcome);
    }
    if (exit.interrupted) {
      finish(dir, false);
      throw std::runtime_error("interrupted: the program's process group was ended");
    }
    if (exit.signaled) {
      const std::string why = "killed by " + signal_name(exit.code) + tail_of(exit.err);
      finish(dir, false);
      throw SimulationCrashed(why + kept(dir));
    }
    if (exit.code != 0)
      fail(dir, "exit " + std::to_string(exit.code) + tail_of(exit.err) + last_line_of(exit.out));
    Value result;
    try {
      result = read_program_result(spec_->result, exit.out.text(), dir.string(), exit.out.total());
    } catch (const ResultError& e) {
      fail(dir, e.what());
    }
    finish(dir, true);
    return result;
  }

  bool interrupt() override {
    interrupter_.interrupt();
    return true;
  }

 private:
  static bool not_here(int error) {
    return error == ENOENT || error == EACCES || error == ENOEXEC || error == ENOTDIR || error == ELOOP ||
           error == ENAMETOOLONG || error == EPERM;
  }

  // "; stdout ends: '...'" with the last line the program printed, for programs (and MPI ranks) that say
  // what went wrong on stdout; empty when it printed nothing.
  static std::string last_line_of(const OutputTail& out) {
    std::string text = out.last(1024);
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
    if (text.empty()) return {};
    const auto newline = text.find_last_of('\n');
    if (newline != std::string::npos) text.erase(0, newline + 1);
    return "; stdout ends: '" + printable(text, 200) + "'";
  }

  static std::string tail_of(const OutputTail& err) {
    std::string text = err.last(1024);
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
    return text.empty() ? std::string() : ": " + printable(text, 1024);
  }

  std::string kept(const fs::path& dir) const {
    return spec_->keep == KeepDirectories::never ? std::string() : " (directory kept: " + dir.string() + ")";
  }

  [[noreturn]] void fail(const fs::path& dir, const std::string& why) {
    finish(dir, false);
    throw std::runtime_error(why + kept(dir));
  }

  void finish(const fs::path& dir, bool succeeded) {
    const bool keep =
        spec_->keep == KeepDirectories::always || (spec_->keep == KeepDirectories::failed && !succeeded);
    if (keep) return;
    std::error_code error;
    fs::remove_all(dir, error);
  }

  void make_fresh(const fs::path& dir) {
    std::error_code error;
    fs::remove_all(dir, error);
    error.clear();
    fs::create_directories(dir, error);
    if (error)  // the runs directory is not writable here: no set can run on this worker
      throw SimulationUnavailable("cannot make the working directory " + dir.string() + ": " +
                                  error.message() + " (errno " + std::to_string(error.value()) + ")");
  }

  static void write_file(const fs::path& path, const std::string& text) {
    std::ofstream out(path, std::ios::binary);
    if (!(out << text) || !out.flush())
      throw std::invalid_argument("cannot write the template " + path.filename().string() + " to " +
                                  path.string());
  }

  std::string name_;
  std::shared_ptr<const ProgramSpec> spec_;
  Config config_;
  std::string root_;
  std::vector<std::string> base_environment_;
  Interrupter interrupter_;
};

}  // namespace

std::string missing_executable(const ProgramSpec& spec) {
  const auto prefix = spec.launcher_prefix();
  const std::string program = prefix.empty() ? spec.command.front() : prefix.front();
  const std::string what = prefix.empty() ? "command[0]" : "the launcher";
  if (program.find('{') != std::string::npos) return {};
  if (program.find('/') != std::string::npos)
    return ::access(program.c_str(), X_OK) == 0 ? std::string()
                                                : what + " '" + program + "' is not an executable file";
  const char* path = std::getenv("PATH");
  std::string_view dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
  while (!dirs.empty()) {
    const auto colon = dirs.find(':');
    const std::string dir(dirs.substr(0, colon));
    if (!dir.empty() && ::access((fs::path(dir) / program).c_str(), X_OK) == 0) return {};
    if (colon == std::string_view::npos) break;
    dirs.remove_prefix(colon + 1);
  }
  return what + " '" + program + "' is not found on PATH";
}

std::string default_runs_dir() {
  // Made once per process by mkdtemp (a fresh name, mode 0700): a predictable path in the shared temporary
  // directory could be made first by another user, as a link to where sets would then write and delete.
  static const std::string made = [] {
    std::string pattern = (fs::temp_directory_path() / "tessera-runs-XXXXXX").string();
    if (!::mkdtemp(pattern.data()))
      throw std::runtime_error("cannot make a directory for program sets from " + pattern + ": " +
                               std::strerror(errno));
    return pattern;
  }();
  return made;
}

SimulationType program_simulation_type(std::string name, std::shared_ptr<const ProgramSpec> spec) {
  SimulationType type;
  type.name = std::move(name);
  type.parameter_type = Codec<std::vector<double>>::type_name();
  const bool one_number =
      spec->result.format == ProgramResultFormat::last_number || spec->result.outputs.size() == 1;
  type.result_type = one_number ? Codec<double>::type_name() : Codec<std::vector<double>>::type_name();
  type.arity = spec->parameters.size();
  type.threads =
      static_cast<std::uint32_t>(std::min<std::uint64_t>(spec->cores(), SimulationType::kMaxThreads));
  type.gpus = spec->gpus;
  type.program = spec;
  type.make = [name = type.name, spec](const Config& config) -> std::unique_ptr<Simulation> {
    return std::make_unique<ProgramSimulation>(name, spec, config);
  };
  return type;
}

}  // namespace tessera::programs

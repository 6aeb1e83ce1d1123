#include "actors/embedded_cluster.hpp"

#include <unistd.h>
#include <iostream>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <stdexcept>
#include <thread>

#include "actors/actor_threads.hpp"
#include "actors/allocator_policy.hpp"
#include "actors/protocols/stream.hpp"
#include "actors/python_modules.hpp"
#include "actors/worker_actor.hpp"
#include "generators/builtin.hpp"
#include "graph/generator.hpp"
#include "graph/printable.hpp"

namespace tessera {

namespace {
std::uint32_t cores() {
  return std::max(1u, std::thread::hardware_concurrency());
}

void check_fraction(double value, const char* name) {
  if (!(value > 0 && value <= 1))
    throw std::invalid_argument(std::string("ClusterOptions::") + name + " must be in (0, 1], got " +
                                std::to_string(value));
}
}  // namespace

void check_memory_options(const ClusterOptions& options) {
  check_fraction(options.memory_target_fraction, "memory_target_fraction");
  check_fraction(options.memory_pause_fraction, "memory_pause_fraction");
  if (options.memory_limit > (1ull << 50))
    throw std::invalid_argument("ClusterOptions::memory_limit must be at most 1 PiB, got " +
                                std::to_string(options.memory_limit));
  if (options.keep_freed_memory > kMaxKeptFreedMemory)
    throw std::invalid_argument("ClusterOptions::keep_freed_memory must be at most 1 GiB, got " +
                                std::to_string(options.keep_freed_memory));
}

EmbeddedCluster::EmbeddedCluster(ClusterOptions options) : options_(options) {
  check_memory_options(options_);
  register_builtin_generators();
  if (!options_.python_modules.empty() || python_supported()) {
    auto environment = python_environment(options_.python_modules);
    if (!options_.python_executable.empty()) environment.executable = options_.python_executable;
    try {
      register_python_modules(std::make_shared<const PythonEnvironment>(std::move(environment)),
                              std::chrono::seconds(120), options_.client_code);
    } catch (const PythonModuleError& e) {
      throw std::invalid_argument(std::string("ClusterOptions::python_modules: ") + e.what());
    }
  }
  for (std::size_t i = 0; i < options_.gpus.size(); ++i) {
    const int device = options_.gpus[i];
    if (device < 0 || device > ClusterOptions::kMaxGpuOrdinal)
      throw std::invalid_argument("ClusterOptions::gpus[" + std::to_string(i) + "]: device " +
                                  std::to_string(device) + " is not a CUDA ordinal in [0, " +
                                  std::to_string(ClusterOptions::kMaxGpuOrdinal) + "]");
    if (std::find(options_.gpus.begin(), options_.gpus.begin() + static_cast<std::ptrdiff_t>(i), device) !=
        options_.gpus.begin() + static_cast<std::ptrdiff_t>(i))
      throw std::invalid_argument("ClusterOptions::gpus[" + std::to_string(i) + "]: device " +
                                  std::to_string(device) + " is listed twice");
  }
  if (options_.gpus.empty()) options_.gpus = devices_found();
  if (options_.threads_per_worker == 0) options_.threads_per_worker = cores();
  if (options_.actor_threads == 0) options_.actor_threads = std::max(2u, cores());
  config_ = std::make_unique<caf::actor_system_config>();
  configure_actor_threads(*config_, options_.actor_threads, options_.scheduler.idle_threads);
  if (options_.memory_limit == 0) keep_freed_memory(options_.keep_freed_memory);
  system_ = std::make_unique<caf::actor_system>(*config_);
  CheckpointAccess checkpoint_access{nullptr, [this] { return checkpoints(); }};
  // A data_dir may hold checkpoints of an earlier run. One that cannot be opened is not fatal here: the
  // spills that need it report why, and the first checkpoint written tries again and says so in status.
  if (!options_.data_dir.empty()) {
    try {
      checkpoint_access.store = checkpoints();
    } catch (const StoreError&) {
    }
  }
  scheduler_ =
      spawn_scheduler(*system_, options_.scheduler, directory_, std::move(checkpoint_access), monitor_);
  link_ = std::make_shared<SchedulerLink>(SchedulerLink{scheduler_});
  if (options_.workers > 0) scale(options_.workers);  // none: a scheduler for worker processes
}

EmbeddedCluster::~EmbeddedCluster() {
  link_.reset();  // futures that outlive the cluster stop reporting releases
  caf::anon_send(scheduler_, shutdown_atom::value);
  scheduler_ = nullptr;
  {
    // Handles go before the actor system does.
    std::lock_guard lock(streams_mutex_);
    streams_.clear();
  }
  system_->await_all_actors_done();
  system_.reset();
  store_.reset();
  checkpoints_.reset();
  database_.reset();
  if (!temporary_store_.empty()) {
    std::error_code ignored;
    std::filesystem::remove_all(temporary_store_, ignored);
  }
}

std::shared_ptr<NodeDatabase> EmbeddedCluster::database() {
  std::lock_guard lock(store_mutex_);
  if (!database_) {
    std::filesystem::path dir = options_.data_dir;
    if (dir.empty()) {
      static std::atomic<int> instances{0};
      dir = std::filesystem::temp_directory_path() /
            ("tessera-store-" + std::to_string(::getpid()) + "-" + std::to_string(++instances));
      temporary_store_ = dir;
    }
    database_ = std::make_shared<NodeDatabase>(dir);
  }
  return database_;
}

std::shared_ptr<ResultStore> EmbeddedCluster::store() {
  auto opened = database();
  std::lock_guard lock(store_mutex_);
  if (!store_) store_ = std::make_shared<ResultStore>(std::move(opened));
  return store_;
}

std::shared_ptr<CheckpointStore> EmbeddedCluster::checkpoints() {
  auto opened = database();
  std::lock_guard lock(store_mutex_);
  if (!checkpoints_) checkpoints_ = std::make_shared<CheckpointStore>(std::move(opened));
  return checkpoints_;
}

bool EmbeddedCluster::may_hold_checkpoints() {
  std::lock_guard lock(store_mutex_);
  return checkpoints_ && checkpoints_->may_hold_any();
}

caf::actor EmbeddedCluster::spawn_stream(std::uint64_t id, StreamSettings settings,
                                         std::shared_ptr<StreamSink> sink, bool resumed) {
  std::lock_guard lock(streams_mutex_);
  auto gauge = monitor_->streams.open(id, settings.simulation, settings.generator);
  gauge->expects(settings.input.sets);
  auto actor = spawn_stream_actor(
      *system_,
      StreamActorArgs{id, std::move(settings), store(), std::move(sink), scheduler_, resumed,
                      [this, id] {
                        monitor_->streams.finish(id);
                        std::lock_guard lock(streams_mutex_);
                        streams_.erase(id);
                      },
                      std::move(gauge), std::shared_ptr<monitor::TaskStreamLog>(monitor_, &monitor_->tasks)});
  streams_[id] = actor;
  return actor;
}

std::pair<std::uint64_t, caf::actor> EmbeddedCluster::open_stream(const StreamSettings& settings,
                                                                  std::shared_ptr<StreamSink> sink) {
  if (auto wrong = settings.check(); !wrong.empty()) throw SubmissionError(wrong);
  const auto* type = SimulationRegistry::global().find(settings.simulation);
  const ProgramSpec* program = type ? type->program.get() : nullptr;
  // A program's {config.KEY} placeholders need the stream's config to hold those keys.
  if (program)
    if (auto missing =
            check_program_config(type->name, *program, settings.config ? *settings.config : Config{});
        !missing.empty())
      throw SubmissionError(missing);
  if (!settings.generator.empty()) {
    const auto& generator = GeneratorRegistry::global().get(settings.generator);
    const auto& simulation = SimulationRegistry::global().get(settings.simulation);
    // Python's take any value ("any"): what they are given is checked where they run.
    if (generator.result_type != simulation.result_type && generator.result_type != "any" &&
        simulation.result_type != "any")
      throw SubmissionError("generator '" + generator.name + "' reads results of type " +
                            generator.result_type + ", but simulation '" + simulation.name + "' gives " +
                            simulation.result_type);
  }
  StreamSettings resolved = settings;
  if (!resolved.isolation) resolved.isolation = options_.stream_isolation;
  // A program's declaration names its parameters when the client did not (a CSV without a header).
  if (program && resolved.parameter_names.empty()) resolved.parameter_names = program->parameters;
  const PythonDefinition* python = type ? type->python.get() : nullptr;
  if (python && resolved.parameter_names.empty())
    resolved.parameter_names = python_parameters(*type, resolved.config.get());
  StreamInfo info;
  info.settings = resolved;
  if (program) {
    info.program = true;
    info.result_names = program->result.outputs;
  }
  if (python) info.result_names = python_outputs(*type, resolved.config.get());
  const std::uint64_t id = store()->create_stream(std::move(info));
  return {id, spawn_stream(id, std::move(resolved), std::move(sink), false)};
}

std::vector<std::pair<std::uint64_t, caf::actor>> EmbeddedCluster::resume_streams(
    const std::function<std::shared_ptr<StreamSink>(std::uint64_t)>& sink_for,
    const std::function<std::optional<std::string>(const StreamSettings&)>& refuse) {
  std::vector<std::pair<std::uint64_t, caf::actor>> resumed;
  for (const auto& info : store()->streams()) {
    if (info.closed) continue;
    if (auto reason = refuse ? refuse(info.settings) : std::nullopt) {
      std::cerr << "[tessera] stream " << info.id << " is not resumed: " << *reason << std::endl;
      continue;
    }
    resumed.emplace_back(info.id, spawn_stream(info.id, info.settings, sink_for(info.id), true));
  }
  return resumed;
}

ReopenedStream EmbeddedCluster::reopen_stream(std::uint64_t id, const StreamInput& input,
                                              std::shared_ptr<StreamSink> sink) {
  // One at a time: two resumes of one stream must not both find it stopped and both start it.
  static std::mutex reopening;
  std::lock_guard one_at_a_time(reopening);
  const std::string which = "stream " + std::to_string(id);
  auto info = store()->stream(id);
  if (!info) throw SubmissionError("no " + which + " on this node to resume");
  const StreamInput& own = info->settings.input;
  if (!info->settings.generator.empty())
    throw SubmissionError(which + " is an ensemble: generator '" + info->settings.generator +
                          "' proposes its sets, so no input of a client is left to push");
  if (own.digest.empty())
    throw SubmissionError(which +
                          " was opened without saying what its input was (a checked CSV does), so "
                          "which of its rows are left is unknown; push the rest to a new stream");
  if (own.digest != input.digest || own.sets != input.sets)
    throw SubmissionError(printable(input.name, 300) + " (" + std::to_string(input.sets) +
                          " parameter sets) is not the input " + which + " was pushed from (" +
                          printable(own.name, 300) + ", " + std::to_string(own.sets) +
                          " parameter sets): resume it with that file, unchanged");
  if (info->pushed >= own.sets)
    throw SubmissionError(which + " has accepted all " + std::to_string(own.sets) +
                          " parameter sets of its input: nothing is left to push");
  if (caf::actor actor = stream_actor(id)) {
    // Still running (closed early, or pushed by a client the node has not yet found gone): it takes the
    // new sink. One that finished meanwhile answers kNotReopened, having left streams_ already.
    caf::scoped_actor self{*system_};
    std::optional<StreamReopened> reopened;
    bool answered = false;
    StreamReopen request{sink};
    const auto given_up = request.given_up;
    self->request(actor, std::chrono::seconds(5), stream_reopen_atom::value, std::move(request))
        .receive(
            [&](StreamReopened& answer) {
              answered = true;
              if (answer.accepted != protocols::kNotReopened) reopened = std::move(answer);
            },
            [&](const caf::error&) {});
    if (reopened)
      return ReopenedStream{actor, reopened->accepted, info->settings.simulation,
                            std::move(reopened->unanswered), reopened->max_in_flight};
    if (!answered && stream_actor(id) == actor) {
      given_up->store(true);
      throw SubmissionError(which + " did not answer within 5 s; try the resume again");
    }
    info = store()->stream(id);  // finished meanwhile: its record says where it ended
    if (!info) throw SubmissionError("no " + which + " on this node to resume");
    if (info->pushed >= own.sets)
      throw SubmissionError(which + " has accepted all " + std::to_string(own.sets) +
                            " parameter sets of its input: nothing is left to push");
  }
  info->closed = false;
  info->close_requested = false;
  info->ended_early.clear();
  store()->update_stream(*info);
  std::cerr << "[tessera] " << which << " resumed by a client from id " << info->pushed << std::endl;
  // Sets written ahead and not answered (none once it finished): the new client's sink answers for them.
  std::vector<std::uint64_t> unanswered;
  for (const auto& push : store()->pending(id))
    for (const auto& [set, parameters] : push.unanswered) unanswered.push_back(set);
  const std::uint64_t max_in_flight =
      info->settings.max_in_flight ? info->settings.max_in_flight : StreamSettings::kDefaultMaxInFlight;
  sink->take_over(unanswered, max_in_flight);
  auto actor = spawn_stream(id, info->settings, std::move(sink), true);
  return ReopenedStream{actor, info->pushed, info->settings.simulation, std::move(unanswered), max_in_flight};
}

caf::actor EmbeddedCluster::stream_actor(std::uint64_t id) const {
  std::lock_guard lock(streams_mutex_);
  auto it = streams_.find(id);
  return it == streams_.end() ? caf::actor() : it->second;
}

void EmbeddedCluster::scale(std::uint32_t workers) {
  if (workers == 0) throw std::invalid_argument("scale: a cluster needs at least one worker");
  std::lock_guard lock(mutex_);
  caf::scoped_actor self{*system_};
  while (active_.size() < workers) {
    WorkerOptions worker_options{options_.threads_per_worker, directory_};
    worker_options.gpu_index = static_cast<std::uint32_t>(active_.size());
    if (!options_.data_dir.empty())
      worker_options.runs_dir = (std::filesystem::path(options_.data_dir) / "runs").string();
    worker_options.simulation_gpus = share_of_gpus(options_.gpus, static_cast<std::uint32_t>(active_.size()),
                                                   std::max(options_.workers, workers));
    worker_options.memory = MemoryOptions{options_.memory_limit, options_.memory_target_fraction,
                                          options_.memory_pause_fraction, [this] { return database(); }};
    auto worker = spawn_worker(*system_, scheduler_, std::move(worker_options));
    std::uint32_t id = 0;
    self->request(scheduler_, caf::infinite, register_atom::value,
                  WorkerRegistration{.actor = worker,
                                     .threads = options_.threads_per_worker,
                                     .memory_limit = options_.memory_limit})
        .receive(
            [&](std::uint32_t assigned) { id = assigned; },
            [&](const caf::error& e) {
              throw std::runtime_error("EmbeddedCluster: worker registration failed: " + system_->render(e));
            });
    active_.push_back(id);
  }
  while (active_.size() > workers) {
    self->send(scheduler_, retire_atom::value, active_.back());
    active_.pop_back();
  }
}

std::uint32_t EmbeddedCluster::workers() const {
  std::lock_guard lock(mutex_);
  return static_cast<std::uint32_t>(active_.size());
}

namespace {
// Asks the scheduler and waits for the answer, at most `timeout`.
template <class Answer, class Atom>
Answer ask_scheduler(caf::actor_system& system, const caf::actor& scheduler, Atom atom,
                     std::chrono::milliseconds timeout, const char* what) {
  caf::scoped_actor self{system};
  Answer out{};
  self->request(scheduler, timeout, atom)
      .receive([&](const Answer& answer) { out = answer; },
               [&](const caf::error& e) {
                 throw std::runtime_error(std::string("EmbeddedCluster: the scheduler did not answer a ") +
                                          what + " request within " + std::to_string(timeout.count()) +
                                          " ms: " + system.render(e));
               });
  return out;
}
}  // namespace

SchedulerStatus EmbeddedCluster::status(std::chrono::milliseconds timeout) const {
  return ask_scheduler<SchedulerStatus>(*system_, scheduler_, status_atom::value, timeout, "status");
}

std::vector<WorkerInfo> EmbeddedCluster::worker_list(std::chrono::milliseconds timeout) const {
  return ask_scheduler<std::vector<WorkerInfo>>(*system_, scheduler_, workers_atom::value, timeout,
                                                "workers");
}

std::vector<FunctionProgress> EmbeddedCluster::progress(std::chrono::milliseconds timeout) const {
  return ask_scheduler<std::vector<FunctionProgress>>(*system_, scheduler_, progress_atom::value, timeout,
                                                      "progress");
}

bool EmbeddedCluster::wait_for_workers(std::uint32_t workers, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    const auto s = status();
    if (s.workers == workers && s.retiring_workers == 0) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));  // polling a condition with a deadline
  }
}

}  // namespace tessera

namespace tessera {

std::shared_ptr<ClusterBackend> EmbeddedCluster::backend() const {
  auto* self = const_cast<EmbeddedCluster*>(this);  // the backend lives no longer than the cluster's clients
  return std::make_shared<LocalBackend>(
      scheduler_, link_,
      [self](const StreamSettings& settings, std::shared_ptr<StreamSink> sink) {
        return self->open_stream(settings, std::move(sink));
      },
      [self] { return self->store(); }, [self] { return self->checkpoints(); },
      [self](std::uint64_t stream) { return self->stream_actor(stream); },
      [self] { return self->may_hold_checkpoints(); },
      [self](std::uint64_t stream, const StreamInput& input, std::shared_ptr<StreamSink> sink) {
        return self->reopen_stream(stream, input, std::move(sink));
      });
}

}  // namespace tessera

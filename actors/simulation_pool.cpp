#include "actors/simulation_pool.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <deque>
#include <mutex>

#include "actors/messages.hpp"
#include "actors/protocols/simulation_pool.hpp"
#include "actors/simulation_process.hpp"
#include "actors/stray_errors.hpp"

namespace tessera {
namespace {

using Clock = std::chrono::steady_clock;

// An instance under thread isolation, used by one compute thread at a time.
struct Instance {
  std::unique_ptr<Simulation> simulation;  // built on the first job, on a compute thread
  std::string construction_error;
  bool built = false;
  // The built simulation, for the actor's thread: it interrupts the run in progress (a program's).
  std::atomic<Simulation*> live{nullptr};
  // Ends the run in progress, when the simulation can be interrupted; false otherwise.
  bool interrupt() {
    Simulation* simulation = live.load(std::memory_order_acquire);
    return simulation && simulation->interrupt();
  }
};

// What a job shares with the compute thread that runs it.
struct JobContext {
  const SimulationType* type;
  std::shared_ptr<const Config> config;
  std::string node;
  std::uint64_t stream_id = 0;
};

// One set on this thread's instance (built first if it is not yet).
// A run that finds this worker cannot run the simulation at all sets `unavailable` (naming the worker).
StreamRecord run_one(Instance& instance, const JobContext& context, std::uint64_t id, const Value& parameters,
                     std::string& unavailable) {
  if (!instance.built) {
    instance.built = true;
    try {
      instance.simulation = context.type->make(*context.config);
      instance.live.store(instance.simulation.get(), std::memory_order_release);
    } catch (const std::exception& e) {
      instance.construction_error = e.what();
    } catch (...) {
      instance.construction_error = "unknown exception";
    }
  }
  StreamRecord record;
  record.id = id;
  record.timeline.started = timeline_now();
  if (!instance.simulation) {
    record.failed = true;
    record.failure = Failure::error;
    record.error =
        "simulation '" + context.type->name + "' could not be built: " + instance.construction_error;
  } else {
    try {
      record.value =
          instance.simulation->run_set(parameters, SetContext{context.stream_id, id, &record.program});
    } catch (const SimulationUnavailable& e) {
      record.failed = true;
      record.failure = Failure::error;
      record.error = e.what();
      unavailable = context.node + ": " + e.what();
    } catch (const SimulationCrashed& e) {
      record.failed = true;
      record.failure = Failure::crash;
      record.error = e.what();
    } catch (const std::exception& e) {
      record.failed = true;
      record.failure = Failure::error;
      record.error = e.what();
    } catch (...) {
      record.failed = true;
      record.failure = Failure::error;
      record.error = "unknown exception";
    }
  }
  record.timeline.finished = timeline_now();
  if (record.failed) record.node = context.node;
  return record;
}

// The job a simulation actor runs, shared with the compute thread that runs it, so that a cancellation
// can stop it: under thread isolation the thread runs no more of its sets once `stop` is set (the one it
// is on cannot be interrupted: its result is discarded), and gives the rest back unrun.
struct RunningJob {
  SimulationJob job;
  std::atomic<bool> stop{false};
  std::atomic<bool> done{false};
  std::atomic<std::size_t> current{0};  // the index of the set the thread is on
};

// A job under thread isolation with a timeout. The compute thread runs it; the simulation actor checks
// the clock. Whichever finishes it first, under the mutex, answers the stream: the thread with every
// record, or the actor with the records so far, a timeout for the set that hangs and the rest unrun.
struct WatchedJob {
  std::mutex mutex;
  caf::actor stream;
  std::uint64_t stream_id = 0;
  std::vector<std::uint64_t> ids;
  std::vector<double> timeouts;  // aligned with ids, seconds; 0: none
  std::size_t current = 0;
  bool running_set = false;
  Clock::time_point started{};
  Clock::time_point job_started{};
  std::vector<StreamRecord> records;
  bool answered = false;
};

// A simulation actor whose instance lives in a process of its own holds a second job behind the one its
// process runs: the compute thread that ends a job starts the next at once, instead of a round trip
// through the pool, the actor and the compute queue (about 0.1 ms a job on a busy worker, 0.5% of a
// 20 ms set). The pool takes a waiting job back for an actor with nothing to do, so that the end of a
// stream stays balanced.
struct Handoff {
  static constexpr std::uint8_t kDepth = 2;  // jobs an actor holds: the one running and one waiting
  std::mutex mutex;
  std::deque<std::shared_ptr<RunningJob>> waiting;
  std::shared_ptr<RunningJob> current;  // the job its process runs
  bool feeding = false;                 // a compute thread runs this actor's jobs
  bool stopped = false;                 // shut down: nothing more runs
};

// Whether the simulation's instances live in processes of their own (fed by Handoff).
bool in_own_process(const SimulationPoolArgs& args) {
  // A program is a process of its own already: it runs from the compute thread, whatever the isolation.
  // Python runs only in interpreter processes, whatever the isolation.
  return (args.isolation == Isolation::process && !args.type->program) || args.type->python;
}

struct SimulationState {
  std::shared_ptr<Instance> instance = std::make_shared<Instance>();
  std::shared_ptr<RunningJob> running;         // the job it was given last (not in a process of its own)
  std::shared_ptr<SimulationProcess> process;  // in a process of its own
  std::shared_ptr<Handoff> handoff;            // the jobs of that process
  std::shared_ptr<WatchedJob> watched;         // the job running, under thread isolation with a timeout
  std::uint64_t watch = 0;                     // its number: a check meant for an earlier job is dropped
};

using SimulationActor = protocols::simulation_actor_type::stateful_pointer<SimulationState>;

void run_watched(std::shared_ptr<WatchedJob> watched, std::shared_ptr<Instance> instance, JobContext context,
                 std::shared_ptr<RunningJob> running, std::uint32_t worker_id, caf::actor pool,
                 std::uint32_t index) {
  const auto& parameters = running->job.parameters;
  {
    std::lock_guard lock(watched->mutex);
    watched->job_started = Clock::now();
  }
  std::vector<std::uint64_t> unrun;
  std::string unavailable;
  for (std::size_t i = 0; i < watched->ids.size(); ++i) {
    if (running->stop.load(std::memory_order_relaxed)) {
      unrun.assign(watched->ids.begin() + static_cast<std::ptrdiff_t>(i), watched->ids.end());
      break;
    }
    {
      std::lock_guard lock(watched->mutex);
      if (watched->answered) break;
      watched->current = i;
      watched->running_set = true;
      watched->started = Clock::now();
    }
    running->current.store(i, std::memory_order_relaxed);
    StreamRecord record = run_one(*instance, context, watched->ids[i], parameters[i], unavailable);
    std::lock_guard lock(watched->mutex);
    watched->running_set = false;
    if (watched->answered) break;  // it timed out meanwhile: the stream has its answer, this is dropped
    if ((record.failed && running->stop.load()) || !unavailable.empty()) {
      // Interrupted by a cancellation (the stream answered the cancelled sets), or this worker cannot run
      // the simulation: the rest go back.
      unrun.assign(watched->ids.begin() + static_cast<std::ptrdiff_t>(i), watched->ids.end());
      break;
    }
    watched->records.push_back(std::move(record));
  }
  std::unique_lock lock(watched->mutex);
  if (!watched->answered) {
    watched->answered = true;
    SimulationOutcome outcome{worker_id,
                              watched->stream_id,
                              std::move(watched->records),
                              std::chrono::duration<double>(Clock::now() - watched->job_started).count(),
                              std::move(unrun),
                              std::move(unavailable)};
    lock.unlock();
    caf::anon_send(watched->stream, simulated_atom::value, std::move(outcome));
  } else {
    lock.unlock();
  }
  running->done.store(true);
  caf::anon_send(pool, idle_atom::value, index);
}

// Each set's timeout in seconds (0: none), aligned with the job's ids.
std::vector<double> set_timeouts(const SimulationJob& job, double stream_timeout) {
  if (!job.timeouts.empty()) return job.timeouts;
  return std::vector<double>(job.ids.size(), stream_timeout);
}

// The actor's side of a watched job: past the timeout of the set it is on, it answers for the thread.
void check_timeout(SimulationActor self, const SimulationPoolArgs& args) {
  const bool interruptible = args.type->program != nullptr;
  auto watched = self->state.watched;
  if (!watched) return;
  std::unique_lock lock(watched->mutex);
  if (watched->answered) {
    self->state.watched.reset();
    return;
  }
  const double seconds = watched->timeouts[watched->current];
  // A set without a timeout, in a job whose other sets have one, is looked at again every 10 ms: the
  // thread moves on to the next set without a message.
  const auto timeout = std::chrono::duration<double>(seconds > 0 ? seconds : 1.0);
  const auto now = Clock::now();
  if (!watched->running_set || seconds <= 0 || now - watched->started < timeout) {
    const std::chrono::duration<double> left =
        watched->running_set && seconds > 0
            ? std::chrono::duration<double>(timeout - (now - watched->started))
            : std::min(timeout, std::chrono::duration<double>(0.01));
    lock.unlock();
    self->delayed_send(
        self, std::chrono::duration_cast<std::chrono::microseconds>(left) + std::chrono::milliseconds(1),
        simulation_timeout_atom::value, self->state.watch);
    return;
  }
  watched->answered = true;
  self->state.watched.reset();
  SimulationOutcome outcome{args.worker_id, watched->stream_id, std::move(watched->records),
                            std::chrono::duration<double>(now - watched->job_started).count()};
  StreamRecord timed_out;
  timed_out.id = watched->ids[watched->current];
  timed_out.failed = true;
  timed_out.failure = Failure::timeout;
  timed_out.error =
      timeout_reason(seconds) +
      (interruptible ? " (the program's process tree was ended)"
                     : " (thread isolation: the run was abandoned, its result will be discarded)");
  timed_out.timeline.finished = timeline_now();
  timed_out.timeline.started =
      timed_out.timeline.finished - std::chrono::duration<double>(now - watched->started).count();
  timed_out.node = args.node;
  outcome.records.push_back(std::move(timed_out));
  for (std::size_t i = watched->current + 1; i < watched->ids.size(); ++i)
    outcome.unrun.push_back(watched->ids[i]);
  const caf::actor stream = watched->stream;
  // A program's tree is ended now (still under the mutex, so the thread is on this very set).
  if (interruptible) self->state.instance->interrupt();
  lock.unlock();
  caf::anon_send(stream, simulated_atom::value, std::move(outcome));
}

// What the compute thread that feeds a simulation process needs.
struct ProcessFeed {
  std::shared_ptr<Handoff> handoff;
  std::shared_ptr<SimulationProcess> process;
  std::uint32_t worker_id = 0;
  std::string node;
  double timeout_seconds = 0;
  caf::actor pool;
  std::uint32_t index = 0;
};

// Runs the actor's jobs in its process, one after another, until none waits.
void feed_process(const ProcessFeed& feed) {
  Handoff& handoff = *feed.handoff;
  for (;;) {
    std::shared_ptr<RunningJob> running;
    {
      std::lock_guard lock(handoff.mutex);
      if (handoff.waiting.empty() || handoff.stopped) {
        handoff.feeding = false;
        handoff.current.reset();
        return;
      }
      running = std::move(handoff.waiting.front());
      handoff.waiting.pop_front();
      handoff.current = running;
    }
    const SimulationJob& job = running->job;
    const auto start = Clock::now();
    SimulationProcess::JobResult result;
    try {
      result =
          feed.process->run(job.ids, job.parameters, set_timeouts(job, feed.timeout_seconds), &running->stop);
    } catch (const std::exception& e) {  // no process could be started (fork, socketpair)
      for (auto id : job.ids)
        result.records.push_back(StreamRecord{id, Value{}, true, e.what(), feed.node, Failure::error});
    }
    SimulationOutcome outcome{feed.worker_id, job.stream_id, std::move(result.records),
                              std::chrono::duration<double>(Clock::now() - start).count(),
                              std::move(result.unrun)};
    running->done.store(true);
    caf::anon_send(job.stream, simulated_atom::value, std::move(outcome));
    caf::anon_send(feed.pool, idle_atom::value, feed.index);
    // Other work waits for a thread (another stream's processes, an operation's tasks): this feed goes
    // behind it, or one busy stream would hold the worker's threads for as long as it has sets.
    auto* compute = ComputePool::of_this_thread();
    if (compute == nullptr || compute->queued() == 0) continue;
    {
      std::lock_guard lock(handoff.mutex);
      handoff.current.reset();
      if (handoff.waiting.empty() || handoff.stopped) {
        handoff.feeding = false;
        return;
      }
    }
    compute->submit([feed] { feed_process(feed); });
    return;
  }
}

// Drops the cancelled sets from an actor's waiting jobs; a job left empty is answered at once (the
// stream counts it) and said done to the pool.
void cancel_waiting(Handoff& handoff, const SimulationCancel& cancel, const SimulationPoolArgs& args,
                    const caf::actor& pool, std::uint32_t index) {
  std::vector<std::shared_ptr<RunningJob>> emptied;
  {
    std::lock_guard lock(handoff.mutex);
    auto& waiting = handoff.waiting;
    for (auto it = waiting.begin(); it != waiting.end();) {
      SimulationJob& job = (*it)->job;
      if (job.stream_id != cancel.stream_id) {
        ++it;
        continue;
      }
      std::size_t kept = 0;
      for (std::size_t i = 0; i < job.ids.size(); ++i) {
        if (std::binary_search(cancel.ids.begin(), cancel.ids.end(), job.ids[i])) continue;
        job.ids[kept] = job.ids[i];
        job.parameters[kept] = std::move(job.parameters[i]);
        if (!job.timeouts.empty()) job.timeouts[kept] = job.timeouts[i];
        ++kept;
      }
      job.ids.resize(kept);
      job.parameters.resize(kept);
      if (!job.timeouts.empty()) job.timeouts.resize(kept);
      if (kept > 0) {
        ++it;
        continue;
      }
      emptied.push_back(std::move(*it));
      it = waiting.erase(it);
    }
  }
  for (const auto& running : emptied) {
    caf::anon_send(running->job.stream, simulated_atom::value,
                   SimulationOutcome{args.worker_id, running->job.stream_id, {}, 0});
    caf::anon_send(pool, idle_atom::value, index);
  }
}

// One simulation actor: its instance runs one job at a time. The pool sends it one at a time, or, when
// the instance lives in a process of its own, one more to wait behind it (Handoff).
protocols::simulation_actor_type::behavior_type simulation_actor(SimulationActor self,
                                                                 SimulationPoolArgs args, caf::actor pool,
                                                                 std::uint32_t index,
                                                                 std::shared_ptr<Handoff> handoff) {
  survive_stray_errors(self, "simulation actor");
  if (handoff) {
    self->state.process = std::make_shared<SimulationProcess>(*args.type, args.config, args.node);
    self->state.handoff = std::move(handoff);
  }
  return {
      [=](simulate_atom, SimulationJob& given) {
        if (auto handoff = self->state.handoff) {
          auto running = std::make_shared<RunningJob>();
          running->job = std::move(given);
          {
            std::lock_guard lock(handoff->mutex);
            handoff->waiting.push_back(std::move(running));
            if (handoff->feeding) return;
            handoff->feeding = true;
          }
          // The feed must not hold the compute pool: the last reference dropped on one of its own
          // threads would make the pool join itself.
          args.compute->submit(
              [feed = ProcessFeed{handoff, self->state.process, args.worker_id, args.node,
                                  args.timeout_seconds, pool, index}] { feed_process(feed); });
          return;
        }
        // The job must not hold the compute pool: the last reference dropped on one of its own threads
        // would make the pool join itself.
        JobContext context{args.type, args.config, args.node, given.stream_id};
        auto running = std::make_shared<RunningJob>();
        running->job = std::move(given);
        self->state.running = running;
        const SimulationJob& job = running->job;
        const std::uint32_t worker_id = args.worker_id;
        // The stream sends per-set timeouts only when one of the job's sets has its own.
        const bool timed = args.timeout_seconds > 0 || !job.timeouts.empty();
        auto instance = self->state.instance;
        if (timed) {
          auto watched = std::make_shared<WatchedJob>();
          watched->stream = job.stream;
          watched->stream_id = job.stream_id;
          watched->ids = job.ids;
          watched->timeouts = set_timeouts(job, args.timeout_seconds);
          args.compute->submit([watched, instance, context, worker_id, pool, index, running]() mutable {
            run_watched(std::move(watched), std::move(instance), std::move(context), std::move(running),
                        worker_id, pool, index);
          });
          self->state.watched = std::move(watched);
          self->state.watch += 1;
          check_timeout(self, args);
          return;
        }
        args.compute->submit([instance, context, worker_id, pool, index, running] {
          const SimulationJob& job = running->job;
          const auto start = Clock::now();
          SimulationOutcome outcome;
          outcome.worker = worker_id;
          outcome.stream_id = job.stream_id;
          outcome.records.reserve(job.ids.size());
          for (std::size_t i = 0; i < job.ids.size(); ++i) {
            if (running->stop.load(std::memory_order_relaxed)) {
              outcome.unrun.assign(job.ids.begin() + static_cast<std::ptrdiff_t>(i), job.ids.end());
              break;
            }
            running->current.store(i, std::memory_order_relaxed);
            auto record = run_one(*instance, context, job.ids[i], job.parameters[i], outcome.unavailable);
            if ((record.failed && running->stop.load()) || !outcome.unavailable.empty()) {
              // Interrupted by a cancellation, or this worker cannot run the simulation: the rest go back.
              outcome.unrun.assign(job.ids.begin() + static_cast<std::ptrdiff_t>(i), job.ids.end());
              break;
            }
            outcome.records.push_back(std::move(record));
          }
          outcome.busy_seconds = std::chrono::duration<double>(Clock::now() - start).count();
          running->done.store(true);
          caf::anon_send(job.stream, simulated_atom::value, std::move(outcome));
          caf::anon_send(pool, idle_atom::value, index);
        });
      },
      [=](simulation_cancel_atom, SimulationCancel& cancel) {
        std::sort(cancel.ids.begin(), cancel.ids.end());
        const auto cancelled = [&](std::uint64_t id) {
          return std::binary_search(cancel.ids.begin(), cancel.ids.end(), id);
        };
        auto running = self->state.running;
        if (auto handoff = self->state.handoff) {
          cancel_waiting(*handoff, cancel, args, pool, index);
          std::lock_guard lock(handoff->mutex);
          running = handoff->current;
        }
        if (!running || running->done.load() || running->job.stream_id != cancel.stream_id) return;
        const auto& ids = running->job.ids;
        if (auto process = self->state.process) {
          // Its child runs the job's sets in turn: stopped when it is on a cancelled one or has one still
          // to run, or has not taken the job yet (an interpreter still starting); the rest of the job
          // goes back unrun, uncharged. `stop` covers a process not started yet: run() gives the job
          // back instead of starting one.
          const std::size_t from = process->running_index().value_or(0);
          if (from < ids.size() &&
              std::any_of(ids.begin() + static_cast<std::ptrdiff_t>(from), ids.end(), cancelled)) {
            running->stop.store(true);
            process->kill();
          }
          return;
        }
        if (std::any_of(ids.begin(), ids.end(), cancelled)) {
          running->stop.store(true);
          // A program on a cancelled set is ended now; one on a set that was not cancelled finishes it.
          const std::size_t on = running->current.load();
          if (on < ids.size() && cancelled(ids[on])) self->state.instance->interrupt();
        }
      },
      [=](simulation_timeout_atom, std::uint64_t watch) {
        if (watch == self->state.watch) check_timeout(self, args);
      },
      [=](shutdown_atom) {
        if (auto handoff = self->state.handoff) {
          // The jobs still waiting go back to their streams unrun, to run elsewhere.
          std::deque<std::shared_ptr<RunningJob>> waiting;
          {
            std::lock_guard lock(handoff->mutex);
            handoff->stopped = true;
            waiting.swap(handoff->waiting);
          }
          for (const auto& job : waiting)
            caf::anon_send(job->job.stream, simulated_atom::value,
                           SimulationOutcome{args.worker_id, job->job.stream_id, {}, 0, job->job.ids});
        }
        // A child process would otherwise outlive its job's compute thread: stop it now.
        if (self->state.process) self->state.process->kill();
        if (auto running = self->state.running; running && !running->done.load()) {
          running->stop.store(true);
          self->state.instance->interrupt();  // a program's tree ends with its worker
        }
        self->quit();
      },
  };
}

struct PoolState {
  std::vector<protocols::simulation_actor_type> simulations;
  std::vector<std::shared_ptr<Handoff>> handoffs;  // aligned with simulations; empty: none
  std::vector<std::uint8_t> outstanding;           // jobs sent to each simulation actor, not yet done
  std::uint8_t depth = 1;                          // jobs a simulation actor may hold
  std::deque<SimulationJob> queued;

  // Queued jobs go to the actors with the fewest first.
  template <class Self>
  void dispatch(Self* self) {
    while (!queued.empty()) {
      const auto least = std::min_element(outstanding.begin(), outstanding.end());
      if (*least >= depth) return;
      *least += 1;
      self->send(simulations[static_cast<std::size_t>(least - outstanding.begin())], simulate_atom::value,
                 std::move(queued.front()));
      queued.pop_front();
    }
  }

  // An actor with nothing to do, and nothing queued: it takes a job waiting behind another's.
  void rebalance(std::uint32_t idle) {
    if (!queued.empty() || handoffs.empty() || outstanding[idle] > 0) return;
    for (std::size_t other = 0; other < handoffs.size(); ++other) {
      if (outstanding[other] < depth) continue;
      std::lock_guard lock(handoffs[other]->mutex);
      auto& waiting = handoffs[other]->waiting;
      if (waiting.empty()) continue;
      queued.push_back(std::move(waiting.back()->job));
      waiting.pop_back();
      outstanding[other] -= 1;
      return;
    }
  }
};

// What simulation actor `index` builds its instance from: the stream's config, with the threads and the
// devices it was given.
std::shared_ptr<const Config> instance_config(const SimulationPoolArgs& args, std::uint32_t index) {
  if (args.type->threads == 1 && args.type->gpus == 0 && !args.type->program) return args.config;
  auto config = std::make_shared<Config>(*args.config);
  if (args.type->program && !args.runs_dir.empty()) config->set("tessera.runs_dir", Value(args.runs_dir));
  config->set("tessera.threads", to_value(static_cast<std::int64_t>(args.type->threads)));
  if (args.type->gpus > 0) {
    std::vector<double> devices;
    for (std::uint32_t k = 0; k < args.type->gpus; ++k)
      devices.push_back(args.gpus[(index * args.type->gpus + k) % args.gpus.size()]);
    config->set("tessera.device", to_value(static_cast<std::int64_t>(devices.front())));
    config->set("tessera.devices", to_value(devices));
  }
  return config;
}

protocols::simulation_pool_type::behavior_type pool_actor(
    protocols::simulation_pool_type::stateful_pointer<PoolState> self, SimulationPoolArgs args) {
  const auto me = caf::actor_cast<caf::actor>(self);
  survive_stray_errors(self, "simulation pool");
  const bool handed_off = in_own_process(args);
  if (handed_off) self->state.depth = Handoff::kDepth;
  for (std::uint32_t i = 0; i < std::max<std::uint32_t>(1, args.size); ++i) {
    SimulationPoolArgs own = args;
    own.config = instance_config(args, i);
    std::shared_ptr<Handoff> handoff;
    if (handed_off) {
      handoff = std::make_shared<Handoff>();
      self->state.handoffs.push_back(handoff);
    }
    self->state.simulations.push_back(
        self->spawn<caf::linked>(simulation_actor, std::move(own), me, i, std::move(handoff)));
    self->state.outstanding.push_back(0);
  }
  return {
      [=](simulate_atom, SimulationJob& job) {
        self->state.queued.push_back(std::move(job));
        self->state.dispatch(self);
      },
      [=](idle_atom, std::uint32_t index) {
        if (index >= self->state.outstanding.size() || self->state.outstanding[index] == 0) return;
        self->state.outstanding[index] -= 1;
        self->state.rebalance(index);
        self->state.dispatch(self);
      },
      [=](simulation_cancel_atom, SimulationCancel& cancel) {
        // Queued jobs lose the cancelled sets; one left empty is answered at once (the stream counts it).
        std::sort(cancel.ids.begin(), cancel.ids.end());
        auto& queued = self->state.queued;
        for (auto job = queued.begin(); job != queued.end();) {
          if (job->stream_id != cancel.stream_id) {
            ++job;
            continue;
          }
          std::size_t kept = 0;
          for (std::size_t i = 0; i < job->ids.size(); ++i) {
            if (std::binary_search(cancel.ids.begin(), cancel.ids.end(), job->ids[i])) continue;
            job->ids[kept] = job->ids[i];
            job->parameters[kept] = std::move(job->parameters[i]);
            ++kept;
          }
          job->ids.resize(kept);
          job->parameters.resize(kept);
          if (kept > 0) {
            ++job;
            continue;
          }
          caf::anon_send(job->stream, simulated_atom::value,
                         SimulationOutcome{args.worker_id, job->stream_id, {}, 0});
          job = queued.erase(job);
        }
        for (auto& simulation : self->state.simulations)
          self->send(simulation, simulation_cancel_atom::value, cancel);
      },
      [=](shutdown_atom) {
        for (auto& s : self->state.simulations) self->send(s, shutdown_atom::value);
        self->quit();
      },
  };
}

}  // namespace

caf::actor spawn_simulation_pool(caf::actor_system& system, SimulationPoolArgs args) {
  return caf::actor_cast<caf::actor>(system.spawn(pool_actor, std::move(args)));
}

}  // namespace tessera

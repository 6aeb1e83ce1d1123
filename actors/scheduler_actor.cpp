#include "actors/scheduler_actor.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <unordered_map>
#include <unordered_set>

#include "actors/glm/messages.hpp"
#include "actors/glm/solver_actor.hpp"
#include "actors/messages.hpp"
#include "actors/protocols/scheduler.hpp"
#include "actors/protocols/stream.hpp"
#include "actors/protocols/worker.hpp"
#include "actors/result_sink.hpp"
#include "actors/stray_errors.hpp"
#include "graph/printable.hpp"
#include "graph/stream_record.hpp"
#include "scheduling/scheduler_core.hpp"

namespace tessera {
namespace {

struct TaskRefHash {
  std::size_t operator()(const TaskRef& t) const noexcept {
    return std::hash<std::uint64_t>{}(t.op * 0x9E3779B97F4A7C15ull ^ t.index);
  }
};

struct SchedulerActorState {
  std::unique_ptr<scheduling::SchedulerCore> core;
  std::unique_ptr<CheckpointKeeper> checkpoints;
  // Spawned with the first checkpoint to write. A checkpointed task's result, to any sink (its client's, a
  // second client's, a persisted collection's), is delivered after its checkpoint is stored: by the writer,
  // behind the write. So is every later delivery to a sink with one waiting there (one count per delivery
  // sent), so that a sink's deliveries keep their order. Other deliveries go out at once.
  protocols::checkpoint_writer_type checkpoint_writer;
  std::unordered_map<const ResultSink*, std::uint32_t> behind_writer;
  // Checkpointed tasks sent to the writer and not stored yet (a count each).
  std::unordered_map<TaskRef, std::uint32_t, TaskRefHash> unwritten;
  std::shared_ptr<WorkerDirectory> directory;
  std::vector<protocols::worker_actor_type> workers;  // by id; null once the worker was told to shut down
  // Stream actors, told when a worker joins or leaves (their parameter sets run elsewhere).
  std::vector<protocols::stream_actor_type> stream_watchers;
  // GLM fits in progress: their solver actors, by session.
  std::unordered_map<std::uint64_t, caf::actor> glm_sessions;
  std::uint64_t last_glm_session = 0;
  // The progress watchdog: how often it checks (0: off), and the stream actors (by actor id) whose
  // report it asked for and has not had yet (one question at a time per stream).
  std::chrono::milliseconds watchdog_interval{0};
  std::unordered_set<caf::actor_id> reports_pending;
  // Each worker's latest memory report, by id.
  std::unordered_map<std::uint32_t, WorkerMemory> memory;
  std::shared_ptr<monitor::ClusterMonitor> monitor;
};

using SchedulerActor = protocols::scheduler_actor_type::stateful_base<SchedulerActorState>;

// A worker's memory as last reported; its limit as registered until its first report.
WorkerMemory memory_of(const SchedulerActorState& st, const WorkerInfo& worker) {
  if (auto it = st.memory.find(worker.id); it != st.memory.end()) return it->second;
  WorkerMemory none;
  none.worker = worker.id;
  none.limit = worker.memory_limit;
  return none;
}

template <class... Fs>
struct Overloaded : Fs... {
  using Fs::operator()...;
};
template <class... Fs>
Overloaded(Fs...) -> Overloaded<Fs...>;

void send_to_worker(SchedulerActor* self, const protocols::worker_actor_type& worker,
                    scheduling::WorkerMessage& message) {
  using namespace scheduling;
  std::visit(Overloaded{
                 [&](PeerNotice& m) { self->send(worker, peer_atom::value, std::move(m)); },
                 [&](WelcomeWorker& m) { self->send(worker, welcome_atom::value, m.id); },
                 [&](StealRequest& m) { self->send(worker, steal_atom::value, m); },
                 [&](AssignBatch& m) { self->send(worker, assign_atom::value, std::move(m)); },
                 [&](SubscribeBatch& m) { self->send(worker, subscribe_atom::value, std::move(m)); },
                 [&](CancelSlots& m) { self->send(worker, cancel_slots_atom::value, std::move(m.batch)); },
                 [&](DropSlots& m) { self->send(worker, drop_atom::value, std::move(m.batch)); },
                 [&](ForgetOperation& m) { self->send(worker, forget_atom::value, m.op); },
                 [&](ShutdownWorker&) { self->send(worker, shutdown_atom::value); },
             },
             message);
}

// Checkpointed results are stored before anyone hears they finished (a client that sees its result may
// rely on its checkpoint): by the writer, off this actor, which then hands over the deliveries that wait.
void deliver(SchedulerActor* self, scheduling::Outbox& out) {
  auto& st = self->state;
  CheckpointWrite write;
  write.records = st.checkpoints->records(out.checkpoints);
  if (!write.records.empty()) write.store = st.checkpoints->store();
  if (write.store) {
    write.tasks.reserve(out.checkpoints.size());
    for (const auto& f : out.checkpoints) {
      write.tasks.push_back(TaskRef{f.op->id(), f.task});
      ++st.unwritten[write.tasks.back()];
    }
  }
  for (auto& [sink, batch] : out.deliveries) {
    const ResultSink& to = *sink;
    const bool waits =
        st.behind_writer.contains(&to) ||
        (!st.unwritten.empty() && std::any_of(batch.begin(), batch.end(), [&](const Delivery& d) {
          return st.unwritten.contains(to.task(d.slot));
        }));
    if (!waits) {
      sink->deliver(batch);
      continue;
    }
    ++st.behind_writer[&to];
    write.deliveries.emplace_back(std::move(sink), std::move(batch));
  }
  if (!write.store && write.deliveries.empty()) return;
  if (!st.checkpoint_writer)
    st.checkpoint_writer = spawn_checkpoint_writer(self->home_system(), caf::actor_cast<caf::actor>(self));
  self->send(st.checkpoint_writer, checkpoint_write_atom::value, std::move(write));
}

void send_outbox(SchedulerActor* self, scheduling::Outbox&& out) {
  auto& st = self->state;
  deliver(self, out);
  for (auto& [id, message] : out.to_workers) {
    if (id >= st.workers.size() || !st.workers[id]) continue;
    send_to_worker(self, st.workers[id], message);
    // The last word to a worker: its handle is let go.
    if (std::holds_alternative<scheduling::ShutdownWorker>(message)) st.workers[id] = nullptr;
  }
  for (const std::uint32_t id : out.workers_joined)
    for (auto& watcher : st.stream_watchers)
      self->send(watcher, worker_joined_atom::value,
                 StreamWorker{id, caf::actor_cast<caf::actor>(st.workers[id]), st.core->threads(id),
                              st.core->name(id)});
  for (const auto& stalled : out.stalled)
    std::cerr << "[tessera] scheduler: worker " << stalled.id << " ('" << printable(stalled.name)
              << "') finished nothing for " << stalled.timeout.count() << " ms while holding "
              << stalled.tasks << " tasks and " << stalled.stream_jobs
              << " simulation jobs (scheduler.progress_timeout): "
              << (stalled.kept ? "stalled, but kept: no other worker could take its work"
                               : "declared stalled; its work runs again elsewhere")
              << std::endl;
  for (const std::uint32_t id : out.workers_lost) {
    st.directory->erase(id);
    st.memory.erase(id);
    // A fit whose partitions it held cannot go on: its solver fails now instead of waiting for answers.
    for (const auto& [session, solver] : st.glm_sessions)
      caf::anon_send(solver, glm_atom::value, GlmMessage{session, GlmLost{id}});
    for (auto& watcher : st.stream_watchers) self->send(watcher, worker_left_atom::value, id);
  }
  // Its results moved elsewhere first, so fits go on; the simulation jobs streams sent it do not.
  for (const std::uint32_t id : out.workers_retired) {
    st.directory->erase(id);
    st.memory.erase(id);
    for (auto& watcher : st.stream_watchers) self->send(watcher, worker_left_atom::value, id);
  }
}

// A job's run, for the dashboard's task stream (restored results ran nothing).
void record_run(SchedulerActorState& st, const DoneBatch& batch) {
  if (!st.monitor || batch.ran == 0 || !st.monitor->tasks.enabled()) return;
  const Operation* op = st.core->operation(batch.op);
  if (!op) return;  // a late report of a forgotten operation
  st.monitor->tasks.record(batch.worker, op->function().name,
                           batch.finished_at > 0 ? batch.finished_at : timeline_now(), batch.busy_seconds,
                           batch.ran, static_cast<std::uint32_t>(batch.failures.size()));
}

// A transition outside the state machine's table is a bug: it is reported, and fatal where
// TESSERA_FATAL_INTERNAL_ERRORS is set (the test suite sets it), since state after it is suspect.
void report_internal_error(const std::exception& error) {
  std::cerr << "[tessera] scheduler: " << error.what() << std::endl;
  if (const char* fatal = std::getenv("TESSERA_FATAL_INTERNAL_ERRORS"); fatal && *fatal && *fatal != '0')
    std::abort();
}

template <class Handler>
void step(SchedulerActor* self, Handler&& handler) {
  try {
    send_outbox(self, handler(*self->state.core));
  } catch (const scheduling::IllegalTransition& e) {
    report_internal_error(e);
  }
}

// A GLM fit over persisted partition tasks: finds where each result is held and hands them to a new
// solver actor, which talks to those workers directly.
void on_glm_fit(SchedulerActor* self, const GlmFitRequest& request, const std::shared_ptr<GlmReply>& reply) {
  auto& st = self->state;
  try {
    GlmSolverArgs args;
    args.spec = request.spec;
    glm::validate(args.spec);
    std::int64_t index = 0;
    for (const auto& partition : request.partitions) {
      const auto held =
          st.core->locate(partition.op, partition.task, "glm: partition " + std::to_string(index));
      args.partitions.push_back(GlmPartitionLocation{caf::actor_cast<caf::actor>(st.workers.at(held.worker)),
                                                     held.worker, partition.op, held.slot, index,
                                                     partition.first_row});
      ++index;
    }
    if (args.partitions.empty()) throw std::invalid_argument("glm: a fit needs at least one partition");
    args.session = ++st.last_glm_session;
    args.scheduler = caf::actor_cast<caf::actor>(self);
    args.reply = reply;
    if (st.monitor) args.board = std::shared_ptr<monitor::GlmBoard>(st.monitor, &st.monitor->glm);
    const auto session = args.session;
    st.glm_sessions[session] = spawn_glm_solver(self->home_system(), std::move(args));
  } catch (const std::exception& e) {
    if (reply && reply->deliver) reply->deliver(glm_error_result(e.what()));
  }
}

protocols::scheduler_actor_type::behavior_type scheduler_actor(
    SchedulerActor* self, SchedulerOptions options, std::shared_ptr<WorkerDirectory> directory,
    CheckpointAccess checkpoints, std::shared_ptr<monitor::ClusterMonitor> monitor) {
  auto& st = self->state;
  st.monitor = std::move(monitor);
  st.core = std::make_unique<scheduling::SchedulerCore>(options);
  st.checkpoints = std::make_unique<CheckpointKeeper>(std::move(checkpoints), *st.core);
  st.core->set_checkpoints(st.checkpoints.get());
  st.directory = directory ? std::move(directory) : std::make_shared<WorkerDirectory>();
  survive_stray_errors(self, "scheduler");
  self->set_down_handler([=](const caf::down_msg& down) {
    auto& watchers = self->state.stream_watchers;
    watchers.erase(std::remove_if(watchers.begin(), watchers.end(),
                                  [&](const auto& a) { return a.address() == down.source; }),
                   watchers.end());
    self->state.core->stream_ended(down.source.id());
    self->state.reports_pending.erase(down.source.id());
  });
  // Every min(progress_timeout / 4, 1 s): a check of the streams' latest reports and the tasks' ends,
  // then the streams are asked for their next reports.
  if (options.progress_timeout > std::chrono::milliseconds::zero()) {
    st.watchdog_interval = std::clamp<std::chrono::milliseconds>(
        options.progress_timeout / 4, std::chrono::milliseconds(1), std::chrono::seconds(1));
    self->delayed_send(self, st.watchdog_interval, watchdog_atom::value);
  }
  return {
      [=](submit_atom, Submission& submission) {
        self->state.checkpoints->prepare(submission);
        step(self, [&](auto& core) { return core.submit(std::move(submission)); });
      },
      [=](done_atom, const DoneBatch& batch) {
        record_run(self->state, batch);
        step(self, [&](auto& core) { return core.done(batch); });
      },
      [=](release_atom, const std::shared_ptr<ResultSink>& sink) {
        step(self, [&](auto& core) { return core.release(sink.get(), sink->take_released()); });
      },
      [=](cancel_atom, const CancelRequest& request) {
        step(self, [&](auto& core) { return core.cancel(request); });
      },
      [=](stolen_atom, const StolenBatch& batch) {
        step(self, [&](auto& core) { return core.stolen(batch); });
      },
      [=](register_atom, const WorkerRegistration& registration) -> std::uint32_t {
        auto& st = self->state;
        std::uint32_t id = 0;
        step(self, [&](auto& core) {
          auto registered = core.register_worker(scheduling::WorkerDescription{
              registration.threads, registration.name, registration.address, registration.public_key,
              registration.memory_limit, registration.local_address, registration.host, registration.origin});
          id = registered.id;
          if (!registration.name.empty() && registered.name != registration.name)
            std::cerr << "[tessera] scheduler: worker " << id << " registered as '"
                      << printable(registration.name) << "', a name another worker holds: it is called '"
                      << printable(registered.name) << "' here (give each worker its own [node] name)"
                      << std::endl;
          if (registration.assigned) registration.assigned->store(id, std::memory_order_release);
          // Known before its outbox goes out: the outbox already names it.
          if (st.workers.size() <= id) st.workers.resize(id + 1);
          st.workers[id] = caf::actor_cast<protocols::worker_actor_type>(registration.actor);
          st.directory->set(id, caf::actor_cast<protocols::input_target_type>(registration.actor));
          return std::move(registered.outbox);
        });
        return id;
      },
      [=](lost_atom, std::uint32_t id) { step(self, [&](auto& core) { return core.worker_lost(id); }); },
      [=](retire_atom, std::uint32_t id) { step(self, [&](auto& core) { return core.retire(id); }); },
      [=](glm_fit_atom, const GlmFitRequest& request, const std::shared_ptr<GlmReply>& reply) {
        on_glm_fit(self, request, reply);
      },
      // From workers' partition actors (through their connections): forwarded to the fit's solver.
      [=](glm_atom, GlmMessage& message) {
        auto& sessions = self->state.glm_sessions;
        if (message.kind() == GlmKind::finished) {
          sessions.erase(message.session);
        } else if (auto it = sessions.find(message.session); it != sessions.end()) {
          caf::anon_send(it->second, glm_atom::value, std::move(message));
        }
      },
      [=](stream_workers_atom) -> std::vector<StreamWorker> {
        auto& st = self->state;
        if (auto watcher = caf::actor_cast<protocols::stream_actor_type>(self->current_sender())) {
          self->monitor(watcher);
          st.stream_watchers.push_back(watcher);
        }
        std::vector<StreamWorker> out;
        for (const std::uint32_t id : st.core->usable_workers())
          out.push_back(StreamWorker{id, caf::actor_cast<caf::actor>(st.workers[id]), st.core->threads(id),
                                     st.core->name(id)});
        return out;
      },
      [=](results_lost_atom, const LostInputs& lost) {
        step(self, [&](auto& core) { return core.results_lost(lost); });
      },
      [=](memory_atom, WorkerMemory& memory) {
        auto& st = self->state;
        const auto live = st.core->workers();
        if (std::none_of(live.begin(), live.end(),
                         [&](const WorkerInfo& w) { return w.id == memory.worker; }))
          return;  // a late report from a worker that left
        step(self, [&](auto& core) { return core.memory_report(memory); });
        st.memory[memory.worker] = std::move(memory);
      },
      [=](workers_atom) -> std::vector<WorkerInfo> {
        auto out = self->state.core->workers();
        for (auto& w : out) {
          w.memory = memory_of(self->state, w);
          if (self->state.monitor) w.sets_run = self->state.monitor->tasks.sets_run_by(w.id);
        }
        return out;
      },
      [=](progress_atom) -> std::vector<FunctionProgress> { return self->state.core->progress(); },
      [=](status_atom) -> SchedulerStatus {
        auto status = self->state.core->status();
        self->state.checkpoints->report(status);
        if (self->state.monitor) {
          const auto sets = self->state.monitor->tasks.set_totals();
          status.sets_done = sets.sets;
          status.sets_failed = sets.failed;
        }
        for (const auto& w : self->state.core->workers()) status.memory.push_back(memory_of(self->state, w));
        return status;
      },
      [=](shutdown_atom) {
        step(self, [&](auto& core) { return core.shutdown(); });
        // After the writes sent to it.
        if (self->state.checkpoint_writer) self->send(self->state.checkpoint_writer, shutdown_atom::value);
        self->quit();
      },
      [=](checkpoint_written_atom, const CheckpointWritten& done) {
        auto& st = self->state;
        if (!done.error.empty()) st.checkpoints->write_failed(done.error, done.records);
        for (const auto& sink : done.sinks)
          if (auto it = st.behind_writer.find(sink.get()); it != st.behind_writer.end() && --it->second == 0)
            st.behind_writer.erase(it);
        for (const TaskRef& task : done.tasks)
          if (auto it = st.unwritten.find(task); it != st.unwritten.end() && --it->second == 0)
            st.unwritten.erase(it);
      },
      [=](watchdog_atom) {
        auto& st = self->state;
        // Only its own timer: a tick from elsewhere would start a second one.
        if (self->current_sender() != self->ctrl() || st.watchdog_interval.count() == 0) return;
        step(self, [&](auto& core) { return core.check_progress(std::chrono::steady_clock::now()); });
        for (const auto& watcher : st.stream_watchers) {
          if (!st.reports_pending.insert(watcher.id()).second) continue;
          self->request(watcher, caf::infinite, stream_progress_atom::value)
              .then(
                  [=, id = watcher.id()](const std::vector<StreamLoad>& loads) {
                    // Not after the stream ended (its down message erased the question): its jobs would
                    // then count for ever.
                    if (self->state.reports_pending.erase(id) == 1)
                      self->state.core->stream_report(id, loads);
                  },
                  [=, id = watcher.id()](const caf::error&) { self->state.reports_pending.erase(id); });
        }
        self->delayed_send(self, st.watchdog_interval, watchdog_atom::value);
      },
  };
}

}  // namespace

caf::actor spawn_scheduler(caf::actor_system& system, SchedulerOptions options,
                           std::shared_ptr<WorkerDirectory> directory, CheckpointAccess checkpoints,
                           std::shared_ptr<monitor::ClusterMonitor> monitor) {
  return caf::actor_cast<caf::actor>(system.spawn(scheduler_actor, options, std::move(directory),
                                                  std::move(checkpoints), std::move(monitor)));
}

}  // namespace tessera

#include "actors/operation_actor.hpp"

#include "actors/gpu_device_actor.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <deque>
#include <unordered_map>

#include "actors/glm/messages.hpp"
#include "actors/held_results.hpp"

namespace tessera {
namespace {

// A slot's own life on this worker, apart from the scheduler's placement states and the client's task
// states: waiting -> ready -> running -> done | failed; waiting | ready -> withdrawn (cancelled by the
// scheduler, or given back for an idle worker to steal).
enum class SlotState : std::uint8_t { waiting, ready, running, done, failed, withdrawn };
constexpr bool is_final(SlotState s) {
  return s == SlotState::done || s == SlotState::failed || s == SlotState::withdrawn;
}

// Inputs and subscribers of a slot; allocated only for tasks that have references or dependents.
struct SlotExtra {
  std::vector<Value> inputs;  // indexed by column
  // Which columns arrived: after a worker is lost, a recomputed producer may send an input again.
  std::vector<bool> arrived;
  std::vector<Destination> subscribers;
  std::uint16_t received = 0;  // inputs that arrived before the assignment
};

struct Slot {
  std::uint32_t task = 0;
  // Atomic because a compute thread moves ready -> running while the actor may move ready -> withdrawn.
  std::atomic<SlotState> state{SlotState::waiting};
  // Packed so a slot takes 40 bytes: a map of ten million tasks keeps ten million of them.
  bool assigned : 1 = false;
  bool adopt : 1 = false;         // receives a finished result instead of running
  bool holds_result : 1 = false;  // counted in HeldResults
  bool report : 1 = true;         // the result goes back to the scheduler, not just the fact
  std::uint16_t missing = 0;      // inputs still expected, once assigned
  Value result;                   // written by the compute thread that ran the task
  std::unique_ptr<SlotExtra> extra;

  SlotExtra& more() {
    if (!extra) extra = std::make_unique<SlotExtra>();
    return *extra;
  }
};

// Slots never move (a deque only appends), so compute threads can hold pointers to them.
static_assert(sizeof(Slot) == 40, "keep Slot compact: one per task held on a worker");
using SlotTable = std::deque<Slot>;

}  // namespace

// What a compute job reports back: which slots finished and which threw.
struct RanReport {
  std::vector<std::uint32_t> finished;
  std::vector<TaskFailure> failures;  // TaskFailure::task holds the slot here
  double seconds = 0;
};

}  // namespace tessera

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tessera::RanReport)

namespace tessera {
namespace {

// A compute job should take about this long, so that tiny tasks share one job's overhead.
constexpr double kTargetJobSeconds = 50e-6;
constexpr std::size_t kMaxJobTasks = 4096;

struct OperationState {
  OperationActorArgs args;
  std::shared_ptr<SlotTable> slots = std::make_shared<SlotTable>();
  std::vector<std::uint32_t> ready;
  // Slots handed to the compute pool, oldest first; the pool takes jobs in this order, so the back
  // holds the tasks least likely to have started (what a steal takes).
  std::deque<std::uint32_t> queued;
  double average_task_seconds = -1;  // unknown until the first job reports
  std::int64_t held_count = 0, held_bytes = 0;

  ~OperationState() {
    auto& held = HeldResults::instance();
    held.count -= held_count;
    held.bytes -= held_bytes;
  }

  Slot& slot(std::uint32_t index) {
    while (slots->size() <= index) slots->emplace_back();
    return (*slots)[index];
  }

  void keep_result(Slot& s) {
    s.holds_result = true;
    const auto bytes = static_cast<std::int64_t>(s.result.payload_bytes());
    held_count += 1;
    held_bytes += bytes;
    HeldResults::instance().count += 1;
    HeldResults::instance().bytes += bytes;
  }

  void drop_result(Slot& s) {
    if (s.holds_result) {
      const auto bytes = static_cast<std::int64_t>(s.result.payload_bytes());
      held_count -= 1;
      held_bytes -= bytes;
      HeldResults::instance().count -= 1;
      HeldResults::instance().bytes -= bytes;
      s.holds_result = false;
    }
    s.result = Value{};
    s.extra.reset();
  }
};

using OperationActor = protocols::operation_actor_type::stateful_base<OperationState>;

void mark_ready(OperationState& st, std::uint32_t index, Slot& s) {
  SlotState expected = SlotState::waiting;
  if (s.state.compare_exchange_strong(expected, SlotState::ready)) st.ready.push_back(index);
}

// An input (or, for an adopt slot, the whole result) arrives for one slot.
void accept_input(OperationActor* self, std::uint32_t index, std::uint16_t column, Value value);

using Outgoing = std::unordered_map<std::uint32_t, InputBatch>;  // by destination worker id

void send_result(OperationActor* self, const Value& result, const Destination& to, Outgoing& outgoing) {
  auto& st = self->state;
  if (to.op == st.args.op->id() && to.worker == st.args.worker_id) {
    accept_input(self, to.slot, to.column, result);  // same operation on this worker: no message
  } else {
    outgoing[to.worker].inputs.push_back(InputDelivery{to.op, to.slot, to.column, result});
  }
}

void flush_outgoing(OperationActor* self, Outgoing& outgoing) {
  for (auto& [worker, batch] : outgoing) {
    if (worker == self->state.args.worker_id) {
      self->send(self->state.args.worker, input_atom::value, std::move(batch));
    } else if (auto target = self->state.args.directory->get(worker)) {
      self->send(target, input_atom::value, std::move(batch));
    }  // a worker that left: the scheduler re-places what it held
  }
  outgoing.clear();
}

void accept_input(OperationActor* self, std::uint32_t index, std::uint16_t column, Value value) {
  auto& st = self->state;
  Slot& s = st.slot(index);
  if (is_final(s.state.load())) return;
  if (column == kAdoptColumn) {
    // A result moved here from a retiring worker: it is done without running.
    s.result = std::move(value);
    s.state.store(SlotState::done);
    st.keep_result(s);
    if (s.extra && !s.extra->subscribers.empty()) {
      Outgoing outgoing;
      for (const auto& to : s.extra->subscribers) send_result(self, s.result, to, outgoing);
      s.extra->subscribers.clear();
      flush_outgoing(self, outgoing);
    }
    return;
  }
  auto& extra = s.more();
  if (column >= st.args.op->columns().size()) return;  // not an argument of this operation
  if (extra.inputs.size() <= column) {
    extra.inputs.resize(st.args.op->columns().size());
    extra.arrived.resize(st.args.op->columns().size());
  }
  if (extra.arrived[column]) return;  // sent again by a recomputed producer
  extra.arrived[column] = true;
  extra.inputs[column] = std::move(value);
  if (!s.assigned) {
    ++extra.received;
  } else if (--s.missing == 0) {
    mark_ready(st, index, s);
  }
}

// The arguments of one task: its literals and the inputs that arrived.
void gather_arguments(const Operation& op, const Slot& s, std::vector<Value>& arguments) {
  const std::size_t arity = op.columns().size();
  arguments.resize(arity);
  for (std::size_t j = 0; j < arity; ++j) {
    if (const Value* literal = op.columns()[j].literal(s.task)) {
      arguments[j] = *literal;
    } else {
      arguments[j] = s.extra->inputs[j];
    }
  }
}

// Whether a ready slot's task goes to the GPU device actor (its function says so for its first argument).
bool runs_on_gpu(const OperationState& st, const Slot& s) {
  const TaskFunction& fn = st.args.op->function();
  if (!st.args.gpu || !fn.runs_on_gpu || st.args.op->columns().empty()) return false;
  const Value* first = st.args.op->columns()[0].literal(s.task);
  return first && fn.runs_on_gpu(*first);
}

// Hands one task to the GPU device actor: its kernels are enqueued there, and its report comes back when
// the GPU has finished them.
void start_on_gpu(OperationActor* self, std::uint32_t index) {
  auto& st = self->state;
  const auto op = st.args.op;
  Slot* target = &(*st.slots)[index];
  const caf::actor me = caf::actor_cast<caf::actor>(self);
  auto start = std::make_shared<std::chrono::steady_clock::time_point>();
  auto ran = std::make_shared<bool>(false);
  GpuJob job;
  job.enqueue = [op, slots = st.slots, target, start, ran] {
    *start = std::chrono::steady_clock::now();
    SlotState expected = SlotState::ready;
    if (!target->state.compare_exchange_strong(expected, SlotState::running)) return;  // cancelled meanwhile
    std::vector<Value> arguments;
    gather_arguments(*op, *target, arguments);
    target->result = op->function().invoke(arguments);
    *ran = true;
  };
  job.done = [me, index, start, ran] {
    RanReport report;
    if (*ran) report.finished.push_back(index);
    report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - *start).count();
    caf::anon_send(me, ran_atom::value, std::move(report));
  };
  job.failed = [me, op, target, index, start](std::exception_ptr error) {
    RanReport report;
    std::string message = "unknown exception";
    try {
      std::rethrow_exception(error);
    } catch (const std::exception& e) {
      message = e.what();
    } catch (...) {
    }
    report.failures.push_back(TaskFailure{
        index, std::make_shared<TaskFailed>(op->function().name, op->key(target->task), message, false)});
    report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - *start).count();
    caf::anon_send(me, ran_atom::value, std::move(report));
  };
  self->send(st.args.gpu, gpu_run_atom::value, std::move(job));
}

// Hands the ready slots to the compute pool in jobs sized by the measured task duration (and GPU tasks to
// the GPU device actor).
void start_ready(OperationActor* self) {
  auto& st = self->state;
  if (st.ready.empty()) return;
  if (st.args.gpu) {
    std::vector<std::uint32_t> on_cpu;
    for (auto index : st.ready) {
      if (runs_on_gpu(st, (*st.slots)[index]))
        start_on_gpu(self, index);
      else
        on_cpu.push_back(index);
    }
    st.ready.assign(on_cpu.begin(), on_cpu.end());
    if (st.ready.empty()) return;
  }
  std::size_t per_job = 1;
  if (st.average_task_seconds >= 0)
    per_job = static_cast<std::size_t>(
        std::clamp(kTargetJobSeconds / std::max(st.average_task_seconds, 1e-9), 1.0, double(kMaxJobTasks)));
  const auto op = st.args.op;
  const auto slots = st.slots;
  const caf::actor me = caf::actor_cast<caf::actor>(self);
  for (std::size_t begin = 0; begin < st.ready.size(); begin += per_job) {
    const std::size_t end = std::min(st.ready.size(), begin + per_job);
    std::vector<std::uint32_t> indexes(st.ready.begin() + begin, st.ready.begin() + end);
    st.queued.insert(st.queued.end(), indexes.begin(), indexes.end());
    std::vector<Slot*> targets;
    targets.reserve(indexes.size());
    for (auto i : indexes) targets.push_back(&(*slots)[i]);
    st.args.pool->submit([op, slots, me, indexes = std::move(indexes), targets = std::move(targets)] {
      const TaskFunction& fn = op->function();
      const std::size_t arity = op->columns().size();
      thread_local std::vector<Value> arguments;
      RanReport report;
      report.finished.reserve(indexes.size());
      const auto start = std::chrono::steady_clock::now();
      for (std::size_t k = 0; k < targets.size(); ++k) {
        Slot& s = *targets[k];
        SlotState expected = SlotState::ready;
        if (!s.state.compare_exchange_strong(expected, SlotState::running)) continue;  // cancelled meanwhile
        gather_arguments(*op, s, arguments);
        try {
          s.result = fn.invoke(arguments);
          report.finished.push_back(indexes[k]);
        } catch (const std::exception& e) {
          report.failures.push_back(TaskFailure{
              indexes[k], std::make_shared<TaskFailed>(fn.name, op->key(s.task), e.what(), false)});
        } catch (...) {
          report.failures.push_back(TaskFailure{
              indexes[k],
              std::make_shared<TaskFailed>(fn.name, op->key(s.task), "unknown exception", false)});
        }
        for (std::size_t j = 0; j < arity; ++j) arguments[j] = Value{};
      }
      report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      caf::anon_send(me, ran_atom::value, std::move(report));
    });
  }
  st.ready.clear();
}

// Forgets queued slots that have started (or ended): they are at the front.
void trim_queued(OperationState& st) {
  while (!st.queued.empty() && (*st.slots)[st.queued.front()].state.load() != SlotState::ready)
    st.queued.pop_front();
}

// Takes back up to `most` queued tasks that have not started, newest first, and tells the scheduler.
void steal(OperationActor* self, std::uint32_t most) {
  auto& st = self->state;
  trim_queued(st);
  StolenBatch stolen{st.args.worker_id, st.args.op->id(), {}};
  while (!st.queued.empty() && stolen.tasks.size() < most) {
    const std::uint32_t index = st.queued.back();
    st.queued.pop_back();
    Slot& s = (*st.slots)[index];
    SlotState expected = SlotState::ready;
    if (s.state.compare_exchange_strong(expected, SlotState::withdrawn)) {
      s.extra.reset();
      stolen.tasks.push_back(s.task);
    }
  }
  self->send(st.args.scheduler, stolen_atom::value, std::move(stolen));
}

void on_ran(OperationActor* self, RanReport& report) {
  auto& st = self->state;
  trim_queued(st);
  const auto ran = report.finished.size() + report.failures.size();
  if (ran > 0) {
    const double per_task = report.seconds / static_cast<double>(ran);
    st.average_task_seconds =
        st.average_task_seconds < 0 ? per_task : 0.7 * st.average_task_seconds + 0.3 * per_task;
  }
  DoneBatch done;
  done.worker = st.args.worker_id;
  done.op = st.args.op->id();
  done.busy_seconds = report.seconds;
  done.ran = static_cast<std::uint32_t>(ran);
  done.tasks.reserve(report.finished.size());
  done.results.reserve(report.finished.size());
  Outgoing outgoing;
  for (auto index : report.finished) {
    Slot& s = (*st.slots)[index];
    s.state.store(SlotState::done);
    st.keep_result(s);
    done.tasks.push_back(s.task);
    done.results.push_back(s.report ? s.result : Value{});
    if (s.extra) {
      s.extra->inputs.clear();
      s.extra->inputs.shrink_to_fit();
      for (const auto& to : s.extra->subscribers) send_result(self, s.result, to, outgoing);
      s.extra->subscribers.clear();
    }
  }
  for (auto& failure : report.failures) {
    Slot& s = (*st.slots)[failure.task];
    s.state.store(SlotState::failed);
    s.extra.reset();
    done.failures.push_back(TaskFailure{s.task, std::move(failure.error)});
  }
  flush_outgoing(self, outgoing);
  self->send(st.args.scheduler, done_atom::value, std::move(done));
}

protocols::operation_actor_type::behavior_type operation_actor(OperationActor* self,
                                                               OperationActorArgs args) {
  self->state.args = std::move(args);
  // Leave when the worker does.
  self->link_to(self->state.args.worker);
  return {
      [=](assign_atom, const AssignRun& run) {
        auto& st = self->state;
        for (std::uint32_t k = 0; k < run.count; ++k) {
          const std::uint32_t index = run.first_slot + k;
          Slot& s = st.slot(index);
          s.task = run.first_task + k;
          s.assigned = true;
          s.report = run.report;
          if (run.adopt) {
            s.adopt = true;
            continue;
          }
          const std::uint32_t refs = st.args.op->reference_count(s.task);
          s.missing = static_cast<std::uint16_t>(refs - (s.extra ? s.extra->received : 0));
          if (s.missing == 0) mark_ready(st, index, s);
        }
        start_ready(self);
      },
      [=](input_atom, InputBatch& batch) {
        for (auto& input : batch.inputs) accept_input(self, input.slot, input.column, std::move(input.value));
        start_ready(self);
      },
      [=](subscribe_atom, SubscribeBatch& batch) {
        auto& st = self->state;
        Outgoing outgoing;
        for (auto& sub : batch.subscriptions) {
          Slot& s = st.slot(sub.slot);
          const SlotState state = s.state.load();
          if (state == SlotState::done) {
            send_result(self, s.result, sub.to, outgoing);
          } else if (!is_final(state)) {
            s.more().subscribers.push_back(std::move(sub.to));
          }  // failed or withdrawn: the scheduler cancels the subscriber itself
        }
        flush_outgoing(self, outgoing);
        start_ready(self);
      },
      [=](drop_atom, const SlotBatch& batch) {
        auto& st = self->state;
        for (auto index : batch.slots)
          if (index < st.slots->size() && (*st.slots)[index].state.load() == SlotState::done)
            st.drop_result((*st.slots)[index]);
      },
      [=](cancel_slots_atom, const SlotBatch& batch) {
        auto& st = self->state;
        for (auto index : batch.slots) {
          Slot& s = st.slot(index);
          for (SlotState from : {SlotState::waiting, SlotState::ready}) {
            SlotState expected = from;
            if (s.state.compare_exchange_strong(expected, SlotState::withdrawn)) {
              s.extra.reset();
              break;
            }
          }
        }
      },
      [=](ran_atom, RanReport& report) {
        on_ran(self, report);
        start_ready(self);
      },
      [=](steal_atom, const StealRequest& request) { steal(self, request.most); },
      // The finished results of these slots (none for a slot that is not done), e.g. for a GLM fit
      // that keeps them resident.
      [=](fetch_atom, const std::vector<std::uint32_t>& wanted) {
        auto& st = self->state;
        std::vector<Value> out;
        out.reserve(wanted.size());
        for (std::uint32_t index : wanted) {
          const bool done = index < st.slots->size() && (*st.slots)[index].state.load() == SlotState::done;
          out.push_back(done ? (*st.slots)[index].result : Value{});
        }
        return out;
      },
      [=](shutdown_atom) { self->quit(); },
  };
}

}  // namespace

protocols::operation_actor_type spawn_operation_actor(caf::actor_system& system, OperationActorArgs args) {
  return system.spawn(operation_actor, std::move(args));
}

}  // namespace tessera

#include "actors/operation_actor.hpp"

#include "actors/gpu_device_actor.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <deque>
#include <iostream>
#include <unordered_map>

#include "actors/glm/messages.hpp"
#include "actors/held_results.hpp"
#include "actors/outgoing_bytes.hpp"
#include "actors/slot_state.hpp"
#include "actors/stray_errors.hpp"
#include "graph/fetch_task.hpp"
#include "graph/fused_task.hpp"
#include "graph/stream_record.hpp"

namespace tessera {
namespace {

// One argument that arrived: inline (no payload), or held in the worker's chunk store under `key` (its
// producer's result on this worker, or the copy that came from another worker), read when the task runs.
struct Input {
  Value value;
  ChunkKey key{};
  bool stored = false;
};

// Inputs and subscribers of a slot; allocated only for tasks that have references or dependents.
struct SlotExtra {
  std::vector<Input> inputs;  // indexed by column
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
  bool holds_result : 1 = false;  // kept here, and counted in HeldResults
  bool stored : 1 = false;        // in the chunk store (else small, in `result`, counted there inline)
  bool report : 1 = true;         // the result goes back to the scheduler, not just the fact
  bool checkpoint : 1 = false;    // the result goes back to the scheduler to be stored, whatever `report`
  bool chained : 1 = false;       // a continuation of a job in the pool: it may run there (see start_ready)
  std::uint16_t missing = 0;      // inputs still expected, once assigned
  Value result;                   // written by the compute thread that ran the task; then in the store
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

// An input that could not be read back for a task: its record was damaged, or it is gone.
struct LostArgument {
  std::uint32_t slot;
  std::uint16_t column;
  ChunkKey key;
};

// What a compute job reports back: which slots finished, which threw, and which could not start because
// an input was lost (they wait for it again).
struct RanReport {
  std::vector<std::uint32_t> finished;  // in the order they ran: a continuation after its producer
  std::vector<std::uint32_t> chained;   // the job's continuations, run or not: no longer reserved
  std::vector<TaskFailure> failures;    // TaskFailure::task holds the slot here
  std::vector<LostArgument> lost;
  double seconds = 0;
  double finished_at = 0;              // timeline_now() when it ended, for the dashboard's task stream
  std::shared_ptr<void> results_held;  // the results' bytes, counted by the pool until this report ends
};

struct InputLost : std::runtime_error {
  InputLost(std::uint16_t column, ChunkKey key, const std::string& why)
      : std::runtime_error(why), column(column), key(key) {}
  std::uint16_t column;
  ChunkKey key;
};

ChunkKey result_key(OpId op, std::uint32_t slot) {
  return ChunkKey{op, slot, kResultPart};
}

}  // namespace tessera

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tessera::RanReport)

namespace tessera {
namespace {

// A compute job should take about this long, so that tiny tasks share one job's overhead.
constexpr double kTargetJobSeconds = 50e-6;
constexpr std::size_t kMaxJobTasks = 4096;
// A compute thread runs a finished task's continuations (see start_ready) while its job has run for less
// than this: long enough that a chain of tiny tasks pays one round trip through this actor and the
// scheduler per thousands of steps, short enough that results of longer tasks are still reported promptly.
constexpr double kContinuationSeconds = 1e-3;

struct OperationState {
  OperationActorArgs args;
  std::shared_ptr<SlotTable> slots = std::make_shared<SlotTable>();
  std::vector<std::uint32_t> ready;
  // Slots handed to the compute pool, oldest first; the pool takes jobs in this order, so the back
  // holds the tasks least likely to have started (what a steal takes).
  std::deque<std::uint32_t> queued;
  double average_task_seconds = -1;  // unknown until the first job reports
  std::int64_t held_count = 0, held_bytes = 0;
  std::int64_t inline_bytes = 0;  // of results kept in their slots, counted by the store
  // The largest result a task of this operation left here: what a compute job reserves per task for its
  // result (0 until one finished).
  std::uint64_t largest_result = 0;

  ~OperationState() {
    auto& held = HeldResults::instance();
    held.count -= held_count;
    held.bytes -= held_bytes;
    if (!args.store) return;
    args.store->count_inline(-inline_bytes);
    if (args.store->erase_operation(args.op->id())) caf::anon_send(args.store_actor, spill_atom::value);
  }

  OpId id() const { return args.op->id(); }

  // Tells the store actor when memory passed the target or records on disk were let go.
  void store_work(bool wanted) {
    if (wanted) caf::anon_send(args.store_actor, spill_atom::value);
  }

  // Lets go of the input copies a slot held (not its producers' results: those are theirs).
  void release_inputs(std::uint32_t index, Slot& s) {
    if (!s.extra) return;
    bool disk = false;
    for (auto& input : s.extra->inputs)
      if (input.stored && input.key.op == id() && input.key.slot == index)
        disk |= args.store->erase(input.key);
    store_work(disk);
  }

  Slot& slot(std::uint32_t index) {
    while (slots->size() <= index) slots->emplace_back();
    return (*slots)[index];
  }

  // Keeps a finished slot's result: a small one in the slot (counted by the store, never spilled), a
  // larger one in the chunk store.
  void keep_result(std::uint32_t index, Slot& s, Value result) {
    s.holds_result = true;
    const auto bytes = static_cast<std::int64_t>(result.payload_bytes());
    held_count += 1;
    held_bytes += bytes;
    HeldResults::instance().count += 1;
    HeldResults::instance().bytes += bytes;
    largest_result = std::max(largest_result, static_cast<std::uint64_t>(bytes));
    if (bytes < static_cast<std::int64_t>(kInlineBytes)) {
      if (bytes > 0) args.store->count_inline(bytes);  // scalars are free: no shared counter touched
      inline_bytes += bytes;
      s.stored = false;
      s.result = std::move(result);
      return;
    }
    s.stored = true;
    s.result = Value{};
    store_work(args.store->put(result_key(id(), index), std::move(result)));
  }

  void drop_result(std::uint32_t index, Slot& s) {
    if (s.holds_result) {
      const auto bytes = static_cast<std::int64_t>(s.stored ? args.store->bytes(result_key(id(), index))
                                                            : s.result.payload_bytes());
      held_count -= 1;
      held_bytes -= bytes;
      HeldResults::instance().count -= 1;
      HeldResults::instance().bytes -= bytes;
      s.holds_result = false;
      if (s.stored) {
        store_work(args.store->erase(result_key(id(), index)));
      } else {
        if (bytes > 0) args.store->count_inline(-bytes);
        inline_bytes -= bytes;
      }
      s.stored = false;
    }
    release_inputs(index, s);
    s.result = Value{};
    s.extra.reset();
  }
};

using OperationActor = protocols::operation_actor_type::stateful_base<OperationState>;

void mark_ready(OperationState& st, std::uint32_t index, Slot& s) {
  if (try_move_slot<SlotState::waiting, SlotState::ready>(s.state)) st.ready.push_back(index);
}

// An input (or, for an adopt slot, the whole result) arrives for one slot.
void accept_input(OperationActor* self, std::uint32_t index, std::uint16_t column, InputDelivery& delivery);

using Outgoing = std::unordered_map<std::uint32_t, InputBatch>;  // by destination worker id

// Sends the result of slot `from` to one destination: on this worker, as a reference into the chunk
// store; to another worker, as its value (`result`, or read from the store when not at hand).
void send_result(OperationActor* self, std::uint32_t from, const Value* result, const Destination& to,
                 Outgoing& outgoing) {
  auto& st = self->state;
  const Slot& s = (*st.slots)[from];
  if (!s.stored) result = &s.result;  // small: the value itself, wherever it goes
  if (s.stored && to.worker == st.args.worker_id && to.column != kAdoptColumn) {
    InputDelivery delivery{to.op, to.slot, to.column, Value{}, true, st.id(), from};
    if (to.op == st.id()) {
      accept_input(self, to.slot, to.column, delivery);  // same operation on this worker: no message
    } else {
      outgoing[to.worker].inputs.push_back(std::move(delivery));
    }
    return;
  }
  Value value;
  if (result) {
    value = *result;
  } else {
    try {
      value = st.args.store->peek(result_key(st.id(), from));
    } catch (const std::exception& e) {
      std::cerr << "[tessera] " << st.args.store->name() << ": cannot send the result of task "
                << st.args.op->key(s.task) << ": " << e.what() << std::endl;
      return;
    }
  }
  InputDelivery delivery{to.op, to.slot, to.column, std::move(value)};
  if (to.op == st.id() && to.worker == st.args.worker_id) {
    accept_input(self, to.slot, to.column, delivery);
  } else {
    outgoing[to.worker].inputs.push_back(std::move(delivery));
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

void accept_input(OperationActor* self, std::uint32_t index, std::uint16_t column, InputDelivery& delivery) {
  auto& st = self->state;
  Slot& s = st.slot(index);
  if (is_final(s.state.load())) return;
  if (column == kAdoptColumn) {
    // A result moved here from a retiring worker: it is done without running.
    Value value = std::move(delivery.value);
    if (!move_slot<SlotState::done, SlotState::waiting, SlotState::ready>(
            s.state, st.args.op->function().name, s.task))
      return;
    st.keep_result(index, s, value);
    if (s.extra && !s.extra->subscribers.empty()) {
      Outgoing outgoing;
      for (const auto& to : s.extra->subscribers) send_result(self, index, &value, to, outgoing);
      s.extra->subscribers.clear();
      flush_outgoing(self, outgoing);
    }
    return;
  }
  // Running (as a continuation, the input it waited for came straight from its producer; otherwise with
  // every input here): a copy sent again is not taken while a compute thread reads them.
  if (s.state.load() == SlotState::running) return;
  auto& extra = s.more();
  if (column >= st.args.op->columns().size()) return;  // not an argument of this operation
  if (extra.inputs.size() <= column) {
    extra.inputs.resize(st.args.op->columns().size());
    extra.arrived.resize(st.args.op->columns().size());
  }
  Input& input = extra.inputs[column];
  // Sent again by a recomputed producer: taken only when the copy held here was lost.
  if (extra.arrived[column] && !(input.stored && !st.args.store->contains(input.key))) return;
  const bool again = extra.arrived[column];
  extra.arrived[column] = true;
  if (delivery.held) {
    input.key = result_key(delivery.held_op, delivery.held_slot);
    input.stored = true;
  } else if (delivery.value.payload_bytes() >= kInlineBytes) {
    // A copy from another worker: held, counted and spilled like a result of this worker.
    input.key = ChunkKey{st.id(), index, column};
    input.stored = true;
    st.store_work(st.args.store->put(input.key, std::move(delivery.value)));
  } else {
    input = Input{std::move(delivery.value)};
  }
  if (again) return;  // counted when it first arrived
  if (!s.assigned) {
    ++extra.received;
  } else if (--s.missing == 0) {
    mark_ready(st, index, s);
  }
}

// The arguments of one task: its literals and the inputs that arrived (read from the chunk store, from
// disk if they were spilled, and pinned there: `pinned` gets their keys, to unpin once the task ended).
// Throws what the store throws for an input it cannot give back.
void gather_arguments(const Operation& op, ChunkStore& store, const Slot& s, std::vector<Value>& arguments,
                      std::vector<ChunkKey>& pinned) {
  const std::size_t arity = op.columns().size();
  arguments.resize(arity);
  for (std::size_t j = 0; j < arity; ++j) {
    if (const Value* literal = op.columns()[j].literal(s.task)) {
      arguments[j] = *literal;
    } else if (const Input& input = s.extra->inputs[j]; input.stored) {
      try {
        arguments[j] = store.get_pinned(input.key);
        pinned.push_back(input.key);
      } catch (const ChunkLost& e) {
        throw InputLost(static_cast<std::uint16_t>(j), input.key, e.what());
      } catch (const std::out_of_range& e) {  // its producer's record was lost by another consumer's read
        throw InputLost(static_cast<std::uint16_t>(j), input.key, e.what());
      }
    } else {
      arguments[j] = input.value;
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
  job.enqueue = [op, slots = st.slots, store = st.args.store, target, start, ran] {
    *start = std::chrono::steady_clock::now();
    if (!try_move_slot<SlotState::ready, SlotState::running>(target->state)) return;  // cancelled meanwhile
    std::vector<Value> arguments;
    std::vector<ChunkKey> pinned;
    struct Unpin {
      ChunkStore& store;
      std::vector<ChunkKey>& keys;
      ~Unpin() {
        for (const auto& key : keys) store.unpin(key);
      }
    } unpin{*store, pinned};
    gather_arguments(*op, *store, *target, arguments, pinned);
    target->result = op->function().invoke(arguments);
    *ran = true;
  };
  job.done = [me, index, start, ran] {
    RanReport report;
    if (*ran) report.finished.push_back(index);
    report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - *start).count();
    report.finished_at = timeline_now();
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
    report.finished_at = timeline_now();
    caf::anon_send(me, ran_atom::value, std::move(report));
  };
  self->send(st.args.gpu, gpu_run_atom::value, std::move(job));
}

// One task of a compute job: a ready slot (after < 0), or a continuation of the job's step `after`, whose
// result is its argument `column`.
struct JobStep {
  Slot* slot;
  std::uint32_t index;
  std::int32_t after;
  std::uint16_t column;
  std::uint64_t input_bytes = 0;  // of its inputs held in the chunk store (set on a limited worker)
};

// The bytes of a slot's inputs held in the chunk store, in memory or spilled (not the column a
// continuation takes from its producer in the same job; a spilled one is read back into the buffer it is
// decoded in, so it takes its own size). `keys` gets their keys.
std::uint64_t stored_input_bytes(const OperationState& st, const Slot& s, std::int32_t after,
                                 std::uint16_t chained_column, std::vector<ChunkKey>& keys) {
  std::uint64_t total = 0;
  if (!s.extra) return total;
  for (std::size_t j = 0; j < s.extra->inputs.size(); ++j) {
    const Input& input = s.extra->inputs[j];
    if (!input.stored || (after >= 0 && j == chained_column)) continue;
    total += st.args.store->bytes(input.key);
    keys.push_back(input.key);
  }
  return total;
}

// A job's largest result, told to the pool as the job ends, before its results reach the store: a job of
// unknown result size admitted in between reserved the size seen before (a warm-up's 2 MB), and a third
// 125 MiB chunk started under a 256 MiB limit.
void note_result_size(const std::weak_ptr<ComputePool>& pool, std::uint64_t bytes) {
  if (auto p = pool.lock()) p->note_value_bytes(bytes);
}

// Why a task cannot run on this worker at all: its inputs alone exceed the worker's memory limit.
std::string too_large_for_memory(const ChunkStore& store, std::uint64_t input_bytes) {
  char text[320];
  std::snprintf(text, sizeof text,
                " cannot run it: its inputs take %.1f MiB in memory at once, more than the worker's memory "
                "limit of %.1f MiB; raise worker.memory_limit or use smaller chunks",
                static_cast<double>(input_bytes) / (1 << 20),
                static_cast<double>(store.options().limit) / (1 << 20));
  return store.name() + text;
}

// Continuations: a task of this operation on this worker that waits only for the result of the job's
// last step runs right after it on the same compute thread, with that result as its argument, and so on
// down the chain (up to kMaxJobTasks): a chain of dependent tasks then costs no trip through this actor's
// mailbox per step. Each is reserved (`chained`) until the job reports; one the job did not get to (its
// producer failed, it was cancelled, or the job ran past kContinuationSeconds) takes its input the usual
// way when the report comes.
void add_continuations(OperationState& st, std::vector<JobStep>& steps, std::vector<std::uint32_t>& chained) {
  const std::size_t arity = st.args.op->columns().size();
  for (std::size_t n = 0; n < kMaxJobTasks; ++n) {
    const JobStep& last = steps.back();
    const Slot& from = *last.slot;
    if (!from.extra) return;
    const Destination* next = nullptr;
    for (const auto& to : from.extra->subscribers) {
      if (to.worker != st.args.worker_id || to.op != st.id() || to.column >= arity ||
          to.slot >= st.slots->size())
        continue;
      const Slot& candidate = (*st.slots)[to.slot];
      if (!candidate.assigned || candidate.adopt || candidate.chained || candidate.missing != 1 ||
          candidate.state.load() != SlotState::waiting)
        continue;
      if (candidate.extra && candidate.extra->arrived.size() > to.column &&
          candidate.extra->arrived[to.column])
        continue;
      if (runs_on_gpu(st, candidate)) continue;
      next = &to;
      break;
    }
    if (!next) return;
    Slot& slot = (*st.slots)[next->slot];
    // Its extra exists before the compute thread reads it, so the actor never creates it meanwhile.
    auto& extra = slot.more();
    if (extra.inputs.size() < arity) {
      extra.inputs.resize(arity);
      extra.arrived.resize(arity);
    }
    slot.chained = true;
    chained.push_back(next->slot);
    steps.push_back(JobStep{&slot, next->slot, static_cast<std::int32_t>(steps.size() - 1), next->column});
  }
}

// A compute job of a function that runs calls together (TaskFunction::invoke_batch: Python's, one message
// to an interpreter for the whole job), without continuations: every task's arguments first, then one call.
void run_batch(const Operation& op, ChunkStore& store, const std::weak_ptr<ComputePool>& pool,
               const std::vector<JobStep>& steps, std::vector<std::uint32_t> chained, const caf::actor& me) {
  const TaskFunction& fn = op.function();
  RanReport report;
  report.finished.reserve(steps.size());
  report.chained = std::move(chained);
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::vector<Value>> calls;
  std::vector<std::size_t> called;  // the step of each call
  calls.reserve(steps.size());
  called.reserve(steps.size());
  std::vector<Value> arguments;
  std::vector<ChunkKey> pinned;
  const std::uint64_t limit = store.options().limit;
  std::uint64_t result_bytes = 0, largest_result = 0;
  for (std::size_t k = 0; k < steps.size(); ++k) {
    Slot& s = *steps[k].slot;
    if (!try_move_slot<SlotState::ready, SlotState::running>(s.state)) continue;  // cancelled meanwhile
    try {
      if (auto refusal = store.refusal()) throw std::runtime_error(*refusal);
      if (limit > 0 && steps[k].input_bytes > limit)
        throw std::runtime_error(too_large_for_memory(store, steps[k].input_bytes));
      gather_arguments(op, store, s, arguments, pinned);
      calls.push_back(std::move(arguments));
      called.push_back(k);
    } catch (const InputLost& lost) {
      report.lost.push_back(LostArgument{steps[k].index, lost.column, lost.key});
    } catch (const std::exception& e) {
      report.failures.push_back(TaskFailure{
          steps[k].index, std::make_shared<TaskFailed>(fn.name, op.key(s.task), e.what(), false)});
    }
    arguments.clear();
  }
  if (!calls.empty()) {
    std::vector<TaskFunction::CallOutcome> outcomes;
    std::string none_ran;
    try {
      outcomes = fn.invoke_batch(calls);
      if (outcomes.size() != calls.size())
        none_ran = "its function answered " + std::to_string(outcomes.size()) + " of " +
                   std::to_string(calls.size()) + " calls";
    } catch (const std::exception& e) {
      none_ran = e.what();
    }
    for (std::size_t i = 0; i < calls.size(); ++i) {
      const JobStep& step = steps[called[i]];
      Slot& s = *step.slot;
      if (none_ran.empty() && !outcomes[i].failed) {
        s.result = std::move(outcomes[i].value);
        result_bytes += s.result.payload_bytes();
        largest_result = std::max(largest_result, s.result.payload_bytes());
        report.finished.push_back(step.index);
      } else {
        report.failures.push_back(TaskFailure{
            step.index,
            std::make_shared<TaskFailed>(fn.name, op.key(s.task),
                                         none_ran.empty() ? outcomes[i].error : none_ran, false)});
      }
    }
  }
  calls.clear();
  for (const auto& key : pinned) store.unpin(key);
  if (limit > 0) {
    note_result_size(pool, largest_result);
    report.results_held = ComputePool::hand_over(pool, result_bytes);
  }
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  report.finished_at = timeline_now();
  caf::anon_send(me, ran_atom::value, std::move(report));
}

// A compute job, on a pool thread: its ready tasks, each followed by the continuations that still may run.
void run_job(const Operation& op, ChunkStore& store, const std::weak_ptr<ComputePool>& pool,
             const std::vector<JobStep>& steps, std::vector<std::uint32_t> chained, const caf::actor& me) {
  const TaskFunction& fn = op.function();
  if (fn.invoke_batch && steps.size() > 1 &&
      std::none_of(steps.begin(), steps.end(), [](const JobStep& step) { return step.after >= 0; }))
    return run_batch(op, store, pool, steps, std::move(chained), me);
  thread_local std::vector<Value> arguments;
  thread_local std::vector<ChunkKey> pinned;
  thread_local std::vector<char> succeeded;
  const std::uint64_t limit = store.options().limit;
  succeeded.assign(steps.size(), 0);
  RanReport report;
  report.finished.reserve(steps.size());
  report.chained = std::move(chained);
  const auto start = std::chrono::steady_clock::now();
  const auto budget = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(kContinuationSeconds));
  for (std::size_t k = 0; k < steps.size(); ++k) {
    const JobStep& step = steps[k];
    Slot& s = *step.slot;
    const bool continuation = step.after >= 0;
    if (continuation && (!succeeded[static_cast<std::size_t>(step.after)] ||
                         std::chrono::steady_clock::now() - start > budget))
      continue;  // left for the actor: its input goes there with the report
    const bool started = continuation ? try_move_slot<SlotState::waiting, SlotState::running>(s.state)
                                      : try_move_slot<SlotState::ready, SlotState::running>(s.state);
    if (!started) continue;  // cancelled meanwhile
    try {
      // Memory above the pause fraction with nowhere to spill: failing now beats waiting for ever.
      if (auto refusal = store.refusal()) throw std::runtime_error(*refusal);
      // Never an allocation that could only end in the worker's OOM kill: the task fails, named.
      if (limit > 0 && step.input_bytes > limit)
        throw std::runtime_error(too_large_for_memory(store, step.input_bytes));
      if (continuation) {
        // Its input, as if it had arrived (the actor leaves a running slot's inputs alone): should another
        // input be lost, the task waits for that one only.
        s.extra->inputs[step.column] = Input{steps[static_cast<std::size_t>(step.after)].slot->result};
        s.extra->arrived[step.column] = true;
      }
      gather_arguments(op, store, s, arguments, pinned);
      s.result = fn.invoke(arguments);
      report.finished.push_back(step.index);
      succeeded[k] = 1;
    } catch (const InputLost& lost) {
      report.lost.push_back(LostArgument{step.index, lost.column, lost.key});
    } catch (const FusedStepFailed& e) {
      report.failures.push_back(TaskFailure{
          step.index, e.in_last_step()
                          ? std::make_shared<TaskFailed>(e.function(), op.key(s.task), e.what(), false)
                          : std::make_shared<TaskFailed>(e.last_function(), op.key(s.task),
                                                         "its dependency (" + e.function() +
                                                             ", fused into this task) failed: " + e.what(),
                                                         true)});
    } catch (const std::exception& e) {
      report.failures.push_back(
          TaskFailure{step.index, std::make_shared<TaskFailed>(fn.name, op.key(s.task), e.what(), false)});
    } catch (...) {
      report.failures.push_back(TaskFailure{
          step.index, std::make_shared<TaskFailed>(fn.name, op.key(s.task), "unknown exception", false)});
    }
    // (Not by arity: a task refused before its arguments were gathered leaves them unsized.)
    for (auto& argument : arguments) argument = Value{};
    for (const auto& key : pinned) store.unpin(key);
    pinned.clear();
  }
  if (limit > 0) {
    std::uint64_t result_bytes = 0, largest_result = 0;
    for (std::size_t k = 0; k < steps.size(); ++k)
      if (succeeded[k]) {
        result_bytes += steps[k].slot->result.payload_bytes();
        largest_result = std::max(largest_result, steps[k].slot->result.payload_bytes());
      }
    note_result_size(pool, largest_result);
    report.results_held = ComputePool::hand_over(pool, result_bytes);
  }
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  report.finished_at = timeline_now();
  caf::anon_send(me, ran_atom::value, std::move(report));
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
  const auto store = st.args.store;
  const bool limited = store->options().limit > 0;
  const caf::actor me = caf::actor_cast<caf::actor>(self);
  for (std::size_t begin = 0; begin < st.ready.size(); begin += per_job) {
    const std::size_t end = std::min(st.ready.size(), begin + per_job);
    st.queued.insert(st.queued.end(), st.ready.begin() + begin, st.ready.begin() + end);
    std::vector<JobStep> steps;
    steps.reserve(end - begin);
    std::vector<std::uint32_t> chained;
    for (std::size_t k = begin; k < end; ++k) {
      const std::uint32_t index = st.ready[k];
      steps.push_back(JobStep{&(*slots)[index], index, -1, kAdoptColumn});
      add_continuations(st, steps, chained);
    }
    // A limited worker's job reserves its largest task's inputs (its tasks run one after another) and
    // every task's result (held until the job reports).
    std::uint64_t reserve = 0, unknown_results = 0;
    std::vector<ChunkKey> input_keys;
    if (limited) {
      std::uint64_t largest_inputs = 0;
      for (auto& step : steps) {
        step.input_bytes = stored_input_bytes(st, *step.slot, step.after, step.column, input_keys);
        largest_inputs = std::max(largest_inputs, step.input_bytes);
      }
      // Before this operation has left a result here, its result is taken to be as large as its inputs
      // (an elementwise task's is), or, without stored inputs, as the largest value the store took when
      // the job starts (the pool's unknown results): the first tasks of y = f(x) reserved nothing for
      // their results, one chunk each beyond the budget.
      if (st.largest_result > 0 || largest_inputs > 0) {
        reserve =
            largest_inputs + (st.largest_result > 0 ? st.largest_result : largest_inputs) * steps.size();
      } else {
        unknown_results = steps.size();
      }
    }
    st.args.pool->submit(
        [op, slots, store, me, pool = std::weak_ptr<ComputePool>(st.args.pool), steps = std::move(steps),
         chained = std::move(chained)]() mutable {
          run_job(*op, *store, pool, steps, std::move(chained), me);
        },
        reserve, unknown_results);
    // Spilled inputs are read back by the store actor while the job waits, where memory has room, so
    // that the compute thread does not wait on the disk.
    if (!input_keys.empty()) st.store_work(store->read_ahead(input_keys));
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
    if (try_move_slot<SlotState::ready, SlotState::withdrawn>(s.state)) {
      st.release_inputs(index, s);
      s.extra.reset();
      stolen.tasks.push_back(s.task);
    }
  }
  self->send(st.args.scheduler, stolen_atom::value, std::move(stolen));
}

// Tasks whose input could not be read back wait for it again; the scheduler has it computed again (or
// sent again by the worker holding it). An input that was replaced meanwhile lets the task run now.
void wait_for_lost_inputs(OperationActor* self, const std::vector<LostArgument>& lost) {
  if (lost.empty()) return;
  auto& st = self->state;
  LostInputs report{st.args.worker_id, {}};
  for (const auto& l : lost) {
    Slot& s = (*st.slots)[l.slot];
    if (!move_slot<SlotState::waiting, SlotState::running>(s.state, st.args.op->function().name, s.task))
      continue;
    Input& input = s.extra->inputs[l.column];
    if (!(input.key == l.key)) {
      mark_ready(st, l.slot, s);
      continue;
    }
    std::cerr << "[tessera] " << st.args.store->name() << ": task " << st.args.op->key(s.task)
              << " waits for input " << l.column << " again: it could not be read back" << std::endl;
    s.extra->arrived[l.column] = false;
    input = Input{};
    s.missing = 1;
    if (const TaskRef* producer = st.args.op->columns()[l.column].reference(s.task))
      report.inputs.push_back(
          LostInput{*producer, Destination{st.args.worker_id, st.id(), l.slot, l.column}});
  }
  if (!report.inputs.empty()) self->send(st.args.scheduler, results_lost_atom::value, std::move(report));
}

// One finished task in the scheduler's report: its value when someone watches it (unless it is large and
// stays here, held), and whenever it is to be stored as a checkpoint.
void add_to_report(DoneBatch& done, const Slot& s, const Value& result, bool keeps_large_results) {
  done.tasks.push_back(s.task);
  if (s.report && keeps_large_results && result.payload_bytes() >= kHeldResultBytes) {
    // Stays here, spillable, until a client asks for it: what the client holds is not unbounded memory.
    done.held.push_back(static_cast<std::uint32_t>(done.tasks.size() - 1));
    done.results.push_back(s.checkpoint ? result : Value{});
  } else {
    done.results.push_back(s.report || s.checkpoint ? result : Value{});
  }
}

bool keeps_large_results(const OperationState& st) {
  return st.args.store->options().limit > 0 && !st.args.op->function().always_delivered;
}

// A run read from checkpoints: each slot takes its stored value as its result, as an adopt slot takes a
// moved one, and the scheduler hears they finished (no task ran).
void take_restored(OperationActor* self, const AssignRun& run) {
  auto& st = self->state;
  DoneBatch done;
  done.worker = st.args.worker_id;
  done.op = st.args.op->id();
  const bool keeps_large = keeps_large_results(st);
  for (std::uint32_t k = 0; k < run.count && k < run.restored.size(); ++k) {
    const std::uint32_t index = run.first_slot + k;
    Slot& s = st.slot(index);
    if (is_final(s.state.load())) continue;
    InputDelivery delivery{st.id(), index, kAdoptColumn, run.restored[k]};
    accept_input(self, index, kAdoptColumn, delivery);
    add_to_report(done, s, run.restored[k], keeps_large);
  }
  self->send(st.args.scheduler, done_atom::value, std::move(done));
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
  for (auto index : report.chained) (*st.slots)[index].chained = false;
  DoneBatch done;
  done.worker = st.args.worker_id;
  done.op = st.args.op->id();
  done.busy_seconds = report.seconds;
  done.finished_at = report.finished_at;
  done.ran = static_cast<std::uint32_t>(ran);
  done.tasks.reserve(report.finished.size());
  done.results.reserve(report.finished.size());
  const bool keeps_large = keeps_large_results(st);
  Outgoing outgoing;
  for (auto index : report.finished) {
    Slot& s = (*st.slots)[index];
    if (!move_slot<SlotState::done, SlotState::running>(s.state, st.args.op->function().name, s.task))
      continue;
    Value result = std::move(s.result);
    add_to_report(done, s, result, keeps_large);
    st.release_inputs(index, s);
    if (s.extra) {
      s.extra->inputs.clear();
      s.extra->inputs.shrink_to_fit();
    }
    // In the store before any local consumer can ask for it.
    const bool subscribed = s.extra && !s.extra->subscribers.empty();
    st.keep_result(index, s, subscribed ? result : std::move(result));
    if (subscribed) {
      for (const auto& to : s.extra->subscribers) send_result(self, index, &result, to, outgoing);
      s.extra->subscribers.clear();
    }
  }
  for (auto& failure : report.failures) {
    Slot& s = (*st.slots)[failure.task];
    if (!move_slot<SlotState::failed, SlotState::running>(s.state, st.args.op->function().name, s.task))
      continue;
    s.result = Value{};
    st.release_inputs(failure.task, s);
    s.extra.reset();
    done.failures.push_back(TaskFailure{s.task, std::move(failure.error)});
  }
  flush_outgoing(self, outgoing);
  self->send(st.args.scheduler, done_atom::value, std::move(done));
  wait_for_lost_inputs(self, report.lost);
}

protocols::operation_actor_type::behavior_type operation_actor(OperationActor* self,
                                                               OperationActorArgs args) {
  self->state.args = std::move(args);  // the worker monitors it and ends it when it ends
  survive_stray_errors(self, "operation actor");
  return {
      [=](assign_atom, const AssignRun& run) {
        auto& st = self->state;
        for (std::uint32_t k = 0; k < run.count; ++k) {
          const std::uint32_t index = run.first_slot + k;
          Slot& s = st.slot(index);
          s.task = run.first_task + k;
          s.assigned = true;
          s.report = run.report;
          s.checkpoint = run.checkpoint;
          if (run.adopt || !run.restored.empty()) {
            s.adopt = true;
            continue;
          }
          const std::uint32_t refs = st.args.op->reference_count(s.task);
          s.missing = static_cast<std::uint16_t>(refs - (s.extra ? s.extra->received : 0));
          if (s.missing == 0) mark_ready(st, index, s);
        }
        if (!run.restored.empty()) take_restored(self, run);
        start_ready(self);
      },
      [=](input_atom, InputBatch& batch) {
        for (auto& input : batch.inputs) accept_input(self, input.slot, input.column, input);
        start_ready(self);
      },
      [=](subscribe_atom, SubscribeBatch& batch) {
        auto& st = self->state;
        Outgoing outgoing;
        // Spilled results read back to go to another worker wait while the transport still holds more
        // than a budget of results not yet sent: reading them all at once would undo the spilling.
        SubscribeBatch later;
        const auto limit = static_cast<std::int64_t>(st.args.store->options().limit);
        const std::int64_t budget = std::max<std::int64_t>(4 << 20, limit / 8);
        std::int64_t loaded = 0;
        for (auto& sub : batch.subscriptions) {
          Slot& s = st.slot(sub.slot);
          const SlotState state = s.state.load();
          if (state == SlotState::done) {
            if (!s.holds_result) continue;
            const auto key = result_key(st.id(), sub.slot);
            // Not a hand-over to another worker (kAdoptColumn): a retiring worker is shut down right after
            // its subscriptions, so those go now.
            const bool away = sub.to.worker != st.args.worker_id && sub.to.column != kAdoptColumn;
            if (limit > 0 && away && s.stored && !st.args.store->in_memory(key)) {
              const auto queued = outgoing_bytes().load(std::memory_order_relaxed);
              if (queued > budget || (loaded > 0 && queued + loaded > budget)) {
                later.subscriptions.push_back(std::move(sub));
                continue;
              }
              loaded += static_cast<std::int64_t>(st.args.store->bytes(key));
            }
            send_result(self, sub.slot, nullptr, sub.to, outgoing);
          } else if (!is_final(state)) {
            s.more().subscribers.push_back(std::move(sub.to));
          }  // failed or withdrawn: the scheduler cancels the subscriber itself
        }
        flush_outgoing(self, outgoing);
        if (!later.subscriptions.empty())
          self->delayed_send(self, std::chrono::milliseconds(1), subscribe_atom::value, std::move(later));
        start_ready(self);
      },
      [=](drop_atom, const SlotBatch& batch) {
        auto& st = self->state;
        for (auto index : batch.slots)
          if (index < st.slots->size() && (*st.slots)[index].state.load() == SlotState::done)
            st.drop_result(index, (*st.slots)[index]);
      },
      [=](cancel_slots_atom, const SlotBatch& batch) {
        auto& st = self->state;
        for (auto index : batch.slots) {
          Slot& s = st.slot(index);
          if (try_move_slot<SlotState::waiting, SlotState::withdrawn>(s.state) ||
              try_move_slot<SlotState::ready, SlotState::withdrawn>(s.state)) {
            st.release_inputs(index, s);
            s.extra.reset();
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
          const bool held = index < st.slots->size() && (*st.slots)[index].state.load() == SlotState::done &&
                            (*st.slots)[index].holds_result;
          Value value;
          if (held && !(*st.slots)[index].stored) {
            value = (*st.slots)[index].result;
          } else if (held) {
            try {
              value = st.args.store->peek(result_key(st.id(), index));
            } catch (const std::exception& e) {
              std::cerr << "[tessera] " << st.args.store->name()
                        << ": cannot read a held result: " << e.what() << std::endl;
            }
          }
          out.push_back(std::move(value));
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

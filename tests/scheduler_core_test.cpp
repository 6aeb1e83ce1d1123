// The scheduler's state machine driven directly, without actors or threads: each test feeds it what
// clients and workers would say and reads the outbox it answers with. Linked without CAF.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <optional>

#include "graph/registry.hpp"
#include "scheduling/scheduler_core.hpp"

namespace {

using namespace tessera;
using namespace tessera::scheduling;

std::int64_t core_identity(std::int64_t x) {
  return x;
}
TESSERA_TASK(core_identity);

std::int64_t core_add(std::int64_t a, std::int64_t b) {
  return a + b;
}
TESSERA_TASK(core_add);

const TaskFunction& identity_function() {
  return *Registry::global().find("core_identity");
}

// n independent tasks.
OperationPtr independent(std::uint32_t n) {
  std::vector<Value> values;
  for (std::uint32_t i = 0; i < n; ++i) values.push_back(Value(static_cast<std::int64_t>(i)));
  return std::make_shared<Operation>(identity_function(), n, std::vector<Column>{Column::per_task(values)});
}

// Task i reads task i of `producer`.
OperationPtr consumer_of(const OperationPtr& producer) {
  std::vector<Arg> args;
  for (std::uint32_t i = 0; i < producer->size(); ++i) args.push_back(TaskRef{producer->id(), i});
  return std::make_shared<Operation>(identity_function(), producer->size(),
                                     std::vector<Column>{Column::per_task(std::move(args))});
}

// The core never looks inside a result table: a tag stands in for one, so its deliveries can be read.
struct TableTag {
  int unused = 0;
};
std::shared_ptr<ResultSink> table() {
  auto tag = std::make_shared<TableTag>();
  return std::shared_ptr<ResultSink>(tag, reinterpret_cast<ResultSink*>(tag.get()));
}

Submission watching(std::vector<OperationPtr> ops, const OperationPtr& watched,
                    const std::shared_ptr<ResultSink>& sink) {
  return Submission{std::move(ops), {Watch{watched->id(), 0, watched->size(), 0}}, sink};
}

template <class Message>
std::vector<Message> messages_to(const Outbox& out, std::uint32_t worker) {
  std::vector<Message> found;
  for (const auto& [to, message] : out.to_workers)
    if (to == worker)
      if (const auto* m = std::get_if<Message>(&message)) found.push_back(*m);
  return found;
}

// The tasks of `op` an outbox assigns to `worker` (not adoptions).
std::vector<std::uint32_t> assigned(const Outbox& out, std::uint32_t worker, const OperationPtr& op) {
  std::vector<std::uint32_t> tasks;
  for (const auto& batch : messages_to<AssignBatch>(out, worker))
    for (const auto& run : batch.runs)
      if (run.op == op && !run.adopt)
        for (std::uint32_t t = run.first_task; t < run.first_task + run.count; ++t) tasks.push_back(t);
  return tasks;
}

std::vector<Delivery> deliveries(const Outbox& out, const std::shared_ptr<ResultSink>& sink) {
  std::vector<Delivery> found;
  for (const auto& [to, batch] : out.deliveries)
    if (to == sink) found.insert(found.end(), batch.begin(), batch.end());
  return found;
}

DoneBatch finished(std::uint32_t worker, const OperationPtr& op, std::vector<std::uint32_t> tasks) {
  DoneBatch batch{worker, op->id(), tasks, {}, {}, 0.001, static_cast<std::uint32_t>(tasks.size())};
  for (auto t : tasks) batch.results.push_back(Value(static_cast<std::int64_t>(t)));
  return batch;
}

// A one-task producer and its consumer, submitted together with the consumer watched.
struct Chain {
  OperationPtr producer, consumer;
  std::shared_ptr<ResultSink> sink;
};
Chain submit_chain(SchedulerCore& core) {
  Chain chain{independent(1), nullptr, table()};
  chain.consumer = consumer_of(chain.producer);
  core.submit(watching({chain.producer, chain.consumer}, chain.consumer, chain.sink));
  return chain;
}

std::uint32_t add_worker(SchedulerCore& core, std::uint32_t threads, Outbox* out = nullptr) {
  auto registered = core.register_worker(WorkerDescription{threads, "", "", "", 0});
  if (out) *out = std::move(registered.outbox);
  return registered.id;
}

TEST(SchedulerCore, PlacesTasksDeliversResultsAndForgetsReleasedOperations) {
  SchedulerCore core;
  Outbox joined;
  const auto w = add_worker(core, 2, &joined);
  EXPECT_EQ(messages_to<WelcomeWorker>(joined, w).size(), 1u);
  EXPECT_EQ(joined.workers_joined, std::vector<std::uint32_t>{w});

  auto op = independent(3);
  auto sink = table();
  auto out = core.submit(watching({op}, op, sink));
  EXPECT_EQ(assigned(out, w, op), (std::vector<std::uint32_t>{0, 1, 2}));
  for (std::uint32_t t = 0; t < 3; ++t) EXPECT_EQ(core.placement({op->id(), t}), Placement::placed);

  out = core.done(finished(w, op, {0, 1, 2}));
  const auto results = deliveries(out, sink);
  ASSERT_EQ(results.size(), 3u);
  for (const auto& d : results) {
    EXPECT_EQ(d.state, TaskState::done);
    EXPECT_EQ(d.value.as_int(), static_cast<std::int64_t>(d.slot));
  }
  EXPECT_EQ(core.placement({op->id(), 1}), Placement::finished);
  EXPECT_EQ(core.status().tasks_done, 3u);
  EXPECT_EQ(core.status().results_held, 3u);

  out = core.release(sink.get(), {0, 1, 2});
  ASSERT_EQ(messages_to<DropSlots>(out, w).size(), 1u);
  EXPECT_EQ(messages_to<DropSlots>(out, w)[0].batch.slots.size(), 3u);
  ASSERT_EQ(messages_to<ForgetOperation>(out, w).size(), 1u);
  EXPECT_FALSE(core.placement({op->id(), 0}).has_value());
  EXPECT_EQ(core.status().operations, 0u);
  EXPECT_EQ(core.status().results_held, 0u);
}

// Workers tell each other's socket files only when their host identities match (boot, user, namespaces);
// a worker of unknown host (an empty identity) is on nobody's host, and each still gets the TCP address.
// A name another live worker holds: the newcomer is NAME-ORIGIN; the same process registering again
// keeps its name; a worker found gone frees it.
TEST(SchedulerCore, AWorkerNamedLikeAnotherIsToldApartByItsProcess) {
  SchedulerCore core;
  const auto named = [&](const std::string& name, const std::string& origin) {
    WorkerDescription description{2, name};
    description.origin = origin;
    return core.register_worker(description);
  };
  const auto first = named("twin", "alpha-10");
  EXPECT_EQ(first.name, "twin");
  EXPECT_EQ(named("twin", "beta-20").name, "twin-beta-20");
  EXPECT_EQ(named("twin", "alpha-10").name, "twin") << "the same process registering again keeps its name";
  EXPECT_EQ(named("twin", "beta-20").name, "twin-beta-20");
  EXPECT_EQ(named("twin", "").name, "twin-2");
  EXPECT_EQ(core.name(first.id), "twin");
  for (std::uint32_t id = 0; id < 5; ++id) core.worker_lost(id);
  EXPECT_EQ(named("twin", "gamma-30").name, "twin") << "a lost worker's name is free again";
}

TEST(SchedulerCore, PeerNoticesCarryTheSocketFileOnlyBetweenWorkersOfOneHost) {
  SchedulerCore core;
  auto join = [&](const std::string& name, const std::string& host) {
    return core.register_worker(
        WorkerDescription{1, name, "tcp://" + name + ":1", "", 0, "ipc:///tmp/" + name + "/socket", host});
  };
  const auto a = join("a", "boot-1/1000/net:[1]/mnt:[1]").id;
  const auto b = join("b", "boot-1/1000/net:[1]/mnt:[1]");
  const auto c = join("c", "boot-2/1000/net:[1]/mnt:[1]");
  const auto d = join("d", "");
  const auto only = [](const Outbox& out, std::uint32_t to) {
    auto notices = messages_to<PeerNotice>(out, to);
    EXPECT_EQ(notices.size(), 1u);
    return notices.empty() ? PeerNotice{} : notices[0];
  };
  const auto b_to_a = only(b.outbox, a), a_to_b = only(b.outbox, b.id);
  EXPECT_EQ(b_to_a.address, "tcp://b:1");
  EXPECT_EQ(b_to_a.local_address, "ipc:///tmp/b/socket");
  EXPECT_EQ(a_to_b.local_address, "ipc:///tmp/a/socket");
  for (const auto* joined : {&c, &d}) {
    for (const auto& notice : messages_to<PeerNotice>(joined->outbox, joined->id)) {
      EXPECT_FALSE(notice.address.empty());
      EXPECT_TRUE(notice.local_address.empty()) << notice.local_address;
    }
    for (std::uint32_t other = 0; other < joined->id; ++other)
      EXPECT_TRUE(only(joined->outbox, other).local_address.empty());
  }
}

TEST(SchedulerCore, PlacesAConsumerWithItsInputAndSubscribesIt) {
  SchedulerCore core;
  const auto w0 = add_worker(core, 1);
  const auto w1 = add_worker(core, 1);
  auto producer = independent(1);
  auto consumer = consumer_of(producer);
  auto out = core.submit(watching({producer, consumer}, consumer, table()));
  const auto home = core.worker_of({producer->id(), 0});
  ASSERT_TRUE(home.has_value());
  EXPECT_EQ(core.worker_of({consumer->id(), 0}), home);
  const auto subscriptions = messages_to<SubscribeBatch>(out, *home);
  ASSERT_EQ(subscriptions.size(), 1u);
  ASSERT_EQ(subscriptions[0].subscriptions.size(), 1u);
  EXPECT_EQ(subscriptions[0].subscriptions[0].op, producer->id());
  EXPECT_EQ(subscriptions[0].subscriptions[0].to.worker, *home);
  EXPECT_EQ(subscriptions[0].subscriptions[0].to.op, consumer->id());
  EXPECT_TRUE(assigned(out, *home == w0 ? w1 : w0, consumer).empty());
}

WorkerMemory memory_of(std::uint32_t worker, bool paused, std::uint64_t in_memory, std::uint64_t on_disk) {
  WorkerMemory memory;
  memory.worker = worker;
  memory.limit = 256 << 20;
  memory.managed_bytes = in_memory;
  memory.spilled_bytes = on_disk;
  memory.paused = paused;
  return memory;
}

TEST(SchedulerCore, AWorkerPausedForMemoryGetsNoNewWorkWhileAnotherTakesWork) {
  SchedulerCore core;
  const auto paused = add_worker(core, 1);
  const auto roomy = add_worker(core, 1);
  core.memory_report(memory_of(paused, true, 250 << 20, 0));
  auto op = independent(4);
  auto out = core.submit(watching({op}, op, table()));
  EXPECT_TRUE(assigned(out, paused, op).empty());
  EXPECT_EQ(assigned(out, roomy, op), (std::vector<std::uint32_t>{0, 1, 2}));  // 1 thread x 2 + 1
  EXPECT_EQ(core.placement({op->id(), 3}), Placement::unplaced);

  // Back under its pause fraction, it takes what waited for room.
  out = core.memory_report(memory_of(paused, false, 100 << 20, 0));
  EXPECT_EQ(assigned(out, paused, op), std::vector<std::uint32_t>{3});
}

TEST(SchedulerCore, WhenEveryWorkerIsPausedForMemoryWorkIsStillPlaced) {
  SchedulerCore core;
  const auto a = add_worker(core, 1);
  const auto b = add_worker(core, 1);
  core.memory_report(memory_of(a, true, 250 << 20, 0));
  core.memory_report(memory_of(b, true, 250 << 20, 0));
  auto op = independent(2);
  core.submit(watching({op}, op, table()));
  EXPECT_EQ(core.placement({op->id(), 0}), Placement::placed);
  EXPECT_EQ(core.placement({op->id(), 1}), Placement::placed);
}

TEST(SchedulerCore, AnIdleWorkerTakesTheQueueOfAWorkerPausedForMemory) {
  SchedulerCore core;
  const auto busy = add_worker(core, 2);
  auto op = independent(2);
  core.submit(watching({op}, op, table()));
  ASSERT_EQ(core.worker_of({op->id(), 1}), busy);
  Outbox joined;
  const auto idle = add_worker(core, 2, &joined);
  EXPECT_TRUE(messages_to<StealRequest>(joined, busy).empty());  // both of its threads run one

  // Paused, it runs one task at a time: the other waits, and the idle worker asks for it.
  auto out = core.memory_report(memory_of(busy, true, 250 << 20, 0));
  const auto steals = messages_to<StealRequest>(out, busy);
  ASSERT_EQ(steals.size(), 1u);
  EXPECT_EQ(steals[0].op, op->id());
  out = core.stolen(StolenBatch{busy, op->id(), {1}});
  EXPECT_EQ(assigned(out, idle, op), std::vector<std::uint32_t>{1});
  // A report that changes nothing says nothing.
  EXPECT_TRUE(core.memory_report(memory_of(busy, true, 250 << 20, 0)).to_workers.empty());
}

TEST(SchedulerCore, ATaskGoesToTheWorkerThatReadsLeastOfItsInputs) {
  const auto placed_on = [](double spilled_share_of_first) {
    SchedulerCore core;
    const auto a = add_worker(core, 1);
    const auto b = add_worker(core, 1);
    auto first = independent(1), second = independent(1);
    core.submit(watching({first}, first, table()));
    core.submit(watching({second}, second, table()));
    EXPECT_EQ(core.worker_of({first->id(), 0}), a);
    EXPECT_EQ(core.worker_of({second->id(), 0}), b);
    core.done(finished(a, first, {0}));
    core.done(finished(b, second, {0}));
    const auto on_disk = static_cast<std::uint64_t>(spilled_share_of_first * 1000);
    core.memory_report(memory_of(a, false, 1000 - on_disk, on_disk));
    core.memory_report(memory_of(b, false, 1000, 0));
    auto sum = std::make_shared<Operation>(
        *Registry::global().find("core_add"), 1,
        std::vector<Column>{Column::per_task(std::vector<Arg>{TaskRef{first->id(), 0}}),
                            Column::per_task(std::vector<Arg>{TaskRef{second->id(), 0}})});
    core.submit(watching({sum}, sum, table()));
    return *core.worker_of({sum->id(), 0});
  };
  // Both inputs in memory: the first input's worker. Most of the first worker's results on disk: the
  // worker holding the other input in memory, which reads nothing back.
  EXPECT_EQ(placed_on(0), 0u);
  EXPECT_EQ(placed_on(0.9), 1u);
}

TEST(SchedulerCore, AnIdleWorkerStealsQueuedTasks) {
  SchedulerCore core;
  const auto busy = add_worker(core, 1);
  auto op = independent(3);
  auto out = core.submit(watching({op}, op, table()));
  ASSERT_EQ(assigned(out, busy, op).size(), 3u);  // 1 thread x 2 + 1 while nothing is known

  Outbox joined;
  const auto idle = add_worker(core, 1, &joined);
  const auto steals = messages_to<StealRequest>(joined, busy);
  ASSERT_EQ(steals.size(), 1u);
  EXPECT_EQ(steals[0].op, op->id());
  EXPECT_EQ(steals[0].most, 2u);

  out = core.stolen(StolenBatch{busy, op->id(), {1, 2}});
  // The first goes to the idle worker; then both are equally loaded and the second goes back.
  EXPECT_EQ(assigned(out, idle, op), std::vector<std::uint32_t>{1});
  EXPECT_EQ(assigned(out, busy, op), std::vector<std::uint32_t>{2});
  EXPECT_EQ(core.worker_of({op->id(), 1}), idle);
  EXPECT_EQ(core.placement({op->id(), 2}), Placement::placed);
  EXPECT_EQ(core.status().tasks_stolen, 2u);

  // A late report from the victim for a task it gave away changes nothing.
  out = core.done(finished(busy, op, {1}));
  EXPECT_EQ(core.placement({op->id(), 1}), Placement::placed);
  EXPECT_EQ(core.worker_of({op->id(), 1}), idle);
  EXPECT_EQ(core.status().tasks_done, 0u);
}

TEST(SchedulerCore, ALostWorkersTasksAndHeldResultsAreComputedAgainElsewhere) {
  SchedulerCore core;
  const auto lost = add_worker(core, 1);
  auto [producer, consumer, sink] = submit_chain(core);
  ASSERT_EQ(core.worker_of({consumer->id(), 0}), lost);
  core.done(finished(lost, producer, {0}));
  ASSERT_EQ(core.placement({producer->id(), 0}), Placement::finished);

  const auto survivor = add_worker(core, 1);
  auto out = core.worker_lost(lost);
  EXPECT_EQ(out.workers_lost, std::vector<std::uint32_t>{lost});
  EXPECT_EQ(messages_to<ShutdownWorker>(out, lost).size(), 1u);
  const auto notices = messages_to<PeerNotice>(out, survivor);
  ASSERT_EQ(notices.size(), 1u);
  EXPECT_EQ(notices[0].id, lost);
  EXPECT_TRUE(notices[0].address.empty());
  EXPECT_EQ(assigned(out, survivor, producer), std::vector<std::uint32_t>{0});
  EXPECT_EQ(assigned(out, survivor, consumer), std::vector<std::uint32_t>{0});
  EXPECT_EQ(core.worker_of({producer->id(), 0}), survivor);
  EXPECT_EQ(core.status().workers_lost, 1u);
  EXPECT_EQ(core.status().tasks_recomputed, 1u);  // the producer's result; the consumer never finished
  EXPECT_EQ(core.status().workers, 1u);

  // Nothing more goes to the lost worker, and its late report is ignored.
  out = core.done(finished(lost, consumer, {0}));
  EXPECT_TRUE(out.to_workers.empty() || messages_to<AssignBatch>(out, lost).empty());
  EXPECT_EQ(core.placement({consumer->id(), 0}), Placement::placed);
}

TEST(SchedulerCore, AForgottenProducerIsRevivedFromLineage) {
  SchedulerCore core;
  const auto lost = add_worker(core, 1);
  auto [producer, consumer, sink] = submit_chain(core);
  core.done(finished(lost, producer, {0}));
  auto out = core.done(finished(lost, consumer, {0}));
  // Nobody needs the producer's result any more: dropped, and its record forgotten.
  EXPECT_EQ(messages_to<ForgetOperation>(out, lost).size(), 1u);
  EXPECT_FALSE(core.placement({producer->id(), 0}).has_value());

  const auto survivor = add_worker(core, 1);
  out = core.worker_lost(lost);
  // The consumer's held result was lost: it runs again, and so does its producer, from lineage.
  EXPECT_EQ(core.placement({producer->id(), 0}), Placement::placed);
  EXPECT_EQ(core.worker_of({producer->id(), 0}), survivor);
  EXPECT_EQ(core.placement({consumer->id(), 0}), Placement::placed);
  EXPECT_EQ(assigned(out, survivor, producer), std::vector<std::uint32_t>{0});
  EXPECT_EQ(core.status().tasks_recomputed, 2u);
  out = core.done(finished(survivor, producer, {0}));
  out = core.done(finished(survivor, consumer, {0}));
  ASSERT_EQ(deliveries(out, sink).size(), 1u);
  EXPECT_EQ(deliveries(out, sink)[0].state, TaskState::done);
}

TEST(SchedulerCore, CancellingATaskCancelsWhatDependsOnIt) {
  SchedulerCore core;
  const auto w = add_worker(core, 1);
  auto [producer, consumer, sink] = submit_chain(core);
  auto out = core.cancel(CancelRequest{{TaskRef{producer->id(), 0}}});
  // Both placed on w are withdrawn there (the forgotten producer with them).
  std::size_t withdrawn = 0;
  for (const auto& c : messages_to<CancelSlots>(out, w)) withdrawn += c.batch.slots.size();
  EXPECT_EQ(withdrawn, 2u);
  EXPECT_EQ(core.placement({consumer->id(), 0}), Placement::cancelled);
  const auto told = deliveries(out, sink);
  ASSERT_EQ(told.size(), 1u);
  EXPECT_EQ(told[0].state, TaskState::cancelled);
  ASSERT_TRUE(told[0].error);
  EXPECT_NE(told[0].error->message().find("cancelled by the client"), std::string::npos);
  EXPECT_EQ(core.status().tasks_cancelled, 2u);
}

TEST(SchedulerCore, AFailureCancelsItsDependentsNamingTheCause) {
  SchedulerCore core;
  const auto w = add_worker(core, 1);
  auto [producer, consumer, sink] = submit_chain(core);
  DoneBatch failed{w, producer->id(), {}, {}, {}, 0.001, 1};
  failed.failures.push_back(
      TaskFailure{0, std::make_shared<const TaskFailed>("core_identity", producer->key(0), "boom", false)});
  auto out = core.done(failed);
  EXPECT_EQ(core.placement({consumer->id(), 0}), Placement::cancelled);
  const auto told = deliveries(out, sink);
  ASSERT_EQ(told.size(), 1u);
  EXPECT_EQ(told[0].state, TaskState::cancelled);
  EXPECT_NE(told[0].error->message().find("its dependency " + producer->key(0) + " failed: boom"),
            std::string::npos);
  EXPECT_EQ(core.status().tasks_erred, 1u);
}

TEST(SchedulerCore, ReleasingAnUnfinishedTaskCancelsIt) {
  SchedulerCore core;
  const auto w = add_worker(core, 2);
  auto op = independent(2);
  auto sink = table();
  core.submit(watching({op}, op, sink));
  auto out = core.release(sink.get(), {0});
  const auto withdrawn = messages_to<CancelSlots>(out, w);
  ASSERT_EQ(withdrawn.size(), 1u);
  EXPECT_EQ(withdrawn[0].batch.slots.size(), 1u);
  EXPECT_EQ(core.placement({op->id(), 0}), Placement::cancelled);
  EXPECT_EQ(core.placement({op->id(), 1}), Placement::placed);
}

TEST(SchedulerCore, ARetiringWorkerHandsItsResultsOverThenShutsDown) {
  SchedulerCore core;
  const auto leaving = add_worker(core, 1);
  auto op = independent(1);
  auto sink = table();
  core.submit(watching({op}, op, sink));
  ASSERT_EQ(core.worker_of({op->id(), 0}), leaving);
  core.done(finished(leaving, op, {0}));
  const auto staying = add_worker(core, 1);
  auto out = core.retire(leaving);
  const auto adopt = messages_to<AssignBatch>(out, staying);
  ASSERT_EQ(adopt.size(), 1u);
  ASSERT_EQ(adopt[0].runs.size(), 1u);
  EXPECT_TRUE(adopt[0].runs[0].adopt);
  const auto handover = messages_to<SubscribeBatch>(out, leaving);
  ASSERT_EQ(handover.size(), 1u);
  EXPECT_EQ(handover[0].subscriptions[0].to.worker, staying);
  EXPECT_EQ(handover[0].subscriptions[0].to.column, kAdoptColumn);
  EXPECT_EQ(messages_to<ShutdownWorker>(out, leaving).size(), 1u);
  // Streams hear of it (they rerun the sets they sent there); it was not lost.
  EXPECT_EQ(out.workers_retired, std::vector<std::uint32_t>{leaving});
  EXPECT_TRUE(out.workers_lost.empty());
  EXPECT_EQ(core.worker_of({op->id(), 0}), staying);
  EXPECT_EQ(core.status().workers, 1u);
  EXPECT_EQ(core.status().retiring_workers, 0u);
  // A retired worker takes no new work.
  auto more = independent(1);
  out = core.submit(watching({more}, more, table()));
  EXPECT_TRUE(assigned(out, leaving, more).empty());
  EXPECT_EQ(assigned(out, staying, more), std::vector<std::uint32_t>{0});
}

TEST(SchedulerCore, ARetiringWorkerWithNowhereToGoLeavesWhenAWorkerJoins) {
  SchedulerCore core;
  const auto leaving = add_worker(core, 1);
  auto op = independent(1);
  core.submit(watching({op}, op, table()));
  core.done(finished(leaving, op, {0}));
  auto out = core.retire(leaving);
  EXPECT_TRUE(messages_to<ShutdownWorker>(out, leaving).empty());  // its result has nowhere to go yet
  EXPECT_TRUE(out.workers_retired.empty());
  EXPECT_EQ(core.status().retiring_workers, 1u);
  Outbox joined;
  const auto staying = add_worker(core, 1, &joined);
  EXPECT_EQ(messages_to<ShutdownWorker>(joined, leaving).size(), 1u);
  EXPECT_EQ(joined.workers_retired, std::vector<std::uint32_t>{leaving});
  EXPECT_EQ(core.worker_of({op->id(), 0}), staying);
  EXPECT_EQ(core.status().retiring_workers, 0u);
}

TEST(SchedulerCore, AReferenceToAnUnknownTaskFailsAtSubmission) {
  SchedulerCore core;
  add_worker(core, 1);
  auto ghost = independent(1);  // never submitted
  auto consumer = consumer_of(ghost);
  auto sink = table();
  auto out = core.submit(watching({consumer}, consumer, sink));
  EXPECT_EQ(core.placement({consumer->id(), 0}), Placement::failed);
  const auto told = deliveries(out, sink);
  ASSERT_EQ(told.size(), 1u);
  EXPECT_EQ(told[0].state, TaskState::erred);
  EXPECT_NE(told[0].error->message().find("which the scheduler does not have"), std::string::npos);
}

TEST(SchedulerCore, HostileReportsAreIgnored) {
  SchedulerCore core;
  const auto w = add_worker(core, 1);
  auto op = independent(1);
  core.submit(watching({op}, op, table()));
  EXPECT_TRUE(core.done(finished(w + 7, op, {0})).empty());
  EXPECT_TRUE(core.done(finished(w, op, {99})).deliveries.empty());
  EXPECT_TRUE(core.stolen(StolenBatch{w + 7, op->id(), {0}}).empty());
  EXPECT_EQ(core.placement({op->id(), 0}), Placement::placed);
  EXPECT_THROW(core.locate(op->id(), 0, "glm: partition 0"), std::invalid_argument);
  core.done(finished(w, op, {0}));
  const auto held = core.locate(op->id(), 0, "glm: partition 0");
  EXPECT_EQ(held.worker, w);
}

// ---- The progress watchdog: explicit times, no clock ----

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

SchedulerOptions watched_for(milliseconds timeout) {
  SchedulerOptions options;
  options.progress_timeout = timeout;
  return options;
}

TEST(SchedulerCore, AWorkerHoldingTasksWithoutProgressIsStalledAndItsTasksRunElsewhere) {
  SchedulerCore core(watched_for(milliseconds(300)));
  const auto silent = core.register_worker(WorkerDescription{1, "black-hole", "", "", 0}).id;
  auto op = independent(3);
  auto sink = table();
  ASSERT_EQ(assigned(core.submit(watching({op}, op, sink)), silent, op).size(), 3u);
  const auto survivor = add_worker(core, 1);
  const auto t0 = Clock::now();
  EXPECT_TRUE(core.check_progress(t0).empty());
  EXPECT_TRUE(core.check_progress(t0 + milliseconds(299)).empty());

  auto out = core.check_progress(t0 + milliseconds(300));
  ASSERT_EQ(out.stalled.size(), 1u);
  EXPECT_EQ(out.stalled[0].id, silent);
  EXPECT_EQ(out.stalled[0].name, "black-hole");
  EXPECT_EQ(out.stalled[0].timeout, milliseconds(300));
  EXPECT_EQ(out.stalled[0].tasks, 3u);
  // Treated as lost: streams and solvers hear it left, it is told to stop, its tasks go to the survivor.
  EXPECT_EQ(out.workers_lost, std::vector<std::uint32_t>{silent});
  EXPECT_EQ(messages_to<ShutdownWorker>(out, silent).size(), 1u);
  EXPECT_EQ(assigned(out, survivor, op).size(), 3u);
  for (std::uint32_t t = 0; t < 3; ++t) EXPECT_EQ(core.worker_of({op->id(), t}), survivor);
  EXPECT_EQ(core.status().workers_stalled, 1u);
  EXPECT_EQ(core.status().workers_lost, 1u);
  EXPECT_EQ(core.usable_workers(), std::vector<std::uint32_t>{survivor});
  // Declared once: later checks say nothing more about it, and nothing new is placed on it.
  EXPECT_TRUE(core.check_progress(t0 + milliseconds(900)).stalled.empty());
  auto more = independent(2);
  EXPECT_TRUE(assigned(core.submit(watching({more}, more, table())), silent, more).empty());
}

TEST(SchedulerCore, AWorkerThatFinishesTasksIsNotStalled) {
  SchedulerCore core(watched_for(milliseconds(300)));
  const auto w = add_worker(core, 1);
  auto op = independent(3);
  core.submit(watching({op}, op, table()));
  add_worker(core, 1);  // somewhere for its work to go
  const auto t0 = Clock::now();
  core.check_progress(t0);
  core.done(finished(w, op, {0}));
  EXPECT_TRUE(core.check_progress(t0 + milliseconds(300)).empty());
  core.done(finished(w, op, {1}));
  EXPECT_TRUE(core.check_progress(t0 + milliseconds(550)).empty());
  // Its last progress was seen at 550 ms; with task 2 still held it is quiet from there.
  EXPECT_TRUE(core.check_progress(t0 + milliseconds(849)).stalled.empty());
  EXPECT_EQ(core.check_progress(t0 + milliseconds(850)).workers_lost, std::vector<std::uint32_t>{w});
}

TEST(SchedulerCore, AnIdleWorkerIsNeverStalled) {
  SchedulerCore core(watched_for(milliseconds(300)));
  const auto w = add_worker(core, 1);
  add_worker(core, 1);
  const auto t0 = Clock::now();
  EXPECT_TRUE(core.check_progress(t0).empty());
  EXPECT_TRUE(core.check_progress(t0 + std::chrono::hours(1)).empty());
  // Work that arrives after a long idle time gets the whole timeout, counted from the first check
  // that sees it.
  auto op = independent(1);
  core.submit(watching({op}, op, table()));
  EXPECT_TRUE(core.check_progress(t0 + std::chrono::hours(1) + milliseconds(1)).empty());
  EXPECT_TRUE(core.check_progress(t0 + std::chrono::hours(1) + milliseconds(300)).empty());
  EXPECT_EQ(core.check_progress(t0 + std::chrono::hours(1) + milliseconds(301)).workers_lost,
            std::vector<std::uint32_t>{w});
}

TEST(SchedulerCore, ATimeoutOfZeroTurnsTheWatchdogOff) {
  SchedulerCore core(watched_for(milliseconds(0)));
  const auto w = add_worker(core, 1);
  auto op = independent(3);
  core.submit(watching({op}, op, table()));
  core.stream_report(1, {StreamLoad{w, 4, 0}});
  const auto t0 = Clock::now();
  EXPECT_TRUE(core.check_progress(t0).empty());
  EXPECT_TRUE(core.check_progress(t0 + std::chrono::hours(24)).empty());
  EXPECT_EQ(core.status().workers_stalled, 0u);
  EXPECT_EQ(core.usable_workers(), std::vector<std::uint32_t>{w});
}

TEST(SchedulerCore, ALateResultFromAStalledWorkerIsIgnored) {
  SchedulerCore core(watched_for(milliseconds(300)));
  const auto silent = add_worker(core, 1);
  auto op = independent(1);
  auto sink = table();
  core.submit(watching({op}, op, sink));
  const auto survivor = add_worker(core, 1);
  const auto t0 = Clock::now();
  core.check_progress(t0);
  ASSERT_EQ(core.check_progress(t0 + milliseconds(300)).workers_lost, std::vector<std::uint32_t>{silent});
  ASSERT_EQ(core.worker_of({op->id(), 0}), survivor);

  DoneBatch late = finished(silent, op, {0});
  late.busy_seconds = 1e6;  // a hostile duration would shrink every worker's capacity
  auto out = core.done(late);
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(core.placement({op->id(), 0}), Placement::placed);
  EXPECT_EQ(core.worker_of({op->id(), 0}), survivor);
  EXPECT_EQ(core.status().tasks_done, 0u);
  out = core.done(finished(survivor, op, {0}));
  ASSERT_EQ(deliveries(out, sink).size(), 1u);
  EXPECT_EQ(core.status().tasks_done, 1u);
}

TEST(SchedulerCore, AWorkerWaitingForInputsComputedElsewhereIsNotBlamed) {
  SchedulerCore core(watched_for(milliseconds(300)));
  const auto slow = add_worker(core, 1);
  const auto waiting = add_worker(core, 1);
  auto producer = independent(1);
  core.submit(watching({producer}, producer, table()));
  ASSERT_EQ(core.worker_of({producer->id(), 0}), slow);
  // Its producer's worker takes no new work, so the consumer goes to the other worker and waits there.
  core.retire(slow);
  auto consumer = consumer_of(producer);
  core.submit(watching({consumer}, consumer, table()));
  ASSERT_EQ(core.worker_of({consumer->id(), 0}), waiting);

  const auto t0 = Clock::now();
  core.check_progress(t0);
  auto out = core.check_progress(t0 + milliseconds(300));
  // Only the worker sitting on a task it could run is blamed (retiring ones too); the producer runs
  // again where its consumer waits.
  ASSERT_EQ(out.stalled.size(), 1u);
  EXPECT_EQ(out.stalled[0].id, slow);
  EXPECT_EQ(core.worker_of({producer->id(), 0}), waiting);
  EXPECT_EQ(core.status().retiring_workers, 0u);
  // The waiting worker's clock starts when it has something to run.
  EXPECT_TRUE(core.check_progress(t0 + milliseconds(301)).empty());
  EXPECT_TRUE(core.check_progress(t0 + milliseconds(600)).empty());
  // Now the last worker: reported, but kept (see ALoneStalledWorkerIsKeptUntilAnotherJoins).
  out = core.check_progress(t0 + milliseconds(601));
  ASSERT_EQ(out.stalled.size(), 1u);
  EXPECT_EQ(out.stalled[0].id, waiting);
  EXPECT_TRUE(out.stalled[0].kept);
}

TEST(SchedulerCore, ALoneStalledWorkerIsKeptUntilAnotherJoins) {
  SchedulerCore core(watched_for(milliseconds(300)));
  const auto lone = add_worker(core, 1);
  auto op = independent(2);
  core.submit(watching({op}, op, table()));
  const auto t0 = Clock::now();
  core.check_progress(t0);
  // Giving up on it would leave its work nowhere to run: it is reported once, and kept.
  auto out = core.check_progress(t0 + milliseconds(300));
  ASSERT_EQ(out.stalled.size(), 1u);
  EXPECT_TRUE(out.stalled[0].kept);
  EXPECT_TRUE(out.workers_lost.empty());
  EXPECT_TRUE(core.check_progress(t0 + milliseconds(400)).empty());
  EXPECT_EQ(core.status().workers_stalled, 0u);
  EXPECT_EQ(core.usable_workers(), std::vector<std::uint32_t>{lone});
  // Once another worker is there, the next check gives up on it.
  const auto joined = add_worker(core, 1);
  out = core.check_progress(t0 + milliseconds(500));
  ASSERT_EQ(out.stalled.size(), 1u);
  EXPECT_FALSE(out.stalled[0].kept);
  EXPECT_EQ(out.workers_lost, std::vector<std::uint32_t>{lone});
  EXPECT_EQ(assigned(out, joined, op).size(), 2u);
  EXPECT_EQ(core.status().workers_stalled, 1u);
}

TEST(SchedulerCore, StreamJobsCountAsWorkAndAnsweredRecordsAsProgress) {
  SchedulerCore core(watched_for(milliseconds(300)));
  const auto answering = add_worker(core, 1);
  const auto silent = add_worker(core, 1);
  const auto t0 = Clock::now();
  core.stream_report(7, {StreamLoad{answering, 2, 0}, StreamLoad{silent, 2, 0}});
  core.check_progress(t0);
  core.stream_report(7, {StreamLoad{answering, 2, 5}, StreamLoad{silent, 2, 0}});
  auto out = core.check_progress(t0 + milliseconds(300));
  ASSERT_EQ(out.stalled.size(), 1u);
  EXPECT_EQ(out.stalled[0].id, silent);
  EXPECT_EQ(out.stalled[0].stream_jobs, 2u);
  EXPECT_EQ(out.stalled[0].tasks, 0u);
  EXPECT_EQ(out.workers_lost, std::vector<std::uint32_t>{silent});
  // A stream that ended no longer keeps its workers busy; reports naming a lost worker are ignored.
  core.stream_report(7, {StreamLoad{answering, 1, 0}, StreamLoad{silent, 9, 9}});
  core.stream_ended(7);
  EXPECT_TRUE(core.check_progress(t0 + milliseconds(5000)).empty());
  EXPECT_EQ(core.usable_workers(), std::vector<std::uint32_t>{answering});
}

// Checkpoints the tests set by hand, keyed by (operation, task).
class StoredResults final : public CheckpointSource {
 public:
  std::map<std::pair<OpId, std::uint32_t>, Value> stored;
  int lookups = 0;
  bool may_hold_any() const override { return !stored.empty(); }
  std::optional<Value> restore(const Operation& op, std::uint32_t task) override {
    ++lookups;
    auto it = stored.find({op.id(), task});
    if (it == stored.end()) return std::nullopt;
    return it->second;
  }
};

std::vector<AssignRun> runs_to(const Outbox& out, std::uint32_t worker) {
  std::vector<AssignRun> runs;
  for (const auto& batch : messages_to<AssignBatch>(out, worker))
    runs.insert(runs.end(), batch.runs.begin(), batch.runs.end());
  return runs;
}

TEST(SchedulerCore, ACheckpointedTaskIsRestoredAndItsProducerNeverRuns) {
  SchedulerCore core;
  StoredResults checkpoints;
  core.set_checkpoints(&checkpoints);
  const auto w = add_worker(core, 1);
  auto producer = independent(2);
  auto consumer = consumer_of(producer);
  checkpoints.stored[{consumer->id(), 1}] = Value(std::int64_t{41});
  auto sink = table();
  auto out = core.submit(watching({producer, consumer}, consumer, sink));
  // Task 1 of the consumer comes from the store: producer task 1 is never needed, nor looked up.
  EXPECT_EQ(checkpoints.lookups, 3);  // both consumer tasks, then producer task 0
  EXPECT_EQ(core.placement({producer->id(), 1}), Placement::cancelled);
  EXPECT_EQ(assigned(out, w, producer), std::vector<std::uint32_t>{0});
  bool restored_run = false;
  for (const auto& run : runs_to(out, w))
    if (run.op == consumer && !run.restored.empty()) {
      restored_run = true;
      EXPECT_EQ(run.first_task, 1u);
      ASSERT_EQ(run.restored.size(), 1u);
      EXPECT_EQ(run.restored[0].as_int(), 41);
    }
  EXPECT_TRUE(restored_run);
  EXPECT_EQ(core.status().tasks_from_checkpoint, 1u);
  // Its report (nothing ran) finishes it without counting it as computed, and gives back no holds.
  DoneBatch restored{w, consumer->id(), {1}, {Value(std::int64_t{41})}, {}, 0, 0};
  out = core.done(restored);
  const auto delivered = deliveries(out, sink);
  ASSERT_EQ(delivered.size(), 1u);
  EXPECT_EQ(delivered[0].slot, 1u);
  EXPECT_EQ(delivered[0].value.as_int(), 41);
  EXPECT_EQ(core.status().tasks_done, 0u);
  EXPECT_EQ(core.holds({producer->id(), 0}), 1u);  // still held by consumer task 0 only
}

TEST(SchedulerCore, ACheckpointedSubmissionReportsItsWatchedResultsForStoring) {
  SchedulerCore core;
  const auto w = add_worker(core, 1);
  auto op = independent(3);
  auto sink = table();
  auto submission = watching({op}, op, sink);
  submission.checkpoint = true;
  auto out = core.submit(std::move(submission));
  const auto runs = runs_to(out, w);
  ASSERT_FALSE(runs.empty());
  for (const auto& run : runs) EXPECT_TRUE(run.checkpoint);
  out = core.done(finished(w, op, {0, 1, 2}));
  ASSERT_EQ(out.checkpoints.size(), 3u);
  EXPECT_EQ(out.checkpoints[2].task, 2u);
  EXPECT_EQ(out.checkpoints[2].value.as_int(), 2);
}

TEST(SchedulerCore, AResultLostWithItsWorkerIsReadFromItsCheckpointNotRecomputed) {
  SchedulerCore core;
  StoredResults checkpoints;
  core.set_checkpoints(&checkpoints);
  const auto lost = add_worker(core, 1);
  auto [producer, consumer, sink] = submit_chain(core);
  core.done(finished(lost, producer, {0}));
  core.done(finished(lost, consumer, {0}));
  checkpoints.stored[{consumer->id(), 0}] = Value(std::int64_t{7});
  const auto survivor = add_worker(core, 1);
  auto out = core.worker_lost(lost);
  // The watched result was held there: it comes back from the store; its producer stays released.
  EXPECT_TRUE(assigned(out, survivor, producer).empty());
  const auto runs = runs_to(out, survivor);
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].op, consumer);
  ASSERT_EQ(runs[0].restored.size(), 1u);
  EXPECT_EQ(core.status().tasks_recomputed, 0u);
  EXPECT_EQ(core.status().tasks_from_checkpoint, 1u);
  out = core.done(DoneBatch{survivor, consumer->id(), {0}, {Value(std::int64_t{7})}, {}, 0, 0});
  EXPECT_EQ(core.placement({consumer->id(), 0}), Placement::finished);
}

TEST(SchedulerCore, TheTransitionTableHasExactlyTheDocumentedEdges) {
  using P = Placement;
  const std::vector<std::pair<P, P>> edges = {
      {P::unplaced, P::placed},  {P::placed, P::unplaced},   {P::placed, P::finished},
      {P::placed, P::failed},    {P::unplaced, P::failed},   {P::unplaced, P::cancelled},
      {P::placed, P::cancelled}, {P::finished, P::unplaced}, {P::cancelled, P::unplaced},
  };
  std::size_t allowed = 0;
  for (std::size_t from = 0; from < kPlacements; ++from)
    for (std::size_t to = 0; to < kPlacements; ++to) {
      const auto f = static_cast<P>(from), t = static_cast<P>(to);
      const bool documented = std::find(edges.begin(), edges.end(), std::pair{f, t}) != edges.end();
      EXPECT_EQ(transition_allowed(f, t), documented) << placement_name(f) << " -> " << placement_name(t);
      allowed += transition_allowed(f, t);
    }
  EXPECT_EQ(allowed, edges.size());
  const IllegalTransition error("core_identity-abc-3", P::failed, P::placed);
  EXPECT_STREQ(error.what(), "internal error: task core_identity-abc-3 cannot go from failed to placed");
}

}  // namespace

// The scheduler actor's protocol as a message trace on CAF's deterministic test coordinator
// (caf/test/dsl.hpp): no threads run the actors, each message is delivered when the test says, so what a
// worker is sent, in what order, and what the scheduler does with the worker's answers is asserted exactly.
// The worker here is the test's own scoped actor: its mailbox is the trace.
// CAF's DSL calls FAIL(message) in templates this test never instantiates; GoogleTest's FAIL() would
// collide with it, so GoogleTest comes second and without its FAIL.
#include <caf/test/dsl.hpp>

#define GTEST_DONT_DEFINE_FAIL 1
#include <gtest/gtest.h>

#include "actors/messages.hpp"
#include "actors/protocols/scheduler.hpp"
#include "actors/result_sink.hpp"
#include "actors/scheduler_actor.hpp"
#include "graph/operation.hpp"
#include "graph/registry.hpp"

namespace {

using namespace tessera;

std::int64_t trace_triple(std::int64_t x) {
  return 3 * x;
}
TESSERA_TASK(trace_triple);

class SchedulerTrace : public ::testing::Test {
 protected:
  static caf::actor_system_config& testing_config(caf::actor_system_config& config) {
    config.set("scheduler.policy", caf::atom("testing"));
    config.set("logger.file-verbosity", caf::atom("quiet"));
    return config;
  }

  caf::actor_system_config config;
  caf::actor_system system{testing_config(config)};
  caf::scheduler::test_coordinator& coordinator{
      dynamic_cast<caf::scheduler::test_coordinator&>(system.scheduler())};
  caf::scoped_actor worker{system, true};
  caf::actor scheduler = spawn_scheduler(system);

  // The next message in the worker's mailbox, if it is `Ts...` (caf/test/dsl.hpp's try_extract); it stays
  // there (take() removes it).
  template <class... Ts>
  std::optional<std::tuple<Ts...>> next() {
    auto found = try_extract<Ts...>(caf_handle(worker));
    if (!found) return std::nullopt;
    return std::move(*found);
  }
  void take() {
    worker->receive([](caf::message&) {}, caf::after(std::chrono::seconds(0)) >> [] {});
  }
  bool mailbox_empty() { return worker.ptr()->peek_at_next_mailbox_element() == nullptr; }
  // The worker's next message as text, for a failure's message.
  std::string first_message() {
    auto* element = worker.ptr()->peek_at_next_mailbox_element();
    return element ? to_string(element->content()) : "(none)";
  }
  // Runs every job the coordinator has, one message at a time.
  void deliver_all() { coordinator.run(); }
  // The system waits for its actors when it goes: the scheduler is stopped, on the coordinator too.
  void TearDown() override {
    caf::anon_send_exit(scheduler, caf::exit_reason::user_shutdown);
    deliver_all();
  }
};

TEST_F(SchedulerTrace, ARegisteredWorkerIsAssignedTheTaskAndItsReportFillsTheClientsTable) {
  deliver_all();  // the scheduler starts
  // 1. The worker registers (as a worker actor of this process does): it is welcomed with its id, and
  // nothing else is sent to it.
  worker->send(scheduler, register_atom::value,
               WorkerRegistration{caf::actor_cast<caf::actor>(worker), 1, "probe"});
  deliver_all();
  auto welcome = next<welcome_atom, std::uint32_t>();
  ASSERT_TRUE(welcome.has_value()) << "first: " << first_message();
  const std::uint32_t worker_id = std::get<1>(*welcome);
  take();
  EXPECT_TRUE(mailbox_empty()) << first_message();

  // 2. A client submits one task: the worker is sent exactly one assignment, of that task, reported back.
  auto op =
      std::make_shared<const Operation>(Registry::global().get("trace_triple"), 1,
                                        std::vector<Column>{Column::broadcast(Value(std::int64_t{14}))});
  auto link = std::make_shared<SchedulerLink>(SchedulerLink{scheduler});
  auto sink = std::make_shared<ResultSink>(1, link, std::vector<Watch>{Watch{op->id(), 0, 1, 0}});
  worker->send(scheduler, submit_atom::value, Submission{{op}, {Watch{op->id(), 0, 1, 0}}, sink, false});
  deliver_all();
  auto assigned = next<assign_atom, AssignBatch>();
  ASSERT_TRUE(assigned.has_value()) << "not an assignment: " << first_message();
  const AssignBatch& batch = std::get<1>(*assigned);
  ASSERT_EQ(batch.runs.size(), 1u);
  EXPECT_EQ(batch.runs[0].op->id(), op->id());
  EXPECT_EQ(batch.runs[0].first_task, 0u);
  EXPECT_EQ(batch.runs[0].count, 1u);
  EXPECT_TRUE(batch.runs[0].report);
  EXPECT_FALSE(batch.runs[0].adopt);
  EXPECT_EQ(batch.runs[0].first_slot, 0u);
  take();
  EXPECT_TRUE(mailbox_empty()) << "more than one message for one task: " << first_message();
  EXPECT_NE(sink->state(0), TaskState::done);

  // 3. The worker reports it done: the client's table has the value, and the worker is told nothing more.
  DoneBatch done{worker_id, op->id(), {0}, {Value(std::int64_t{42})}, {}};
  done.ran = 1;
  worker->send(scheduler, done_atom::value, std::move(done));
  deliver_all();
  ASSERT_EQ(sink->state(0), TaskState::done) << state_name(sink->state(0));
  EXPECT_EQ(sink->result(0).as_int(), 42);
  EXPECT_TRUE(mailbox_empty()) << first_message();
}

}  // namespace

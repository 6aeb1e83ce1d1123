// The scheduler <-> worker and worker <-> worker codec: every message round-trips, an operation's
// definition travels once, lies about operations and sizes are refused by name, and fuzzed envelopes of
// every kind are refused or decoded without a crash.
#include <gtest/gtest.h>

#include <random>
#include <tessera/tessera.hpp>

#include "nodes/transport.hpp"
#include "nodes/worker_codec.hpp"
#include "support/wire.hpp"

namespace {

using namespace tessera;

std::int64_t codec_add(std::int64_t a, std::int64_t b) {
  return a + b;
}
TESSERA_TASK(codec_add);

OperationPtr sample_operation() {
  std::vector<Value> firsts;
  for (std::int64_t i = 0; i < 10; ++i) firsts.push_back(to_value(i));
  return std::make_shared<Operation>(detail::resolve(codec_add), 10,
                                     std::vector<Column>{Column::per_task(std::move(firsts)),
                                                         Column::broadcast(Arg{to_value(std::int64_t{5})})});
}

using tessera::testing::through_the_wire;

TEST(WorkerCodec, AssignmentsCarryEachDefinitionOnce) {
  auto op = sample_operation();
  std::unordered_set<OpId> sent;
  auto first_time = [&](OpId id) { return sent.insert(id).second; };
  wire::OperationTable known;
  AssignBatch batch{{AssignRun{op, 2, 5, 40, false, true}, AssignRun{op, 9, 1, 50, true, false}}};
  through_the_wire(
      [&](auto& m) { wire::encode(batch, first_time, m.envelope().initAssign(), m.attachments()); },
      [&](wire::Envelope::Reader e, auto frames) {
        EXPECT_EQ(e.getAssign().getOperations().size(), 1u);
        auto back = wire::decode(e.getAssign(), frames, known);
        ASSERT_EQ(back.runs.size(), 2u);
        EXPECT_EQ(back.runs[0].op->id(), op->id());
        EXPECT_EQ(back.runs[0].op->function().name, "codec_add");
        EXPECT_EQ(back.runs[0].first_task, 2u);
        EXPECT_EQ(back.runs[0].count, 5u);
        EXPECT_EQ(back.runs[0].first_slot, 40u);
        EXPECT_TRUE(back.runs[0].report);
        EXPECT_TRUE(back.runs[1].adopt);
        EXPECT_FALSE(back.runs[1].report);
      });
  // The second time only the run travels, and the receiver's table supplies the operation.
  through_the_wire(
      [&](auto& m) { wire::encode(batch, first_time, m.envelope().initAssign(), m.attachments()); },
      [&](wire::Envelope::Reader e, auto frames) {
        EXPECT_EQ(e.getAssign().getOperations().size(), 0u);
        EXPECT_EQ(wire::decode(e.getAssign(), frames, known).runs[0].op, known.at(op->id()));
      });
  // A worker that never got the definition refuses the assignment, naming the operation.
  wire::OperationTable empty;
  through_the_wire(
      [&](auto& m) { wire::encode(batch, first_time, m.envelope().initAssign(), m.attachments()); },
      [&](wire::Envelope::Reader e, auto frames) {
        try {
          wire::decode(e.getAssign(), frames, empty);
          FAIL();
        } catch (const wire::WireError& error) {
          EXPECT_NE(std::string(error.what()).find(std::to_string(op->id())), std::string::npos);
        }
      });
  // Tasks past the operation's size are refused.
  AssignBatch lying{{AssignRun{op, 8, 5, 0, false, true}}};
  through_the_wire(
      [&](auto& m) { wire::encode(lying, first_time, m.envelope().initAssign(), m.attachments()); },
      [&](wire::Envelope::Reader e, auto frames) {
        EXPECT_THROW(wire::decode(e.getAssign(), frames, known), wire::WireError);
      });
}

TEST(WorkerCodec, EveryOtherMessageRoundTrips) {
  SubscribeBatch subscribe{{Subscription{7, 3, Destination{2, 9, 11, 1}}}};
  through_the_wire([&](auto& m) { wire::encode(subscribe, m.envelope().initSubscribe()); },
                   [&](wire::Envelope::Reader e, auto) {
                     auto back = wire::decode(e.getSubscribe());
                     ASSERT_EQ(back.subscriptions.size(), 1u);
                     EXPECT_EQ(back.subscriptions[0].to.worker, 2u);
                     EXPECT_EQ(back.subscriptions[0].to.op, 9u);
                     EXPECT_EQ(back.subscriptions[0].to.slot, 11u);
                     EXPECT_EQ(back.subscriptions[0].to.column, 1u);
                   });
  SlotBatch slots{4, {1, 2, 3}};
  through_the_wire([&](auto& m) { wire::encode(slots, m.envelope().initDrop()); },
                   [&](wire::Envelope::Reader e, auto) {
                     auto back = wire::decode(e.getDrop());
                     EXPECT_EQ(back.op, 4u);
                     EXPECT_EQ(back.slots, (std::vector<std::uint32_t>{1, 2, 3}));
                   });
  DoneBatch done;
  done.worker = 99;  // what the sender claims is ignored
  done.op = 5;
  done.tasks = {1, 2};
  done.results = {to_value(std::int64_t{10}), Value{}};
  done.failures = {TaskFailure{3, std::make_shared<const TaskFailed>("f", "f-3", "boom", false)}};
  done.busy_seconds = 0.25;
  done.ran = 3;
  through_the_wire([&](auto& m) { wire::encode(done, m.envelope().initDone(), m.attachments()); },
                   [&](wire::Envelope::Reader e, auto frames) {
                     auto back = wire::decode(e.getDone(), frames, 1);
                     EXPECT_EQ(back.worker, 1u);
                     EXPECT_EQ(back.tasks, done.tasks);
                     EXPECT_EQ(from_value<std::int64_t>(back.results[0]), 10);
                     ASSERT_EQ(back.failures.size(), 1u);
                     EXPECT_EQ(back.failures[0].error->message(), "boom");
                     EXPECT_EQ(back.ran, 3u);
                     EXPECT_DOUBLE_EQ(back.busy_seconds, 0.25);
                   });
  // An 8 MiB input travels as its own frame.
  std::vector<double> chunk(std::size_t{1} << 20, 2.5);
  InputBatch inputs{{InputDelivery{6, 8, 1, to_value(chunk)}}};
  through_the_wire(
      [&](auto& m) {
        wire::encode(3, inputs, m.envelope().initInputs(), m.attachments());
        EXPECT_EQ(m.attachments().frames.size(), 1u);
      },
      [&](wire::Envelope::Reader e, auto frames) {
        EXPECT_EQ(e.getInputs().getWorker(), 3u);
        auto back = wire::decode(e.getInputs(), frames);
        ASSERT_EQ(back.inputs.size(), 1u);
        EXPECT_EQ(from_value<std::vector<double>>(back.inputs[0].value), chunk);
      });
}

TEST(WorkerCodec, FuzzedEnvelopesNeverCrash) {
  std::mt19937_64 rng{11};
  auto op = sample_operation();
  std::vector<std::vector<std::byte>> samples;
  auto keep = [&](auto fill) {
    transport::Outgoing message;
    fill(message);
    auto frames = message.frames();
    const auto* data = static_cast<const std::byte*>(frames[0].data());
    samples.emplace_back(data, data + frames[0].size());
  };
  keep([&](auto& m) {
    wire::encode(
        AssignBatch{{AssignRun{op, 0, 10, 0, false, true}}}, [](OpId) { return true; },
        m.envelope().initAssign(), m.attachments());
  });
  keep([&](auto& m) {
    wire::encode(SubscribeBatch{{Subscription{1, 2, Destination{3, 4, 5, 0}}}}, m.envelope().initSubscribe());
  });
  keep([&](auto& m) {
    DoneBatch done;
    done.tasks = {1};
    done.results = {to_value(std::string("result"))};
    wire::encode(done, m.envelope().initDone(), m.attachments());
  });
  keep([&](auto& m) {
    wire::encode(0, InputBatch{{InputDelivery{1, 2, 0, to_value(std::vector<double>(16, 1.0))}}},
                 m.envelope().initInputs(), m.attachments());
  });
  int refused = 0, decoded = 0;
  for (int i = 0; i < 20000; ++i) {
    std::vector<std::byte> input = samples[i % samples.size()];
    if (i % 2) {
      input.resize(rng() % input.size());
    } else {
      for (int k = 0; k < 1 + static_cast<int>(rng() % 4); ++k)
        input[rng() % input.size()] ^= static_cast<std::byte>(1u << (rng() % 8));
    }
    try {
      wire::HeaderReader reader(input);
      auto e = reader.root<wire::Envelope>();
      wire::OperationTable known;
      switch (e.which()) {
        case wire::Envelope::ASSIGN:
          (void)wire::decode(e.getAssign(), {}, known);
          break;
        case wire::Envelope::SUBSCRIBE:
          (void)wire::decode(e.getSubscribe());
          break;
        case wire::Envelope::DONE:
          (void)wire::decode(e.getDone(), {}, 0);
          break;
        case wire::Envelope::INPUTS:
          (void)wire::decode(e.getInputs(), {});
          break;
        default:
          break;
      }
      ++decoded;
    } catch (const wire::WireError&) {
      ++refused;
    } catch (const kj::Exception&) {
      ++refused;
    } catch (const TypeError&) {
      ++refused;
    }
  }
  EXPECT_GT(refused, 1000);
  EXPECT_GT(decoded, 0);
}

}  // namespace

// The table of wire messages: every Envelope kind has exactly one row with its own name, the transport
// refuses (and names) a kind sent the wrong way on a real connection while the sender stays served, and
// a routed body (the simulation setup, added after the table) round-trips through the wire.
#include <gtest/gtest.h>

#include <capnp/message.h>
#include <capnp/schema.h>

#include <functional>
#include <limits>
#include <map>
#include <set>

#include "nodes/client_protocol.hpp"
#include "nodes/stream_codec.hpp"
#include "nodes/transport.hpp"
#include "nodes/wire_bodies.hpp"
#include "support/wire.hpp"
#include "test_util.hpp"

namespace {

using namespace tessera;
using tessera::testing::eventually;

TEST(WireTable, EveryEnvelopeKindHasOneRowWithItsOwnName) {
  const auto fields = capnp::Schema::from<wire::Envelope>().getUnionFields();
  std::set<std::string_view> names;
  for (auto field : fields) {
    const auto kind = static_cast<wire::Envelope::Which>(field.getProto().getDiscriminantValue());
    const wire::KindInfo* info = wire::find_kind(kind);
    ASSERT_NE(info, nullptr) << "no row for Envelope." << field.getProto().getName().cStr();
    EXPECT_NE(info->directions, 0) << info->name;
    EXPECT_TRUE(names.insert(info->name).second) << "two rows named " << info->name;
  }
  EXPECT_EQ(names.size(), std::size(wire::kWireKinds));
  EXPECT_EQ(wire::kind_name(static_cast<wire::Envelope::Which>(999)), "message kind 999");
}

TEST(WireTable, AKindSentTheWrongWayIsRefusedByName) {
  EXPECT_NO_THROW(wire::check_direction(wire::Envelope::DONE, wire::kWorkerToScheduler));
  try {
    wire::check_direction(wire::Envelope::DONE, wire::kClientToScheduler);
    FAIL() << "a client's done was accepted";
  } catch (const wire::WireError& e) {
    EXPECT_STREQ(e.what(), "a client may not send 'done' to the scheduler");
  }
  EXPECT_THROW(wire::check_direction(wire::Envelope::SUBMIT, wire::kWorkerToScheduler), wire::WireError);
  EXPECT_THROW(wire::check_direction(wire::Envelope::INPUTS, wire::kWorkerToScheduler), wire::WireError);
  EXPECT_THROW(wire::direction_between(wire::Role::CLIENT, wire::Role::WORKER), wire::WireError);
}

TEST(WireTable, TheTransportRefusesAWorkerKindFromAClientAndServesItStill) {
  std::mutex mutex;
  std::vector<std::string> log;
  std::atomic<int> handled{0};
  transport::ServerOptions options;
  options.log = [&](const std::string& line) {
    std::lock_guard lock(mutex);
    log.push_back(line);
  };
  transport::Server server(std::move(options), [&](transport::Server& s, const transport::PeerInfo& peer,
                                                   transport::Received& message) {
    ++handled;
    if (!message.envelope().isValue()) return;
    transport::Outgoing answer;
    answer.envelope().initValue();
    s.send(peer.id, answer);
  });
  transport::Connection client(transport::ConnectionOptions{.address = server.endpoint()});
  // A client pretending to be the scheduler's worker: what only workers send is refused before any
  // handler sees it.
  transport::Outgoing forged;
  wire::encode(DoneBatch{0, 1, {0}, {Value(std::int64_t{1})}, {}, 0, 1}, forged.envelope().initDone(),
               forged.attachments());
  client.send(forged);
  EXPECT_TRUE(eventually([&] {
    std::lock_guard lock(mutex);
    for (const auto& line : log)
      if (line.find("a client may not send 'done' to the scheduler") != std::string::npos) return true;
    return false;
  }));
  EXPECT_EQ(server.dropped(), 1u);
  transport::Outgoing value;
  value.envelope().initValue();
  client.send(value);
  EXPECT_TRUE(client.receive(std::chrono::seconds(10)).has_value());
  EXPECT_EQ(handled.load(), 1);
}

namespace {

// A payload through its wire row and back (throws WireError as the decoder does).
template <wire::Envelope::Which Kind, class Payload>
Payload round_trip(const Payload& payload) {
  return tessera::testing::through_the_wire(
      [&](transport::Outgoing& message) {
        wire::EncodeContext encode{message.attachments()};
        wire::WireBody<Kind>::encode(message.envelope(), payload, encode);
      },
      [](wire::Envelope::Reader envelope, std::span<const std::span<const std::byte>> frames) {
        const wire::DecodeContext decode{frames};
        return wire::WireBody<Kind>::decode(envelope, decode);
      });
}

SimulationSetup setup_round_trip(const SimulationSetup& setup) {
  return round_trip<wire::Envelope::SIMULATION_SETUP>(setup);
}

}  // namespace

TEST(WireTable, ASimulationSetupRoundTrips) {
  auto config = std::make_shared<Config>();
  config->set("scale", Value(2.5));
  const SimulationSetup setup{42, "costly_simulation", config, 3, Isolation::process, 1.5};
  const auto back = setup_round_trip(setup);
  EXPECT_EQ(back.stream_id, 42u);
  EXPECT_EQ(back.simulation, "costly_simulation");
  EXPECT_EQ(back.pool_size, 3u);
  EXPECT_EQ(back.isolation, Isolation::process);
  EXPECT_DOUBLE_EQ(back.timeout_seconds, 1.5);
  ASSERT_TRUE(back.config);
  EXPECT_EQ(back.config->entries().size(), 1u);
  EXPECT_EQ(back.config->entries().begin()->second, Value(2.5));
}

namespace {

// StreamSettings through a StreamOpen and back; `tamper` edits the encoded message before decoding.
StreamSettings settings_round_trip(const StreamSettings& settings,
                                   const std::function<void(wire::StreamOpen::Builder)>& tamper = {}) {
  return tessera::testing::through_the_wire(
      [&](transport::Outgoing& message) {
        auto open = message.envelope().initStreamOpen();
        wire::encode(settings, open, message.attachments());
        if (tamper) tamper(open);
      },
      [](wire::Envelope::Reader envelope, std::span<const std::span<const std::byte>> frames) {
        return wire::decode(envelope.getStreamOpen(), frames);
      });
}

}  // namespace

// A stream's settings are encoded and decoded in one place: every field comes back, an unset isolation
// stays unset, and what no settings can hold is refused naming the field.
TEST(WireTable, StreamSettingsRoundTripAndAnUnknownIsolationIsRefusedByName) {
  StreamSettings settings;
  settings.simulation = "costly_simulation";
  auto config = std::make_shared<Config>();
  config->set("scale", Value(2.5));
  settings.config = config;
  settings.pool_size = 3;
  settings.max_in_flight = 77;
  settings.isolation = Isolation::process;
  settings.timeout_seconds = 1.5;
  settings.retries = 4;
  settings.parameter_names = {"x", "rate"};
  settings.generator = "aposmm";
  auto generator_config = std::make_shared<Config>();
  generator_config->set("lower", Value(-1.0));
  settings.generator_config = generator_config;
  settings.budget = 500;
  const auto back = settings_round_trip(settings);
  EXPECT_EQ(back.simulation, "costly_simulation");
  EXPECT_EQ(back.config->get<double>("scale", 0), 2.5);
  EXPECT_EQ(back.pool_size, 3u);
  EXPECT_EQ(back.max_in_flight, 77u);
  EXPECT_EQ(back.isolation, Isolation::process);
  EXPECT_DOUBLE_EQ(back.timeout_seconds, 1.5);
  EXPECT_EQ(back.retries, 4u);
  EXPECT_EQ(back.parameter_names, (std::vector<std::string>{"x", "rate"}));
  EXPECT_EQ(back.generator, "aposmm");
  EXPECT_EQ(back.generator_config->get<double>("lower", 0), -1.0);
  EXPECT_EQ(back.budget, 500u);
  EXPECT_TRUE(back.check().empty()) << back.check();
  settings.isolation.reset();
  EXPECT_FALSE(settings_round_trip(settings).isolation.has_value());
  try {
    settings_round_trip(settings, [](wire::StreamOpen::Builder open) { open.setIsolation(9); });
    ADD_FAILURE() << "isolation 9 accepted";
  } catch (const wire::WireError& e) {
    EXPECT_NE(std::string(e.what()).find("stream of 'costly_simulation': isolation 9 is unknown"),
              std::string::npos)
        << e.what();
  }
  // What decodes but no stream may run by is check()'s to name.
  const auto negative =
      settings_round_trip(settings, [](wire::StreamOpen::Builder open) { open.setTimeoutSeconds(-2); });
  EXPECT_NE(negative.check().find("timeout -2 s"), std::string::npos) << negative.check();
}

TEST(WireTable, ASimulationCancelRoundTrips) {
  const SimulationCancel cancel{9, {3, 1, 4, 1, 5}};
  const auto back = round_trip<wire::Envelope::SIMULATION_CANCEL>(cancel);
  EXPECT_EQ(back.stream_id, 9u);
  EXPECT_EQ(back.ids, cancel.ids);
}

// A scheduler's setup that a worker could not honour is refused by name, never run with a guess.
TEST(WireTable, ASimulationSetupOutOfRangeIsRefusedByName) {
  const auto refused = [](double timeout, const std::string& expected) {
    try {
      setup_round_trip(SimulationSetup{7, "s", std::make_shared<Config>(), 0, Isolation::thread, timeout});
      ADD_FAILURE() << "timeout " << timeout << " accepted";
    } catch (const wire::WireError& e) {
      EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
    }
  };
  refused(-1, "stream 7: timeout -1");
  refused(std::numeric_limits<double>::quiet_NaN(), "stream 7: timeout nan");
  refused(std::numeric_limits<double>::infinity(), "stream 7: timeout inf");
  refused(1e300, "is not in [0, ");
  try {
    setup_round_trip(SimulationSetup{7, "s", std::make_shared<Config>(), 0, static_cast<Isolation>(5), 0});
    ADD_FAILURE() << "isolation 5 accepted";
  } catch (const wire::WireError& e) {
    EXPECT_NE(std::string(e.what()).find("stream 7: isolation 5 is unknown"), std::string::npos) << e.what();
  }
  try {
    setup_round_trip(SimulationSetup{7, "s", std::make_shared<Config>(), 5000, Isolation::thread, 0});
    ADD_FAILURE() << "pool size 5000 accepted";
  } catch (const wire::WireError& e) {
    EXPECT_NE(std::string(e.what()).find("pool size 5000 exceeds the limit of 1024"), std::string::npos)
        << e.what();
  }
}

// What a client may send is what a stranger may send: each such kind's cost is reviewed here, so a new
// one cannot arrive with a count in it that nothing bounds.
TEST(WireTable, EveryKindAClientMaySendDeclaresItsBound) {
  const std::map<wire::Envelope::Which, wire::Cost> reviewed{
      {wire::Envelope::HELLO, wire::Cost::hello},
      {wire::Envelope::HEARTBEAT, wire::Cost::constant},
      {wire::Envelope::VALUE, wire::Cost::frame},
      {wire::Envelope::SUBMIT, wire::Cost::slots},
      {wire::Envelope::RELEASE, wire::Cost::frame},
      {wire::Envelope::CANCEL, wire::Cost::frame},
      {wire::Envelope::STATUS_REQUEST, wire::Cost::constant},
      {wire::Envelope::SHUTDOWN, wire::Cost::constant},
      {wire::Envelope::WORKERS_REQUEST, wire::Cost::constant},
      {wire::Envelope::SIMULATIONS_REQUEST, wire::Cost::constant},
      {wire::Envelope::FUNCTIONS_REQUEST, wire::Cost::constant},
      {wire::Envelope::STREAM_OPEN, wire::Cost::stream},
      {wire::Envelope::STREAM_PUSH, wire::Cost::stream},
      {wire::Envelope::STREAM_CLOSE, wire::Cost::constant},
      {wire::Envelope::STREAM_ATTACH, wire::Cost::stream},
      {wire::Envelope::RESULTS_QUERY, wire::Cost::query},
      {wire::Envelope::CHECKPOINTS_REQUEST, wire::Cost::query},
      {wire::Envelope::STREAMS_REQUEST, wire::Cost::query},  // a list of at most 100,000, or one drop
      {wire::Envelope::STREAM_CANCEL, wire::Cost::frame},
      {wire::Envelope::GLM, wire::Cost::frame},
  };
  std::size_t from_clients = 0;
  for (const auto& info : wire::kWireKinds) {
    if (!(info.directions & wire::kClientToScheduler)) continue;
    ++from_clients;
    auto it = reviewed.find(info.kind);
    ASSERT_NE(it, reviewed.end()) << "'" << info.name
                                  << "' may come from a client: review its cost bound here";
    EXPECT_EQ(static_cast<int>(info.cost), static_cast<int>(it->second)) << info.name;
  }
  EXPECT_EQ(from_clients, reviewed.size());
}

// The client protocol's rows (nodes/client_protocol.hpp) cover the wire table: every kind a client may
// send has a handler on the scheduler (but the transport's own hello, and the value its tests echo), every
// kind a client may be sent says how the client matches it, and what the rows say agrees with the table.
TEST(ClientProtocol, EveryClientKindIsDeclaredOnceAndAgreesWithTheWireTable) {
  std::set<wire::Envelope::Which> requests, answers;
  for (const auto& row : wire::kClientRequests) {
    EXPECT_TRUE(requests.insert(row.request).second) << wire::kind_name(row.request) << " twice";
    const auto* info = wire::find_kind(row.request);
    ASSERT_NE(info, nullptr);
    EXPECT_TRUE(info->directions & wire::kClientToScheduler) << info->name;
    if (row.answer != wire::kNoAnswer) {
      const auto* answer = wire::find_kind(row.answer);
      ASSERT_NE(answer, nullptr) << info->name;
      EXPECT_TRUE(answer->directions & wire::kSchedulerToClient) << answer->name;
      EXPECT_NE(wire::find_client_answer(row.answer), nullptr) << answer->name << " has no answer row";
    }
    // Reading the store is never done on the I/O thread.
    if (info->cost == wire::Cost::query) {
      EXPECT_EQ(static_cast<int>(row.answered_on), static_cast<int>(wire::AnsweredOn::query_executor))
          << info->name;
    }
  }
  for (const auto& row : wire::kClientAnswers) {
    EXPECT_TRUE(answers.insert(row.kind).second) << wire::kind_name(row.kind) << " twice";
    const auto* info = wire::find_kind(row.kind);
    ASSERT_NE(info, nullptr);
    EXPECT_TRUE(info->directions & wire::kSchedulerToClient) << info->name;
  }
  for (const auto& info : wire::kWireKinds) {
    if ((info.directions & wire::kClientToScheduler) && info.kind != wire::Envelope::HELLO &&
        info.kind != wire::Envelope::VALUE) {
      EXPECT_TRUE(requests.count(info.kind)) << "'" << info.name << "' may come from a client: give it a row";
    }
    if ((info.directions & wire::kSchedulerToClient) && info.kind != wire::Envelope::WELCOME &&
        info.kind != wire::Envelope::VALUE) {
      EXPECT_TRUE(answers.count(info.kind))
          << "'" << info.name << "' may reach a client: say how it is matched";
    }
  }
}

// Answers matched by request id carry it where the row says.
TEST(ClientProtocol, AnswersCarryTheirRequestIds) {
  capnp::MallocMessageBuilder builder;
  auto envelope = builder.initRoot<wire::Envelope>();
  envelope.initStreamOpened().setRequestId(41);
  EXPECT_EQ(wire::answer_request_id(envelope.asReader()), 41u);
  envelope.initResultsAnswer().setRequestId(42);
  EXPECT_EQ(wire::answer_request_id(envelope.asReader()), 42u);
  envelope.initGlm().setSession(43);
  EXPECT_EQ(wire::answer_request_id(envelope.asReader()), 43u);
  envelope.initStatus();
  EXPECT_FALSE(wire::answer_request_id(envelope.asReader()).has_value());
}

}  // namespace

// A stream's record in the result store is two: its settings, written once when it is created, and its
// counters, rewritten with each accepted push (so a push does not rewrite the whole config). A store
// written before the split, with everything in one record, is still read.
#include <gtest/gtest.h>
#include <rocksdb/db.h>

#include <capnp/message.h>
#include <capnp/serialize.h>

#include "graph/codec.hpp"
#include "messages/results.capnp.h"
#include "messages/wire_codec.hpp"
#include "storage/node_database.hpp"
#include "storage/result_store.hpp"
#include "support/scratch_dir.hpp"

namespace {

using namespace tessera;

std::string record_key(char kind, std::uint64_t stream) {
  std::string key(1, kind);
  for (int shift = 56; shift >= 0; shift -= 8) key += static_cast<char>((stream >> shift) & 0xff);
  return key;
}

std::size_t bytes_under(rocksdb::DB& db, char kind, std::uint64_t stream) {
  std::string value;
  return db.Get(rocksdb::ReadOptions(), record_key(kind, stream), &value).ok() ? value.size() : 0;
}

TEST(ResultStoreLayout, APushRewritesTheCountersNotTheSettings) {
  tessera::testing::ScratchDir dir("tessera-store-layout");
  auto database = std::make_shared<NodeDatabase>(dir.path());
  ResultStore store(database);
  StreamInfo info;
  info.settings.simulation = "costly_simulation";
  auto config = std::make_shared<Config>();
  config->set("table", to_value(std::vector<double>(4096, 1.5)));  // 32 KiB of config
  info.settings.config = config;
  info.settings.pool_size = 3;
  const auto id = store.create_stream(info);
  info.id = id;
  const std::size_t settings = bytes_under(database->db(), 's', id);
  EXPECT_GT(settings, 32u << 10);
  const std::vector<Value> sets{to_value(1.0), to_value(2.0)};
  info.pushed = 2;
  store.accept(info, 0, sets, {}, 0.0, {}, nullptr);
  // The record a push rewrites holds only the counters (a fixed-size Cap'n Proto struct).
  EXPECT_LT(bytes_under(database->db(), 'm', id), 256u);
  EXPECT_EQ(bytes_under(database->db(), 's', id), settings);
  const auto read = store.stream(id);
  ASSERT_TRUE(read.has_value());
  EXPECT_EQ(read->pushed, 2u);
  EXPECT_EQ(read->settings.pool_size, 3u);
  EXPECT_EQ(read->settings.simulation, "costly_simulation");
  EXPECT_EQ(read->settings.config->get<std::vector<double>>("table", {}).size(), 4096u);
}

TEST(ResultStoreLayout, AStoreWrittenBeforeTheSplitIsStillRead) {
  tessera::testing::ScratchDir dir("tessera-store-layout");
  auto database = std::make_shared<NodeDatabase>(dir.path());
  {
    // The old layout: one record under 'm' with the settings and the counters.
    capnp::MallocMessageBuilder builder;
    auto old = builder.initRoot<wire::StreamInfo>();
    old.setSimulation("echo");
    old.setPushed(7);
    old.setCloseRequested(true);
    old.setPoolSize(5);
    old.setRetries(2);
    const auto words = capnp::messageToFlatArray(builder);
    const auto bytes = words.asBytes();
    ASSERT_TRUE(database->db()
                    .Put(rocksdb::WriteOptions(), record_key('m', 9),
                         rocksdb::Slice(reinterpret_cast<const char*>(bytes.begin()), bytes.size()))
                    .ok());
  }
  ResultStore store(database);
  const auto read = store.stream(9);
  ASSERT_TRUE(read.has_value());
  EXPECT_EQ(read->settings.simulation, "echo");
  EXPECT_EQ(read->pushed, 7u);
  EXPECT_TRUE(read->close_requested);
  EXPECT_EQ(read->settings.pool_size, 5u);
  EXPECT_EQ(read->settings.retries, 2u);
  const auto all = store.streams();
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].settings.pool_size, 5u);
}

std::string result_key(std::uint64_t stream, std::uint64_t id) {
  std::string key = record_key('r', stream);
  for (int shift = 56; shift >= 0; shift -= 8) key += static_cast<char>((id >> shift) & 0xff);
  return key;
}

// Results are stored packed (a trivial set's record is a third of its flat size, and each byte is written
// several times over by RocksDB); a flat record written by an older build is still read.
TEST(ResultStoreLayout, ResultsAreStoredPackedAndAFlatRecordIsStillRead) {
  tessera::testing::ScratchDir dir("tessera-store-layout");
  auto database = std::make_shared<NodeDatabase>(dir.path());
  ResultStore store(database);
  StreamInfo info;
  info.settings.simulation = "echo";
  const auto id = store.create_stream(info);
  StreamResult trivial{.id = 0, .value = to_value(2.5), .parameters = to_value(1.25)};
  trivial.timeline = SetTimeline{1.0, 2.0, 3.0, 4.0, 5.0};
  store.put(id, {trivial});
  std::string packed;
  ASSERT_TRUE(database->db().Get(rocksdb::ReadOptions(), result_key(id, 0), &packed).ok());
  EXPECT_EQ(packed[0], '\xff');
  EXPECT_LT(packed.size(), 100u);
  {
    capnp::MallocMessageBuilder builder;
    auto old = builder.initRoot<wire::StoredResult>();
    wire::Attachments none;
    wire::encode(to_value(7.0), old.initValue(), none, {.attachment_threshold = ~std::size_t{0}});
    wire::encode(to_value(3.5), old.initParameters(), none, {.attachment_threshold = ~std::size_t{0}});
    const auto words = capnp::messageToFlatArray(builder);
    const auto bytes = words.asBytes();
    EXPECT_GT(bytes.size(), packed.size());
    ASSERT_TRUE(database->db()
                    .Put(rocksdb::WriteOptions(), result_key(id, 1),
                         rocksdb::Slice(reinterpret_cast<const char*>(bytes.begin()), bytes.size()))
                    .ok());
  }
  const auto read = store.get(id, 0);
  ASSERT_TRUE(read.has_value());
  EXPECT_EQ(read->value.as_double(), 2.5);
  EXPECT_EQ(read->parameters.as_double(), 1.25);
  EXPECT_EQ(read->timeline.stored, 5.0);
  const auto old = store.get(id, 1);
  ASSERT_TRUE(old.has_value());
  EXPECT_EQ(old->value.as_double(), 7.0);
  EXPECT_EQ(old->parameters.as_double(), 3.5);
  // A damaged packed record is an error that says so, not a crash.
  ASSERT_TRUE(
      database->db().Put(rocksdb::WriteOptions(), result_key(id, 2), std::string("\xff\x01\x02", 3)).ok());
  EXPECT_THROW(store.get(id, 2), std::exception);
}

}  // namespace

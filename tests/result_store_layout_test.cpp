// A stream's record in the result store is two: its settings, written once when it is created, and its
// counters, rewritten with each accepted push (so a push does not rewrite the whole config). A store
// written before the split, with everything in one record, is still read.
#include <gtest/gtest.h>
#include <rocksdb/db.h>

#include <capnp/message.h>
#include <capnp/serialize-packed.h>
#include <capnp/serialize.h>
#include <kj/io.h>

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

bool stored_under(NodeDatabase& database, std::uint64_t stream, std::uint64_t id,
                  std::string* value = nullptr) {
  std::string ignored;
  return database.db().Get(rocksdb::ReadOptions(), result_key(stream, id), value ? value : &ignored).ok();
}

std::vector<std::uint64_t> scanned(ResultStore& store, std::uint64_t stream, std::uint64_t first,
                                   std::uint64_t last) {
  std::vector<std::uint64_t> ids;
  store.scan(stream, first, last, [&](StreamResult& r) {
    EXPECT_EQ(r.value.as_double(), static_cast<double>(r.id) + 0.5) << r.id;
    ids.push_back(r.id);
    return true;
  });
  return ids;
}

std::vector<std::uint64_t> range(std::uint64_t first, std::uint64_t last) {
  std::vector<std::uint64_t> ids;
  for (auto id = first; id < last; ++id) ids.push_back(id);
  return ids;
}

StreamResult result(std::uint64_t id) {
  StreamResult r{.id = id, .value = to_value(static_cast<double>(id) + 0.5), .parameters = to_value(1.25)};
  r.timeline = SetTimeline{1.0, 2.0, 3.0, 4.0, 5.0};
  return r;
}

// A store in a scratch directory with one stream.
class ResultStoreRuns : public ::testing::Test {
 protected:
  tessera::testing::ScratchDir dir{"tessera-store-layout"};
  std::shared_ptr<NodeDatabase> database = std::make_shared<NodeDatabase>(dir.path());
  ResultStore store{database};
  StreamInfo info = [] {
    StreamInfo echo;
    echo.settings.simulation = "echo";
    return echo;
  }();
  const std::uint64_t id = store.create_stream(info);
};

// A put's results of consecutive ids are one record (a run) under the first id's key, at most 1,024 each:
// RocksDB then inserts, flushes and compacts one key per job's run rather than one per set. Reads find
// an id inside a run, whatever order the results were put in.
TEST_F(ResultStoreRuns, ConsecutiveResultsAreStoredAsOneRunUnderTheFirstId) {
  std::vector<StreamResult> results;
  for (std::uint64_t i : {7, 3, 0, 9, 1, 20, 2, 8, 4, 6, 5}) results.push_back(result(i));
  EXPECT_EQ(store.put(id, results, ResultStore::Check::known_new).size(), 11u);
  std::string run;
  ASSERT_TRUE(stored_under(*database, id, 0, &run));
  EXPECT_EQ(run[0], '\xfe');
  EXPECT_EQ(run[1], 10);  // its length, little-endian
  EXPECT_LT(run.size(), 10 * 60u);
  for (std::uint64_t absent = 1; absent < 10; ++absent) EXPECT_FALSE(stored_under(*database, id, absent));
  EXPECT_TRUE(stored_under(*database, id, 20));
  EXPECT_TRUE(store.contains(id, 5));
  EXPECT_FALSE(store.contains(id, 10));
  EXPECT_FALSE(store.contains(id, 19));
  EXPECT_TRUE(store.contains(id, 20));
  const auto five = store.get(id, 5);
  ASSERT_TRUE(five.has_value());
  EXPECT_EQ(five->id, 5u);
  EXPECT_EQ(five->value.as_double(), 5.5);
  EXPECT_EQ(five->parameters.as_double(), 1.25);
  EXPECT_EQ(five->timeline.stored, 5.0);
  EXPECT_FALSE(store.get(id, 12).has_value());
  EXPECT_EQ(store.count(id), 11u);
  EXPECT_EQ(scanned(store, id, 3, 21), (std::vector<std::uint64_t>{3, 4, 5, 6, 7, 8, 9, 20}));
  EXPECT_EQ(scanned(store, id, 10, 20), std::vector<std::uint64_t>{});
  // A rerun's duplicates (Check::stored) are skipped, a new id beside a run is a run of its own.
  EXPECT_EQ(store.put(id, {result(5), result(10), result(5)}), std::vector<std::uint64_t>{10});
  EXPECT_EQ(scanned(store, id, 0, ~std::uint64_t{0}),
            (std::vector<std::uint64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 20}));
  // Long runs are cut at 1,024 results.
  const auto long_stream = store.create_stream(info);
  std::vector<StreamResult> many;
  for (std::uint64_t i = 0; i < 2500; ++i) many.push_back(result(i));
  store.put(long_stream, many, ResultStore::Check::known_new);
  for (std::uint64_t first : {0, 1024, 2048}) EXPECT_TRUE(stored_under(*database, long_stream, first));
  EXPECT_FALSE(stored_under(*database, long_stream, 1));
  EXPECT_EQ(store.count(long_stream), 2500u);
  EXPECT_EQ(scanned(store, long_stream, 1000, 1100), range(1000, 1100));
  EXPECT_EQ(store.get(long_stream, 2499)->value.as_double(), 2499.5);
}

// Records of one result each, written by older builds (flat, then packed behind 0xff), are read beside
// runs; a damaged run is an error that says so, not a crash.
TEST_F(ResultStoreRuns, RecordsOfOneResultFromOlderBuildsAreStillRead) {
  store.put(id, {result(0), result(1)});
  const auto old_result = [](double value) {
    auto builder = std::make_unique<capnp::MallocMessageBuilder>();
    auto old = builder->initRoot<wire::StoredResult>();
    wire::Attachments none;
    wire::encode(to_value(value), old.initValue(), none, {.attachment_threshold = ~std::size_t{0}});
    wire::encode(to_value(3.5), old.initParameters(), none, {.attachment_threshold = ~std::size_t{0}});
    return builder;
  };
  {
    auto builder = old_result(2.5);
    const auto words = capnp::messageToFlatArray(*builder);
    const auto bytes = words.asBytes();
    ASSERT_TRUE(database->db()
                    .Put(rocksdb::WriteOptions(), result_key(id, 2),
                         rocksdb::Slice(reinterpret_cast<const char*>(bytes.begin()), bytes.size()))
                    .ok());
  }
  {
    auto builder = old_result(3.5);
    kj::VectorOutputStream out(256);
    const char marker = '\xff';
    out.write(&marker, 1);
    capnp::writePackedMessage(out, *builder);
    const auto bytes = out.getArray();
    ASSERT_TRUE(database->db()
                    .Put(rocksdb::WriteOptions(), result_key(id, 3),
                         rocksdb::Slice(reinterpret_cast<const char*>(bytes.begin()), bytes.size()))
                    .ok());
  }
  EXPECT_EQ(scanned(store, id, 0, 10), (std::vector<std::uint64_t>{0, 1, 2, 3}));
  EXPECT_EQ(store.count(id), 4u);
  EXPECT_TRUE(store.contains(id, 3));
  EXPECT_EQ(store.get(id, 2)->parameters.as_double(), 3.5);
  EXPECT_EQ(store.get(id, 3)->value.as_double(), 3.5);
  // Damaged: a run whose bytes are not what its header says, and a header cut short.
  ASSERT_TRUE(
      database->db()
          .Put(rocksdb::WriteOptions(), result_key(id, 5), std::string("\xfe\x02\x00\x00\x00\x01\x02", 7))
          .ok());
  EXPECT_TRUE(store.contains(id, 6));
  try {
    store.get(id, 6);
    FAIL() << "a damaged run was read";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("run of results under id 5"), std::string::npos) << e.what();
  }
  ASSERT_TRUE(
      database->db().Put(rocksdb::WriteOptions(), result_key(id, 8), std::string("\xfe\x01", 2)).ok());
  EXPECT_FALSE(store.contains(id, 8));
}

}  // namespace

// The RocksDB result store and its queries: results are kept once per id (a rerun's duplicate is
// skipped), survive reopening the store (a node restart), and answer filters, summaries and exports.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <sstream>

#include "graph/codec.hpp"
#include "storage/result_query.hpp"
#include "storage/result_store.hpp"

namespace {

using namespace tessera;

class TempDir {
 public:
  TempDir() {
    static int n = 0;
    path_ = std::filesystem::temp_directory_path() /
            ("tessera-store-test-" + std::to_string(getpid()) + "-" + std::to_string(++n));
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

StreamResult ok(std::uint64_t id, double value) {
  return StreamResult{id, to_value(value), to_value(std::vector<double>{double(id), 0.5}), false, "", ""};
}

TEST(ResultStore, KeepsEachIdOnceAndSurvivesReopening) {
  TempDir dir;
  std::uint64_t stream = 0;
  {
    ResultStore store(dir.path());
    stream = store.create_stream("costly_simulation");
    EXPECT_EQ(store.put(stream, {ok(1, 1.5), ok(2, 2.5), ok(2, 9.0)}), (std::vector<std::uint64_t>{1, 2}));
    // A rerun after a worker failure writes the same ids again: only the new one is stored.
    EXPECT_EQ(store.put(stream, {ok(2, 7.0), ok(3, 3.5)}), (std::vector<std::uint64_t>{3}));
    auto info = *store.stream(stream);
    info.pushed = 3;
    info.closed = true;
    store.update_stream(info);
    StreamResult error{4, {}, to_value(std::vector<double>{4, 0.5}), true, "division by zero", "worker-7"};
    store.put(stream, {error});
  }
  ResultStore store(dir.path());  // as after a restart
  EXPECT_EQ(store.count(stream), 4u);
  EXPECT_DOUBLE_EQ(from_value<double>(store.get(stream, 2)->value), 2.5);
  EXPECT_TRUE(store.get(stream, 4)->failed);
  EXPECT_EQ(store.get(stream, 4)->error, "division by zero");
  EXPECT_EQ(store.get(stream, 4)->node, "worker-7");
  EXPECT_FALSE(store.get(stream, 5));
  const auto info = *store.stream(stream);
  EXPECT_TRUE(info.closed);
  EXPECT_EQ(info.pushed, 3u);
  EXPECT_EQ(info.settings.simulation, "costly_simulation");
  EXPECT_EQ(store.create_stream("other"), stream + 1);
  EXPECT_EQ(store.streams().size(), 2u);
  std::vector<std::uint64_t> ids;
  store.scan(stream, 2, 4, [&](const StreamResult& r) {
    ids.push_back(r.id);
    return true;
  });
  EXPECT_EQ(ids, (std::vector<std::uint64_t>{2, 3}));
}

// Parameter sets written ahead stay until every set of their push is answered (deleted in the batch that
// stores the last), and survive reopening the store with the stream's settings: a restarted node runs
// exactly those without a stored result.
TEST(ResultStore, SetsWrittenAheadStayUntilAnsweredAndSurviveReopening) {
  TempDir dir;
  std::uint64_t stream = 0;
  {
    ResultStore store(dir.path());
    StreamInfo info;
    info.settings.simulation = "costly_simulation";
    info.settings.pool_size = 3;
    info.settings.max_in_flight = 100;
    auto config = std::make_shared<Config>();
    config->set("scale", to_value(2.5));
    info.settings.config = config;
    stream = store.create_stream(info);
    info.id = stream;
    std::vector<Value> sets;
    for (int i = 0; i < 10; ++i) sets.push_back(to_value(double(i)));
    info.pushed = 10;
    store.accept(info, 0, sets);
    // A second push with priorities: they come back with the sets still unanswered.
    info.pushed = 13;
    const std::vector<Value> more{to_value(10.0), to_value(11.0), to_value(12.0)};
    const std::vector<double> priorities{2.5, -1, 0};
    store.accept(info, 10, more, priorities);
    EXPECT_THROW(store.accept(info, 13, more, std::vector<double>{1.0}), StoreError);
    store.sync();
    std::vector<StreamResult> answers{ok(2, 4.0), ok(7, 49.0)};
    EXPECT_EQ(store.put(stream, answers, ResultStore::Check::known_new).size(), 2u);
  }
  ResultStore store(dir.path());
  const auto info = store.stream(stream);
  ASSERT_TRUE(info);
  EXPECT_EQ(info->pushed, 13u);
  EXPECT_FALSE(info->closed);
  EXPECT_EQ(info->settings.pool_size, 3u);
  EXPECT_EQ(info->settings.max_in_flight, 100u);
  EXPECT_DOUBLE_EQ(info->settings.config->get<double>("scale", 0), 2.5);
  auto pushes = store.pending(stream);
  ASSERT_EQ(pushes.size(), 2u);
  EXPECT_TRUE(pushes[0].priorities.empty());  // all 0
  EXPECT_EQ(pushes[1].first_id, 10u);
  EXPECT_EQ(pushes[1].priorities, (std::vector<double>{2.5, -1, 0}));
  store.forget_pushes(stream, std::vector<std::uint64_t>{10});
  pushes = store.pending(stream);
  ASSERT_EQ(pushes.size(), 1u);
  EXPECT_EQ(pushes[0].first_id, 0u);
  std::vector<std::uint64_t> waiting;
  for (const auto& [id, parameters] : pushes[0].unanswered) {
    EXPECT_DOUBLE_EQ(from_value<double>(parameters), double(id));
    waiting.push_back(id);
  }
  EXPECT_EQ(waiting, (std::vector<std::uint64_t>{0, 1, 3, 4, 5, 6, 8, 9}));
  // Another stream's pushes are its own; an answered push's record goes with the results that answer it.
  const auto other = store.create_stream("costly_simulation");
  EXPECT_TRUE(store.pending(other).empty());
  std::vector<StreamResult> rest;
  for (std::uint64_t id : waiting) rest.push_back(ok(id, double(id * id)));
  const std::uint64_t first = 0;
  store.put(stream, rest, ResultStore::Check::stored, std::span<const std::uint64_t>(&first, 1));
  EXPECT_TRUE(store.pending(stream).empty());
  EXPECT_EQ(store.count(stream), 10u);
}

TEST(ResultQuery, FiltersSummariesAndExports) {
  TempDir dir;
  ResultStore store(dir.path());
  const auto stream = store.create_stream("sim");
  std::vector<StreamResult> results;
  for (std::uint64_t id = 0; id < 100; ++id) results.push_back(ok(id, double(id) / 25.0));
  results.push_back(StreamResult{100, {}, {}, true, "boom", "w"});
  store.put(stream, results);

  auto over_two = summarize(store, stream, ResultFilter::parse("result > 2"));
  EXPECT_EQ(over_two.count, 49u);  // 51/25 .. 99/25
  auto everything = summarize(store, stream, ResultFilter{}, ResultField{}, 4);
  EXPECT_EQ(everything.count, 101u);
  EXPECT_EQ(everything.failed, 1u);
  EXPECT_EQ(everything.numeric, 100u);
  EXPECT_DOUBLE_EQ(everything.min, 0.0);
  EXPECT_DOUBLE_EQ(everything.max, 99.0 / 25.0);
  EXPECT_NEAR(everything.mean, 49.5 / 25.0, 1e-12);
  EXPECT_EQ(everything.histogram, (std::vector<std::uint64_t>{25, 25, 25, 25}));
  EXPECT_EQ(summarize(store, stream, ResultFilter::parse("result >= 1 and result < 2")).count, 25u);
  EXPECT_EQ(summarize(store, stream, ResultFilter::parse("failed")).count, 1u);
  EXPECT_EQ(summarize(store, stream, ResultFilter::parse("id >= 10 and id < 20")).count, 10u);
  EXPECT_EQ(summarize(store, stream, ResultFilter::parse("id == 100")).failed, 1u);
  EXPECT_EQ(summarize(store, stream, ResultFilter::parse("ok")).count, 100u);

  try {
    ResultFilter::parse("result >> 2");
    FAIL();
  } catch (const QueryError& e) {
    EXPECT_NE(std::string(e.what()).find("position 9"), std::string::npos) << e.what();
  }
  EXPECT_THROW(ResultFilter::parse("value > 2"), QueryError);
  EXPECT_THROW(ResultFilter::parse("result > 2 or result < 1"), QueryError);

  std::ostringstream csv, json;
  const std::string kTimes = "pushed_at,dispatched_at,started_at,finished_at,stored_at";
  const std::string kHeader = "id,parameter_0,parameter_1,result,status,error,node," + kTimes + "\n";
  export_csv(store, stream, ResultFilter::parse("result > 3.9"), csv);
  EXPECT_EQ(csv.str(), kHeader + "98,98,0.5,3.92,ok,,,,,,,\n99,99,0.5,3.96,ok,,,,,,,\n");
  // A failed set keeps the columns: its result cells are empty, its status says why.
  csv.str({});
  export_csv(store, stream, ResultFilter::parse("failed"), csv);
  EXPECT_EQ(csv.str(), kHeader + "100,,,,error,boom,w,,,,,\n");
  // The names the stream was opened with head its parameter columns (quoted where they need it).
  StreamInfo named;
  named.settings.simulation = "sim";
  named.settings.parameter_names = {"x", "rate, per s"};
  const auto second = store.create_stream(named);
  std::vector<StreamResult> vectors{StreamResult{0, to_value(std::vector<double>{1, 2}),
                                                 to_value(std::vector<double>{3, 4}), false, "", ""}};
  store.put(second, vectors);
  csv.str({});
  export_csv(store, second, ResultFilter{}, csv);
  EXPECT_EQ(csv.str(),
            "id,x,\"rate, per s\",result_0,result_1,status,error,node," + kTimes + "\n0,3,4,1,2,ok,,,,,,,\n");
  export_json(store, stream, ResultFilter::parse("failed"), json);
  EXPECT_EQ(json.str(),
            "{\"id\":100,\"parameters\":null,\"error\":\"boom\",\"node\":\"w\",\"failure\":\"error\"}\n");
}

// A stream whose results are vectors: a filter or summary of 'result' as a whole has no one number to
// read, and says which element to name instead of answering 0; an element, or a named output, reads.
TEST(ResultQuery, AFieldOfSeveralNumbersIsRefusedNamingAnElement) {
  TempDir dir;
  ResultStore store(dir.path());
  StreamInfo info;
  info.settings.simulation = "sim";
  const auto plain = store.create_stream(info);
  info.result_names = {"energy", "steps"};
  const auto named = store.create_stream(info);
  std::vector<StreamResult> results;
  for (std::uint64_t id = 0; id < 40; ++id)
    results.push_back(StreamResult{id, to_value(std::vector<double>{double(id), 2.0 * double(id)}),
                                   to_value(std::vector<double>{double(id), 1.0}), false, "", ""});
  store.put(plain, results);
  store.put(named, results);
  const auto refusal = [&](std::uint64_t stream, const std::string& filter, const std::string& field) {
    try {
      const FieldNames names = field_names(store, stream);
      summarize(store, stream, filter.empty() ? ResultFilter{} : ResultFilter::parse(filter, names),
                ResultField::parse(field, names), 4);
      return std::string("(answered)");
    } catch (const QueryError& e) {
      return std::string(e.what());
    }
  };
  EXPECT_EQ(refusal(plain, "", "result"),
            "'result' of set 0 holds 2 numbers, not one: name one of them, as result[0]");
  EXPECT_EQ(refusal(plain, "result > 20", "id"),
            "'result' of set 0 holds 2 numbers, not one: name one of them, as result[0]");
  EXPECT_EQ(refusal(named, "", "result"),
            "'result' of set 0 holds 2 numbers, not one: name one of them, as result[0] or one of its "
            "outputs ('energy', 'steps')");
  EXPECT_EQ(refusal(plain, "parameters > 3", "id"),
            "'parameters' of set 0 holds 2 numbers, not one: name one of them, as parameters[0]");
  const FieldNames names = field_names(store, named);
  const auto by_element =
      summarize(store, plain, ResultFilter::parse("result[0] > 20"), ResultField::parse("result[1]", {}), 4);
  EXPECT_EQ(by_element.count, 19u);
  EXPECT_DOUBLE_EQ(by_element.max, 78.0);
  const auto by_name = summarize(store, named, ResultFilter::parse("energy > 20", names),
                                 ResultField::parse("steps", names), 4);
  EXPECT_EQ(by_name.count, 19u);
  EXPECT_DOUBLE_EQ(by_name.min, 42.0);
  // The histogram's edges: bins + 1, from min to max.
  EXPECT_EQ(by_name.bin_edges(), (std::vector<double>{42.0, 51.0, 60.0, 69.0, 78.0}));
}

TEST(ResultStore, UnwritableDirectoryIsAClearError) {
  try {
    ResultStore store("/proc/tessera-cannot-be-here");
    FAIL();
  } catch (const StoreError& e) {
    EXPECT_NE(std::string(e.what()).find("/proc/tessera-cannot-be-here"), std::string::npos) << e.what();
  }
}

}  // namespace

// Dictionary graphs: they run, and a cycle, a missing dependency, an unknown function, a wrong
// argument count or type is rejected at submission with the keys named; tasks no requested key needs
// are culled before they are sent (unless the client switches culling off).
#include <gtest/gtest.h>

#include <atomic>
#include <tessera/tessera.hpp>

#include "graph/graph_passes.hpp"

namespace {

using tessera::Key;
using tessera::Value;

std::int64_t inc(std::int64_t x) {
  return x + 1;
}
TESSERA_TASK(inc);
std::int64_t sum2(std::int64_t a, std::int64_t b) {
  return a + b;
}
TESSERA_TASK(sum2);
std::atomic<int> counted_calls{0};
std::int64_t counted(std::int64_t x) {
  counted_calls++;
  return x;
}
TESSERA_TASK(counted);

std::string rejection(const tessera::GraphSpec& spec) {
  try {
    tessera::lower(spec);
  } catch (const tessera::SubmissionError& e) {
    return e.what();
  }
  return "";
}

TEST(GraphSpec, RunsADiamond) {
  tessera::LocalCluster cluster{{.workers = 2, .threads_per_worker = 1}};
  tessera::Client client{cluster};
  tessera::GraphSpec g;
  g.add("a", "inc", {Value(std::int64_t{1})})
      .add("b", "inc", {Key{"a"}})
      .add("c", "inc", {Key{"a"}})
      .add("d", "sum2", {Key{"b"}, Key{"c"}});
  auto out = client.get(g, {"d", "a"});
  EXPECT_EQ(out[0].as_int(), 6);
  EXPECT_EQ(out[1].as_int(), 2);
}

TEST(GraphSpec, CycleIsRejectedNamingItsKeys) {
  tessera::GraphSpec g;
  g.add("x", "inc", {Key{"z"}})
      .add("y", "inc", {Key{"x"}})
      .add("z", "inc", {Key{"y"}})
      .add("w", "inc", {Value(std::int64_t{0})});
  const auto why = rejection(g);
  EXPECT_NE(why.find("cycle"), std::string::npos) << why;
  for (const char* key : {"x", "y", "z"}) EXPECT_NE(why.find(key), std::string::npos) << why;
  EXPECT_EQ(why.find("w"), std::string::npos) << why;
}

TEST(GraphSpec, MissingDependencyIsRejected) {
  tessera::GraphSpec g;
  g.add("b", "inc", {Key{"nowhere"}});
  EXPECT_NE(rejection(g).find("task 'b': argument 0 depends on missing key 'nowhere'"), std::string::npos)
      << rejection(g);
}

TEST(GraphSpec, UnknownFunctionArityAndTypeAreRejected) {
  tessera::GraphSpec unknown, arity, type;
  unknown.add("k", "no_such_fn", {});
  arity.add("k", "sum2", {Value(std::int64_t{1})});
  type.add("k", "inc", {Value(std::string("one"))});
  EXPECT_NE(rejection(unknown).find("task 'k': unknown task function 'no_such_fn'"), std::string::npos);
  EXPECT_NE(rejection(arity).find("task 'k': sum2(int, int) -> int takes 2 arguments, got 1"),
            std::string::npos)
      << rejection(arity);
  EXPECT_NE(rejection(type).find("task 'k': inc argument 0 expects int, got string"), std::string::npos)
      << rejection(type);
}

TEST(GraphSpec, ClientRejectsUnknownKeyAndKeepsWorking) {
  tessera::LocalCluster cluster{{.workers = 1, .threads_per_worker = 1}};
  tessera::Client client{cluster};
  tessera::GraphSpec g;
  g.add("a", "inc", {Value(std::int64_t{1})});
  EXPECT_THROW(client.get(g, {"b"}), tessera::SubmissionError);
  EXPECT_EQ(client.get(g, {"a"})[0].as_int(), 2);
}

// a <- b <- d, c (needed by nothing asked for), e <- f (another branch).
tessera::GraphSpec branching() {
  tessera::GraphSpec g;
  g.add("a", "counted", {Value(std::int64_t{1})})
      .add("b", "inc", {Key{"a"}})
      .add("c", "counted", {Key{"a"}})
      .add("d", "sum2", {Key{"b"}, Key{"b"}})
      .add("e", "counted", {Value(std::int64_t{5})})
      .add("f", "inc", {Key{"e"}});
  return g;
}

TEST(GraphCull, KeepsExactlyWhatTheKeysNeed) {
  const auto culled = tessera::cull(branching(), {"d"});
  std::vector<std::string> kept;
  for (const auto& [key, task] : culled.tasks()) kept.push_back(key);
  EXPECT_EQ(kept, (std::vector<std::string>{"a", "b", "d"}));
  EXPECT_EQ(tessera::cull(branching(), {"f", "d", "f"}).size(), 5u);
  try {
    tessera::cull(branching(), {"d", "zz"});
    FAIL() << "an unknown key was culled to nothing";
  } catch (const tessera::SubmissionError& e) {
    EXPECT_NE(std::string(e.what()).find("'zz'"), std::string::npos) << e.what();
  }
}

TEST(GraphCull, TasksNoKeyNeedsNeverRun) {
  tessera::LocalCluster cluster{{.workers = 2, .threads_per_worker = 1}};
  tessera::Client client{cluster};
  counted_calls = 0;
  EXPECT_EQ(client.get(branching(), {"d"})[0].as_int(), 4);
  EXPECT_EQ(counted_calls.load(), 1);  // a only: c and e were never sent
  EXPECT_EQ(client.get(branching(), {"d", "f"})[1].as_int(), 6);
  EXPECT_EQ(counted_calls.load(), 3);  // a and e
}

TEST(GraphCull, ABrokenTaskNothingNeedsIsNotAnErrorWhenCulled) {
  tessera::LocalCluster cluster{{.workers = 1, .threads_per_worker = 1}};
  tessera::Client client{cluster};
  auto g = branching();
  g.add("broken", "no_such_function", {Value(std::int64_t{1})});
  EXPECT_EQ(client.get(g, {"f"})[0].as_int(), 6);
  try {
    client.with(tessera::GraphOptimizations{.cull = false}).get(g, {"f"});
    FAIL() << "an unknown function was accepted";
  } catch (const tessera::SubmissionError& e) {
    EXPECT_NE(std::string(e.what()).find("'broken'"), std::string::npos) << e.what();
  }
}

}  // namespace

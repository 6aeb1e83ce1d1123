// Dictionary graphs: they run, and a cycle, a missing dependency, an unknown function, a wrong
// argument count or type is rejected at submission with the keys named.
#include <gtest/gtest.h>

#include <tessera/tessera.hpp>

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

}  // namespace

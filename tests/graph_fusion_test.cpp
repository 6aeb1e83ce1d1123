// Fusion: chains and small diamonds run as one tessera.fused task; reduction trees and wanted values do
// not fuse; results are the same with fusion on or off (delayed, bag, array and dictionary graphs); a
// failing step is reported under its own function; a hostile program is refused with its fault named.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <tessera/array.hpp>
#include <tessera/tessera.hpp>

#include "backends/dispatch.hpp"
#include "backends/donation.hpp"
#include "backends/kernel_params.hpp"
#include "client/lower_delayed.hpp"
#include "graph/fused_task.hpp"
#include "graph/graph_passes.hpp"

namespace {

using tessera::delayed;
using tessera::FusionLimits;
using tessera::GraphOptimizations;
using tessera::Key;
using tessera::Value;

double expo(double x) {
  return std::exp(x);
}
TESSERA_TASK(expo);
double recip(double x) {
  if (x == 0) throw std::domain_error("recip of zero");
  return 1 / x;
}
TESSERA_TASK(recip);
double minus(double a, double b) {
  return a - b;
}
TESSERA_TASK(minus);
double twice(double x) {
  return 2 * x;
}
TESSERA_TASK(twice);
std::int64_t plus_one(std::int64_t x) {
  return x + 1;
}
TESSERA_TASK(plus_one);
bool is_even(std::int64_t x) {
  return x % 2 == 0;
}
TESSERA_TASK(is_even);
std::int64_t add_both(std::int64_t a, std::int64_t b) {
  return a + b;
}
TESSERA_TASK(add_both);

constexpr GraphOptimizations kNoFusion{.fuse = false, .fuse_diamonds = false};

// Tasks in topological order: each entry lists the tasks its arguments read (-1: a literal).
tessera::FusionGraph graph_of(std::vector<std::vector<std::int64_t>> args, std::vector<std::uint32_t> wanted,
                              std::vector<std::uint32_t> not_fusible = {}) {
  tessera::FusionGraph g;
  for (std::uint32_t t = 0; t < args.size(); ++t) {
    g.args.insert(g.args.end(), args[t].begin(), args[t].end());
    g.end_task(std::find(wanted.begin(), wanted.end(), t) != wanted.end(),
               std::find(not_fusible.begin(), not_fusible.end(), t) == not_fusible.end());
  }
  return g;
}
using Groups = std::vector<std::vector<std::uint32_t>>;

TEST(FusionPlan, AChainBecomesOneGroupAndAWantedTaskEndsIt) {
  EXPECT_EQ(tessera::plan_fusion(graph_of({{-1}, {0}, {1}, {2}}, {3}), {}), (Groups{{0, 1, 2, 3}}));
  EXPECT_EQ(tessera::plan_fusion(graph_of({{-1}, {0}, {1}, {2}}, {1, 3}), {}), (Groups{{0, 1}, {2, 3}}));
  EXPECT_TRUE(tessera::plan_fusion(graph_of({{-1}, {0}, {1}, {2}}, {3}), {.linear = false}).empty());
  // max_tasks splits a long chain into links of at most that many.
  const auto split = tessera::plan_fusion(graph_of({{-1}, {0}, {1}, {2}, {3}}, {4}), {.max_tasks = 2});
  for (const auto& group : split) EXPECT_LE(group.size(), 2u);
  EXPECT_EQ(split.size(), 2u);
}

TEST(FusionPlan, ADiamondFusesAReductionTreeDoesNot) {
  // x -> exp, recip -> minus: one group of four.
  EXPECT_EQ(tessera::plan_fusion(graph_of({{-1}, {0}, {0}, {1, 2}}, {3}), {}), (Groups{{0, 1, 2, 3}}));
  EXPECT_TRUE(tessera::plan_fusion(graph_of({{-1}, {0}, {0}, {1, 2}}, {3}), {.diamonds = false}).empty());
  // Two independent producers meeting in one consumer: their parallelism is kept.
  EXPECT_TRUE(tessera::plan_fusion(graph_of({{-1}, {-1}, {0, 1}}, {2}), {}).empty());
  // A branch read from outside the diamond keeps it open: nothing fuses across it.
  EXPECT_TRUE(tessera::plan_fusion(graph_of({{-1}, {0}, {0}, {1, 2}, {1}}, {3, 4}), {}).empty());
  // Five branches are wider than max_width 4.
  EXPECT_TRUE(
      tessera::plan_fusion(graph_of({{-1}, {0}, {0}, {0}, {0}, {0}, {1, 2}, {3, 4}, {5, 6}, {7, 8}}, {9}),
                           {.linear = false})
          .empty());
  // A task that may not be fused (a GPU call) is left alone, and so is its diamond.
  EXPECT_TRUE(tessera::plan_fusion(graph_of({{-1}, {0}, {0}, {1, 2}}, {3}, {2}), {.linear = false}).empty());
}

TEST(FusionPlan, ChainsOfDiamondsAndInputLimits) {
  // Diamond (0..3), then a chain step (4) that reads it: one group of five.
  EXPECT_EQ(tessera::plan_fusion(graph_of({{-1}, {0}, {0}, {1, 2}, {3}}, {4}), {}),
            (Groups{{0, 1, 2, 3, 4}}));
  // A chain whose literals would exceed max_inputs fuses only as far as they fit: 2 + 1 + 1 literals.
  EXPECT_EQ(tessera::plan_fusion(graph_of({{-1, -1}, {0, -1}, {1, -1}, {2, -1}}, {3}), {.max_inputs = 4}),
            (Groups{{0, 1, 2}}));
}

tessera::Delayed<double> exp_minus_recip(tessera::Delayed<double> x) {
  return delayed(minus)(delayed(expo)(x), delayed(recip)(x));
}

std::size_t tasks_sent(const std::vector<const tessera::DelayedNode*>& roots, const FusionLimits* limits) {
  std::size_t n = 0;
  for (const auto& op : tessera::detail::lower_delayed(roots, limits).operations) n += op->size();
  return n;
}

TEST(DelayedFusion, DiamondsAndChainsRunAsFewerTasksWithTheSameResults) {
  tessera::LocalCluster cluster{{.workers = 2, .threads_per_worker = 1}};
  tessera::Client client{cluster};
  std::vector<tessera::Delayed<double>> outs;
  for (int i = 1; i <= 50; ++i) outs.push_back(delayed(twice)(exp_minus_recip(delayed(twice)(0.01 * i))));
  std::vector<const tessera::DelayedNode*> roots;
  for (const auto& d : outs) roots.push_back(d.node().get());
  const FusionLimits limits{};
  EXPECT_EQ(tasks_sent(roots, nullptr), 250u);
  EXPECT_EQ(tasks_sent(roots, &limits), 50u);
  const auto fused = client.compute(outs);
  const auto plain = client.with(kNoFusion).compute(outs);
  ASSERT_EQ(fused.size(), 50u);
  for (int i = 1; i <= 50; ++i) {
    const double x = 0.02 * i;
    EXPECT_DOUBLE_EQ(fused[i - 1], 2 * (std::exp(x) - 1 / x));
    EXPECT_EQ(fused[i - 1], plain[i - 1]);
  }
}

TEST(DelayedFusion, AFailingStepIsReportedAsItWouldBeUnfused) {
  tessera::LocalCluster cluster{{.workers = 1, .threads_per_worker = 1}};
  tessera::Client client{cluster};
  // recip fails inside the fused task: what is asked for (twice) is cancelled because of it.
  auto bad = delayed(twice)(exp_minus_recip(delayed(twice)(0.0)));
  try {
    client.compute(bad);
    FAIL() << "recip of zero did not fail";
  } catch (const tessera::TaskFailed& e) {
    EXPECT_TRUE(e.cancelled());
    EXPECT_EQ(e.function(), "twice");
    EXPECT_NE(e.message().find("recip"), std::string::npos) << e.what();
    EXPECT_NE(e.message().find("recip of zero"), std::string::npos) << e.what();
  }
  // A failure of the last step is that step's own.
  try {
    client.compute(delayed(recip)(delayed(minus)(delayed(twice)(1.0), 2.0)));
    FAIL() << "recip of zero did not fail";
  } catch (const tessera::TaskFailed& e) {
    EXPECT_FALSE(e.cancelled());
    EXPECT_EQ(e.function(), "recip");
    EXPECT_EQ(e.message(), "recip of zero");
  }
  // The cluster runs on.
  EXPECT_DOUBLE_EQ(client.compute(delayed(twice)(1.5)), 3.0);
}

TEST(BagFusion, AFusedPipelineRunsItemByItemAndReportsAFailingStageAsUnfused) {
  tessera::LocalCluster cluster{{.workers = 1, .threads_per_worker = 1}};
  tessera::Client client{cluster};
  auto plain_client = client.with(kNoFusion);
  const auto fold_of = [](std::vector<double> items) {
    return tessera::Bag<double>::from_sequence(items, 2).map(twice).map(recip).fold(minus, 100.0);
  };
  const auto good = fold_of({1.0, 2.0, 4.0, 8.0});
  EXPECT_EQ(client.compute(good), plain_client.compute(good));
  EXPECT_DOUBLE_EQ(client.compute(good), (100.0 - 0.5 - 0.25) - (100.0 - 0.125 - 0.0625));
  // recip of zero fails in the second stage: the fold (what is asked for) is cancelled because of it,
  // fused or not.
  const auto bad = fold_of({1.0, 0.0, 4.0, 8.0});
  for (auto* c : {&client, &plain_client}) {
    try {
      c->compute(bad);
      FAIL() << "recip of zero did not fail";
    } catch (const tessera::TaskFailed& e) {
      EXPECT_NE(e.message().find("recip of zero"), std::string::npos) << e.what();
    }
  }
  EXPECT_DOUBLE_EQ(client.compute(good), plain_client.compute(good));  // the cluster runs on
}

TEST(DelayedFusion, APersistedValueInTheMiddleIsNotFusedAway) {
  tessera::LocalCluster cluster{{.workers = 1, .threads_per_worker = 1}};
  tessera::Client client{cluster};
  auto a = delayed(plus_one)(std::int64_t{1});
  auto b = delayed(plus_one)(a);
  auto c = delayed(plus_one)(b);
  std::vector<const tessera::DelayedNode*> roots{b.node().get(), c.node().get()};
  const FusionLimits limits{};
  EXPECT_EQ(tasks_sent(roots, &limits), 2u);  // {a, b} and {c}: b is asked for
  const auto both = client.compute(std::vector{b, c});
  EXPECT_EQ(both, (std::vector<std::int64_t>{3, 4}));
}

TEST(BagFusion, APipelinePerPartitionIsOneTaskWithTheSameResult) {
  tessera::LocalCluster cluster{{.workers = 2, .threads_per_worker = 1}};
  tessera::Client client{cluster};
  std::vector<std::int64_t> items(1000);
  for (std::int64_t i = 0; i < 1000; ++i) items[static_cast<std::size_t>(i)] = i;
  auto bag = tessera::Bag<std::int64_t>::from_sequence(items, 10).map(plus_one).filter(is_even).map(plus_one);
  const auto total = bag.fold(add_both, std::int64_t{0});
  std::vector<const tessera::DelayedNode*> roots{total.node().get()};
  const FusionLimits limits{};
  // Per partition map, filter, map, fold: 40 tasks, then 9 combines. Fused: the 10 per-partition
  // chains; the combine tree keeps its parallel branches.
  EXPECT_EQ(tasks_sent(roots, nullptr), 49u);
  EXPECT_LT(tasks_sent(roots, &limits), 25u);
  std::int64_t expected = 0;
  for (std::int64_t i = 0; i < 1000; ++i)
    if ((i + 1) % 2 == 0) expected += i + 2;
  EXPECT_EQ(client.compute(total), expected);
  EXPECT_EQ(client.with(kNoFusion).compute(total), expected);
  auto plain_client = client.with(kNoFusion);
  EXPECT_EQ(bag.compute(client), bag.compute(plain_client));
}

TEST(ArrayFusion, AnExpressionGivesTheSameValuesFused) {
  tessera::LocalCluster cluster{{.workers = 2, .threads_per_worker = 1}};
  tessera::Client client{cluster};
  Eigen::MatrixXd m = Eigen::MatrixXd::Random(300, 40);
  auto x = tessera::Array::from_eigen(m, {.chunks = {100, 40}});
  auto y = ((x + 1.0) * 2.0 - x).sum(0);
  auto plain_client = client.with(kNoFusion);
  const Eigen::VectorXd fused = y.compute_vector(client);
  const Eigen::VectorXd plain = y.compute_vector(plain_client);
  const Eigen::VectorXd expected = ((m.array() + 1.0) * 2.0 - m.array()).matrix().colwise().sum().transpose();
  EXPECT_TRUE(fused.isApprox(plain, 1e-12));
  EXPECT_TRUE(fused.isApprox(expected, 1e-12));
}

TEST(ArrayFusion, AnElementwiseChainWritesIntoItsIntermediatesAndNeverIntoItsInput) {
  // The kernel writes into a donated chunk, and only into one.
  namespace backends = tessera::backends;
  const Eigen::MatrixXd m = Eigen::MatrixXd::Random(50, 4).cwiseAbs();
  const auto params = backends::UnaryParams{"sqrt"}.to_params();
  const auto run_sqrt = [&](const backends::ChunkPtr& chunk) {
    return backends::Dispatch::global().run(backends::ops::unary, std::span(&chunk, 1), params).front();
  };
  const auto kept = backends::Chunk::dense<double>(m);
  EXPECT_NE(run_sqrt(kept).get(), kept.get());
  const auto donated = backends::Chunk::dense<double>(m);
  {
    const backends::ChunkDonation donation(donated.get());
    const auto result = run_sqrt(donated);
    EXPECT_EQ(result.get(), donated.get());
    EXPECT_NE(run_sqrt(kept).get(), kept.get());  // another chunk is not donated
  }
  EXPECT_TRUE(donated->dense<double>().isApprox(m.cwiseSqrt(), 1e-15));
  EXPECT_TRUE(kept->dense<double>().isApprox(m, 0));

  // Fused on a worker: the persisted input reads the same afterwards, and the answers are unfused ones.
  tessera::LocalCluster cluster{{.workers = 1, .threads_per_worker = 2}};
  tessera::Client client{cluster};
  const Eigen::MatrixXd data = Eigen::MatrixXd::Random(400, 30);
  auto x = tessera::Array::from_eigen(data, {.chunks = {100, 30}}).persist(client);
  const auto chain = ((x * 2.0 + 3.0).sqrt() + x).exp();
  const Eigen::MatrixXd fused = chain.compute(client);
  auto plain_client = client.with(kNoFusion);
  const Eigen::MatrixXd plain = chain.compute(plain_client);
  const Eigen::MatrixXd expected = ((data.array() * 2.0 + 3.0).sqrt() + data.array()).exp().matrix();
  EXPECT_TRUE(fused.isApprox(expected, 1e-14));
  EXPECT_EQ(fused, plain);
  EXPECT_EQ(x.compute(client), data);
}

TEST(GraphSpecFusion, ChainsAndDiamondsOfADictionaryGraphFuseAndGiveTheSameAnswers) {
  tessera::GraphSpec g;
  g.add("x", "twice", {Value(0.5)})
      .add("e", "expo", {Key{"x"}})
      .add("r", "recip", {Key{"x"}})
      .add("d", "minus", {Key{"e"}, Key{"r"}})
      .add("y", "twice", {Key{"d"}})
      .add("other", "twice", {Value(4.0)});
  const auto fused = tessera::fuse(g, {"y", "other"}, {});
  ASSERT_EQ(fused.size(), 2u);
  EXPECT_TRUE(fused.tasks().at("y").function.starts_with("tessera.fused/"));
  EXPECT_EQ(fused.tasks().at("other").function, "twice");
  // A key asked for in the middle stays a task of its own.
  EXPECT_EQ(tessera::fuse(g, {"y", "d"}, {}).size(), 3u);

  tessera::LocalCluster cluster{{.workers = 2, .threads_per_worker = 1}};
  tessera::Client client{cluster};
  const auto a = client.get(g, {"y", "other"});
  const auto b = client.with(kNoFusion).get(g, {"y", "other"});
  EXPECT_DOUBLE_EQ(a[0].as_double(), 2 * (std::exp(1.0) - 1.0));
  EXPECT_EQ(a[0].as_double(), b[0].as_double());
  EXPECT_EQ(a[1].as_double(), 8.0);
}

TEST(GraphSpecFusion, TasksLowerWouldRejectAreLeftForItToName) {
  tessera::GraphSpec g;
  g.add("a", "plus_one", {Value(std::int64_t{1})})
      .add("b", "plus_one", {Key{"a"}})
      .add("c", "plus_one", {Value("not a number")});
  tessera::LocalCluster cluster{{.workers = 1, .threads_per_worker = 1}};
  tessera::Client client{cluster};
  try {
    client.get(g, {"b", "c"});
    FAIL() << "a string was accepted for an int";
  } catch (const tessera::SubmissionError& e) {
    EXPECT_NE(std::string(e.what()).find("task 'c'"), std::string::npos) << e.what();
  }
  EXPECT_EQ(client.get(g, {"b"})[0].as_int(), 3);
}

TEST(FusedTask, AHostileProgramIsRefusedWithItsFaultNamed) {
  const auto& fn = tessera::fused_function(1);
  auto refusal = [&](Value program) -> std::string {
    std::vector<Value> args{std::move(program), Value(std::int64_t{1})};
    try {
      fn.invoke(args);
    } catch (const std::exception& e) {
      return e.what();
    }
    return "(accepted)";
  };
  using List = Value::List;
  EXPECT_NE(refusal(Value(std::int64_t{3})).find("malformed program"), std::string::npos);
  EXPECT_NE(refusal(Value(List{Value(List{Value("no_such_fn")}), Value(List{})})).find("no_such_fn"),
            std::string::npos);
  const Value names(List{Value("plus_one")});
  // An argument reading a step that does not come before it, an input that is not there, a wrong count.
  EXPECT_NE(refusal(Value(List{names, Value(List{Value(std::int64_t{0}), Value(std::int64_t{1}),
                                                 Value(std::int64_t{-1})})}))
                .find("reads -1"),
            std::string::npos);
  EXPECT_NE(refusal(Value(List{names, Value(List{Value(std::int64_t{0}), Value(std::int64_t{1}),
                                                 Value(std::int64_t{7})})}))
                .find("reads 7"),
            std::string::npos);
  EXPECT_NE(refusal(Value(List{names, Value(List{Value(std::int64_t{0}), Value(std::int64_t{2})})}))
                .find("takes 1"),
            std::string::npos);
  EXPECT_NE(refusal(Value(List{names, Value(List{Value(std::int64_t{5}), Value(std::int64_t{1})})}))
                .find("names function 5"),
            std::string::npos);
  // A well-formed one runs.
  std::vector<Value> ok{tessera::encode_fused_program(
                            {{&tessera::Registry::global().get("plus_one"), {tessera::FusedStep::input(0)}},
                             {&tessera::Registry::global().get("plus_one"), {tessera::FusedStep::step(0)}}}),
                        Value(std::int64_t{1})};
  EXPECT_EQ(fn.invoke(ok).as_int(), 3);
}

}  // namespace

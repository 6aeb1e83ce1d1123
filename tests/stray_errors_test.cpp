// A stray error message does not end a long-lived actor. CAF 0.17 ends an actor on any error message by
// default (the "unexpected message" answer to a plain send its receiver could not handle, or any other);
// the scheduler and a stream's actor log it and go on, and the cluster's work still finishes, each stream
// result once.
#include <gtest/gtest.h>

#include <caf/error.hpp>
#include <caf/sec.hpp>
#include <caf/send.hpp>
#include <chrono>
#include <numeric>
#include <set>
#include <tessera/tessera.hpp>

#include "client/local_cluster_access.hpp"

namespace {

struct StrayDoubling {
  explicit StrayDoubling(const tessera::Config&) {}
  double run(double x) { return 2 * x; }
};
TESSERA_SIMULATION(StrayDoubling, "stray_errors_doubling");

std::int64_t stray_square(std::int64_t x) {
  return x * x;
}
TESSERA_TASK(stray_square);

TEST(StrayErrors, TheSchedulerAndAStreamLogAnErrorMessageAndGoOn) {
  tessera::LocalCluster cluster{{.workers = 2, .threads_per_worker = 2}};
  tessera::Client client{cluster};
  auto& engine = tessera::detail::LocalClusterAccess::engine(cluster);
  auto stream = client.stream("stray_errors_doubling", {});
  for (int i = 0; i < 100; ++i) stream.push(double(i));
  const caf::actor stream_actor = engine.stream_actor(stream.id());
  ASSERT_TRUE(stream_actor);
  testing::internal::CaptureStderr();
  for (int i = 0; i < 3; ++i) {
    caf::anon_send(engine.scheduler(), caf::make_error(caf::sec::runtime_error, "a stray error"));
    caf::anon_send(stream_actor, caf::make_error(caf::sec::unexpected_message));
  }
  // Each actor's messages are handled in order: the errors first, then what follows.
  ASSERT_NO_THROW(engine.status(std::chrono::seconds(10)));
  std::vector<std::int64_t> xs(1000);
  std::iota(xs.begin(), xs.end(), 0);
  const auto squares = client.gather(client.map(stray_square, xs));
  for (std::int64_t i = 0; i < 1000; ++i) ASSERT_EQ(squares[i], i * i);
  for (int i = 100; i < 200; ++i) stream.push(double(i));
  stream.close();
  std::set<std::uint64_t> ids;
  for (const auto& r : stream.results()) {
    ASSERT_FALSE(r.failed) << r.error;
    EXPECT_DOUBLE_EQ(tessera::result_as<double>(r), 2.0 * double(r.id));
    EXPECT_TRUE(ids.insert(r.id).second) << "id " << r.id << " twice";
  }
  EXPECT_EQ(ids.size(), 200u);
  const std::string log = testing::internal::GetCapturedStderr();
  EXPECT_NE(log.find("[tessera] scheduler: ignored an error message ("), std::string::npos) << log;
  EXPECT_NE(log.find("[tessera] stream " + std::to_string(stream.id()) + ": ignored an error message ("),
            std::string::npos)
      << log;
}

}  // namespace

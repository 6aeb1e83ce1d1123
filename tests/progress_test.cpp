// tessera::progress over futures and over a stream: plain lines when the output is not a terminal (a
// file here), a redrawn bar when it is (a pseudo-terminal), the totals last, erred and cancelled counted.
#include <gtest/gtest.h>
#include <pty.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <sstream>
#include <tessera/tessera.hpp>
#include <thread>

#include "test_util.hpp"

namespace {

std::int64_t picky_square(std::int64_t x) {
  if (x % 10 == 7) throw std::runtime_error("no sevens: " + std::to_string(x));
  std::this_thread::sleep_for(std::chrono::microseconds(200));
  return x * x;
}
TESSERA_TASK(picky_square);

struct HalvingSimulation {
  explicit HalvingSimulation(const tessera::Config&) {}
  double run(double x) {
    std::this_thread::sleep_for(std::chrono::microseconds(100));
    return x / 2;
  }
};
TESSERA_SIMULATION(HalvingSimulation, "progress_halving");

std::string read_all(std::FILE* file) {
  std::fflush(file);
  std::rewind(file);
  std::string text;
  char buffer[4096];
  while (const auto n = std::fread(buffer, 1, sizeof buffer, file)) text.append(buffer, n);
  return text;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

tessera::LocalCluster small_cluster() {
  return tessera::LocalCluster{tessera::ClusterOptions{.workers = 2, .threads_per_worker = 1}};
}

TEST(Progress, FuturesInALogGetPlainLinesEndingWithTheTotals) {
  auto cluster = small_cluster();
  tessera::Client client{cluster};
  std::vector<std::int64_t> inputs(2000);
  std::iota(inputs.begin(), inputs.end(), 0);
  auto futures = client.map(picky_square, inputs);
  std::FILE* log = std::tmpfile();
  ASSERT_NE(log, nullptr);
  tessera::progress(futures, {.label = "picky_square", .out = log});
  const auto text = read_all(log);
  std::fclose(log);
  // Every future is final once progress returns: it waited for them, it did not just print.
  for (const auto& f : futures) EXPECT_TRUE(f.done());
  EXPECT_EQ(text.find('\r'), std::string::npos) << "a file gets no redrawn bar";
  const auto lines = lines_of(text);
  ASSERT_GE(lines.size(), 2u) << text;  // at least one tenth crossed before the totals
  EXPECT_LE(lines.size(), 12u) << "one line a tenth (and every 5 s), not one a task:\n" << text;
  for (const auto& line : lines) EXPECT_EQ(line.rfind("picky_square: ", 0), 0u) << line;
  EXPECT_NE(lines.back().find("2,000/2,000 done (100%), 200 erred"), std::string::npos) << lines.back();
  EXPECT_EQ(
      std::count_if(lines.begin(), lines.end(),
                    [](const std::string& line) { return line.find("2,000/2,000") != std::string::npos; }),
      1)
      << "the totals once:\n"
      << text;
}

TEST(Progress, ATerminalGetsOneRedrawnBar) {
  int controller = -1, terminal = -1;
  ASSERT_EQ(openpty(&controller, &terminal, nullptr, nullptr, nullptr), 0)
      << "openpty: " << std::strerror(errno);
  std::FILE* out = fdopen(terminal, "w");
  ASSERT_NE(out, nullptr);
  {
    auto cluster = small_cluster();
    tessera::Client client{cluster};
    std::vector<std::int64_t> inputs(300);
    std::iota(inputs.begin(), inputs.end(), 0);
    auto futures = client.map(picky_square, inputs);
    // Its output must be read while it draws, or a full pseudo-terminal would block the writer.
    std::string drawn;
    std::thread reader([&] {
      char buffer[4096];
      for (ssize_t n; (n = read(controller, buffer, sizeof buffer)) > 0;) {
        drawn.append(buffer, static_cast<std::size_t>(n));
        if (drawn.find("300/300") != std::string::npos && drawn.back() == '\n') break;
      }
    });
    tessera::progress(futures, {.label = "squares", .out = out, .redraw = std::chrono::milliseconds(1)});
    // Closing the terminal's end ends the reader's read (EIO) whatever was drawn: no wait without end.
    std::fclose(out);
    reader.join();
    close(controller);
    EXPECT_NE(drawn.find("\rsquares ["), std::string::npos) << drawn;
    EXPECT_NE(drawn.find("[##############################] 100%  300/300  30 erred"), std::string::npos)
        << drawn;
    // One line, redrawn: the only line end is the last one (a terminal turns \n into \r\n).
    const auto first_end = drawn.find('\n');
    ASSERT_NE(first_end, std::string::npos);
    EXPECT_EQ(first_end, drawn.size() - 1) << drawn;
  }
}

TEST(Progress, AStreamIsFollowedUntilItFinishes) {
  auto cluster = small_cluster();
  tessera::Client client{cluster};
  auto stream = client.stream("progress_halving", {.max_in_flight = 64});
  constexpr int kSets = 3000;
  std::thread pusher([&] {
    for (int i = 0; i < kSets; ++i) stream.push(static_cast<double>(i));
    stream.close();
  });
  std::FILE* log = std::tmpfile();
  ASSERT_NE(log, nullptr);
  // Followed from another thread while the sets are still being pushed: the total grows.
  tessera::progress(stream, {.label = "halving", .out = log});
  pusher.join();
  EXPECT_EQ(stream.completed(), static_cast<std::uint64_t>(kSets));
  const auto lines = lines_of(read_all(log));
  std::fclose(log);
  ASSERT_FALSE(lines.empty());
  EXPECT_NE(lines.back().find("halving: 3,000/3,000 done (100%)"), std::string::npos) << lines.back();
}

TEST(Progress, NoFuturesIsOneLineOfNothing) {
  std::FILE* log = std::tmpfile();
  ASSERT_NE(log, nullptr);
  tessera::progress(std::vector<tessera::Future<std::int64_t>>{}, {.label = "none", .out = log});
  const auto lines = lines_of(read_all(log));
  std::fclose(log);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].rfind("none: 0/0 done (100%)", 0), 0u) << lines[0];
}

}  // namespace

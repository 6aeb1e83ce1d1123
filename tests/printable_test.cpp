// What peers send is written into logs and errors through printable() and LogLimiter: escaped, cut to an
// excerpt, and rate-limited.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "graph/printable.hpp"
#include "nodes/log_limiter.hpp"

namespace {

using tessera::in_quotes;
using tessera::LogLimiter;
using tessera::printable;

TEST(Printable, EscapesControlCharactersAndBytesThatAreNotUtf8) {
  EXPECT_EQ(printable("worker-1"), "worker-1");
  EXPECT_EQ(printable("a\nb\r\x1b[2J"), "a\\x0ab\\x0d\\x1b[2J");
  EXPECT_EQ(printable(std::string("\0x", 2)), "\\x00x");
  EXPECT_EQ(printable("caf\xc3\xa9"), "caf\xc3\xa9");       // UTF-8 stays readable
  EXPECT_EQ(printable("\xff\xc3"), "\\xff\\xc3");           // a stray byte, a cut sequence
  EXPECT_EQ(printable("\xe0\x80\x80"), "\\xe0\\x80\\x80");  // overlong
  EXPECT_EQ(printable("\xed\xa0\x80"), "\\xed\\xa0\\x80");  // a surrogate
  EXPECT_EQ(in_quotes("x\ny"), "'x\\x0ay'");
}

TEST(Printable, LongTextBecomesABoundedExcerptThatSaysItsLength) {
  const std::string cell(50'000'000, '7');
  const std::string excerpt = printable(cell);
  EXPECT_LE(excerpt.size(), 120u);
  EXPECT_EQ(excerpt.substr(0, 80), std::string(80, '7'));
  EXPECT_NE(excerpt.find("(50000000 bytes)"), std::string::npos) << excerpt;
  // A multi-byte character is never cut in half.
  std::string accents;
  for (int i = 0; i < 100; ++i) accents += "\xc3\xa9";
  const std::string cut = printable(accents, 11);
  EXPECT_EQ(cut.substr(0, 10), accents.substr(0, 10));
  EXPECT_EQ(cut[10], '.');
}

TEST(LogLimiter, WritesABudgetASecondAndCountsTheRest) {
  std::vector<std::string> lines;
  const auto log = [&](const std::string& line) { lines.push_back(line); };
  LogLimiter limiter(5);
  const auto start = LogLimiter::Clock::now();
  for (int i = 0; i < 17'000; ++i) limiter.write(log, "dropped " + std::to_string(i), start);
  EXPECT_EQ(lines.size(), 5u);
  EXPECT_EQ(limiter.suppressed(), 16'995u);
  // The next second: the first line says how many were left out.
  limiter.write(log, "dropped again", start + std::chrono::milliseconds(1001));
  ASSERT_EQ(lines.size(), 7u);
  EXPECT_EQ(lines[5], "16995 similar lines about peers' messages were left out");
  EXPECT_EQ(lines[6], "dropped again");
}

}  // namespace

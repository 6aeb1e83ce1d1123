// LogLimiter: at most a few lines a second about what peers send wrong. A flood of malformed or refused
// messages would otherwise write a line each (17,000 lines in 15 s were measured) and bury everything
// else; past the budget lines are counted, and the next line that passes says how many were left out.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

namespace tessera {

class LogLimiter {
 public:
  using Clock = std::chrono::steady_clock;
  explicit LogLimiter(std::uint32_t lines_per_second = 20) : budget_(lines_per_second) {}

  // Writes `line` through `log` unless this second's budget is spent. Not thread-safe: one per thread.
  void write(const std::function<void(const std::string&)>& log, const std::string& line,
             Clock::time_point now = Clock::now()) {
    if (now - window_start_ >= std::chrono::seconds(1)) {
      window_start_ = now;
      written_ = 0;
    }
    if (written_ >= budget_) {
      ++suppressed_;
      return;
    }
    ++written_;
    if (suppressed_ > 0) {
      // Appended, not `"(" + ...`: that form trips GCC 12's false -Wrestrict (its bug 105329).
      std::string note = std::to_string(suppressed_);
      note += " similar lines about peers' messages were left out";
      log(note);
      suppressed_ = 0;
    }
    log(line);
  }
  std::uint64_t suppressed() const { return suppressed_; }

 private:
  std::uint32_t budget_;
  std::uint32_t written_ = 0;
  std::uint64_t suppressed_ = 0;
  Clock::time_point window_start_{};
};

}  // namespace tessera

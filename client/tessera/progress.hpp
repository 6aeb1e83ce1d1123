// tessera::progress(futures) and progress(stream): a progress bar while work completes, as the seed
// notebook's `progress` draws one. On a terminal it redraws one line:
//   squares [##############--------------]  48%  4,800/10,000  2 erred  1,550/s  3.1 s, about 3 s left
// and otherwise (a file, a pipe, CI's log) prints a plain line at each tenth and at most every 5 s:
//   squares: 4,800/10,000 done (48%), 2 erred, 1,550/s, 3.1 s, about 3 s left
// Both end with a line of the totals. They only watch: the futures and the stream are left as they were.
// The rate is over the last ten seconds; the time left is the rest at that rate.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <string>
#include <utility>
#include <vector>

#include "tessera/as_completed.hpp"
#include "tessera/future.hpp"
#include "tessera/stream.hpp"

namespace tessera {

struct ProgressOptions {
  std::string label{};                          // printed first, e.g. the function's name
  std::FILE* out = stdout;                      // a terminal there gets the redrawn bar
  std::chrono::milliseconds redraw{100};        // on a terminal, at most this often
  std::chrono::milliseconds plain_every{5000};  // otherwise, at most this often
};

// 12345678 as "12,345,678": counts as progress lines print them.
std::string grouped(std::uint64_t n);
// Seconds as a person reads a duration: "45 s", "3 min 05 s", "2 h 07 min".
std::string human_duration(double seconds);

namespace detail {

// Draws the bar for `total` items (a stream's total may grow); thread-compatible, not thread-safe.
class ProgressBar {
 public:
  ProgressBar(std::uint64_t total, ProgressOptions options);
  void set_total(std::uint64_t total) { total_ = total; }
  // The counts so far; drawn when the last drawing is old enough (or a tenth was crossed, plainly).
  void update(std::uint64_t done, std::uint64_t erred, std::uint64_t cancelled);
  // The last line, with the totals.
  void finish();

 private:
  ProgressOptions options_;
  bool terminal_;
  std::uint64_t total_, done_ = 0, erred_ = 0, cancelled_ = 0;
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now(), drawn_{};
  std::uint64_t tenths_drawn_ = 0;
  bool finished_ = false;
  // (when, items finished) at each drawing over the last ten seconds: the recent rate.
  std::deque<std::pair<std::chrono::steady_clock::time_point, std::uint64_t>> samples_;

  void draw(bool last);
};

}  // namespace detail

// Returns once every future is final (done, erred or cancelled).
template <class T>
void progress(const std::vector<Future<T>>& futures, ProgressOptions options = {}) {
  detail::ProgressBar bar(futures.size(), std::move(options));
  std::vector<const detail::ResultHandle*> handles;
  handles.reserve(futures.size());
  for (const auto& f : futures) handles.push_back(&f.handle());
  detail::CompletionOrder order(handles);
  std::uint64_t done = 0, erred = 0, cancelled = 0;
  while (auto index = order.next()) {
    const auto state = futures[*index].status();
    if (state == TaskState::erred)
      ++erred;
    else if (state == TaskState::cancelled)
      ++cancelled;
    else
      ++done;
    bar.update(done, erred, cancelled);
  }
  bar.finish();
}

// Returns once the stream has finished: every set pushed is answered and it is closed (close it first,
// or call this from another thread than the one pushing). Its total is what was pushed so far.
void progress(Stream& stream, ProgressOptions options = {});

}  // namespace tessera

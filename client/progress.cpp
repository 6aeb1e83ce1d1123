#include "tessera/progress.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <locale>
#include <sstream>

namespace tessera {

std::string grouped(std::uint64_t n) {
  std::string digits = std::to_string(n), out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string human_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  const auto whole = static_cast<std::uint64_t>(std::llround(seconds));
  char text[64];
  if (whole < 60)
    std::snprintf(text, sizeof text, "%llu s", static_cast<unsigned long long>(whole));
  else if (whole < 3600)
    std::snprintf(text, sizeof text, "%llu min %02llu s", static_cast<unsigned long long>(whole / 60),
                  static_cast<unsigned long long>(whole % 60));
  else
    std::snprintf(text, sizeof text, "%llu h %02llu min", static_cast<unsigned long long>(whole / 3600),
                  static_cast<unsigned long long>(whole / 60 % 60));
  return text;
}

namespace detail {
namespace {

// Items a second as a person reads them: "1,550/s", "12.5/s", "0.25/s".
std::string rate_text(double per_second) {
  char text[64];
  if (per_second >= 100) return grouped(static_cast<std::uint64_t>(std::llround(per_second))) + "/s";
  std::snprintf(text, sizeof text, per_second >= 1 ? "%.1f/s" : "%.2f/s", per_second);
  return text;
}

}  // namespace

ProgressBar::ProgressBar(std::uint64_t total, ProgressOptions options)
    : options_(std::move(options)),
      terminal_(options_.out && isatty(fileno(options_.out)) == 1),
      total_(total) {}

void ProgressBar::update(std::uint64_t done, std::uint64_t erred, std::uint64_t cancelled) {
  done_ = done;
  erred_ = erred;
  cancelled_ = cancelled;
  const auto now = std::chrono::steady_clock::now();
  const std::uint64_t finished = done_ + erred_ + cancelled_;
  const std::uint64_t tenths = total_ ? std::min<std::uint64_t>(10, finished * 10 / total_) : 0;
  // Plainly, the line of the totals is finish()'s: a log gets it once.
  if (!terminal_ && total_ && finished >= total_) return;
  if (terminal_ ? now - drawn_ >= options_.redraw
                : (tenths > tenths_drawn_ || now - drawn_ >= options_.plain_every))
    draw(false);
}

void ProgressBar::finish() {
  if (!finished_) draw(true);
  finished_ = true;
}

void ProgressBar::draw(bool last) {
  if (!options_.out) return;
  const auto now = std::chrono::steady_clock::now();
  drawn_ = now;
  const std::uint64_t finished = done_ + erred_ + cancelled_;
  if (total_) tenths_drawn_ = std::min<std::uint64_t>(10, finished * 10 / total_);
  const double fraction =
      total_ ? std::min(1.0, static_cast<double>(finished) / static_cast<double>(total_)) : 1.0;
  const double seconds = std::chrono::duration<double>(now - started_).count();
  // The rate over the last ten seconds (the whole run's for the last line), and the rest at that rate.
  samples_.emplace_back(now, finished);
  while (samples_.size() > 2 && now - samples_[1].first >= std::chrono::seconds(10)) samples_.pop_front();
  const double window = std::chrono::duration<double>(now - samples_.front().first).count();
  double per_second = -1;
  if (last || window < 0.5) {
    if (seconds >= 0.5) per_second = static_cast<double>(finished) / seconds;
  } else {
    per_second = static_cast<double>(finished - std::min(finished, samples_.front().second)) / window;
  }
  std::string pace;  // ", 1,550/s, 3.1 s, about 3 s left" (plain) or its terminal spelling
  const std::string gap = terminal_ ? "  " : ", ";
  if (per_second > 0) pace += gap + rate_text(per_second);
  std::ostringstream elapsed;
  elapsed.imbue(std::locale::classic());
  elapsed.setf(std::ios::fixed);
  elapsed.precision(1);
  elapsed << seconds << " s";
  pace += gap + elapsed.str();
  if (!last && per_second > 0 && total_ > finished)
    pace += ", about " + human_duration(static_cast<double>(total_ - finished) / per_second) + " left";
  std::ostringstream line;
  line.imbue(std::locale::classic());
  line.setf(std::ios::fixed);
  line.precision(1);
  if (terminal_) {
    constexpr int kWidth = 30;
    const int filled = static_cast<int>(fraction * kWidth);
    line << '\r' << options_.label << (options_.label.empty() ? "" : " ") << '['
         << std::string(static_cast<std::size_t>(filled), '#')
         << std::string(static_cast<std::size_t>(kWidth - filled), '-') << "] ";
    line.width(3);
    line << static_cast<int>(fraction * 100);
    line.width(0);
    line << "%  " << grouped(finished) << '/' << grouped(total_);
    if (erred_) line << "  " << grouped(erred_) << " erred";
    if (cancelled_) line << "  " << grouped(cancelled_) << " cancelled";
    line << pace << "   " << (last ? "\n" : "");  // blanks over what a longer line left
  } else {
    line << options_.label << (options_.label.empty() ? "" : ": ") << grouped(finished) << '/'
         << grouped(total_) << " done (" << static_cast<int>(fraction * 100) << "%)";
    if (erred_) line << ", " << grouped(erred_) << " erred";
    if (cancelled_) line << ", " << grouped(cancelled_) << " cancelled";
    line << pace << "\n";
  }
  const std::string text = line.str();
  std::fwrite(text.data(), 1, text.size(), options_.out);
  std::fflush(options_.out);
}

}  // namespace detail

void progress(Stream& stream, ProgressOptions options) {
  const auto redraw = options.redraw;
  detail::ProgressBar bar(stream.pushed(), std::move(options));
  for (;;) {
    const bool finished = stream.wait(std::chrono::steady_clock::now() + redraw);
    bar.set_total(std::max(stream.pushed(), stream.completed()));
    bar.update(stream.completed(), 0, 0);
    if (finished) break;
  }
  bar.finish();
}

}  // namespace tessera

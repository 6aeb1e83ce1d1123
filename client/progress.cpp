#include "tessera/progress.hpp"

#include <unistd.h>

#include <algorithm>
#include <locale>
#include <sstream>

namespace tessera {
namespace detail {
namespace {

// 12345678 -> "12,345,678".
std::string grouped(std::uint64_t n) {
  std::string digits = std::to_string(n), out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
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
    line << "  " << seconds << " s" << (last ? "\n" : "");
  } else {
    line << options_.label << (options_.label.empty() ? "" : ": ") << grouped(finished) << '/'
         << grouped(total_) << " done (" << static_cast<int>(fraction * 100) << "%)";
    if (erred_) line << ", " << grouped(erred_) << " erred";
    if (cancelled_) line << ", " << grouped(cancelled_) << " cancelled";
    line << ", " << seconds << " s\n";
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

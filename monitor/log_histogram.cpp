#include "monitor/log_histogram.hpp"

#include <algorithm>
#include <cmath>
#include <string>

namespace tessera::monitor {
namespace {

// One decade's bounds over its start; 1, 2, 2.5, 4 and 5 among them, so the exported bounds are exact.
constexpr std::array<double, LogHistogram::kPerDecade> kSteps = {1.0, 1.25, 1.6, 2.0, 2.5,
                                                                 3.2, 4.0,  5.0, 6.3, 8.0};

const std::array<double, LogHistogram::kFinite>& bounds() {
  static const auto table = [] {
    std::array<double, LogHistogram::kFinite> out{};
    for (std::size_t i = 0; i < LogHistogram::kFinite; ++i) {
      const int decade = LogHistogram::kFirstDecade + static_cast<int>(i / LogHistogram::kPerDecade);
      // Written as a decimal so 2.5e-3 is the double a reader of /metrics types, not 2.5 * 10^-3.
      out[i] = std::stod(std::to_string(kSteps[i % LogHistogram::kPerDecade]) + "e" + std::to_string(decade));
    }
    return out;
  }();
  return table;
}

}  // namespace

double LogHistogram::bound(std::size_t i) {
  return i < kFinite ? bounds()[i] : INFINITY;
}

std::span<const double> LogHistogram::exported_bounds() {
  static const std::array<double, 24> table = {1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3, 5e-3, 1e-2, 2.5e-2,
                                               5e-2, 0.1,    0.25, 0.5,  1,      2.5,  5,    10,
                                               25,   50,     100,  250,  500,    1000, 2500, 5000};
  return table;
}

void LogHistogram::add(double seconds, std::uint64_t count) {
  if (!(seconds >= 0) || !std::isfinite(seconds) || count == 0) return;
  const auto& b = bounds();
  const auto it = std::lower_bound(b.begin(), b.end(), seconds);
  buckets_[static_cast<std::size_t>(it - b.begin())] += count;
  count_ += count;
  sum_ += seconds * static_cast<double>(count);
  max_ = std::max(max_, seconds);
}

void LogHistogram::merge(const LogHistogram& other) {
  for (std::size_t i = 0; i < kBuckets; ++i) buckets_[i] += other.buckets_[i];
  count_ += other.count_;
  sum_ += other.sum_;
  max_ = std::max(max_, other.max_);
}

std::uint64_t LogHistogram::count_at_most(double upper) const {
  std::uint64_t total = 0;
  for (std::size_t i = 0; i < kFinite && bounds()[i] <= upper; ++i) total += buckets_[i];
  return total;
}

double LogHistogram::quantile(double q) const {
  if (count_ == 0) return 0;
  q = std::clamp(q, 0.0, 1.0);
  const double rank = q * static_cast<double>(count_);
  double seen = 0;
  for (std::size_t i = 0; i < kBuckets; ++i) {
    if (buckets_[i] == 0) continue;
    const double next = seen + static_cast<double>(buckets_[i]);
    if (next >= rank) {
      // Within the bucket, on a log scale between its bounds; never past the largest value seen.
      const double upper = std::min(i < kFinite ? bounds()[i] : max_, max_);
      const double lower = i == 0 ? upper / 10 : std::min(bounds()[i - 1], upper);
      const double fraction = (rank - seen) / static_cast<double>(buckets_[i]);
      if (lower <= 0 || upper <= lower) return upper;
      return lower * std::pow(upper / lower, fraction);
    }
    seen = next;
  }
  return max_;
}

}  // namespace tessera::monitor

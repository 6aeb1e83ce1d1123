// A histogram of positive durations in fixed, roughly geometric buckets (ten per decade, from 10 µs to
// 100,000 s), small enough to keep one per stream: percentiles come from it within a bucket's width, and
// the Prometheus buckets (1, 2.5 and 5 per decade) are sums of its buckets.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

namespace tessera::monitor {

class LogHistogram {
 public:
  static constexpr int kFirstDecade = -5;  // the first bucket ends at 1e-5 s
  static constexpr int kDecades = 10;      // the last finite bound is 1e5 s
  static constexpr std::size_t kPerDecade = 10;
  static constexpr std::size_t kFinite = kDecades * kPerDecade + 1;  // bounds 1e-5 .. 1e5
  static constexpr std::size_t kBuckets = kFinite + 1;               // and one past the last bound

  // Bucket i holds values <= bound(i) and > bound(i - 1); the last holds the rest.
  static double bound(std::size_t i);
  // The bounds /metrics uses: 1, 2.5 and 5 per decade from 1e-4 s to 1000 s.
  static std::span<const double> exported_bounds();

  // A value that is not a finite number >= 0 is not counted.
  void add(double seconds, std::uint64_t count = 1);
  void merge(const LogHistogram& other);

  std::uint64_t count() const { return count_; }
  double sum() const { return sum_; }
  // Values <= `upper` (exact when `upper` is one of the bounds).
  std::uint64_t count_at_most(double upper) const;
  // The q-quantile (q in [0, 1]), interpolated within its bucket on a log scale; 0 when empty.
  double quantile(double q) const;

 private:
  std::array<std::uint64_t, kBuckets> buckets_{};
  std::uint64_t count_ = 0;
  double sum_ = 0;
  double max_ = 0;
};

}  // namespace tessera::monitor

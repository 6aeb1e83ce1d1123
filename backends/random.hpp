// Counter-based random numbers: element (i, j) of a seeded random array is a pure function of (seed, i, j),
// so the values do not depend on the chunking, on the number of workers or on the order tasks run in.
#pragma once

#include <cmath>
#include <cstdint>
#include <numbers>

namespace tessera::backends {

inline std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// A uniform double in [0, 1) for stream `seed`, counter `index` (53 random bits).
inline double uniform01(std::uint64_t seed, std::uint64_t index) {
  const std::uint64_t bits = splitmix64(splitmix64(seed) ^ index);
  return static_cast<double>(bits >> 11) * 0x1.0p-53;
}

// A standard normal for (seed, index) by Box-Muller over two independent counters.
inline double standard_normal(std::uint64_t seed, std::uint64_t index) {
  const double u1 = 1.0 - uniform01(seed, 2 * index);  // in (0, 1]: log stays finite
  const double u2 = uniform01(seed, 2 * index + 1);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

}  // namespace tessera::backends

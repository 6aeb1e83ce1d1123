// Waiting on a condition with a deadline (never a bare sleep).
#pragma once

#include <chrono>
#include <functional>
#include <thread>

namespace tessera::testing {

// `interval`: how often to look; a condition that runs a program wants more than the default.
inline bool eventually(const std::function<bool()>& condition,
                       std::chrono::milliseconds timeout = std::chrono::seconds(20),
                       std::chrono::milliseconds interval = std::chrono::milliseconds(1)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!condition()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(interval);
  }
  return true;
}

}  // namespace tessera::testing

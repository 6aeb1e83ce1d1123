// Bytes of result values this process has handed to its transport and the transport has not sent yet
// (zero-copy frames waiting in ZeroMQ's queues): memory the chunk store does not count, and what a
// worker waits on before it reads more spilled results back to send them away.
#pragma once

#include <atomic>
#include <cstdint>

namespace tessera {

inline std::atomic<std::int64_t>& outgoing_bytes() {
  static std::atomic<std::int64_t> bytes{0};
  return bytes;
}

}  // namespace tessera

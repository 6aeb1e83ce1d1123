#include "actors/allocator_policy.hpp"

#include <malloc.h>

#include <algorithm>
#include <mutex>

namespace tessera {
namespace {

std::mutex g_mutex;
bool g_limited = false;

}  // namespace

void keep_freed_memory(std::uint64_t bytes) {
  if (bytes == 0) return;
  const int kept = static_cast<int>(std::min(bytes, kMaxKeptFreedMemory));
  std::lock_guard lock(g_mutex);
  if (g_limited) return;
  ::mallopt(M_MMAP_THRESHOLD, kept);
  ::mallopt(M_TRIM_THRESHOLD, kept);
}

void return_large_blocks() {
  std::lock_guard lock(g_mutex);
  if (g_limited) return;
  g_limited = true;
  ::mallopt(M_MMAP_THRESHOLD, 1 << 20);
  // glibc's default: the heap gives back what is free at its top past 128 KiB.
  ::mallopt(M_TRIM_THRESHOLD, 128 << 10);
  // What an unlimited cluster kept would still serve large blocks (malloc maps a block only when its
  // heap has no room for it): give it back now.
  ::malloc_trim(0);
}

}  // namespace tessera

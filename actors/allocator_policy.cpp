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
  // Threads other than main allocate from heaps of at most 64 MiB, which glibc unmaps as soon as all of
  // them is free, whatever the trim threshold: a compute thread's 40 MiB chunk was then faulted in afresh
  // by every graph (the 10000 x 1000 SVD: 0.70 s, 0.47 s with its heap kept). The top pad also keeps them.
  ::mallopt(M_TOP_PAD, kept);
}

void return_large_blocks() {
  std::lock_guard lock(g_mutex);
  if (g_limited) return;
  g_limited = true;
  ::mallopt(M_MMAP_THRESHOLD, 1 << 20);
  // glibc's default: the heap gives back what is free at its top past 128 KiB.
  ::mallopt(M_TRIM_THRESHOLD, 128 << 10);
  ::mallopt(M_TOP_PAD, 128 << 10);
  // What an unlimited cluster kept would still serve large blocks (malloc maps a block only when its
  // heap has no room for it): give it back now.
  ::malloc_trim(0);
}

}  // namespace tessera

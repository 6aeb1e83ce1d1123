// The process's allocator policy: without a memory limit, large blocks come from malloc's heap and stay
// there for the next graph; once a memory-limited worker runs, they get their own mappings again.
// Process-wide state: these tests run in order in this binary of their own.
#include <malloc.h>
#include <sys/resource.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <thread>

#include "actors/allocator_policy.hpp"

namespace {

// Bytes malloc holds in mappings of their own (mallinfo2's hblkhd) while a block of `bytes` is held.
std::size_t mapped_while_holding(std::size_t bytes) {
  void* block = std::malloc(bytes);
  std::memset(block, 1, bytes);
  asm volatile("" : : "r"(block) : "memory");  // the block is used: the compiler may not elide the pair
  const std::size_t mapped = mallinfo2().hblkhd;
  std::free(block);
  return mapped;
}

// Pages a thread of its own faults in to use `bytes` a second time, after using and freeing them once,
// while it holds 30 MiB: a compute thread's chunk for the next graph.
long faults_to_use_again(std::size_t bytes) {
  long faults = 0;
  std::thread([&] {
    void* held = std::malloc(30 << 20);
    std::memset(held, 1, 30 << 20);
    const auto use = [bytes] {
      void* block = std::malloc(bytes);
      std::memset(block, 1, bytes);
      asm volatile("" : : "r"(block) : "memory");
      std::free(block);
    };
    use();
    rusage before{}, after{};
    getrusage(RUSAGE_THREAD, &before);
    use();
    getrusage(RUSAGE_THREAD, &after);
    faults = after.ru_minflt - before.ru_minflt;
    asm volatile("" : : "r"(held) : "memory");
    std::free(held);
  }).join();
  return faults;
}

TEST(AllocatorPolicy, KeptFreedMemoryServesLargeBlocksFromTheHeapUntilALimitTakesOver) {
#ifdef TESSERA_SANITIZED
  GTEST_SKIP() << "a sanitizer's allocator replaces glibc malloc: its settings do not apply";
#endif
  const std::size_t before = mapped_while_holding(0);
  // glibc's default: 64 MiB gets a mapping of its own, and 40 MiB freed by a thread goes back to the kernel.
  EXPECT_GE(mapped_while_holding(64 << 20), before + (64 << 20));
  const long pages = (40 << 20) / sysconf(_SC_PAGESIZE);
  EXPECT_GT(faults_to_use_again(40 << 20), pages / 2);
  tessera::keep_freed_memory(256 << 20);
  EXPECT_LT(mapped_while_holding(64 << 20), before + (64 << 20));
  EXPECT_LT(faults_to_use_again(40 << 20), pages / 10);
  tessera::return_large_blocks();
  EXPECT_GE(mapped_while_holding(2 << 20), before + (2 << 20));
  // A limit holds for good: keeping freed memory is ignored afterwards.
  tessera::keep_freed_memory(256 << 20);
  EXPECT_GE(mapped_while_holding(2 << 20), before + (2 << 20));
}

}  // namespace

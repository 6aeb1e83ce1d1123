// The process's allocator policy: without a memory limit, large blocks come from malloc's heap and stay
// there for the next graph; once a memory-limited worker runs, they get their own mappings again.
// Process-wide state: these tests run in order in this binary of their own.
#include <malloc.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

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

TEST(AllocatorPolicy, KeptFreedMemoryServesLargeBlocksFromTheHeapUntilALimitTakesOver) {
#ifdef TESSERA_SANITIZED
  GTEST_SKIP() << "a sanitizer's allocator replaces glibc malloc: its settings do not apply";
#endif
  const std::size_t before = mapped_while_holding(0);
  // glibc's default: 64 MiB gets a mapping of its own.
  EXPECT_GE(mapped_while_holding(64 << 20), before + (64 << 20));
  tessera::keep_freed_memory(256 << 20);
  EXPECT_LT(mapped_while_holding(64 << 20), before + (64 << 20));
  tessera::return_large_blocks();
  EXPECT_GE(mapped_while_holding(2 << 20), before + (2 << 20));
  // A limit holds for good: keeping freed memory is ignored afterwards.
  tessera::keep_freed_memory(256 << 20);
  EXPECT_GE(mapped_while_holding(2 << 20), before + (2 << 20));
}

}  // namespace

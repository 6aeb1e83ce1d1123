// How this process's allocator (glibc malloc) treats freed memory: kept for the next graph, or handed back
// to the kernel at once. Process-wide; once a memory-limited worker runs here, its policy holds for good.
#pragma once

#include <cstdint>

namespace tessera {

// No memory limit: blocks up to `bytes` come from malloc's heap, which is trimmed only past `bytes` of free
// space (threads' heaps too: they are no longer unmapped when all free), instead of fresh mappings that go
// back to the kernel when freed. A graph of a million tasks
// allocates and frees hundreds of MiB per submission; handing them back means faulting every page in again
// for the next one (half the time of a million-step chain here). The cost: up to `bytes` of freed memory
// stays resident. 0 leaves glibc's defaults. At most kMaxKeptFreedMemory; ignored once return_large_blocks
// ran in this process.
void keep_freed_memory(std::uint64_t bytes);
inline constexpr std::uint64_t kMaxKeptFreedMemory = 1ull << 30;

// A memory limit: chunks of a megabyte or more get their own mappings and go back to the kernel when freed,
// so that resident memory (what the limit's pause watches) follows what is held, not its high-water mark.
void return_large_blocks();

}  // namespace tessera

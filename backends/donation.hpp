// Donating a chunk to the kernel it is passed to: a caller that holds the only reference to a chunk and
// drops it after the call (the fused task runner, for an intermediate result at its last use) says so,
// and an elementwise kernel then writes its result into that chunk's own matrix instead of a new one.
// A fused chain of elementwise steps over chunks of N bytes then needs 2N of memory, not 3N (its input,
// one intermediate and the next one), which a worker's memory limit must cover.
#pragma once

#include "backends/chunk.hpp"

namespace tessera::backends {

namespace detail {
inline thread_local const Chunk* donated_chunk = nullptr;
}  // namespace detail

// While alive, `chunk` is donated to kernels run on this thread (one chunk at a time; nested kernels of a
// composite operation see no donation, see Dispatch::run).
class ChunkDonation {
 public:
  explicit ChunkDonation(const Chunk* chunk) : previous_(detail::donated_chunk) {
    detail::donated_chunk = chunk;
  }
  ~ChunkDonation() { detail::donated_chunk = previous_; }
  ChunkDonation(const ChunkDonation&) = delete;
  ChunkDonation& operator=(const ChunkDonation&) = delete;

 private:
  const Chunk* previous_;
};

// The elements of `chunk` as a kernel may overwrite them: when it is donated and holds its own dense
// matrix of T (not adopted memory, which other chunks may share); null otherwise.
template <class T>
T* donated_elements(const ChunkPtr& chunk) {
  if (!chunk || chunk.get() != detail::donated_chunk || chunk->backend() != Backend::cpu ||
      chunk->adopted() || chunk->dtype() != dtype_of<T>())
    return nullptr;
  // The donor guarantees nothing else reads this chunk: its elements may change under it.
  return const_cast<T*>(chunk->dense<T>().data());
}

}  // namespace tessera::backends

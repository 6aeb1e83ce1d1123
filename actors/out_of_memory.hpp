// An allocation that failed where nothing can be refused in its place (a compute thread between tasks, an
// actor's own bookkeeping, a thread of the node): the process says so and exits at once, instead of going
// on with work that will never be answered. What can be refused (a task's own allocation, a message being
// decoded) is refused where it happens and never comes here.
#pragma once

namespace tessera {

inline constexpr int kExitOutOfMemory = 4;

// Writes "[tessera] out of memory: ..." naming `where` to stderr without allocating, then _exit(4).
[[noreturn]] void exit_out_of_memory(const char* where) noexcept;

}  // namespace tessera

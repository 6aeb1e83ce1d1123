#include "cli_interrupt.hpp"

#include <atomic>
#include <cerrno>
#include <csignal>

namespace tessera::cli {
namespace {

// Written by the handler, read by the command's threads: a lock-free atomic is both signal-safe and
// race-free (a volatile sig_atomic_t is only the first).
std::atomic<int> received{0};
static_assert(std::atomic<int>::is_always_lock_free);

extern "C" void note_signal(int signal) {
  const int saved = errno;  // a handler leaves errno as it found it
  received.store(signal, std::memory_order_relaxed);
  errno = saved;
}

}  // namespace

void watch_interrupts() {
  received.store(0, std::memory_order_relaxed);
  struct sigaction action {};
  action.sa_handler = note_signal;
  sigemptyset(&action.sa_mask);
  // A second Ctrl-C finds the default handler: a push that does not stop can still be ended.
  action.sa_flags = SA_RESETHAND | SA_RESTART;
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

int interrupt_signal() {
  return received.load(std::memory_order_relaxed);
}

}  // namespace tessera::cli

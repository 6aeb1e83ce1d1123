#include "cli_interrupt.hpp"

#include <csignal>

namespace tessera::cli {
namespace {

volatile std::sig_atomic_t received = 0;

extern "C" void note_signal(int signal) {
  received = signal;
}

}  // namespace

void watch_interrupts() {
  received = 0;
  struct sigaction action {};
  action.sa_handler = note_signal;
  sigemptyset(&action.sa_mask);
  // A second Ctrl-C finds the default handler: a push that does not stop can still be ended.
  action.sa_flags = SA_RESETHAND | SA_RESTART;
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

int interrupt_signal() {
  return received;
}

}  // namespace tessera::cli

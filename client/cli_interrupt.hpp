// Ctrl-C and SIGTERM for the CLI's long commands (stream push): the first one is noted, so that the
// command stops pushing and says what it leaves behind; a second one ends the process as it would have.
#pragma once

namespace tessera::cli {

// Installs the handlers for SIGINT and SIGTERM (each resets itself to the default once it has run).
void watch_interrupts();
// The signal received since watch_interrupts(); 0 when none.
int interrupt_signal();

}  // namespace tessera::cli

#include "actors/out_of_memory.hpp"

#include <unistd.h>

#include <cstring>

namespace tessera {

void exit_out_of_memory(const char* where) noexcept {
  // No std::string, no iostream: either could need the memory there is none of.
  char line[512] = "[tessera] out of memory: an allocation failed in ";
  std::strncat(line, where, sizeof line - std::strlen(line) - 1);
  std::strncat(line, ", where it could not be refused; the process exits (code 4)\n",
               sizeof line - std::strlen(line) - 1);
  [[maybe_unused]] const auto written = ::write(STDERR_FILENO, line, std::strlen(line));
  ::_exit(kExitOutOfMemory);
}

}  // namespace tessera

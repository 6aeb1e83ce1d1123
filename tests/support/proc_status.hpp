// A process's memory as the kernel reports it (/proc/PID/status), for tests that bound a node's.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>

namespace tessera::testing {

// `field` ("VmRSS:", "VmSize:", "VmHWM:") in bytes; 0 when the process or the field is gone.
inline std::uint64_t proc_status_bytes(pid_t pid, const char* field) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind(field, 0) == 0) return std::stoull(line.substr(std::strlen(field))) * 1024;
  return 0;
}

inline std::uint64_t resident_bytes(pid_t pid) {
  return proc_status_bytes(pid, "VmRSS:");
}

}  // namespace tessera::testing

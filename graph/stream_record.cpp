#include "graph/stream_record.hpp"

#include <chrono>
#include <sstream>

namespace tessera {

const char* isolation_name(Isolation isolation) {
  switch (isolation) {
    case Isolation::thread:
      return "thread";
    case Isolation::process:
      return "process";
  }
  return "unknown";
}

const char* failure_name(Failure failure) {
  switch (failure) {
    case Failure::none:
      return "ok";
    case Failure::error:
      return "error";
    case Failure::crash:
      return "crash";
    case Failure::timeout:
      return "timeout";
    case Failure::cancelled:
      return "cancelled";
  }
  return "unknown";
}

double timeline_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string timeout_reason(double seconds) {
  std::ostringstream out;
  out << "timeout after " << seconds << " s";
  return out.str();
}

}  // namespace tessera

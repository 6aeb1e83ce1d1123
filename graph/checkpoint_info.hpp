// What `tessera checkpoints list` and Client::checkpoints() show of one stored checkpoint, and which ones
// a drop selects. Plain data: public headers include it, the checkpoint store fills it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tessera {

struct CheckpointInfo {
  std::string key;  // 64 hex digits: SHA-256 of the function, task index, literal arguments and inputs' keys
  std::string function;  // the task function's registered name
  std::string task;      // the task's readable key in the run that stored it
  std::uint64_t bytes = 0;
  std::int64_t written_ms = 0;  // milliseconds since the Unix epoch
};

// Which checkpoints to drop: all of them, those of one function, or those whose key starts with one of
// `keys` (at least 8 hex digits each).
struct CheckpointSelection {
  bool all = false;
  std::string function{};
  std::vector<std::string> keys{};
};

}  // namespace tessera

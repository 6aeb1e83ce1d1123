// `tessera checkpoints list|drop`: the checkpoints a scheduler node stores, through the client library.
#pragma once

#include <string>
#include <vector>

#include "cli_streams.hpp"

namespace tessera::cli {

struct CheckpointsOptions {
  std::string function;           // list and drop: only this function's
  bool json = false;              // list: one JSON array
  bool all = false;               // drop: every checkpoint
  std::vector<std::string> keys;  // drop: these keys (or prefixes of at least 8 hex digits)
};

int list_checkpoints(const Target& target, const CheckpointsOptions& options);
// Exit 2 when nothing is selected (neither --all, --function nor a key).
int drop_checkpoints(const Target& target, const CheckpointsOptions& options);

}  // namespace tessera::cli

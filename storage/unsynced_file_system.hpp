// The file system a spill store writes through: the machine's own, except that syncing a file or a
// directory returns at once. A spilled chunk never outlives its process (a restarted worker recomputes
// from lineage or checkpoints), so waiting for the device to confirm each flushed table buys nothing;
// RocksDB's flush then costs what writing to the page cache costs, and the kernel writes back behind it.
#pragma once

#include <rocksdb/env.h>

namespace tessera {

// One per process, created on first use and kept until exit (RocksDB instances opened with it refer to it).
rocksdb::Env* unsynced_env();

}  // namespace tessera

// How `tessera workers` and `tessera status` show a worker's memory as text: in memory, spilled, resident,
// the spill traffic and its speed, and whether it is paused (with the reason of a failed spill). Their
// JSON is dashboard/status_json.hpp's.
#pragma once

#include <cstdio>
#include <string>

#include "cli_options.hpp"
#include "scheduling/status.hpp"

namespace tessera::cli {

inline std::string mebibytes(std::uint64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  return text;
}

// One line: "managed in memory 12.0 MiB, spilled 40.0 MiB; process resident 80.1 MiB; 5 spills (210 MB/s),
// 2 unspills (650 MB/s)" (the process's resident bytes as the system counts them, "shared by 2 workers"
// when it runs several), then "; paused" and the spill error when there are.
inline std::string memory_text(const WorkerMemory& m) {
  char rates[160];
  std::snprintf(rates, sizeof rates, "%llu spills (%.0f MB/s), %llu unspills (%.0f MB/s)",
                static_cast<unsigned long long>(m.spills), m.spill_mb_per_second(),
                static_cast<unsigned long long>(m.unspills), m.unspill_mb_per_second());
  std::string out = "managed in memory ";
  out += mebibytes(m.managed_bytes);
  out += ", spilled ";
  out += mebibytes(m.spilled_bytes);
  out += "; process resident ";
  out += mebibytes(m.process_rss);
  if (m.process_workers > 1) out += " (shared by " + std::to_string(m.process_workers) + " workers)";
  out += "; ";
  out += rates;
  if (m.corrupt_records > 0) {
    out += "; ";
    out += std::to_string(m.corrupt_records);
    out += " damaged records recomputed";
  }
  if (m.paused) out += "; PAUSED (memory above the pause fraction)";
  if (!m.spill_error.empty()) {
    out += "; last spill failed: ";
    out += excerpt(m.spill_error, 400);
  }
  return out;
}

}  // namespace tessera::cli

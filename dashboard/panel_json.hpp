// The JSON behind each dashboard panel. The scheduler's figures, workers and memory are written by
// status_json.hpp, as `tessera status --json` and `tessera workers --json` write them.
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>

#include "dashboard/dashboard_source.hpp"
#include "dashboard/status_json.hpp"

namespace tessera::dashboard {

using Json = nlohmann::ordered_json;

// The status page: the scheduler's counters, the workers and their memory, the task rate.
Json status_json(const Snapshot& snapshot, const monitor::ClusterMonitor& monitor, double now);
Json workers_json(const Snapshot& snapshot, double now);
// Functions' tasks by state, and the streams running (sets accepted, stored, of their input).
Json progress_json(const Snapshot& snapshot, const monitor::ClusterMonitor& monitor, double now);
// Task runs of the last `window` seconds: one rectangle per run, or per (worker, function, time bin)
// when there are more than kMaxRectangles, so the answer's size is bounded whatever the task count.
inline constexpr std::size_t kMaxRectangles = 4000;
Json task_stream_json(const monitor::ClusterMonitor& monitor, double window, double now);
Json streams_json(const monitor::ClusterMonitor& monitor, double now);
Json glm_json(const monitor::ClusterMonitor& monitor, double now);

}  // namespace tessera::dashboard

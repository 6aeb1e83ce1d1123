// /metrics: the cluster's figures in Prometheus' text exposition format (version 0.0.4), every family
// named tessera_* with its HELP and TYPE lines; counters end in _total, histograms have cumulative
// _bucket{le=...} lines, _sum and _count.
#pragma once

#include <string>

#include "dashboard/dashboard_source.hpp"

namespace tessera::dashboard {

std::string metrics_text(const Snapshot& snapshot, const monitor::ClusterMonitor& monitor, double now);

// A label value with \, " and newlines escaped, as the format asks.
std::string escape_label(const std::string& value);

}  // namespace tessera::dashboard

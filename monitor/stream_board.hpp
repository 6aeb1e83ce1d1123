// The streams' figures for the dashboard and /metrics: per stream, sets accepted, stored and failed (by
// kind), its rate (and its history, kept once it finished), a set's own run time and the latency from
// acceptance to the stored result. Each stream actor updates its
// own gauge as it accepts and stores; the board keeps the open streams' gauges and the last finished
// ones (kFinishedKept), so its memory is bounded whatever the number of streams or sets.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "graph/stream_record.hpp"
#include "monitor/log_histogram.hpp"

namespace tessera::monitor {

struct StreamFigures {
  std::uint64_t id = 0;
  std::string simulation;
  std::string generator;       // empty unless it is an ensemble
  std::uint64_t accepted = 0;  // sets accepted (durable), ids below it
  std::uint64_t stored = 0;    // answered and stored, failed ones included
  std::uint64_t failed = 0;
  // Failed ones by Failure (index: its value; none is unused).
  std::array<std::uint64_t, static_cast<std::size_t>(kLastFailure) + 1> failures{};
  double opened_at = 0;    // seconds since the Unix epoch
  double finished_at = 0;  // 0 while it runs
  bool closed = false;
  std::uint64_t input_sets = 0;  // what its client said it would push; 0: it did not say
  std::string ended_early;       // closed before its input ended (incomplete), and why; empty: it was not
  std::string error;             // why it ended early, if it did
  LogHistogram latency;          // accepted -> stored, per set stored in this process's life
  LogHistogram run;              // started -> finished on its worker: the simulation's own time
  // Sets stored per second over the last kRateSeconds seconds.
  static constexpr std::size_t kRateSeconds = 10;
  double sets_per_second = 0;
  // Sets stored in each of the kHistorySeconds seconds up to now (a finished stream: up to its end),
  // oldest first.
  static constexpr std::size_t kHistorySeconds = 120;
  std::vector<std::uint64_t> rate_history;

  std::uint64_t in_flight() const { return accepted > stored ? accepted - stored : 0; }
};

class StreamGauge {
 public:
  StreamGauge(std::uint64_t id, std::string simulation, std::string generator);

  // A stream resumed after a restart: what it had accepted and stored before.
  void resumed(std::uint64_t accepted, std::uint64_t stored);
  void accepted(std::uint64_t up_to);
  void stored(const std::vector<StreamResult>& results);
  void expects(std::uint64_t input_sets);
  void closed(std::string ended_early = {});
  void reopened();  // a client resumed it
  void finished(const std::string& error);

  StreamFigures figures() const;
  std::uint64_t id() const { return id_; }

 private:
  const std::uint64_t id_;
  mutable std::mutex mutex_;
  StreamFigures figures_;
  struct Second {
    std::int64_t second = -1;
    std::uint64_t sets = 0;
  };
  std::array<Second, StreamFigures::kHistorySeconds + 1> seconds_{};
};

class StreamBoard {
 public:
  static constexpr std::size_t kFinishedKept = 64;

  // A gauge for a stream that opens (or resumes; a finished one's gauge is then dropped).
  std::shared_ptr<StreamGauge> open(std::uint64_t id, std::string simulation, std::string generator);
  // The stream finished: its gauge moves to the finished ones.
  void finish(std::uint64_t id);

  // Open streams, then the finished ones kept, newest first; each by id.
  std::vector<StreamFigures> figures() const;

 private:
  mutable std::mutex mutex_;
  std::map<std::uint64_t, std::shared_ptr<StreamGauge>> open_;
  std::deque<std::shared_ptr<StreamGauge>> finished_;  // newest at the front
};

}  // namespace tessera::monitor

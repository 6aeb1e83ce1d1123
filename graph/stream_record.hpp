// What a stream's parameter sets give, as users see it: StreamRecord (one outcome as the stream delivers
// it), StreamResult (one outcome as the store keeps it, with its parameters), ResultSummary (a query's
// aggregate) and QueryError. Plain values: the public headers and the store share them.
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "graph/value.hpp"

namespace tessera {

// Where a stream's simulation instances run on a worker: on its compute threads (the fastest; a crash
// takes the worker down, a hang holds its thread), or each in a supervised child process of the worker
// (a crash or a timeout costs that parameter set and a fresh process, nothing else).
enum class Isolation : std::uint8_t { thread, process };
const char* isolation_name(Isolation isolation);

// Why a parameter set failed, when it did.
enum class Failure : std::uint8_t {
  none,
  error,      // the simulation threw (or could not be built)
  crash,      // its process died (a signal, or an exit) while it ran this set
  timeout,    // it ran past the stream's timeout
  cancelled,  // cancelled by request (Stream::cancel, tessera stream cancel) before it was answered
};
// The highest Failure a decoder accepts.
inline constexpr Failure kLastFailure = Failure::cancelled;
const char* failure_name(Failure failure);
// "timeout after 1.5 s": how a timed-out set's error begins, whatever its isolation.
std::string timeout_reason(double seconds);

// When a parameter set passed each step, in seconds since the Unix epoch (0: it did not, or it is not
// known): accepted by its stream, sent to a worker in a job, begun and ended by the simulation, and stored.
// The worker's clock gives started and finished, the scheduler's the others.
struct SetTimeline {
  double pushed = 0, dispatched = 0, started = 0, finished = 0, stored = 0;
  bool operator==(const SetTimeline&) const = default;
};
// Now on the timeline's clock.
double timeline_now();

// How a program simulation's process ended on a set, and the last bytes it printed. Records hold it by
// pointer (null for a compiled simulation, and for a program that never started): a record moves as cheaply
// as before on the streams' hot path.
struct ProgramOutcome {
  static constexpr std::size_t kTailBytes = 4096;  // the most of stdout and of stderr a record keeps
  int exit_status = 0;                             // its exit status, when it was not ended by a signal
  int signal = 0;                                  // the signal that ended it (0: it exited)
  std::string stdout_tail{}, stderr_tail{};
  bool operator==(const ProgramOutcome&) const = default;
};

struct StreamRecord {
  std::uint64_t id = 0;
  Value value{};
  bool failed = false;
  std::string error{};  // with failed: what the simulation raised
  std::string node{};   // with failed: where it ran
  Failure failure = Failure::none;
  // The reasons of the attempts before the last one (retries), oldest first: "worker-0: timeout after 1 s".
  std::vector<std::string> attempts{};
  SetTimeline timeline{};
  std::shared_ptr<const ProgramOutcome> program{};
};

// One parameter set's outcome as stored: a value, or the error its simulation raised (message, node).
struct StreamResult {
  std::uint64_t id = 0;
  Value value{};
  Value parameters{};
  bool failed = false;
  std::string error{};
  std::string node{};
  Failure failure = Failure::none;
  std::vector<std::string> attempts{};
  SetTimeline timeline{};
  std::shared_ptr<const ProgramOutcome> program{};

  StreamRecord record() const {
    return StreamRecord{id, value, failed, error, node, failure, attempts, timeline, program};
  }
};

// What a cancellation caught: sets still queued (dropped before they ran) and sets running (stopped
// under process isolation, abandoned under thread isolation). Each is stored as failed, Failure::cancelled.
struct CancelledSets {
  std::uint64_t queued = 0;
  std::uint64_t running = 0;
};

// Parameter set ids first <= id < last.
struct IdRange {
  std::uint64_t first = 0;
  std::uint64_t last = 0;
  auto operator<=>(const IdRange&) const = default;
};

// A stream as a store lists it (`tessera stream list`, Client::streams).
struct StreamListing {
  std::uint64_t id = 0;
  std::string simulation;
  bool closed = false;           // finished: closed and every accepted set answered
  bool close_requested = false;  // closed by its client, sets still to answer
  std::uint64_t pushed = 0;      // parameter sets accepted
  std::uint64_t stored = 0;      // results stored
  std::uint64_t input_sets = 0;  // the sets its client said it would push; 0: it did not say
  std::string ended_early{};     // why it ended before its input did; empty: it did not
};

// What a person reads: "open" (taking pushes), "closing" (closed, sets still to answer), "finished", or
// "incomplete" (closed before its input ended, or its client lost: what it accepted runs and is stored,
// and `tessera stream push --resume` pushes the rest).
inline const char* stream_state(bool closed, bool close_requested, bool ended_early) {
  if (ended_early) return "incomplete";
  return closed ? "finished" : close_requested ? "closing" : "open";
}
inline const char* stream_state(const StreamListing& s) {
  return stream_state(s.closed, s.close_requested, !s.ended_early.empty());
}

// A query over stored results that cannot be answered (a bad filter or field names the position).
class QueryError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct ResultSummary {
  std::uint64_t count = 0;    // results that matched the filter
  std::uint64_t failed = 0;   // of which errors
  std::uint64_t numeric = 0;  // of which had a number in the field
  double mean = 0, min = 0, max = 0;
  std::vector<std::uint64_t> histogram;  // `bins` equal bins over [min, max]
  // The histogram's bin edges: bins + 1 of them, from min to max (empty without a histogram).
  std::vector<double> bin_edges() const {
    std::vector<double> edges;
    if (histogram.empty()) return edges;
    const double width = (max - min) / static_cast<double>(histogram.size());
    for (std::size_t i = 0; i < histogram.size(); ++i) edges.push_back(min + static_cast<double>(i) * width);
    edges.push_back(max);
    return edges;
  }
};

}  // namespace tessera

// Queries over a stream's stored results: a filter ("result > 2", "result[1] <= 0.5 and result[0] > 0",
// "id >= 100 and id < 200", "parameters[0] > 3", "failed", "ok"), summaries of one numeric field (count,
// mean, min, max, histogram), and export as CSV or JSON lines. They read the store directly, so they work
// while the stream runs and after a restart.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "storage/result_store.hpp"

namespace tessera {

// What a stream calls its parameters and its result's elements (a pushed CSV's header, a program's
// `parameters` and `outputs`): filters and fields may use those names.
struct FieldNames {
  std::vector<std::string> parameters, results;
};
FieldNames field_names(const ResultStore& store, std::uint64_t stream);

// A numeric field of a result: the result itself, element i of a list or vector result, its id, or its
// parameter set (a number, or element i: "parameters[i]"), by position or by the stream's names for them.
struct ResultField {
  std::optional<std::size_t> index;
  bool id = false;         // the parameter set's sequence id ("id"), for id ranges
  bool parameter = false;  // "parameters" or "parameters[i]"
  // Its timeline (SetTimeline): queue_seconds (started - pushed), run_seconds (finished - started),
  // store_seconds (stored - finished), or one of its times (pushed_at, ..., stored_at).
  enum class Time : std::uint8_t {
    none,
    queue_seconds,
    run_seconds,
    store_seconds,
    pushed_at,
    dispatched_at,
    started_at,
    finished_at,
    stored_at
  };
  Time time = Time::none;
  // A program's set: how its process ended (exit_status: its exit status, nullopt when a signal ended it;
  // signal: that signal's number, 0 when it exited).
  enum class Process : std::uint8_t { none, exit_status, signal };
  Process process = Process::none;
  // The stream's named outputs and parameters, for the error a field without an index gets on a value of
  // several numbers: " or one of its outputs ('energy', 'steps')".
  std::string result_names_hint{}, parameter_names_hint{};
  // Nullopt when the result is failed or not numeric there; throws QueryError when the field names a
  // value of several numbers as a whole ("result" on a vector: it has no one number to give).
  std::optional<double> read(const StreamResult& r) const;
  // The same for a set not answered yet: only its id and parameters have numbers.
  std::optional<double> read_set(std::uint64_t id, const Value& parameters) const;
  // "result", "result[i]", "id", "parameters[i]", a timeline or process field, or one of `names`.
  static ResultField parse(std::string_view text, const FieldNames& names = {});
  // The QueryError parse would throw, except for names (which only the stream's store can check).
  static void check_syntax(std::string_view text);
};

class ResultFilter {
 public:
  ResultFilter() = default;  // matches everything
  // Throws QueryError naming the position and what was expected; a name that is none of `names` is one.
  static ResultFilter parse(std::string_view text, const FieldNames& names = {});
  // Throws the QueryError parse would, except for names (which only the stream's store can check): a
  // client's check before its query travels.
  static ResultFilter check_syntax(std::string_view text);
  bool matches(const StreamResult& r) const;
  // Whether a set not answered yet matches (to cancel it): clauses on results and "failed" never do.
  bool matches_set(std::uint64_t id, const Value& parameters) const;
  // Whether it compares anything (a filter of only "ok" or "failed", or none, does not).
  bool has_clauses() const { return !clauses_.empty(); }

 private:
  enum class Op { less, less_equal, greater, greater_equal, equal, not_equal };
  struct Clause {
    ResultField field;
    Op op = Op::equal;
    double number = 0;
  };
  static ResultFilter parse_with(std::string_view text, const FieldNames* names);
  template <class Read>
  bool holds(Read read) const;
  std::vector<Clause> clauses_;  // all must hold
  std::optional<bool> failed_;   // "failed" / "ok"
};

ResultSummary summarize(const ResultStore& store, std::uint64_t stream, const ResultFilter& filter,
                        const ResultField& field = {}, std::size_t bins = 10);
// How many results match: reads no field (a count of vector results needs no element named).
std::uint64_t count_matching(const ResultStore& store, std::uint64_t stream, const ResultFilter& filter);

// Where an export starts (a parameter set's id; the CSV header comes with the page from 0) and about how
// many bytes it may write: a node answers a large export in pages of its answer limit.
struct ExportPage {
  std::uint64_t first = 0;
  std::size_t max_bytes = ~std::size_t{0};
};
struct ExportProgress {
  bool more = false;  // the page is full: the next page starts at next_id
  std::uint64_t next_id = 0;
};

// A header naming every column (id, each parameter by the names the stream was pushed with, each result
// cell, status, error, node, and the timeline: pushed_at, dispatched_at, started_at, finished_at,
// stored_at in seconds since the Unix epoch), then one line per result: a failed set's result cells are
// empty, its status says why (error, crash, timeout, cancelled), an unknown time is empty.
ExportProgress export_csv(const ResultStore& store, std::uint64_t stream, const ResultFilter& filter,
                          std::ostream& out, const ExportPage& page = {});
ExportProgress export_json(const ResultStore& store, std::uint64_t stream, const ResultFilter& filter,
                           std::ostream& out, const ExportPage& page = {});
// The stream's timeline as one JSON line: for queue_seconds, run_seconds and store_seconds of the sets
// the filter selects, their count, mean, p50, p90, p99, max and total; and the span from the first push to
// the last store.
void export_timeline_json(const ResultStore& store, std::uint64_t stream, const ResultFilter& filter,
                          std::ostream& out);
// What the stream calls its parameters and its result's elements, as one JSON line ({"stream",
// "parameter_names", "result_names"}), read from its record alone: what to_pandas() names its columns by.
void export_names_json(const ResultStore& store, std::uint64_t stream, std::ostream& out);
// A summary of `field` as one JSON line that also names the stream's simulation and says whether it has
// closed ("?" and false for a stream the store does not know).
// Every stream of `store` with its counts, in id order.
std::vector<StreamListing> list_streams(const ResultStore& store);
// Drops a finished stream (ResultStore::drop_stream); a QueryError names an unknown or unfinished one.
void drop_finished_stream(ResultStore& store, std::uint64_t stream);

void export_summary_json(const ResultStore& store, std::uint64_t stream, std::string_view field,
                         const ResultSummary& summary, std::ostream& out);

}  // namespace tessera

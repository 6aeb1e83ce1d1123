// Answering a question about a stream's stored results, as a node answers its clients: typed answers
// (a summary, records) for the client library, text for the CLI and exports (summary, count, csv, json,
// timeline, names). Records and exports are cut at a byte budget, and the answer says where the next page
// starts. What travels is the caller's (nodes/query_session.cpp encodes it); nothing here knows the wire.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "graph/stream_record.hpp"
#include "storage/result_store.hpp"

namespace tessera {

struct ResultsQuestion {
  std::uint64_t stream = 0;
  std::string filter;            // over id, parameters, the result and the stream's names
  std::string format;            // records, summary, count, csv, json, timeline or names
  std::string field = "result";  // the summary's field
  std::uint32_t bins = 0;        // the summary's histogram
  std::uint64_t first = 0,
                last = 0;  // ids [first, last) for records (last 0: to the end); exports from first
};

struct ResultsAnswer {
  std::vector<StreamResult> records;     // format records
  std::optional<ResultSummary> summary;  // format summary (its JSON is in text too)
  std::string text;                      // every format but records
  bool more = false;                     // cut at the budget: ask again from next_id
  std::uint64_t next_id = 0;
};

// Throws QueryError naming what is wrong (an unknown format, stream or name in the filter).
ResultsAnswer answer_results(const ResultsQuestion& question, const ResultStore& store,
                             std::uint64_t max_answer_bytes);

}  // namespace tessera

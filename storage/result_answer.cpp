#include "storage/result_answer.hpp"

#include <sstream>

#include "graph/printable.hpp"
#include "storage/result_query.hpp"

namespace tessera {
namespace {

// About how many bytes a record takes in an answer, to cut answers at the node's limit.
std::size_t record_bytes(const StreamResult& r) {
  return 64 + r.error.size() + r.node.size() + r.value.payload_bytes() + r.parameters.payload_bytes() +
         (r.program ? r.program->stdout_tail.size() + r.program->stderr_tail.size() : 0);
}

}  // namespace

ResultsAnswer answer_results(const ResultsQuestion& q, const ResultStore& store,
                             std::uint64_t max_answer_bytes) {
  ResultsAnswer out;
  const auto names = q.filter.empty() && q.format != "summary" ? FieldNames{} : field_names(store, q.stream);
  const auto filter = ResultFilter::parse(q.filter, names);
  if (q.format == "records") {
    std::size_t bytes = 0;
    store.scan(q.stream, q.first, q.last, [&](const StreamResult& r) {
      if (!filter.matches(r)) return true;
      const std::size_t size = record_bytes(r);
      if (!out.records.empty() && (bytes + size > max_answer_bytes || out.records.size() >= (1u << 20))) {
        out.more = true;
        out.next_id = r.id;
        return false;
      }
      bytes += size;
      out.records.push_back(r);
      return true;
    });
    return out;
  }
  if (!store.stream(q.stream))
    throw QueryError("no stream " + std::to_string(q.stream) + " in this node's store");
  std::ostringstream text;
  if (q.format == "summary") {
    out.summary = summarize(store, q.stream, filter, ResultField::parse(q.field, names), q.bins);
    export_summary_json(store, q.stream, q.field, *out.summary, text);
  } else if (q.format == "count") {
    text << count_matching(store, q.stream, filter) << "\n";
  } else if (q.format == "timeline") {
    export_timeline_json(store, q.stream, filter, text);
  } else if (q.format == "names") {
    export_names_json(store, q.stream, text);
  } else if (q.format == "csv" || q.format == "json") {
    const ExportPage page{q.first, static_cast<std::size_t>(max_answer_bytes)};
    const auto progress = q.format == "csv" ? export_csv(store, q.stream, filter, text, page)
                                            : export_json(store, q.stream, filter, text, page);
    out.more = progress.more;
    out.next_id = progress.next_id;
  } else {
    throw QueryError("unknown format " + in_quotes(q.format) +
                     " (summary, count, csv, json, timeline or names)");
  }
  out.text = text.str();
  return out;
}

}  // namespace tessera

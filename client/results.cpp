#include "tessera/results.hpp"

#include "storage/result_source.hpp"

namespace tessera {

ResultQuery::ResultQuery(std::shared_ptr<ResultSource> source, std::uint64_t stream, std::string filter)
    : source_(std::move(source)), stream_(stream), filter_(std::move(filter)) {}

ResultQuery ResultQuery::where(std::string_view filter) const {
  (void)ResultFilter::check_syntax(filter);  // refused here, before it travels
  return ResultQuery(source_, stream_, std::string(filter));
}

std::uint64_t ResultQuery::count() const {
  return source_->summary(stream_, filter_, "id", 0).count;  // reads no result: vectors count too
}

ResultSummary ResultQuery::summary(std::string_view field, std::size_t bins) const {
  ResultField::check_syntax(field);
  return source_->summary(stream_, filter_, std::string(field), bins);
}

std::optional<StreamResult> ResultQuery::get(std::uint64_t id) const {
  auto found = source_->records(stream_, "", id, id + 1);
  if (found.empty()) return std::nullopt;
  return std::move(found.front());
}

std::vector<StreamResult> ResultQuery::range(std::uint64_t first, std::uint64_t last) const {
  return source_->records(stream_, filter_, first, last);
}

void ResultQuery::to_csv(std::ostream& out) const {
  to_text(out, "csv");
}

void ResultQuery::to_json(std::ostream& out) const {
  to_text(out, "json");
}

void ResultQuery::to_text(std::ostream& out, std::string_view format, std::string_view field,
                          std::size_t bins) const {
  out << source_->text(stream_, filter_, std::string(format), std::string(field), bins);
}

}  // namespace tessera

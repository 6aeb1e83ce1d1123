// Queries over a stream's stored results, while it runs, after it ends and after a restart, on an
// embedded cluster's store or a scheduler node's (through the connection) alike:
//
//   auto hits = client.results(stream.id()).where("result > 2").count();
//   auto s = client.results(stream.id()).summary();          // count, mean, min, max, histogram
//   client.results(id).where("failed").to_json(std::cout);
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "storage/result_source.hpp"

namespace tessera {

class ResultQuery {
 public:
  ResultQuery(std::shared_ptr<ResultSource> source, std::uint64_t stream, std::string filter = {})
      : source_(std::move(source)), stream_(stream), filter_(std::move(filter)) {}

  // The same query with a filter (see ResultFilter); a bad filter is a QueryError naming the position.
  ResultQuery where(std::string_view filter) const {
    (void)ResultFilter::parse(filter);  // refused here, before it travels
    return ResultQuery(source_, stream_, std::string(filter));
  }
  std::uint64_t count() const { return source_->summary(stream_, filter_, "result", 0).count; }
  ResultSummary summary(std::string_view field = "result", std::size_t bins = 10) const {
    (void)ResultField::parse(field);
    return source_->summary(stream_, filter_, std::string(field), bins);
  }
  // The result of one parameter set, whatever the filter.
  std::optional<StreamResult> get(std::uint64_t id) const {
    auto found = source_->records(stream_, "", id, id + 1);
    if (found.empty()) return std::nullopt;
    return std::move(found.front());
  }
  // Matching results with first <= id < last, in id order.
  std::vector<StreamResult> range(std::uint64_t first, std::uint64_t last) const {
    return source_->records(stream_, filter_, first, last);
  }
  void to_csv(std::ostream& out) const { out << source_->text(stream_, filter_, "csv"); }
  void to_json(std::ostream& out) const { out << source_->text(stream_, filter_, "json"); }

 private:
  std::shared_ptr<ResultSource> source_;
  std::uint64_t stream_;
  std::string filter_;
};

}  // namespace tessera

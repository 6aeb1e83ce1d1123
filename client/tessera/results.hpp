// Queries over a stream's stored results, while it runs, after it ends and after a restart:
//
//   auto hits = client.results(stream.id()).where("result > 2").count();
//   auto s = client.results(stream.id()).summary();          // count, mean, min, max, histogram
//   client.results(id).where("failed").to_json(std::cout);
#pragma once

#include <cstdint>
#include <memory>
#include <ostream>
#include <string_view>
#include <vector>

#include "storage/result_query.hpp"
#include "storage/result_store.hpp"

namespace tessera {

class ResultQuery {
 public:
  ResultQuery(std::shared_ptr<const ResultStore> store, std::uint64_t stream, ResultFilter filter = {})
      : store_(std::move(store)), stream_(stream), filter_(std::move(filter)) {}

  // The same query with a filter (see ResultFilter); a bad filter is a QueryError naming the position.
  ResultQuery where(std::string_view filter) const {
    return ResultQuery(store_, stream_, ResultFilter::parse(filter));
  }
  std::uint64_t count() const { return summarize(*store_, stream_, filter_, {}, 0).count; }
  ResultSummary summary(std::string_view field = "result", std::size_t bins = 10) const {
    return summarize(*store_, stream_, filter_, ResultField::parse(field), bins);
  }
  std::optional<StreamResult> get(std::uint64_t id) const { return store_->get(stream_, id); }
  // Matching results with first <= id < last, in id order.
  std::vector<StreamResult> range(std::uint64_t first, std::uint64_t last) const {
    std::vector<StreamResult> out;
    store_->scan(stream_, first, last, [&](const StreamResult& r) {
      if (filter_.matches(r)) out.push_back(r);
      return true;
    });
    return out;
  }
  void to_csv(std::ostream& out) const { export_csv(*store_, stream_, filter_, out); }
  void to_json(std::ostream& out) const { export_json(*store_, stream_, filter_, out); }

 private:
  std::shared_ptr<const ResultStore> store_;
  std::uint64_t stream_;
  ResultFilter filter_;
};

}  // namespace tessera

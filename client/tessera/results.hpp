// Queries over a stream's stored results, while it runs, after it ends and after a restart, on an
// embedded cluster's store or a scheduler node's (through the connection) alike:
//
//   auto hits = client.results(stream.id()).where("result > 2").count();
//   auto s = client.results(stream.id()).summary();          // count, mean, min, max, histogram
//   client.results(id).where("failed").to_json(std::cout);
//   client.results(id).to_text(std::cout, "summary", "result[0]", 20);  // what `tessera results` prints
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "graph/stream_record.hpp"

namespace tessera {

class ResultSource;  // where the query is answered: this process's store or a scheduler node's

class ResultQuery {
 public:
  // The same query with a filter (`tessera results --where` syntax, e.g. "result > 2 and not failed"); a
  // bad filter is a QueryError naming the position.
  ResultQuery where(std::string_view filter) const;
  std::uint64_t count() const;
  ResultSummary summary(std::string_view field = "result", std::size_t bins = 10) const;
  // The result of one parameter set, whatever the filter.
  std::optional<StreamResult> get(std::uint64_t id) const;
  // Matching results with first <= id < last, in id order.
  std::vector<StreamResult> range(std::uint64_t first, std::uint64_t last) const;
  void to_csv(std::ostream& out) const;
  void to_json(std::ostream& out) const;
  // The answer in a format `tessera results --format` names: "summary" (one JSON line with the stream, its
  // simulation, whether it has closed, and summary(field, bins)), "count" (the count and a newline), "csv"
  // or "json" (as to_csv and to_json), "timeline", "names" (the stream's parameter and result names, read
  // from its record alone); another format is a QueryError. On a scheduler node, the node's text.
  void to_text(std::ostream& out, std::string_view format, std::string_view field = "result",
               std::size_t bins = 10) const;

 private:
  friend class Client;  // Client::results makes queries
  ResultQuery(std::shared_ptr<ResultSource> source, std::uint64_t stream, std::string filter = {});

  std::shared_ptr<ResultSource> source_;
  std::uint64_t stream_;
  std::string filter_;
};

}  // namespace tessera

// ResultSource: where a client's queries over stream results are answered — this process's store, or a
// scheduler node's store through its connection. The client's ResultQuery speaks to either.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "storage/result_query.hpp"

namespace tessera {

class ResultSource {
 public:
  virtual ~ResultSource() = default;
  // Filters are ResultFilter's text; a bad one is a QueryError (or the node's message for it).
  virtual ResultSummary summary(std::uint64_t stream, const std::string& filter, const std::string& field,
                                std::size_t bins) = 0;
  // Matching results with first <= id < last, in id order.
  virtual std::vector<StreamResult> records(std::uint64_t stream, const std::string& filter,
                                            std::uint64_t first, std::uint64_t last) = 0;
  // The answer as text, in one of `tessera results`' formats: "csv" or "json" export, "count" (the count
  // and a newline) or "summary" (one JSON line, see export_summary_json, of `field` in `bins` bins).
  virtual std::string text(std::uint64_t stream, const std::string& filter, const std::string& format,
                           const std::string& field, std::size_t bins) = 0;
  // Every stream of the store, in id order.
  virtual std::vector<StreamListing> streams() = 0;
  // Deletes a finished stream and what it stored; a QueryError names why not (no such stream, or one that
  // has not finished).
  virtual void drop(std::uint64_t stream) = 0;
};

// This process's store.
class LocalResultSource final : public ResultSource {
 public:
  explicit LocalResultSource(std::shared_ptr<ResultStore> store) : store_(std::move(store)) {}
  ResultSummary summary(std::uint64_t stream, const std::string& filter, const std::string& field,
                        std::size_t bins) override {
    const auto names = field_names(*store_, stream);
    return summarize(*store_, stream, ResultFilter::parse(filter, names), ResultField::parse(field, names),
                     bins);
  }
  std::vector<StreamResult> records(std::uint64_t stream, const std::string& filter, std::uint64_t first,
                                    std::uint64_t last) override {
    // An empty filter (a read by id, the stream's read-back past its sink) names nothing: no record to read.
    const auto parsed =
        filter.empty() ? ResultFilter{} : ResultFilter::parse(filter, field_names(*store_, stream));
    std::vector<StreamResult> out;
    store_->scan(stream, first, last, [&](StreamResult& r) {
      if (parsed.matches(r)) out.push_back(std::move(r));
      return true;
    });
    return out;
  }
  std::string text(std::uint64_t stream, const std::string& filter, const std::string& format,
                   const std::string& field, std::size_t bins) override;
  std::vector<StreamListing> streams() override { return list_streams(*store_); }
  void drop(std::uint64_t stream) override { drop_finished_stream(*store_, stream); }

 private:
  std::shared_ptr<ResultStore> store_;
};

}  // namespace tessera

#include "nodes/remote_results.hpp"

#include "graph/printable.hpp"
#include "graph/stream_record.hpp"
#include "nodes/stream_codec.hpp"

namespace tessera {
namespace {

class RemoteResultSource final : public ResultSource {
 public:
  explicit RemoteResultSource(std::weak_ptr<ClientConnection> connection)
      : connection_(std::move(connection)) {}

  ResultSummary summary(std::uint64_t stream, const std::string& filter, const std::string& field,
                        std::size_t bins) override {
    auto received = ask(stream, filter, "summary", field, static_cast<std::uint32_t>(bins), 0, 0);
    auto s = received.envelope().getResultsAnswer().getSummary();
    ResultSummary out;
    out.count = s.getCount();
    out.failed = s.getFailed();
    out.numeric = s.getNumeric();
    out.mean = s.getMean();
    out.min = s.getMin();
    out.max = s.getMax();
    for (auto h : s.getHistogram()) out.histogram.push_back(h);
    return out;
  }

  std::vector<StreamResult> records(std::uint64_t stream, const std::string& filter, std::uint64_t first,
                                    std::uint64_t last) override {
    std::vector<StreamResult> out;
    for (;;) {  // in pages of the node's answer limit
      auto received = ask(stream, filter, "records", "", 0, first, last);
      auto answer = received.envelope().getResultsAnswer();
      // The records' checked decoding (failure kinds, attempts, timelines), then each one's parameters.
      const auto list = answer.getRecords();
      auto records = wire::decode(list, received.frames(), answer.getNodes());
      for (std::size_t i = 0; i < records.size(); ++i) {
        auto& r = records[i];
        StreamResult result{r.id,      std::move(r.value),    {},
                            r.failed,  std::move(r.error),    std::move(r.node),
                            r.failure, std::move(r.attempts), r.timeline};
        const auto in = list[static_cast<unsigned>(i)];
        if (in.hasParameters()) result.parameters = wire::decode(in.getParameters(), received.frames());
        out.push_back(std::move(result));
      }
      if (!answer.getMore()) return out;
      if (answer.getNextId() <= first)
        throw QueryError("the scheduler's answer did not advance past id " + std::to_string(first));
      first = answer.getNextId();
    }
  }

  std::string text(std::uint64_t stream, const std::string& filter, const std::string& format,
                   const std::string& field, std::size_t bins) override {
    std::string out;
    std::uint64_t first = 0;
    for (;;) {
      auto received = ask(stream, filter, format, field, static_cast<std::uint32_t>(bins), first, 0);
      auto answer = received.envelope().getResultsAnswer();
      out += std::string_view(answer.getText().cStr(), answer.getText().size());
      if (!answer.getMore()) return out;
      if (answer.getNextId() <= first && first != 0)
        throw QueryError("the scheduler's export did not advance past id " + std::to_string(first));
      first = answer.getNextId();
    }
  }

  std::vector<StreamListing> streams() override {
    auto received = ask_streams(0, "listing the streams");
    std::vector<StreamListing> out;
    for (auto s : received.envelope().getStreamsAnswer().getStreams())
      out.push_back(StreamListing{s.getId(), printable(std::string(s.getSimulation()), 200), s.getClosed(),
                                  s.getCloseRequested(), s.getPushed(), s.getStored(), s.getInputSets(),
                                  printable(std::string(s.getEndedEarly()), 400)});
    return out;
  }

  void drop(std::uint64_t stream) override {
    if (stream == 0) throw QueryError("no stream 0: stream ids start at 1");
    ask_streams(stream, "dropping stream " + std::to_string(stream));
  }

 private:
  transport::Received ask_streams(std::uint64_t drop, const std::string& what) {
    auto connection = connection_.lock();
    if (!connection) throw ConnectionError("the client's connection is gone");
    const std::uint64_t request = connection->next_id();
    auto received = connection->ask(
        wire::Envelope::STREAMS_ANSWER, request,
        [&](transport::Outgoing& message) {
          auto q = message.envelope().initStreamsRequest();
          q.setRequestId(request);
          q.setDrop(drop);
        },
        what, std::chrono::seconds(120));
    auto a = received.envelope().getStreamsAnswer();
    if (a.getError().size()) throw QueryError(std::string(a.getError()));
    return received;
  }

  // One results query and its answer; an error in it is a QueryError.
  transport::Received ask(std::uint64_t stream, const std::string& filter, const std::string& format,
                          const std::string& field, std::uint32_t bins, std::uint64_t first,
                          std::uint64_t last) {
    auto connection = connection_.lock();
    if (!connection) throw ConnectionError("the client's connection is gone");
    const std::uint64_t request = connection->next_id();
    auto received = connection->ask(
        wire::Envelope::RESULTS_ANSWER, request,
        [&](transport::Outgoing& message) {
          auto q = message.envelope().initResultsQuery();
          q.setRequestId(request);
          q.setStreamId(stream);
          q.setFilter(filter);
          q.setFormat(format);
          q.setField(field);
          q.setBins(bins);
          q.setFirst(first);
          q.setLast(last);
        },
        "a results query", std::chrono::seconds(60));
    auto a = received.envelope().getResultsAnswer();
    if (a.getError().size()) throw QueryError(std::string(a.getError()));
    return received;
  }

  std::weak_ptr<ClientConnection> connection_;
};

}  // namespace

std::shared_ptr<ResultSource> remote_results(std::weak_ptr<ClientConnection> connection) {
  return std::make_shared<RemoteResultSource>(std::move(connection));
}

}  // namespace tessera

#include "nodes/query_session.hpp"

#include "graph/printable.hpp"
#include "nodes/checkpoint_codec.hpp"
#include "nodes/stream_codec.hpp"
#include "storage/result_answer.hpp"
#include "storage/result_query.hpp"

namespace tessera {
namespace {

using wire::Envelope;

void encode(const ResultsAnswer& answer, wire::ResultsAnswer::Builder out, wire::Attachments& attachments) {
  if (!answer.records.empty()) {
    auto list = out.initRecords(static_cast<unsigned>(answer.records.size()));
    NodeNames nodes;
    for (std::size_t i = 0; i < answer.records.size(); ++i) {
      const auto& r = answer.records[i];
      auto b = list[static_cast<unsigned>(i)];
      wire::encode(r.record(), b, attachments, &nodes);
      wire::encode(r.parameters, b.initParameters(), attachments);
    }
    wire::set_nodes(nodes, out);
  }
  if (const auto& s = answer.summary) {
    auto b = out.initSummary();
    b.setCount(s->count);
    b.setFailed(s->failed);
    b.setNumeric(s->numeric);
    b.setMean(s->mean);
    b.setMin(s->min);
    b.setMax(s->max);
    auto h = b.initHistogram(static_cast<unsigned>(s->histogram.size()));
    for (std::size_t i = 0; i < s->histogram.size(); ++i) h.set(static_cast<unsigned>(i), s->histogram[i]);
  }
  if (!answer.text.empty()) out.setText(answer.text);
  out.setMore(answer.more);
  out.setNextId(answer.next_id);
}

}  // namespace

void QuerySession::post(GatewayClient& client, const std::function<void(const std::string&)>& refuse,
                        std::function<void()> answer) {
  if (client.queries->load() >= g_.options.limits.max_queries_per_client)
    return refuse("this client already has " + std::to_string(client.queries->load()) +
                  " queries waiting, the most one client may have");
  client.queries->fetch_add(1);
  // Counted down however the answer ends (the executor's threads count them).
  auto job = [answer = std::move(answer), count = client.queries] {
    answer();
    count->fetch_sub(1);
  };
  if (!g_.queries->post(std::move(job))) {
    client.queries->fetch_sub(1);
    refuse("this node is answering as many queries as it queues; ask again later");
  }
}

// Checks a query's cost on the I/O thread (cheap), then answers it on the query executor.
void QuerySession::on(Request<Envelope::RESULTS_QUERY>, const Peer& peer, GatewayClient& client,
                      Received& message) {
  const auto in = message.envelope().getResultsQuery();
  const std::uint64_t request_id = in.getRequestId();
  ResultsQuestion question{in.getStreamId(), in.getFilter(),
                           in.getFormat(),   in.getField().size() ? std::string(in.getField()) : "result",
                           in.getBins(),     in.getFirst(),
                           in.getLast()};
  const auto refuse = [&](const std::string& reason) {
    transport::Outgoing answer;
    auto out = answer.envelope().initResultsAnswer();
    out.setRequestId(request_id);
    out.setError(reason);
    g_.send(peer.id, answer);
  };
  if (question.bins > g_.options.limits.max_histogram_bins)
    return refuse("bins = " + std::to_string(question.bins) + " exceeds the limit of " +
                  std::to_string(g_.options.limits.max_histogram_bins) + " (limits.max_histogram_bins)");
  if (!g_.options.store) return refuse("this node stores no results");
  auto job = [question = std::move(question), request_id, store = g_.options.store,
              limit = g_.options.limits.max_answer_bytes, target = g_.server, peer_id = peer.id] {
    transport::Outgoing answer;
    auto out = answer.envelope().initResultsAnswer();
    out.setRequestId(request_id);
    try {
      encode(answer_results(question, *store(), limit), out, answer.attachments());
    } catch (const std::exception& e) {
      // An error after a partial answer: start again with just the reason.
      transport::Outgoing failed;
      auto error = failed.envelope().initResultsAnswer();
      error.setRequestId(request_id);
      error.setError(printable(e.what(), 400));
      if (auto server = target.lock()) server->send(peer_id, failed);
      return;
    }
    if (auto server = target.lock()) server->send(peer_id, answer);
  };
  post(client, refuse, std::move(job));
}

// Lists the store's streams, or drops a finished one, on the query executor (a drop compacts its ranges).
void QuerySession::on(Request<Envelope::STREAMS_REQUEST>, const Peer& peer, GatewayClient& client,
                      Received& message) {
  const auto in = message.envelope().getStreamsRequest();
  const std::uint64_t request_id = in.getRequestId(), drop = in.getDrop();
  const auto refuse = [&](const std::string& reason) {
    transport::Outgoing answer;
    auto out = answer.envelope().initStreamsAnswer();
    out.setRequestId(request_id);
    out.setError(reason);
    g_.send(peer.id, answer);
  };
  if (!g_.options.store) return refuse("this node stores no results");
  auto job = [request_id, drop, store = g_.options.store, target = g_.server, peer_id = peer.id] {
    transport::Outgoing answer;
    auto out = answer.envelope().initStreamsAnswer();
    out.setRequestId(request_id);
    try {
      if (drop != 0) {
        drop_finished_stream(*store(), drop);
      } else {
        auto listed = list_streams(*store());
        // Bounded like any answer: the newest streams when there are more.
        constexpr std::size_t kMaxListed = 100000;
        if (listed.size() > kMaxListed) listed.erase(listed.begin(), listed.end() - kMaxListed);
        auto list = out.initStreams(static_cast<unsigned>(listed.size()));
        for (std::size_t i = 0; i < listed.size(); ++i) {
          auto entry = list[static_cast<unsigned>(i)];
          entry.setId(listed[i].id);
          entry.setSimulation(listed[i].simulation);
          entry.setClosed(listed[i].closed);
          entry.setCloseRequested(listed[i].close_requested);
          entry.setPushed(listed[i].pushed);
          entry.setStored(listed[i].stored);
          entry.setInputSets(listed[i].input_sets);
          entry.setEndedEarly(listed[i].ended_early);
        }
      }
    } catch (const std::exception& e) {
      transport::Outgoing failed;
      auto error = failed.envelope().initStreamsAnswer();
      error.setRequestId(request_id);
      error.setError(printable(e.what(), 400));
      if (auto server = target.lock()) server->send(peer_id, failed);
      return;
    }
    if (auto server = target.lock()) server->send(peer_id, answer);
  };
  post(client, refuse, std::move(job));
}

// Lists or drops checkpoints on the query executor; the request's bounds were checked in decode.
void QuerySession::on(Request<Envelope::CHECKPOINTS_REQUEST>, const Peer& peer, GatewayClient& client,
                      Received& message) {
  const auto in = message.envelope().getCheckpointsRequest();
  const auto refuse = [&, id = in.getRequestId()](const std::string& reason) {
    transport::Outgoing answer;
    auto out = answer.envelope().initCheckpointsAnswer();
    out.setRequestId(id);
    out.setError(reason);
    g_.send(peer.id, answer);
  };
  wire::CheckpointsQuery query;
  try {
    query = wire::decode(in);
  } catch (const wire::WireError& e) {
    refuse(e.what());  // the client hears why; the transport logs and counts the drop
    throw;
  }
  if (!g_.options.checkpoints) return refuse("this node keeps no checkpoints");
  auto job = [query = std::move(query), store = g_.options.checkpoints,
              limit = g_.options.limits.max_answer_bytes, target = g_.server, peer_id = peer.id] {
    std::string failure;
    {
      transport::Outgoing answer;
      try {
        wire::answer(query, *store(), limit, answer.envelope().initCheckpointsAnswer());
        if (auto server = target.lock()) server->send(peer_id, answer);
      } catch (const std::exception& e) {
        failure = printable(e.what(), 400);
      }
    }
    if (!failure.empty()) {  // an error after a partial answer: start again with just the reason
      transport::Outgoing error;
      auto out = error.envelope().initCheckpointsAnswer();
      out.setRequestId(query.request_id);
      out.setError(failure);
      if (auto server = target.lock()) server->send(peer_id, error);
    }
  };
  post(client, refuse, std::move(job));
}

}  // namespace tessera

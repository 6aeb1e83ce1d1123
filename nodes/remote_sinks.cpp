#include "nodes/remote_sinks.hpp"

#include "messages/protocol_codec.hpp"
#include "nodes/stream_codec.hpp"

namespace tessera {

void RemoteSink::deliver(std::vector<Delivery>& batch) {
  auto server = server_.lock();
  if (!server) return;
  transport::Outgoing message;
  wire::encode(tag(), batch, message.envelope().initResults(), message.attachments());
  std::string peer;
  {
    // Counted with the peer it goes to: a result that left for the old connection counts as sent there.
    std::lock_guard lock(peer_mutex_);
    sent_slots_ += batch.size();
    peer = peer_;
  }
  server->send(peer, message);
}

void RemoteStreamSink::refuse(const std::string& reason) {
  auto server = server_.lock();
  if (!server) return;
  transport::Outgoing message;
  message.envelope().initError().setReason(reason);
  server->send(peer_, message);
}

void RemoteStreamSink::send_results(std::vector<StreamRecord>& records) {
  delivered_ += records.size();
  auto server = server_.lock();
  if (!server || records.empty()) return;
  transport::Outgoing message;
  auto out = message.envelope().initStreamResults();
  out.setStreamId(stream_);
  auto list = wire::init_records(out, records.size());
  NodeNames nodes;
  for (std::size_t i = 0; i < records.size(); ++i)
    wire::encode(records[i], list[static_cast<unsigned>(i)], message.attachments(), &nodes);
  wire::set_nodes(nodes, out);
  server->send(peer_, message);
}
void RemoteStreamSink::send_accepted(std::uint64_t up_to) {
  auto server = server_.lock();
  if (!server) return;
  transport::Outgoing message;
  auto out = message.envelope().initStreamAccepted();
  out.setStreamId(stream_);
  out.setUpTo(up_to);
  server->send(peer_, message);
}
void RemoteStreamSink::send_finished(const std::string& error) {
  auto server = server_.lock();
  if (!server) return;
  transport::Outgoing message;
  auto out = message.envelope().initStreamFinished();
  out.setStreamId(stream_);
  out.setError(error);
  server->send(peer_, message);
}

}  // namespace tessera

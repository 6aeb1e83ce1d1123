// The scheduler's session for a client's streams of parameter sets: opening one on a simulation the
// scheduler has (its declaration checked against the client's), pushes, the close, a reconnected client
// attaching again, and cancellations (the `stream` rows of nodes/client_protocol.hpp).
#pragma once

#include "nodes/client_protocol.hpp"
#include "nodes/gateway_state.hpp"

namespace tessera {

class StreamSession {
 public:
  explicit StreamSession(GatewayState& gateway) : g_(gateway) {}

  using Received = transport::Received;
  using Peer = transport::PeerInfo;
  template <wire::Envelope::Which Kind>
  using Request = wire::ClientRequest<Kind>;

  void on(Request<wire::Envelope::STREAM_OPEN>, const Peer& peer, GatewayClient& client, Received& message);
  void on(Request<wire::Envelope::STREAM_PUSH>, const Peer& peer, GatewayClient& client, Received& message);
  void on(Request<wire::Envelope::STREAM_CLOSE>, const Peer& peer, GatewayClient& client, Received& message);
  void on(Request<wire::Envelope::STREAM_ATTACH>, const Peer& peer, GatewayClient& client, Received& message);
  void on(Request<wire::Envelope::STREAM_CANCEL>, const Peer& peer, GatewayClient& client, Received& message);

 private:
  void answer_open(const Peer& peer, std::uint64_t request, std::uint64_t stream, const std::string& error,
                   std::uint32_t arity, const ProgramSpec* program = nullptr,
                   const ReopenedStream* resumed = nullptr);
  // A StreamOpen that resumes an incomplete stream (tessera stream push --resume).
  void resume(const Peer& peer, GatewayClient& client, wire::StreamOpen::Reader open);
  GatewayState& g_;
};

}  // namespace tessera

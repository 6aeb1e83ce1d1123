// The scheduler's session for questions about what the node stores: stream results (summaries, records,
// exports) and checkpoints (list, drop). Each is checked for cost on the I/O thread and answered on the
// query executor, at most limits.max_queries_per_client waiting per client (the `query` rows of
// nodes/client_protocol.hpp).
#pragma once

#include <functional>
#include <string>

#include "nodes/client_protocol.hpp"
#include "nodes/gateway_state.hpp"

namespace tessera {

class QuerySession {
 public:
  explicit QuerySession(GatewayState& gateway) : g_(gateway) {}

  using Received = transport::Received;
  using Peer = transport::PeerInfo;
  template <wire::Envelope::Which Kind>
  using Request = wire::ClientRequest<Kind>;

  void on(Request<wire::Envelope::RESULTS_QUERY>, const Peer& peer, GatewayClient& client, Received& message);
  void on(Request<wire::Envelope::STREAMS_REQUEST>, const Peer& peer, GatewayClient& client,
          Received& message);
  void on(Request<wire::Envelope::CHECKPOINTS_REQUEST>, const Peer& peer, GatewayClient& client,
          Received& message);

 private:
  // Runs `answer` on the query executor within the client's budget of waiting queries, or tells the
  // client why not through `refuse`.
  void post(GatewayClient& client, const std::function<void(const std::string&)>& refuse,
            std::function<void()> answer);

  GatewayState& g_;
};

}  // namespace tessera

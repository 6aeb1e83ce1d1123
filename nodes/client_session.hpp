// The scheduler's session for a client's computations and questions: submissions, releases and
// cancellations of tasks, GLM fits, status, workers, functions and simulations, heartbeats and goodbyes
// (the `client` rows of nodes/client_protocol.hpp).
#pragma once

#include "nodes/client_protocol.hpp"
#include "nodes/gateway_state.hpp"

namespace tessera {

class ClientSession {
 public:
  explicit ClientSession(GatewayState& gateway) : g_(gateway) {}

  using Received = transport::Received;
  using Peer = transport::PeerInfo;
  template <wire::Envelope::Which Kind>
  using Request = wire::ClientRequest<Kind>;

  // As a client's connection is welcomed: a new session, or the one its hello's token names (the client
  // reconnected to this scheduler within client_grace), moved to this connection. Tells the client which.
  void welcome(transport::Server& server, const Peer& peer, wire::Welcome::Builder out);
  // Whether `token` names a session held now (a client resuming it is no new client).
  bool holds_session(const std::string& token) const;

  void on(Request<wire::Envelope::HEARTBEAT>, const Peer& peer, GatewayClient& client, Received& message);
  void on(Request<wire::Envelope::SUBMIT>, const Peer& peer, GatewayClient& client, Received& message);
  void on(Request<wire::Envelope::RELEASE>, const Peer& peer, GatewayClient& client, Received& message);
  void on(Request<wire::Envelope::CANCEL>, const Peer& peer, GatewayClient& client, Received& message);
  void on(Request<wire::Envelope::STATUS_REQUEST>, const Peer& peer, GatewayClient& client,
          Received& message);
  void on(Request<wire::Envelope::WORKERS_REQUEST>, const Peer& peer, GatewayClient& client,
          Received& message);
  void on(Request<wire::Envelope::SIMULATIONS_REQUEST>, const Peer& peer, GatewayClient& client,
          Received& message);
  void on(Request<wire::Envelope::FUNCTIONS_REQUEST>, const Peer& peer, GatewayClient& client,
          Received& message);
  void on(Request<wire::Envelope::GLM>, const Peer& peer, GatewayClient& client, Received& message);
  void on(Request<wire::Envelope::SHUTDOWN>, const Peer& peer, GatewayClient& client, Received& message);

 private:
  GatewayState& g_;
};

}  // namespace tessera

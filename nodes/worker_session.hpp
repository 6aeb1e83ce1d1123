// The scheduler's session for worker processes: a hello becomes a proxy actor the scheduler registers as
// a worker; what a worker sends goes to the actor its wire-table row names (the scheduler, a stream's
// actor); a worker silent past worker_timeout is declared lost.
#pragma once

#include "nodes/gateway_state.hpp"

namespace tessera {

class WorkerSession {
 public:
  explicit WorkerSession(GatewayState& gateway) : g_(gateway) {}
  // A worker process said hello: a proxy stands for it, and the scheduler gives it an id.
  void joined(const transport::PeerInfo& peer);
  void handle(WorkerPeer& worker, transport::Received& message);
  // Heartbeat timeouts, on the I/O thread.
  void tick(transport::Server& server);

 private:
  static constexpr std::chrono::milliseconds kRegistrationTimeout{10000};
  GatewayState& g_;
  // Given up on before the scheduler stored their ids; told lost if it does after all.
  std::vector<std::shared_ptr<std::atomic<std::uint32_t>>> abandoned_;
};

}  // namespace tessera

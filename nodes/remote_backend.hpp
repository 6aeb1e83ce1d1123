// RemoteBackend: a client's connection to a scheduler node (tessera-node). Submissions, releases and
// cancellations go out as Cap'n Proto messages over ZeroMQ; results come back on the connection's I/O
// thread and fill the same result tables (ResultSink) a local client uses, so Client's API is unchanged.
//
// The scheduler answers every heartbeat. A scheduler that is silent for heartbeat_timeout, or that
// refuses this connection (it restarted and no longer knows it), is reconnected to with backoff for up to
// reconnect_timeout. After a reconnect the client carries on by itself: its open streams attach again and
// what they had pushed without an acknowledgement is sent again (the stream drops what it already has),
// submissions with results still to come are sent again, and calls waiting for an answer ask again. If
// no connection is made within reconnect_timeout, every waiting and later call fails with ConnectionLost,
// naming the address and how long the client waited.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "actors/cluster_backend.hpp"
#include "nodes/transport.hpp"

namespace tessera {

struct RemoteOptions {
  std::string name = "client";
  std::optional<transport::CurveKeys> curve;  // this client's keys, for a scheduler with CURVE on
  std::string server_public_key;
  std::chrono::milliseconds handshake_timeout{5000};
  std::chrono::milliseconds heartbeat_interval{500};
  // No message from the scheduler for this long: it is taken for gone, and reconnected to.
  std::chrono::milliseconds heartbeat_timeout{3000};
  // How long a lost scheduler is reconnected to before every call fails with ConnectionLost.
  std::chrono::milliseconds reconnect_timeout{30000};
  // How long a question to the scheduler (status, workers, functions, simulations) waits for its answer
  // while connected, before a ConnectionError naming the address.
  std::chrono::milliseconds request_timeout{30000};
};

// Connects and shakes hands; throws transport::ConnectionRefused naming the reason.
std::shared_ptr<ClusterBackend> connect_remote(const std::string& address, RemoteOptions options = {});

}  // namespace tessera

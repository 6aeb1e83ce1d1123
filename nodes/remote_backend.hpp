// RemoteBackend: a client's connection to a scheduler node (tessera-node). Submissions, releases and
// cancellations go out as Cap'n Proto messages over ZeroMQ; results come back on the connection's I/O
// thread and fill the same result tables (ResultSink) a local client uses, so Client's API is unchanged.
#pragma once

#include <memory>
#include <string>

#include "actors/cluster_backend.hpp"
#include "nodes/transport.hpp"

namespace tessera {

struct RemoteOptions {
  std::string name = "client";
  std::optional<transport::CurveKeys> curve;  // this client's keys, for a scheduler with CURVE on
  std::string server_public_key;
  std::chrono::milliseconds handshake_timeout{5000};
};

// Connects and shakes hands; throws transport::ConnectionRefused naming the reason.
std::shared_ptr<ClusterBackend> connect_remote(const std::string& address, RemoteOptions options = {});

}  // namespace tessera

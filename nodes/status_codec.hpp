// The codec of STATUS and WORKERS: what a scheduler node says of itself and of its workers. Both ends
// use it (the gateway encodes, RemoteBackend decodes), so the two cannot drift; a peer's text is bounded
// and made printable, and its counts are checked before anything is allocated for them.
#pragma once

#include <vector>

#include "messages/protocol.capnp.h"
#include "scheduling/cluster_status.hpp"

namespace tessera::wire {

void encode(const ClusterStatus& status, Status::Builder out);
ClusterStatus decode(Status::Reader in);

void encode(const std::vector<WorkerInfo>& workers, capnp::List<WorkerEntry>::Builder out);
std::vector<WorkerInfo> decode(capnp::List<WorkerEntry>::Reader in);

}  // namespace tessera::wire

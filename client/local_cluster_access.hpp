// The engine behind a LocalCluster (actors/embedded_cluster.hpp), for the client library's own files and
// for tests that drive the scheduler directly. Not part of the public API: nothing in client/tessera/
// includes it.
#pragma once

#include "actors/embedded_cluster.hpp"
#include "tessera/local_cluster.hpp"

namespace tessera::detail {

struct LocalClusterAccess {
  static EmbeddedCluster& engine(LocalCluster& cluster);
};

}  // namespace tessera::detail

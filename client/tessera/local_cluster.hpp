// LocalCluster: a scheduler and its workers in this process (the embedded default).
#pragma once

#include "actors/embedded_cluster.hpp"

namespace tessera {

using LocalCluster = EmbeddedCluster;

}  // namespace tessera

// The generators Tessera ships, added to the registry that ensembles name them from.
#pragma once

namespace tessera {

// Adds "aposmm" (generators/aposmm.hpp) to GeneratorRegistry::global(), once per process; every cluster
// calls it as it starts (EmbeddedCluster), so a scheduler always has them.
void register_builtin_generators();

}  // namespace tessera

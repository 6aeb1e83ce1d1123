// Registers the built-in partition functions of Bag (tessera.bag.*) in a registry.
#pragma once

#include "graph/registry.hpp"

namespace tessera {

void register_bag_tasks(Registry& registry);

}  // namespace tessera

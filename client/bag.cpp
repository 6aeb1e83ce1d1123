#include "tessera/bag.hpp"

namespace tessera::detail {
const BagFunctions& bag_functions() {
  auto& registry = Registry::global();
  static const BagFunctions functions{&registry.get("tessera.bag.identity"), &registry.get("tessera.bag.map"),
                                      &registry.get("tessera.bag.filter"), &registry.get("tessera.bag.fold"),
                                      &registry.get("tessera.bag.combine")};
  return functions;
}

}  // namespace tessera::detail

#include "generators/builtin.hpp"

#include <mutex>

#include "generators/aposmm.hpp"
#include "graph/generator.hpp"

namespace tessera {

void register_builtin_generators() {
  static std::once_flag once;
  std::call_once(once, [] { GeneratorRegistry::global().add(generator_type<Aposmm>("aposmm")); });
}

}  // namespace tessera

// A plugin that defines node_only_cube differently from tests/plugins/node_only_tasks.cpp: a worker that
// loads it must not run the scheduler's tasks of that name.
#include <tessera/tessera.hpp>

namespace impostor {

std::int64_t node_only_cube(std::int64_t x) {
  return x * x * x + 1;
}
TESSERA_TASK(node_only_cube);

}  // namespace impostor

#include "graph/fetch_task.hpp"

namespace tessera {

void register_fetch_task(Registry& registry) {
  auto fn = detail::make_task_function<Value (*)(Value), Value>(
      "tessera.fetch", +[](Value held) { return held; }, static_cast<std::tuple<Value>*>(nullptr));
  fn.always_delivered = true;
  registry.add(std::move(fn), 0);
}

const TaskFunction& fetch_function() {
  static const TaskFunction& fn = Registry::global().get("tessera.fetch");
  return fn;
}

}  // namespace tessera

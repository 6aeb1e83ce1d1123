// The built-in partition functions behind Bag: generic over Values, registered in every process (a
// node runs them for remote clients too).
#include "graph/bag_tasks.hpp"

namespace tessera {
namespace {

// Calls a registered function of one or two Values.
Value call(const TaskFunction& fn, std::initializer_list<Value> args) {
  return fn.invoke(std::span<const Value>(args.begin(), args.size()));
}

// Visits a partition's items, whether stored as a list or as packed doubles.
template <class Visit>
void for_each_item(const Value& partition, Visit&& visit) {
  if (partition.kind() == ValueKind::doubles) {
    for (double x : partition.as_doubles()) visit(Value(x));
  } else {
    for (const Value& item : partition.as_list()) visit(item);
  }
}

Value map_partition(const std::string& name, const Value& partition) {
  const TaskFunction& fn = Registry::global().get(name);
  Value::List out;
  for_each_item(partition, [&](const Value& item) { out.push_back(call(fn, {item})); });
  return Value(std::move(out));
}

Value filter_partition(const std::string& name, const Value& partition) {
  const TaskFunction& pred = Registry::global().get(name);
  Value::List out;
  for_each_item(partition, [&](const Value& item) {
    if (call(pred, {item}).as_bool()) out.push_back(item);
  });
  return Value(std::move(out));
}

Value fold_partition(const std::string& name, const Value& initial, const Value& partition) {
  const TaskFunction& binop = Registry::global().get(name);
  Value acc = initial;
  for_each_item(partition, [&](const Value& item) { acc = acc.is_none() ? item : call(binop, {acc, item}); });
  return acc;
}

}  // namespace

Value stream_fold(const std::vector<BagStage>& stages, const TaskFunction& binop, const Value& initial,
                  const Value& partition) {
  Value acc = initial;
  for_each_item(partition, [&](const Value& item) {
    Value value = item;
    for (std::size_t k = 0; k < stages.size(); ++k) {
      try {
        if (!stages[k].filter) {
          value = call(*stages[k].function, {value});
        } else if (!call(*stages[k].function, {value}).as_bool()) {
          return;
        }
      } catch (const std::exception& e) {
        throw BagStageFailed(k, e.what());
      }
    }
    try {
      acc = acc.is_none() ? std::move(value) : call(binop, {acc, value});
    } catch (const std::exception& e) {
      throw BagStageFailed(stages.size(), e.what());
    }
  });
  return acc;
}

namespace {

Value combine_partials(const std::string& name, const Value& a, const Value& b) {
  if (a.is_none()) return b;
  if (b.is_none()) return a;
  return call(Registry::global().get(name), {a, b});
}

template <class F>
void add(Registry& registry, const char* name, F fn) {
  using traits = detail::callable_traits<F>;
  registry.add(detail::make_task_function<F, std::remove_cvref_t<typename traits::result>>(
                   name, fn, static_cast<typename traits::arguments*>(nullptr)),
               0);
}

}  // namespace

void register_bag_tasks(Registry& registry) {
  add(
      registry, "tessera.bag.identity", +[](Value partition) { return partition; });
  add(registry, "tessera.bag.map", &map_partition);
  add(registry, "tessera.bag.filter", &filter_partition);
  add(registry, "tessera.bag.fold", &fold_partition);
  add(registry, "tessera.bag.combine", &combine_partials);
}

}  // namespace tessera

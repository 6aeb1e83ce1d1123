#include "tessera/bag.hpp"

namespace tessera::detail {
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

Value combine_partials(const std::string& name, const Value& a, const Value& b) {
  if (a.is_none()) return b;
  if (b.is_none()) return a;
  return call(Registry::global().get(name), {a, b});
}

}  // namespace

const BagFunctions& bag_functions() {
  static const BagFunctions functions{
      register_task("tessera.bag.identity", [](Value partition) { return partition; }).function,
      register_task("tessera.bag.map", &map_partition).function,
      register_task("tessera.bag.filter", &filter_partition).function,
      register_task("tessera.bag.fold", &fold_partition).function,
      register_task("tessera.bag.combine", &combine_partials).function,
  };
  return functions;
}

}  // namespace tessera::detail

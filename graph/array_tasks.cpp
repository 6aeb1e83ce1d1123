#include "graph/array_tasks.hpp"

#include <array>

#include "backends/npy.hpp"

namespace tessera {
namespace {

constexpr const char* kernel_prefix = "tessera.array.kernel";

struct KernelCall {
  std::string operation;
  backends::Backend backend;
  backends::Params params;
};

KernelCall decode_kernel_call(const Value& value) {
  const auto& items = value.as_list();
  if (items.size() != 5)
    throw TypeError("array kernel call: expected 5 fields, got " + std::to_string(items.size()));
  KernelCall call;
  call.operation = items[0].as_string();
  const auto backend = items[1].as_int();
  if (backend < 0 || backend > 2)
    throw TypeError("array kernel call: unknown backend " + std::to_string(backend));
  call.backend = static_cast<backends::Backend>(backend);
  call.params.name = items[2].as_string();
  for (const auto& i : items[3].as_list()) call.params.ints.push_back(i.as_int());
  call.params.reals = items[4].as_doubles();
  return call;
}

// Inputs are chunks, or lists of chunks (a multi-output kernel's result passed whole).
void collect_chunks(const Value& v, backends::Chunks& out) {
  if (v.kind() == ValueKind::list) {
    for (const auto& item : v.as_list()) collect_chunks(item, out);
    return;
  }
  out.push_back(v.as_chunk());
}

Value run_kernel(std::span<const Value> args) {
  const KernelCall call = decode_kernel_call(args[0]);
  backends::Chunks inputs;
  for (std::size_t i = 1; i < args.size(); ++i) collect_chunks(args[i], inputs);
  if (call.backend == backends::Backend::cuda) backends::Dispatch::global().require(call.backend);
  auto outputs = backends::Dispatch::global().run(call.operation, inputs, call.params, call.backend);
  if (outputs.size() == 1) return Value(std::move(outputs.front()));
  Value::List list;
  list.reserve(outputs.size());
  for (auto& c : outputs) list.emplace_back(std::move(c));
  return Value(std::move(list));
}

Value pick(std::span<const Value> args) {
  const auto& list = args[0].as_list();
  const auto index = args[1].as_int();
  if (index < 0 || static_cast<std::size_t>(index) >= list.size())
    throw TypeError("pick: index " + std::to_string(index) + " of " + std::to_string(list.size()) +
                    " results");
  return list[static_cast<std::size_t>(index)];
}

// A chunk from a registered block function (row0, col0, rows, cols) -> matrix, checked against its place.
Value make_block(std::span<const Value> args) {
  const auto& name = args[0].as_string();
  const TaskFunction& fn = Registry::global().get(name);
  const Value result = fn.invoke(args.subspan(1));
  const auto rows = args[3].as_int(), cols = args[4].as_int();
  if (result.kind() == ValueKind::chunk) return result;
  const Eigen::MatrixXd& m = result.as_matrix();
  if (m.rows() != rows || m.cols() != cols)
    throw TypeError("block function " + name + " returned a " + std::to_string(m.rows()) + " x " +
                    std::to_string(m.cols()) + " matrix for a " + std::to_string(rows) + " x " +
                    std::to_string(cols) + " chunk at (" + args[1].to_string() + ", " + args[2].to_string() +
                    ")");
  return Value(backends::Chunk::dense<double>(m));
}

Value identity(std::span<const Value> args) {
  return args[0];
}

// Two chunks as one result, so that one task holds both where it ran (a GLM partition: rows of X and y).
Value pair(std::span<const Value> args) {
  args[0].as_chunk();
  args[1].as_chunk();
  return Value(Value::List{args[0], args[1]});
}

// (path, row0, rows, col0, cols): a block of an .npy file, read where the chunk is made.
Value read_npy_block(std::span<const Value> args) {
  const auto& path = args[0].as_string();
  const auto header = backends::npy::read_header(path);
  return Value(backends::npy::read_block(path, header, args[1].as_int(), args[2].as_int(), args[3].as_int(),
                                         args[4].as_int()));
}

bool accepts_any(const Value&) {
  return true;
}

TaskFunction make_function(std::string name, std::vector<std::string> types,
                           std::function<Value(std::span<const Value>)> body) {
  TaskFunction fn;
  fn.name = std::move(name);
  fn.argument_accepts.assign(types.size(), &accepts_any);
  fn.argument_types = std::move(types);
  fn.result_type = "chunk";
  fn.invoke = [body = std::move(body), name = fn.name,
               arity = fn.argument_types.size()](std::span<const Value> args) {
    if (args.size() != arity)
      throw TypeError(name + " takes " + std::to_string(arity) + " arguments, got " +
                      std::to_string(args.size()));
    return body(args);
  };
  return fn;
}

}  // namespace

void register_array_tasks(Registry& registry) {
  for (std::size_t n = 0; n <= max_kernel_inputs; ++n) {
    std::vector<std::string> types{"kernel call"};
    types.resize(n + 1, "chunk");
    TaskFunction fn = make_function(kernel_prefix + std::to_string(n), std::move(types), run_kernel);
    fn.runs_on_gpu = [](const Value& call) {
      const auto& items = call.as_list();
      return items.size() == 5 && items[1].kind() == ValueKind::integer &&
             items[1].as_int() == static_cast<std::int64_t>(backends::Backend::cuda);
    };
    registry.add(std::move(fn), 0);
  }
  registry.add(make_function("tessera.array.pick", {"list", "int"}, pick), 0);
  registry.add(make_function("tessera.array.identity", {"chunk"}, identity), 0);
  registry.add(make_function("tessera.array.pair", {"chunk", "chunk"}, pair), 0);
  registry.add(make_function("tessera.array.npy", {"string", "int", "int", "int", "int"}, read_npy_block), 0);
  registry.add(make_function("tessera.array.block", {"string", "int", "int", "int", "int"}, make_block), 0);
}

const TaskFunction& array_kernel_function(std::size_t inputs) {
  static const auto functions = [] {
    std::array<const TaskFunction*, max_kernel_inputs + 1> out{};
    for (std::size_t n = 0; n <= max_kernel_inputs; ++n)
      out[n] = &Registry::global().get(kernel_prefix + std::to_string(n));
    return out;
  }();
  if (inputs > max_kernel_inputs)
    throw SubmissionError("an array kernel takes at most " + std::to_string(max_kernel_inputs) +
                          " inputs, got " + std::to_string(inputs));
  return *functions[inputs];
}

const TaskFunction& array_pick_function() {
  static const TaskFunction& fn = Registry::global().get("tessera.array.pick");
  return fn;
}

const TaskFunction& array_identity_function() {
  static const TaskFunction& fn = Registry::global().get("tessera.array.identity");
  return fn;
}

const TaskFunction& array_pair_function() {
  static const TaskFunction& fn = Registry::global().get("tessera.array.pair");
  return fn;
}

const TaskFunction& array_npy_function() {
  static const TaskFunction& fn = Registry::global().get("tessera.array.npy");
  return fn;
}

const TaskFunction& array_block_function() {
  static const TaskFunction& fn = Registry::global().get("tessera.array.block");
  return fn;
}

Value encode_kernel_call(std::string_view operation, backends::Backend backend,
                         const backends::Params& params) {
  Value::List ints;
  ints.reserve(params.ints.size());
  for (auto i : params.ints) ints.emplace_back(i);
  return Value(Value::List{Value(std::string(operation)), Value(static_cast<std::int64_t>(backend)),
                           Value(params.name), Value(std::move(ints)), Value(params.reals)});
}

}  // namespace tessera

#include "graph/fused_task.hpp"

#include <algorithm>
#include <array>
#include <optional>
#include <stdexcept>
#include <string>

#include "backends/donation.hpp"
#include "graph/bag_tasks.hpp"
#include "graph/errors.hpp"

namespace tessera {
namespace {

constexpr const char* kFusedPrefix = "tessera.fused/";
constexpr const char* kArrayKernelPrefix = "tessera.array.kernel";  // graph/array_tasks.cpp's functions

// A decoded program: each step's function and argument sources, and after which step each step's
// result is no longer read (so a chain of large chunks holds two at a time, not all of them).
struct Program {
  struct Step {
    const TaskFunction* function;
    std::vector<std::int64_t> args;
  };
  std::vector<Step> steps;
  std::vector<std::size_t> last_use;
};

[[noreturn]] void malformed(const std::string& what) {
  throw TypeError("tessera.fused: malformed program: " + what);
}

std::int64_t int_at(const Value::List& code, std::size_t& at) {
  if (at >= code.size()) malformed("it ends early");
  const Value& v = code[at++];
  if (v.kind() != ValueKind::integer) malformed("entry " + std::to_string(at - 1) + " is not an integer");
  return v.as_int();
}

// Programs arrive from other processes: every index is checked before it is used.
Program decode(const Value& encoded, std::size_t inputs) {
  if (encoded.kind() != ValueKind::list || encoded.as_list().size() != 2) malformed("not a pair of lists");
  const Value& names_value = encoded.as_list()[0];
  const Value& code_value = encoded.as_list()[1];
  if (names_value.kind() != ValueKind::list || code_value.kind() != ValueKind::list)
    malformed("not a pair of lists");
  std::vector<const TaskFunction*> functions;
  for (const Value& name : names_value.as_list()) {
    if (name.kind() != ValueKind::string) malformed("a function name is not text");
    const TaskFunction& fn = Registry::global().get(name.as_string());
    if (is_fused_function(fn)) malformed("a step is itself a fused task");
    functions.push_back(&fn);
  }
  const Value::List& code = code_value.as_list();
  Program program;
  std::size_t at = 0;
  while (at < code.size()) {
    const std::int64_t fn_index = int_at(code, at);
    if (fn_index < 0 || static_cast<std::size_t>(fn_index) >= functions.size())
      malformed("step " + std::to_string(program.steps.size()) + " names function " +
                std::to_string(fn_index));
    const TaskFunction* fn = functions[static_cast<std::size_t>(fn_index)];
    const std::int64_t count = int_at(code, at);
    if (count < 0 || static_cast<std::size_t>(count) != fn->arity())
      malformed("step " + std::to_string(program.steps.size()) + " gives " + fn->name + " " +
                std::to_string(count) + " arguments, it takes " + std::to_string(fn->arity()));
    Program::Step step{fn, {}};
    for (std::int64_t j = 0; j < count; ++j) {
      const std::int64_t source = int_at(code, at);
      const bool known_input = source >= 0 && static_cast<std::size_t>(source) < inputs;
      const bool earlier_step = source < 0 && static_cast<std::size_t>(-source - 1) < program.steps.size();
      if (!known_input && !earlier_step)
        malformed("step " + std::to_string(program.steps.size()) + " argument " + std::to_string(j) +
                  " reads " + std::to_string(source));
      step.args.push_back(source);
    }
    program.steps.push_back(std::move(step));
  }
  if (program.steps.empty()) malformed("it has no steps");
  program.last_use.assign(program.steps.size(), 0);
  for (std::size_t i = 0; i < program.steps.size(); ++i)
    for (std::int64_t source : program.steps[i].args)
      if (source < 0) program.last_use[static_cast<std::size_t>(-source - 1)] = i;
  return program;
}

// A registered function named by a literal input of the fused task; null when it names none (the step
// then runs as usual and reports it).
const TaskFunction* named_function(std::span<const Value> args, std::int64_t source) {
  const Value& name = args[1 + static_cast<std::size_t>(source)];
  return name.kind() == ValueKind::string ? Registry::global().find(name.as_string()) : nullptr;
}

// A fused bag pipeline: map and filter partition steps in a row, each reading the one before, then a
// fold of the last. It runs item by item (stream_fold in graph/bag_tasks.hpp), so its memory is one
// item's values rather than each step's whole partition; nullopt for any other program.
std::optional<Value> stream_bag_pipeline(const Program& program, std::span<const Value> args) {
  static const TaskFunction* const map = &Registry::global().get("tessera.bag.map");
  static const TaskFunction* const filter = &Registry::global().get("tessera.bag.filter");
  static const TaskFunction* const fold = &Registry::global().get("tessera.bag.fold");
  const auto& steps = program.steps;
  if (steps.size() < 2 || steps.back().function != fold) return std::nullopt;
  const auto& fold_args = steps.back().args;
  if (fold_args.size() != 3 || fold_args[0] < 0 || fold_args[1] < 0 ||
      fold_args[2] != FusedStep::step(steps.size() - 2))
    return std::nullopt;
  std::vector<BagStage> stages;
  for (std::size_t k = 0; k + 1 < steps.size(); ++k) {
    const auto& step = steps[k];
    if ((step.function != map && step.function != filter) || step.args.size() != 2 || step.args[0] < 0)
      return std::nullopt;
    const std::int64_t partition = step.args[1];
    if (k == 0 ? partition < 0 : partition != FusedStep::step(k - 1)) return std::nullopt;
    const TaskFunction* function = named_function(args, step.args[0]);
    if (!function) return std::nullopt;
    stages.push_back(BagStage{function, step.function == filter});
  }
  const TaskFunction* binop = named_function(args, fold_args[0]);
  if (!binop) return std::nullopt;
  try {
    return stream_fold(stages, *binop, args[1 + static_cast<std::size_t>(fold_args[1])],
                       args[1 + static_cast<std::size_t>(steps.front().args[1])]);
  } catch (const BagStageFailed& e) {
    const std::size_t k = e.stage();
    throw FusedStepFailed(steps[k].function->name, e.what(), steps.back().function->name,
                          k + 1 == steps.size());
  } catch (const std::exception& e) {  // the partition is not a list: the first step's to report
    throw FusedStepFailed(steps.front().function->name, e.what(), steps.back().function->name, false);
  }
}

Value run(std::span<const Value> args) {
  const std::size_t inputs = args.size() - 1;
  const Program program = decode(args[0], inputs);
  if (auto streamed = stream_bag_pipeline(program, args)) return std::move(*streamed);
  std::vector<Value> results(program.steps.size());
  std::vector<Value> call;
  for (std::size_t i = 0; i < program.steps.size(); ++i) {
    const auto& step = program.steps[i];
    call.clear();
    // An intermediate chunk at its last use, read once by this step, held nowhere else: donated to an
    // array kernel, which may write its result into it (backends/donation.hpp).
    const backends::Chunk* donated = nullptr;
    const bool array_kernel = step.function->name.rfind(kArrayKernelPrefix, 0) == 0;
    for (std::int64_t source : step.args) {
      if (source >= 0) {
        call.push_back(args[1 + static_cast<std::size_t>(source)]);
        continue;
      }
      const auto index = static_cast<std::size_t>(-source - 1);
      if (program.last_use[index] != i || std::count(step.args.begin(), step.args.end(), source) != 1) {
        call.push_back(results[index]);
        continue;
      }
      call.push_back(std::move(results[index]));
      if (array_kernel && !donated && call.back().kind() == ValueKind::chunk &&
          call.back().as_chunk().use_count() == 1)
        donated = call.back().as_chunk().get();
    }
    try {
      const backends::ChunkDonation donation(donated);
      results[i] = step.function->invoke(call);
    } catch (const std::exception& e) {
      throw FusedStepFailed(step.function->name, e.what(), program.steps.back().function->name,
                            i + 1 == program.steps.size());
    }
    for (std::int64_t source : step.args)
      if (source < 0 && program.last_use[static_cast<std::size_t>(-source - 1)] == i)
        results[static_cast<std::size_t>(-source - 1)] = Value{};
  }
  return std::move(results.back());
}

bool accepts_any(const Value&) {
  return true;
}

}  // namespace

Value encode_fused_program(const std::vector<FusedStep>& steps) {
  Value::List names, code;
  std::vector<const TaskFunction*> seen;
  for (const FusedStep& step : steps) {
    std::size_t index = 0;
    while (index < seen.size() && seen[index] != step.function) ++index;
    if (index == seen.size()) {
      seen.push_back(step.function);
      names.emplace_back(step.function->name);
    }
    code.emplace_back(static_cast<std::int64_t>(index));
    code.emplace_back(static_cast<std::int64_t>(step.args.size()));
    for (std::int64_t source : step.args) code.emplace_back(source);
  }
  return Value(Value::List{Value(std::move(names)), Value(std::move(code))});
}

const TaskFunction& fused_function(std::size_t inputs) {
  static const std::array<const TaskFunction*, kMaxFusedInputs + 1> functions = [] {
    std::array<const TaskFunction*, kMaxFusedInputs + 1> out{};
    for (std::size_t n = 0; n <= kMaxFusedInputs; ++n)
      out[n] = &Registry::global().get(kFusedPrefix + std::to_string(n));
    return out;
  }();
  if (inputs > kMaxFusedInputs)
    throw SubmissionError("a fused task takes at most " + std::to_string(kMaxFusedInputs) + " inputs, not " +
                          std::to_string(inputs));
  return *functions[inputs];
}

bool is_fused_function(const TaskFunction& fn) {
  return fn.name.starts_with(kFusedPrefix);
}

bool fusible_call(const TaskFunction& fn, const Value* first) {
  if (is_fused_function(fn) || fn.always_delivered) return false;
  return !fn.runs_on_gpu || (first && !fn.runs_on_gpu(*first));
}

void register_fused_tasks(Registry& registry) {
  for (std::size_t n = 0; n <= kMaxFusedInputs; ++n) {
    TaskFunction fn;
    fn.name = kFusedPrefix + std::to_string(n);
    fn.argument_types.assign(n + 1, "Value");
    fn.argument_accepts.assign(n + 1, &accepts_any);
    fn.result_type = "Value";
    fn.invoke = [n](std::span<const Value> args) -> Value {
      if (args.size() != n + 1)
        throw TypeError("tessera.fused/" + std::to_string(n) + " takes " + std::to_string(n + 1) +
                        " arguments, got " + std::to_string(args.size()));
      return run(args);
    };
    registry.add(std::move(fn), 0);
  }
}

}  // namespace tessera

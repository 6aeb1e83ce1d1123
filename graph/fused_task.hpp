// tessera.fused/N: one task that runs a small subgraph of other tasks in order on one thread (a chain, or a
// diamond such as exp(x) - 1/x), made by the fusion pass so that the scheduler and the workers handle one
// task instead of several. Its first argument is the program; the other N are the subgraph's inputs
// (literals and results of tasks outside it). Registered in every process: a node runs it for remote
// clients, and it checks the program it is given as it would a message from the wire.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "graph/fusion_plan.hpp"
#include "graph/registry.hpp"

namespace tessera {

// The most inputs a fused task takes (tessera.fused/0 .. tessera.fused/kMaxFusedInputs).
inline constexpr std::size_t kMaxFusedInputs = 32;

// What a fused task throws when one of its steps throws: the step's function and what it threw, and
// the function of the last step (the task the fused one stands for). The worker reports it as the tasks
// would have been reported unfused: a failure of the last step as its own, one before it as the last
// step cancelled because its dependency failed.
class FusedStepFailed : public std::runtime_error {
 public:
  FusedStepFailed(std::string function, const std::string& message, std::string last_function, bool last)
      : std::runtime_error(message),
        function_(std::move(function)),
        last_function_(std::move(last_function)),
        last_(last) {}
  const std::string& function() const { return function_; }
  const std::string& last_function() const { return last_function_; }
  bool in_last_step() const { return last_; }

 private:
  std::string function_, last_function_;
  bool last_;
};

// One step of a fused program: a registered function and where each of its arguments comes from:
// `input(i)` is the fused task's input i, `step(j)` the result of an earlier step j.
struct FusedStep {
  const TaskFunction* function;
  std::vector<std::int64_t> args;
  static std::int64_t input(std::size_t i) { return static_cast<std::int64_t>(i); }
  static std::int64_t step(std::size_t j) { return -static_cast<std::int64_t>(j) - 1; }
};

// The program's Value: the functions' names once each, then per step its function's index, its
// argument count and its argument sources. The last step's result is the fused task's result.
Value encode_fused_program(const std::vector<FusedStep>& steps);

// The fused task function taking `inputs` inputs (at most kMaxFusedInputs).
const TaskFunction& fused_function(std::size_t inputs);
// Whether fn is one of the fused task functions.
bool is_fused_function(const TaskFunction& fn);

// Whether a call of fn may run as a step of a fused task: fn is no fused task itself, its results need
// not go back whatever their size, and the call does not go to a GPU (`first` is its first argument
// when that is a literal).
bool fusible_call(const TaskFunction& fn, const Value* first);

void register_fused_tasks(Registry& registry);

// The task one group of plan_fusion runs as: its fused function and arguments (the program, then the
// group's inputs: each argument of a member that does not read an earlier member, as given). `args_of(t)`
// is task t's argument list (of Arg, which holds a Value) and `function_of(t)` its function.
template <class Arg>
struct FusedCall {
  const TaskFunction* function;
  std::vector<Arg> args;
};
template <class Arg, class ArgsOf, class FunctionOf>
FusedCall<Arg> make_fused_call(const FusionGraph& graph, const std::vector<std::uint32_t>& group,
                               ArgsOf&& args_of, FunctionOf&& function_of) {
  std::unordered_map<std::uint32_t, std::size_t> step_of;
  std::vector<FusedStep> steps;
  std::vector<Arg> inputs(1, Arg{Value{}});  // the program goes first
  for (std::uint32_t member : group) {
    FusedStep step{function_of(member), {}};
    const auto& args = args_of(member);
    for (std::size_t j = 0; j < args.size(); ++j) {
      const std::int64_t source = graph.args[graph.first_arg[member] + j];
      if (const auto it = source >= 0 ? step_of.find(static_cast<std::uint32_t>(source)) : step_of.end();
          it != step_of.end()) {
        step.args.push_back(FusedStep::step(it->second));
      } else {
        step.args.push_back(FusedStep::input(inputs.size() - 1));
        inputs.push_back(args[j]);
      }
    }
    step_of[member] = steps.size();
    steps.push_back(std::move(step));
  }
  inputs[0] = encode_fused_program(steps);
  const TaskFunction* function = &fused_function(inputs.size() - 1);
  return {function, std::move(inputs)};
}

}  // namespace tessera

// The named-function registry: task functions are plain C++ callables registered under a name, so that
// any process that links or loads them can run a task that names them.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <typeinfo>
#include <vector>

#include "graph/codec.hpp"

namespace tessera {

// One registered function: its name, its signature as type names, and a type-erased invoker.
struct TaskFunction {
  std::string name;
  std::vector<std::string> argument_types;
  std::string result_type;
  // Whether a literal Value can be passed as argument i (checked at submission).
  std::vector<bool (*)(const Value&)> argument_accepts;
  // Runs the function; arguments are decoded, the result encoded. Throws what the function throws.
  std::function<Value(std::span<const Value>)> invoke;
  // Set for functions that run several calls better at once than one by one (a Python task function:
  // one message to its interpreter for all of them). calls[i] holds call i's arguments; the answer has one
  // outcome per call, its result or the error it failed with. Throws only when none of them could run.
  struct CallOutcome {
    Value value;
    std::string error;
    bool failed = false;
  };
  std::function<std::vector<CallOutcome>(std::span<const std::vector<Value>>)> invoke_batch;
  // Set for functions whose tasks may run on a GPU: given a task's first argument, whether that task's
  // work goes to the worker's GPU device actor instead of its compute pool.
  std::function<bool(const Value&)> runs_on_gpu;
  // Its results go back to the client whatever their size (tessera.fetch: what brings a held one back).
  bool always_delivered = false;
  // Where it was defined (an address in its module) and the version its author declared, if any; from
  // them Registry::add makes `identity` (graph/definition_identity.hpp), what a client, the scheduler and
  // each worker compare before one runs another's tasks. A stand-in for a function only the cluster has
  // carries the cluster's identity.
  const void* defined_at = nullptr;
  std::string version;
  std::string identity;

  std::size_t arity() const { return argument_types.size(); }
  std::string signature() const;
};

// What a process says of one task function it can run (Client::functions, `tessera functions`): its
// signature and its identity.
struct FunctionInfo {
  std::string name;
  std::vector<std::string> argument_types;
  std::string result_type;
  std::string identity;
};

class Registry {
 public:
  static Registry& global();

  // Registers fn under name; registering the same name twice is an error unless it is the same pointer.
  const TaskFunction& add(TaskFunction fn, std::uintptr_t identity);
  // nullptr when no function has that name.
  const TaskFunction* find(std::string_view name) const;
  // Throws SubmissionError naming the function when it is unknown.
  const TaskFunction& get(std::string_view name) const;
  // The function registered for a function pointer (nullptr if none).
  const TaskFunction* find_by_identity(std::uintptr_t identity) const;
  std::vector<std::string> names() const;
  // Every registered function, by name.
  std::vector<FunctionInfo> functions() const;

 private:
  Registry();
  struct Impl;
  std::shared_ptr<Impl> impl_;
  Impl& impl() const { return *impl_; }
};

// A stand-in for a function this process does not define but a cluster does, as the cluster describes
// it: calls by name are built against it here and run there. Literal arguments of the types Tessera's
// codecs name are checked here as a registered function's are (others where it runs); running it in
// this process throws. Kept for the process's life (operations point at it), one per identity; at most
// 4096, then SubmissionError.
const TaskFunction& cluster_function(const FunctionInfo& described);
// A stand-in whose every task fails with `reason`: what a worker runs for a function it does not define,
// or defines differently from the scheduler. Kept as above, one per reason.
const TaskFunction& failing_function(const std::string& name, std::size_t arity, const std::string& reason);

namespace detail {

template <class F>
struct callable_traits : callable_traits<decltype(&F::operator())> {};
template <class R, class... A>
struct callable_traits<R (*)(A...)> {
  using result = R;
  using arguments = std::tuple<std::remove_cvref_t<A>...>;
};
template <class R, class... A>
struct callable_traits<R(A...)> : callable_traits<R (*)(A...)> {};
template <class C, class R, class... A>
struct callable_traits<R (C::*)(A...) const> : callable_traits<R (*)(A...)> {};
template <class C, class R, class... A>
struct callable_traits<R (C::*)(A...)> : callable_traits<R (*)(A...)> {};

template <class T>
struct codec_checked {
  static_assert(HasCodec<T>,
                "a task argument or result type has no tessera::Codec: specialize tessera::Codec<T> with "
                "type_name(), encode() and decode()");
  using type = T;
};

template <class R>
std::string result_type_name() {
  if constexpr (std::is_void_v<R>) {
    return "none";
  } else {
    return Codec<typename codec_checked<std::remove_cvref_t<R>>::type>::type_name();
  }
}

template <class F, class R, class... A>
TaskFunction make_task_function(std::string name, F fn, std::tuple<A...>*) {
  TaskFunction out;
  out.name = std::move(name);
  (out.argument_types.push_back(Codec<typename codec_checked<A>::type>::type_name()), ...);
  (out.argument_accepts.push_back(&value_accepts<A>), ...);
  out.result_type = result_type_name<R>();
  out.invoke = [fn = std::move(fn), fn_name = out.name](std::span<const Value> args) -> Value {
    if (args.size() != sizeof...(A))
      throw TypeError(fn_name + " takes " + std::to_string(sizeof...(A)) + " arguments, got " +
                      std::to_string(args.size()));
    return [&]<std::size_t... I>(std::index_sequence<I...>)->Value {
      auto decode = [&]<class T>(std::size_t i, std::type_identity<T>) -> T {
        try {
          return Codec<T>::decode(args[i]);
        } catch (const TypeError& e) {
          throw TypeError(fn_name + ": argument " + std::to_string(i) + " expects " + Codec<T>::type_name() +
                          ": " + e.what());
        }
      };
      if constexpr (std::is_void_v<R>) {
        fn(decode(I, std::type_identity<A>{})...);
        return Value{};
      } else {
        return Codec<std::remove_cvref_t<R>>::encode(fn(decode(I, std::type_identity<A>{})...));
      }
    }
    (std::index_sequence_for<A...>{});
  };
  return out;
}

}  // namespace detail

// A typed handle on a registered function; what submit/map/delayed take besides plain function pointers.
template <class R, class... A>
struct TaskHandle {
  using result_type = R;
  using argument_tuple = std::tuple<A...>;
  const TaskFunction* function;
};

namespace detail {
template <class R, class Args>
struct handle_for;
template <class R, class... A>
struct handle_for<R, std::tuple<A...>> {
  using type = TaskHandle<R, A...>;
};
}  // namespace detail

// Registers a callable under a name and returns its typed handle. `version`, when given, is what tells
// its definitions apart across processes instead of the module that defines it: two processes that
// declare the same version of a function are taken to run the same one.
template <class F>
auto register_task(std::string name, F fn, std::string version = {}) {
  using traits = detail::callable_traits<std::remove_cvref_t<std::decay_t<F>>>;
  using R = std::remove_cvref_t<typename traits::result>;
  using Args = typename traits::arguments;
  std::uintptr_t identity = 0;
  if constexpr (std::is_pointer_v<std::decay_t<F>>) identity = reinterpret_cast<std::uintptr_t>(fn);
  auto fn_copy = fn;
  TaskFunction function = detail::make_task_function<std::decay_t<F>, R>(std::move(name), std::move(fn_copy),
                                                                         static_cast<Args*>(nullptr));
  // A function's code, or a callable type's typeinfo (emitted in the module that defines it).
  if constexpr (std::is_pointer_v<std::decay_t<F>>)
    function.defined_at = reinterpret_cast<const void*>(fn);
  else
    function.defined_at = &typeid(std::decay_t<F>);
  function.version = std::move(version);
  const TaskFunction& registered = Registry::global().add(std::move(function), identity);
  return typename detail::handle_for<R, Args>::type{&registered};
}

}  // namespace tessera

// Registers a free function under its own name at static-initialisation time.
#define TESSERA_TASK(fn) \
  [[maybe_unused]] static const auto tessera_task_registration_##fn = ::tessera::register_task(#fn, &fn)
// The same, with a version its author declares (see register_task).
#define TESSERA_TASK_VERSION(fn, version)                             \
  [[maybe_unused]] static const auto tessera_task_registration_##fn = \
      ::tessera::register_task(#fn, &fn, version)

// How a callable given to submit/map/delayed is resolved to its registered TaskFunction, and how its
// arguments become graph arguments (literal Values, or references to futures' tasks).
#pragma once

#include <cstdint>
#include <string>
#include <tuple>
#include <type_traits>

#include "graph/errors.hpp"
#include "graph/registry.hpp"
#include "tessera/future.hpp"

namespace tessera::detail {

// The signature behind a task callable: a registered function pointer or a TaskHandle.
template <class F>
struct task_signature;
template <class R, class... A>
struct task_signature<R (*)(A...)> {
  using result = std::remove_cvref_t<R>;
  using arguments = std::tuple<std::remove_cvref_t<A>...>;
};
template <class R, class... A>
struct task_signature<R(A...)> : task_signature<R (*)(A...)> {};
template <class R, class... A>
struct task_signature<TaskHandle<R, A...>> {
  using result = R;
  using arguments = std::tuple<A...>;
};

template <class F>
using task_result_t = typename task_signature<std::remove_cvref_t<std::decay_t<F>>>::result;
template <class F>
using task_arguments_t = typename task_signature<std::remove_cvref_t<std::decay_t<F>>>::arguments;

template <class R, class... A>
const TaskFunction& resolve(const TaskHandle<R, A...>& handle) {
  return *handle.function;
}

template <class R, class... A>
const TaskFunction& resolve(R (*fn)(A...)) {
  const TaskFunction* found = Registry::global().find_by_identity(reinterpret_cast<std::uintptr_t>(fn));
  if (!found)
    throw SubmissionError(
        "this function is not registered as a task: add TESSERA_TASK(name) after its definition, or use "
        "tessera::register_task(\"name\", fn)");
  return *found;
}

// One argument of parameter type P, given as X: a literal converted through Codec<P>, or a future.
template <class P, class X>
Arg make_arg(X&& x, std::size_t position) {
  using D = std::remove_cvref_t<X>;
  if constexpr (is_future<D>::value) {
    using U = typename D::value_type;
    static_assert(std::is_same_v<P, Value> || std::is_convertible_v<U, P>,
                  "a future passed as a task argument holds a type the parameter does not accept");
    if (!x.valid()) throw SubmissionError("argument " + std::to_string(position) + " is an empty future");
    return Arg(x.task());
  } else {
    static_assert(std::is_convertible_v<X, P> || std::is_same_v<P, Value>,
                  "a task argument's type does not convert to the parameter type");
    if constexpr (std::is_same_v<P, Value>) {
      if constexpr (std::is_same_v<D, Value>) {
        return Arg(x);
      } else {
        return Arg(to_value(x));
      }
    } else {
      return Arg(Codec<P>::encode(static_cast<P>(std::forward<X>(x))));
    }
  }
}

}  // namespace tessera::detail

// Delayed<T>: a lazy task graph. `delayed(fn)(args...)` records a call whose arguments may be values,
// other Delayed values or futures; nothing runs until client.compute() or client.persist(). Nodes are
// immutable and shared, so building on a Delayed never copies what lies below it.
#pragma once

#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "graph/value.hpp"
#include "tessera/future.hpp"
#include "tessera/task_function.hpp"

namespace tessera {

struct DelayedNode;
using DelayedNodePtr = std::shared_ptr<const DelayedNode>;

// An argument of a delayed call: a literal, another delayed call, or a future's result (whose reference
// the graph holds while it exists).
using DelayedArg = std::variant<Value, DelayedNodePtr, detail::ResultHandle>;

struct DelayedNode {
  const TaskFunction* function;
  std::vector<DelayedArg> args;
  // Long chains are torn down iteratively: recursive destruction would overflow the stack.
  ~DelayedNode();
};

template <class T>
class Delayed {
 public:
  using value_type = T;
  Delayed() = default;
  explicit Delayed(DelayedNodePtr node) : node_(std::move(node)) {}
  const DelayedNodePtr& node() const { return node_; }
  // A readable key for this node's task (as it would be named once lowered).
  std::string function_name() const { return node_->function->name; }

 private:
  DelayedNodePtr node_;
};

template <class T>
struct is_delayed : std::false_type {};
template <class T>
struct is_delayed<Delayed<T>> : std::true_type {};

namespace detail {

template <class P, class X>
DelayedArg make_delayed_arg(X&& x, std::size_t position) {
  using D = std::remove_cvref_t<X>;
  if constexpr (is_delayed<D>::value) {
    using U = typename D::value_type;
    static_assert(std::is_same_v<P, Value> || std::is_convertible_v<U, P>,
                  "a Delayed passed as an argument holds a type the parameter does not accept");
    if (!x.node()) throw SubmissionError("argument " + std::to_string(position) + " is an empty Delayed");
    return DelayedArg(x.node());
  } else if constexpr (is_future<D>::value) {
    (void)make_arg<P>(x, position);  // type checks
    return DelayedArg(x.handle());
  } else {
    return DelayedArg(std::get<Value>(make_arg<P>(std::forward<X>(x), position)));
  }
}

}  // namespace detail

// What delayed(fn) returns: calling it records a task.
template <class F>
class DelayedFunction {
 public:
  using Result = detail::task_result_t<F>;
  using Arguments = detail::task_arguments_t<F>;

  explicit DelayedFunction(const TaskFunction& fn) : function_(&fn) {}

  template <class... X>
  Delayed<Result> operator()(X&&... args) const {
    static_assert(sizeof...(X) == std::tuple_size_v<Arguments>,
                  "wrong number of arguments for this task function");
    auto node = std::shared_ptr<DelayedNode>(new DelayedNode{function_, {}});
    node->args.reserve(sizeof...(X));
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      (node->args.push_back(
           detail::make_delayed_arg<std::tuple_element_t<I, Arguments>>(std::forward<X>(args), I)),
       ...);
    }
    (std::index_sequence_for<X...>{});
    return Delayed<Result>(std::move(node));
  }

 private:
  const TaskFunction* function_;
};

template <class F>
DelayedFunction<std::decay_t<F>> delayed(F&& fn) {
  return DelayedFunction<std::decay_t<F>>(detail::resolve(fn));
}

}  // namespace tessera

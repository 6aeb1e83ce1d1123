// The elementwise functions by name, shared by the dense and sparse kernels.
#pragma once

#include <cmath>
#include <string>

#include "backends/chunk.hpp"

namespace tessera::backends {

// Calls fn with a stateless functor T(T) for the unary operation `name`.
template <class T, class F>
decltype(auto) with_unary(const std::string& name, F&& fn) {
  if (name == "exp") return fn([](T x) { return std::exp(x); });
  if (name == "log") return fn([](T x) { return std::log(x); });
  if (name == "abs") return fn([](T x) { return std::abs(x); });
  if (name == "sqrt") return fn([](T x) { return std::sqrt(x); });
  if (name == "sigmoid") return fn([](T x) { return T(1) / (T(1) + std::exp(-x)); });
  if (name == "neg") return fn([](T x) { return -x; });
  if (name == "square") return fn([](T x) { return x * x; });
  throw KernelError("unknown unary operation '" + name +
                    "' (known: exp, log, abs, sqrt, sigmoid, neg, square)");
}

// Calls fn with a stateless functor T(T, T) for the binary operation `name`; comparisons give 1 or 0.
template <class T, class F>
decltype(auto) with_binary(const std::string& name, F&& fn) {
  if (name == "add") return fn([](T a, T b) { return a + b; });
  if (name == "sub") return fn([](T a, T b) { return a - b; });
  if (name == "mul") return fn([](T a, T b) { return a * b; });
  if (name == "div") return fn([](T a, T b) { return a / b; });
  if (name == "pow") return fn([](T a, T b) { return std::pow(a, b); });
  if (name == "minimum") return fn([](T a, T b) { return std::min(a, b); });
  if (name == "maximum") return fn([](T a, T b) { return std::max(a, b); });
  if (name == "lt") return fn([](T a, T b) { return T(a < b); });
  if (name == "le") return fn([](T a, T b) { return T(a <= b); });
  if (name == "gt") return fn([](T a, T b) { return T(a > b); });
  if (name == "ge") return fn([](T a, T b) { return T(a >= b); });
  if (name == "eq") return fn([](T a, T b) { return T(a == b); });
  if (name == "ne") return fn([](T a, T b) { return T(a != b); });
  throw KernelError("unknown binary operation '" + name +
                    "' (known: add, sub, mul, div, pow, minimum, maximum, lt, le, gt, ge, eq, ne)");
}

}  // namespace tessera::backends

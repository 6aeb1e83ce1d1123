#include "backends/result_meta.hpp"

#include "backends/operations.hpp"

namespace tessera::backends {

bool keeps_zero(const std::string& name) {
  return name == "abs" || name == "sqrt" || name == "neg" || name == "square";
}

Backend result_backend(std::string_view op, const std::string& name, std::span<const Backend> inputs,
                       bool scalar_left) {
  if (inputs.empty()) return Backend::cpu;
  const Backend first = inputs.front();
  if (first != Backend::sparse) return first;
  if (op == ops::unary) return keeps_zero(name) ? Backend::sparse : Backend::cpu;
  if (op == ops::scalar)
    return (name == "mul" || (name == "div" && !scalar_left)) ? Backend::sparse : Backend::cpu;
  if (op == ops::binary) {
    const bool both_sparse = inputs.size() == 2 && inputs[1] == Backend::sparse;
    if (name == "mul") return Backend::sparse;  // zero times anything stays zero
    return both_sparse && (name == "add" || name == "sub") ? Backend::sparse : Backend::cpu;
  }
  if (op == ops::matmul) {
    for (std::size_t i = inputs.size() / 2; i < inputs.size(); ++i)
      if (inputs[i] != Backend::sparse) return Backend::cpu;
    return Backend::sparse;
  }
  if (op == ops::transpose || op == ops::assemble || op == ops::astype) return Backend::sparse;
  return Backend::cpu;  // reductions, conversions to dense
}

}  // namespace tessera::backends

#include "graph/operation.hpp"

#include <algorithm>
#include <atomic>
#include <cstdio>

#include "graph/errors.hpp"

namespace tessera {

OpId next_op_id() {
  static std::atomic<OpId> counter{1};
  return counter.fetch_add(1, std::memory_order_relaxed);
}

namespace {
// FNV-1a over the function name and the literal arguments' renderings: the same call gets the same name.
std::uint64_t mix(std::uint64_t h, std::uint64_t x) {
  h ^= x;
  return h * 1099511628211ULL;
}
}  // namespace

Operation::Operation(const TaskFunction& fn, std::uint32_t size, std::vector<Column> columns,
                     std::string name_hint, OpId id)
    : id_(id ? id : next_op_id()), fn_(&fn), size_(size), columns_(std::move(columns)) {
  if (columns_.size() != fn.arity())
    throw SubmissionError(fn.signature() + " takes " + std::to_string(fn.arity()) + " argument" +
                          (fn.arity() == 1 ? "" : "s") + ", got " + std::to_string(columns_.size()));
  std::uint64_t hash = 14695981039346656037ULL;
  for (char c : fn.name) hash = mix(hash, static_cast<unsigned char>(c));
  for (std::size_t j = 0; j < columns_.size(); ++j) {
    const Column& column = columns_[j];
    if (!column.is_broadcast() && column.size() != size_)
      throw SubmissionError(fn.name + ": argument " + std::to_string(j) + " has " +
                            std::to_string(column.size()) + " values for " + std::to_string(size_) +
                            " tasks");
    const std::uint32_t tasks = column.is_broadcast() ? std::min<std::uint32_t>(size_, 1) : size_;
    for (std::uint32_t t = 0; t < tasks; ++t) {
      if (const Value* literal = column.literal(t)) {
        if (!fn.argument_accepts[j](*literal))
          throw SubmissionError(fn.name + ": argument " + std::to_string(j) + " expects " +
                                fn.argument_types[j] + ", got " + std::string(kind_name(literal->kind())) +
                                " " + literal->to_string(40) +
                                (size_ > 1 ? " (task " + std::to_string(t) + ")" : ""));
        hash = mix(hash, literal->content_hash());
      } else {
        has_references_ = true;
        const TaskRef& ref = *column.reference(t);
        hash = mix(mix(hash, ref.op), ref.index);
      }
    }
  }
  char hex[17];
  std::snprintf(hex, sizeof hex, "%08llx", static_cast<unsigned long long>(hash & 0xffffffffULL));
  name_ = (name_hint.empty() ? fn.name : name_hint) + "-" + hex;
}

std::uint32_t Operation::reference_count(std::uint32_t task) const {
  if (!has_references_) return 0;
  std::uint32_t n = 0;
  for (const auto& column : columns_) n += column.reference(task) ? 1 : 0;
  return n;
}

Operation::Operation(const TaskFunction& fn, std::vector<std::string> keys, std::vector<Column> columns,
                     OpId id)
    : Operation(fn, static_cast<std::uint32_t>(keys.size()), std::move(columns), {}, id) {
  keys_ = std::move(keys);
}

std::string Operation::key(std::uint32_t task) const {
  if (!keys_.empty()) return keys_[task];
  return name_ + "-" + std::to_string(task);
}

}  // namespace tessera

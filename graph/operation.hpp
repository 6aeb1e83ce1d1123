// An Operation is one graph layer: one function applied to `size` tasks, whose arguments are columns of
// literal values or references to other tasks' results. Operations are immutable and shared: a new
// collection adds operations and never copies the ones below it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "graph/registry.hpp"
#include "graph/value.hpp"

namespace tessera {

using OpId = std::uint64_t;

// A reference to task `index` of operation `op`.
struct TaskRef {
  OpId op = 0;
  std::uint32_t index = 0;
  bool operator==(const TaskRef&) const = default;
};

using Arg = std::variant<Value, TaskRef>;

// One argument position across all tasks of an operation: the same argument for every task, one
// argument per task, or (the compact form a map over plain values takes) one literal value per task.
class Column {
 public:
  Column() = default;
  static Column broadcast(Arg arg) {
    Column c;
    c.broadcast_ = std::move(arg);
    return c;
  }
  static Column per_task(std::vector<Arg> args) {
    Column c;
    c.args_ = std::move(args);
    c.kind_ = Kind::args;
    return c;
  }
  static Column per_task(std::vector<Value> values) {
    Column c;
    c.values_ = std::move(values);
    c.kind_ = Kind::values;
    return c;
  }

  bool is_broadcast() const { return kind_ == Kind::broadcast; }
  // The number of per-task entries (0 for a broadcast column).
  std::size_t size() const { return kind_ == Kind::args ? args_.size() : values_.size(); }
  // The literal argument of `task`, or nullptr when it is a reference.
  const Value* literal(std::uint32_t task) const {
    if (kind_ == Kind::values) return &values_[task];
    return std::get_if<Value>(kind_ == Kind::args ? &args_[task] : &broadcast_);
  }
  // The reference argument of `task`, or nullptr when it is a literal.
  const TaskRef* reference(std::uint32_t task) const {
    if (kind_ == Kind::values) return nullptr;
    return std::get_if<TaskRef>(kind_ == Kind::args ? &args_[task] : &broadcast_);
  }

 private:
  enum class Kind : std::uint8_t { broadcast, args, values };
  Kind kind_ = Kind::broadcast;
  Arg broadcast_;
  std::vector<Arg> args_;
  std::vector<Value> values_;
};

class Operation {
 public:
  // Validates arity and literal argument types; throws SubmissionError naming the function and argument.
  // `id` 0 takes a fresh id; lowering passes ids reserved with next_op_id() so layers can refer to each
  // other.
  Operation(const TaskFunction& fn, std::uint32_t size, std::vector<Column> columns,
            std::string name_hint = {}, OpId id = 0);
  // The same, with user-chosen task keys (one per task), as in a graph given as a key -> task dictionary.
  Operation(const TaskFunction& fn, std::vector<std::string> keys, std::vector<Column> columns, OpId id = 0);

  OpId id() const { return id_; }
  const TaskFunction& function() const { return *fn_; }
  std::uint32_t size() const { return size_; }
  const std::vector<Column>& columns() const { return columns_; }
  bool has_references() const { return has_references_; }
  // The number of reference arguments of one task.
  std::uint32_t reference_count(std::uint32_t task) const;
  // A readable, content-derived key for one task, e.g. "costly_simulation-3fa2c1d0-17".
  std::string key(std::uint32_t task) const;
  const std::string& name() const { return name_; }
  // Whether the user named every task (a dictionary graph).
  bool has_keys() const { return !keys_.empty(); }

 private:
  OpId id_;
  const TaskFunction* fn_;
  std::uint32_t size_;
  std::vector<Column> columns_;
  bool has_references_ = false;
  std::string name_;
  std::vector<std::string> keys_;
};

using OperationPtr = std::shared_ptr<const Operation>;

// A new process-unique operation id.
OpId next_op_id();

}  // namespace tessera

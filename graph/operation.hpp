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

// One argument position across all tasks of an operation: either the same argument for every task,
// or one argument per task.
struct Column {
  std::vector<Arg> per_task;  // empty when `broadcast` applies
  Arg broadcast;
  bool is_broadcast() const { return per_task.empty(); }
  const Arg& at(std::uint32_t task) const { return per_task.empty() ? broadcast : per_task[task]; }
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
  const Arg& arg(std::uint32_t task, std::size_t column) const { return columns_[column].at(task); }
  bool has_references() const { return has_references_; }
  // The number of reference arguments of one task.
  std::uint32_t reference_count(std::uint32_t task) const;
  // A readable, content-derived key for one task, e.g. "costly_simulation-3fa2c1d0-17".
  std::string key(std::uint32_t task) const;
  const std::string& name() const { return name_; }

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

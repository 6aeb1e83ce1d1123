// GraphSpec: a task graph given as a dictionary key -> (function name, arguments), as in Dask's
// low-level graphs. Arguments are literal values or the keys of other tasks.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

#include "graph/operation.hpp"

namespace tessera {

// A reference to another task of the same GraphSpec by its key.
struct Key {
  std::string name;
};

using SpecArg = std::variant<Value, Key>;

struct TaskSpec {
  std::string function;
  std::vector<SpecArg> args;
};

class GraphSpec {
 public:
  // Adds or replaces the task under `key`.
  GraphSpec& add(std::string key, std::string function, std::vector<SpecArg> args);
  std::size_t size() const { return tasks_.size(); }
  const std::map<std::string, TaskSpec>& tasks() const { return tasks_; }

 private:
  std::map<std::string, TaskSpec> tasks_;
};

// The operations of a GraphSpec (one per function name) and where each key went.
struct LoweredGraph {
  std::vector<OperationPtr> operations;
  std::unordered_map<std::string, TaskRef> refs;
};

// How a task's function name becomes its function: the registry of this process by default; a client
// also asks its cluster (Client::function_named). Null, or a SubmissionError, for an unknown name.
using FunctionResolver = std::function<const TaskFunction*(const std::string& name)>;

// Validates and lowers a GraphSpec. Throws SubmissionError naming the key for an unknown function, a wrong
// argument count or type, a missing dependency, or a cycle (naming the keys on it).
LoweredGraph lower(const GraphSpec& spec, const FunctionResolver& resolve = {});

}  // namespace tessera

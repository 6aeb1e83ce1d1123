// The interpreter processes that run one module set's Python task functions on a worker: started when a
// task needs one and none is free, then kept and reused, so there are as many as there were tasks running
// at once (a worker runs one task per compute thread). Each runs one task at a time, so Python tasks run
// in parallel without sharing a GIL, and a task that crashes its interpreter (a segfault in a C
// extension) fails that task only: the next task gets a fresh process.
#pragma once

#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "graph/registry.hpp"
#include "graph/simulation.hpp"
#include "graph/value.hpp"

namespace tessera {

class SimulationProcess;

class PythonTaskPool {
 public:
  explicit PythonTaskPool(std::shared_ptr<const PythonEnvironment> environment);
  ~PythonTaskPool();
  // Runs `function` (a task name of the modules) in an interpreter; throws its error: the Python
  // exception's type, message and traceback, or how its process died.
  Value call(const std::string& function, std::span<const Value> arguments);
  // Several calls of `function` in one job: one frame to the interpreter and one back (per 20 ms of
  // work). A call its process crashed on fails; the calls after it run again in a fresh process.
  std::vector<TaskFunction::CallOutcome> call_batch(const std::string& function,
                                                    std::span<const std::vector<Value>> calls);
  // Interpreter processes started so far (replacements included).
  std::size_t started() const;

 private:
  std::unique_ptr<SimulationProcess> take();
  void give_back(std::unique_ptr<SimulationProcess> process);

  SimulationType type_;  // the modules' task dispatcher, run as a simulation of one set per task
  std::shared_ptr<const Config> config_;
  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<SimulationProcess>> idle_;
  std::size_t started_ = 0;
};

}  // namespace tessera

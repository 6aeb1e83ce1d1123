#include "actors/python_task_pool.hpp"

#include <stdexcept>

#include "actors/simulation_process.hpp"

namespace tessera {

PythonTaskPool::PythonTaskPool(std::shared_ptr<const PythonEnvironment> environment)
    : config_(std::make_shared<const Config>()) {
  auto definition = std::make_shared<PythonDefinition>();
  definition->environment = std::move(environment);
  definition->tasks = true;
  type_.name = "python tasks";
  type_.python = std::move(definition);
}

PythonTaskPool::~PythonTaskPool() = default;

Value PythonTaskPool::call(const std::string& function, std::span<const Value> arguments) {
  std::unique_ptr<SimulationProcess> process;
  {
    std::lock_guard lock(mutex_);
    while (!idle_.empty() && !process) {
      process = std::move(idle_.back());
      idle_.pop_back();
      // A process whose forking thread ended died with it (PR_SET_PDEATHSIG): it is replaced at its run.
      process->reap_if_ended();
    }
    if (!process) {
      process = std::make_unique<SimulationProcess>(type_, config_, "");
      ++started_;
    }
  }
  Value::List job;
  job.reserve(arguments.size() + 1);
  job.emplace_back(function);
  job.insert(job.end(), arguments.begin(), arguments.end());
  SimulationProcess::JobResult result = process->run({0}, {Value(std::move(job))}, {0.0});
  {
    std::lock_guard lock(mutex_);
    idle_.push_back(std::move(process));
  }
  if (result.records.empty())
    throw std::runtime_error("python task '" + function +
                             "': its interpreter process was stopped before it ran");
  StreamRecord& record = result.records.front();
  if (!record.failed) return std::move(record.value);
  if (record.failure == Failure::error) throw std::runtime_error(record.error);
  throw std::runtime_error("python task '" + function + "': " + record.error);
}

std::size_t PythonTaskPool::started() const {
  std::lock_guard lock(mutex_);
  return started_;
}

}  // namespace tessera

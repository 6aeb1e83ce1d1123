#include "actors/python_task_pool.hpp"

#include <stdexcept>

#include "actors/simulation_process.hpp"

namespace tessera {

PythonTaskPool::PythonTaskPool(std::shared_ptr<const PythonEnvironment> environment)
    : config_(std::make_shared<const Config>()) {
  auto definition = std::make_shared<PythonDefinition>();
  definition->environment = std::move(environment);
  definition->kind = PythonDefinition::Kind::tasks;
  type_.name = "python tasks";
  type_.python = std::move(definition);
}

PythonTaskPool::~PythonTaskPool() = default;

std::unique_ptr<SimulationProcess> PythonTaskPool::take() {
  std::lock_guard lock(mutex_);
  if (!idle_.empty()) {
    auto process = std::move(idle_.back());
    idle_.pop_back();
    // A process whose forking thread ended died with it (PR_SET_PDEATHSIG): it is replaced at its run.
    process->reap_if_ended();
    return process;
  }
  ++started_;
  return std::make_unique<SimulationProcess>(type_, config_, "");
}

void PythonTaskPool::give_back(std::unique_ptr<SimulationProcess> process) {
  std::lock_guard lock(mutex_);
  idle_.push_back(std::move(process));
}

Value PythonTaskPool::call(const std::string& function, std::span<const Value> arguments) {
  const std::vector<Value> one(arguments.begin(), arguments.end());
  auto outcome = call_batch(function, std::span<const std::vector<Value>>(&one, 1));
  if (outcome.front().failed) throw std::runtime_error(outcome.front().error);
  return std::move(outcome.front().value);
}

std::vector<TaskFunction::CallOutcome> PythonTaskPool::call_batch(const std::string& function,
                                                                  std::span<const std::vector<Value>> calls) {
  std::vector<TaskFunction::CallOutcome> outcomes(calls.size());
  std::vector<std::uint64_t> pending(calls.size());
  for (std::size_t i = 0; i < calls.size(); ++i) pending[i] = i;
  auto process = take();
  while (!pending.empty()) {
    std::vector<Value> jobs;
    jobs.reserve(pending.size());
    for (const auto i : pending) {
      Value::List job;
      job.reserve(calls[i].size() + 1);
      job.emplace_back(function);
      job.insert(job.end(), calls[i].begin(), calls[i].end());
      jobs.emplace_back(std::move(job));
    }
    SimulationProcess::JobResult result;
    try {
      result = process->run(pending, jobs, std::vector<double>(pending.size(), 0.0));
    } catch (...) {
      give_back(std::move(process));
      throw;
    }
    if (result.records.empty()) {  // stopped from outside before it ran any: nothing to show for it
      give_back(std::move(process));
      throw std::runtime_error("python task '" + function +
                               "': its interpreter process was stopped before it ran");
    }
    for (auto& record : result.records) {
      auto& outcome = outcomes[record.id];
      if (!record.failed) {
        outcome.value = std::move(record.value);
      } else {
        outcome.failed = true;
        outcome.error = record.failure == Failure::error ? std::move(record.error)
                                                         : "python task '" + function + "': " + record.error;
      }
    }
    pending = std::move(result.unrun);  // after a crash: again, in the fresh process the next run starts
  }
  give_back(std::move(process));
  return outcomes;
}

std::size_t PythonTaskPool::started() const {
  std::lock_guard lock(mutex_);
  return started_;
}

}  // namespace tessera

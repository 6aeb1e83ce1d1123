// A generator written in Python (@tessera.generator, gest-api: suggest(n), ingest(results), finalize()),
// run in an interpreter process of its own beside its stream: each ask, tell, save and load is one request
// to it (a job of one set, over the process-isolation protocol), so a crash or a hang in the generator
// fails that request and ends the ensemble naming it, never the scheduler. Its state is the instance
// pickled (with the ids it handed out), so the durable scheduler checkpoints and resumes it as a C++ one.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "graph/generator.hpp"

namespace tessera {

class SimulationProcess;

class PythonGenerator final : public Generator {
 public:
  // `type` (a SimulationType whose python->kind is generator) outlives it.
  PythonGenerator(const SimulationType& type, const Config& config);
  ~PythonGenerator() override;  // asks the instance to finalize, for at most a few seconds
  std::vector<Value> ask(std::size_t n) override;
  void tell(std::uint64_t id, const Value& parameters, const Value* result,
            const std::string& error) override;
  bool done() const override;
  bool can_save() const override { return true; }
  std::string save() const override;
  void load(const std::string& state) override;

 private:
  Value request(Value call, double timeout_seconds = 0) const;

  const SimulationType& type_;
  std::unique_ptr<SimulationProcess> process_;
};

}  // namespace tessera

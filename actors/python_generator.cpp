#include "actors/python_generator.hpp"

#include <stdexcept>

#include "actors/simulation_process.hpp"

namespace tessera {

PythonGenerator::PythonGenerator(const SimulationType& type, const Config& config)
    : type_(type),
      process_(std::make_unique<SimulationProcess>(type, std::make_shared<const Config>(config), "")) {}

PythonGenerator::~PythonGenerator() {
  if (process_->started() == 0) return;  // never asked anything: nothing to finalize
  try {
    request(Value(Value::List{Value("finalize")}), 5.0);
  } catch (const std::exception&) {
    // Finalizing is a courtesy to the generator (closing its files): its failure changes no result.
  }
}

Value PythonGenerator::request(Value call, double timeout_seconds) const {
  auto result = process_->run({0}, {std::move(call)}, {timeout_seconds});
  if (result.records.empty())
    throw std::runtime_error("generator '" + type_.name + "': its interpreter process was stopped");
  StreamRecord& record = result.records.front();
  if (!record.failed) return std::move(record.value);
  if (record.failure == Failure::error) throw std::runtime_error(record.error);
  throw std::runtime_error("generator '" + type_.name + "': " + record.error);
}

std::vector<Value> PythonGenerator::ask(std::size_t n) {
  Value points = request(Value(Value::List{Value("suggest"), Value(static_cast<std::int64_t>(n))}));
  if (points.kind() != ValueKind::list)
    throw std::runtime_error("generator '" + type_.name + "': suggest gave a " +
                             std::string(kind_name(points.kind())) + ", not a list of points");
  return points.as_list();
}

void PythonGenerator::tell(std::uint64_t id, const Value& parameters, const Value* result,
                           const std::string& error) {
  request(Value(Value::List{Value("ingest"), Value(static_cast<std::int64_t>(id)), parameters,
                            result ? *result : Value(), Value(error), Value(result != nullptr)}));
}

bool PythonGenerator::done() const {
  const Value answer = request(Value(Value::List{Value("done")}));
  return answer.kind() == ValueKind::boolean && answer.as_bool();
}

std::string PythonGenerator::save() const {
  const Value state = request(Value(Value::List{Value("save")}));
  if (state.kind() != ValueKind::bytes)
    throw std::runtime_error("generator '" + type_.name + "': its state is not bytes");
  const auto& bytes = state.as_bytes().data;
  return std::string(bytes.begin(), bytes.end());
}

void PythonGenerator::load(const std::string& state) {
  request(
      Value(Value::List{Value("load"), Value(Bytes{std::vector<std::uint8_t>(state.begin(), state.end())})}));
}

}  // namespace tessera

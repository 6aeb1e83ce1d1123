#include "tessera/programs.hpp"

#include <memory>

#include "programs/program_simulation.hpp"

namespace tessera {

const SimulationType& register_program(std::string name, ProgramSpec spec) {
  if (name.empty()) throw SubmissionError("register_program: a program simulation needs a name");
  if (const auto problems = check_program_spec(spec); !problems.empty()) {
    std::string message = "program simulation '" + name + "': ";
    for (std::size_t i = 0; i < problems.size(); ++i) message += (i ? "; " : "") + problems[i];
    throw SubmissionError(message);
  }
  return SimulationRegistry::global().add(programs::program_simulation_type(
      std::move(name), std::make_shared<const ProgramSpec>(std::move(spec))));
}

}  // namespace tessera

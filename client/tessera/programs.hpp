// Programs as simulations, declared in code: what a node's [simulations.NAME] table declares, for an
// embedded LocalCluster (and for a scheduler node's own program). Clients then stream parameter sets to
// the name like any simulation's.
//
//   tessera::ProgramSpec heat;
//   heat.command = {"heat2d", "--alpha", "{alpha}", "--out", "{dir}/out.log"};
//   heat.parameters = {"alpha"};
//   heat.result = {.format = tessera::ProgramResultFormat::regex, .file = "out.log",
//                  .regex = "final energy (\\S+)", .outputs = {"energy"}};
//   tessera::register_program("heat", heat);
#pragma once

#include <string>

#include "graph/program_spec.hpp"
#include "graph/simulation.hpp"

namespace tessera {

// Checks the declaration (every problem named, SubmissionError) and registers it under `name`. A name
// is declared once per process: the same spec again is harmless, another is a SubmissionError.
const SimulationType& register_program(std::string name, ProgramSpec spec);

}  // namespace tessera

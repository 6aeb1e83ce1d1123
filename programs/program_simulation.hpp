// A program as a simulation: each parameter set renders the declaration's templates into a fresh working
// directory, runs the (launched) command there, and reads its result (programs/program_result.hpp). A
// run can be interrupted from another thread, which ends the set's whole process tree.
//
// What an instance reads from its Config, besides the stream's own keys for {config.KEY}:
//   "tessera.runs_dir"  where sets' directories go when the spec names no workdir_root (a string)
//   "tessera.devices"   the GPU ordinals this instance owns (CUDA_VISIBLE_DEVICES)
#pragma once

#include <memory>
#include <string>

#include "graph/program_spec.hpp"
#include "graph/simulation.hpp"

namespace tessera::programs {

// The type a registry holds for program `name`: arity, cores (ranks x threads) and devices per set from
// the spec, and instances that run it. The spec must have passed check_program_spec.
SimulationType program_simulation_type(std::string name, std::shared_ptr<const ProgramSpec> spec);

// "command[0] 'heat2d' is not found on PATH" (or the launcher's), when the executable a set would start is
// missing or not executable here; empty when it is found. Placeholders in it are not looked into.
std::string missing_executable(const ProgramSpec& spec);

// Where a worker puts sets' directories when neither the spec nor its data_dir says: a directory made for
// this process under the temporary directory (mkdtemp: a fresh name, mode 0700).
std::string default_runs_dir();

}  // namespace tessera::programs

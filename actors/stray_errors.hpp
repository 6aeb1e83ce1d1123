// CAF 0.17 ends an actor on any error message it is sent, by default: the "unexpected message" error that
// answers a plain send its receiver could not handle, or a stray error from anywhere. The long-lived
// actors log such a message (the first ten, then one in a thousand) and go on. An allocation that fails in
// one of their handlers ends the process with a clear line (actors/out_of_memory.hpp): an actor that died
// of it would leave everything waiting on it waiting for ever.
#pragma once

#include <caf/scheduled_actor.hpp>

#include <string>

namespace tessera {

// Installs the error and exception handlers on `self`; `who` names the actor in the log ("scheduler",
// "stream 7").
void survive_stray_errors(caf::scheduled_actor* self, std::string who);

}  // namespace tessera

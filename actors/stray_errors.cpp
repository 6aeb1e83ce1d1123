#include "actors/stray_errors.hpp"

#include <caf/actor_system.hpp>
#include <caf/error.hpp>

#include <iostream>
#include <memory>

namespace tessera {

void survive_stray_errors(caf::scheduled_actor* self, std::string who) {
  auto seen = std::make_shared<std::uint64_t>(0);
  self->set_error_handler([who = std::move(who), seen](caf::scheduled_actor* actor, caf::error& error) {
    const std::uint64_t count = ++*seen;
    if (count > 10 && count % 1000 != 0) return;
    std::cerr << "[tessera] " << who << ": ignored an error message (" << actor->home_system().render(error)
              << ")" << (count > 10 ? "; " + std::to_string(count) + " so far" : std::string()) << std::endl;
  });
}

}  // namespace tessera

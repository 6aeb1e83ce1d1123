#include "actors/stray_errors.hpp"

#include <caf/actor_system.hpp>
#include <caf/error.hpp>
#include <caf/sec.hpp>

#include "actors/out_of_memory.hpp"

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
  self->set_exception_handler(
      [where = "the " + who + " actor"](caf::scheduled_actor*, std::exception_ptr& thrown) -> caf::error {
        try {
          std::rethrow_exception(thrown);
        } catch (const std::bad_alloc&) {
          exit_out_of_memory(where.c_str());
        } catch (const std::exception& e) {
          std::cerr << "[tessera] " << where << " failed: " << e.what() << std::endl;
          return caf::make_error(caf::sec::runtime_error, e.what());
        } catch (...) {
          std::cerr << "[tessera] " << where << " failed: an unknown exception" << std::endl;
        }
        return caf::make_error(caf::sec::runtime_error, "unknown exception");
      });
}

}  // namespace tessera

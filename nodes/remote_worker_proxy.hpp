// The stand-in, inside the scheduler's process, for a worker in another process: the scheduler sends it
// the same messages it sends a worker actor of its own process, and it encodes them as Cap'n Proto and
// sends them over the worker's connection. Each operation's definition goes to a worker once.
#pragma once

#include <caf/all.hpp>
#include <functional>
#include <memory>
#include <string>

#include "nodes/transport.hpp"

namespace tessera {

// `ended` runs (on an actor thread) once the proxy has sent its worker SHUTDOWN.
caf::actor spawn_remote_worker_proxy(caf::actor_system& system, std::weak_ptr<transport::Server> server,
                                     std::string peer_id, std::function<void(const std::string&)> ended);

}  // namespace tessera

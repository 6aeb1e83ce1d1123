#include "actors/actor_threads.hpp"

#include <chrono>

namespace tessera {

void configure_actor_threads(caf::actor_system_config& config, std::size_t threads, IdleThreads idle) {
  config.set("scheduler.max-threads", threads);
  if (idle == IdleThreads::wait) {
    // After its brief spin a thread blocks on its condition variable, which a message from outside the
    // pool (ZeroMQ, a compute thread, the client) signals; CAF's stock policy first sleeps 50 us between
    // polls 500 times, and such a message then waits out the sleep (128 us at the median here, with the
    // kernel's timer slack). Blocked threads still look for work to steal every millisecond.
    config.set("work-stealing.moderate-poll-attempts", std::size_t{0});
    config.set("work-stealing.relaxed-sleep-duration", caf::timespan{std::chrono::milliseconds(1)});
  }
}

}  // namespace tessera

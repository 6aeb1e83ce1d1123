// SchedulerGateway: serves remote clients for a scheduler actor in this process. Their submissions,
// releases and cancellations become the scheduler's own messages; the results they want go back over the
// connection. Each client's operation ids get numbers of this process, so clients never collide.
#pragma once

#include <caf/all.hpp>
#include <memory>
#include <string>

#include "actors/result_sink.hpp"
#include "nodes/transport.hpp"

namespace tessera {

class SchedulerGateway {
 public:
  SchedulerGateway(caf::actor scheduler, std::weak_ptr<const SchedulerLink> link,
                   transport::ServerOptions options);
  ~SchedulerGateway();
  SchedulerGateway(const SchedulerGateway&) = delete;
  SchedulerGateway& operator=(const SchedulerGateway&) = delete;

  const std::string& endpoint() const;
  std::uint64_t dropped() const;

 private:
  struct State;
  std::shared_ptr<State> state_;
  std::shared_ptr<transport::Server> server_;
};

}  // namespace tessera

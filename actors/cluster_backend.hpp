// ClusterBackend: where a client's work goes — a scheduler actor in this process, or a scheduler reached
// over the network (nodes/remote_backend). The client API is the same for both.
#pragma once

#include <caf/all.hpp>
#include <memory>
#include <vector>

#include "actors/messages.hpp"
#include "actors/result_sink.hpp"

namespace tessera {

class ClusterBackend {
 public:
  virtual ~ClusterBackend() = default;
  // Sends operations to run; the returned sink receives the results of the watched tasks.
  virtual std::shared_ptr<ResultSink> submit(std::vector<OperationPtr> operations, std::vector<Watch> watches,
                                             std::uint32_t slots) = 0;
  virtual void cancel(std::vector<TaskRef> tasks) = 0;
};

// The scheduler actor of this process.
class LocalBackend final : public ClusterBackend {
 public:
  LocalBackend(caf::actor scheduler, std::weak_ptr<const SchedulerLink> link)
      : scheduler_(std::move(scheduler)), link_(std::move(link)) {}
  std::shared_ptr<ResultSink> submit(std::vector<OperationPtr> operations, std::vector<Watch> watches,
                                     std::uint32_t slots) override {
    auto sink = std::make_shared<ResultSink>(slots, link_, watches);
    caf::anon_send(scheduler_, submit_atom::value,
                   Submission{std::move(operations), std::move(watches), sink});
    return sink;
  }
  void cancel(std::vector<TaskRef> tasks) override {
    caf::anon_send(scheduler_, cancel_atom::value, CancelRequest{std::move(tasks)});
  }

 private:
  caf::actor scheduler_;
  std::weak_ptr<const SchedulerLink> link_;
};

}  // namespace tessera

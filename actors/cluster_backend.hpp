// ClusterBackend: where a client's work goes — a scheduler actor in this process, or a scheduler reached
// over the network (nodes/remote_backend). The client API is the same for both.
#pragma once

#include <caf/all.hpp>
#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>

#include <stdexcept>

#include "actors/glm/messages.hpp"
#include "actors/messages.hpp"
#include "actors/result_sink.hpp"
#include "actors/stream_actor.hpp"
#include "graph/fetch_task.hpp"
#include "scheduling/cluster_status.hpp"
#include "storage/checkpoint_store.hpp"
#include "storage/result_source.hpp"

namespace tessera {

class ClusterBackend : public std::enable_shared_from_this<ClusterBackend> {
 public:
  virtual ~ClusterBackend() = default;
  // Sends operations to run; the returned sink receives the results of the watched tasks. With
  // `checkpoint`, those results are also stored as checkpoints (Submission::checkpoint).
  virtual std::shared_ptr<ResultSink> submit(std::vector<OperationPtr> operations, std::vector<Watch> watches,
                                             std::uint32_t slots, bool checkpoint = false) = 0;
  // The checkpoints the scheduler node stores, and dropping them (see Client::checkpoints).
  virtual std::vector<CheckpointInfo> checkpoints(const std::string& function, std::size_t limit) = 0;
  virtual std::uint64_t drop_checkpoints(const CheckpointSelection& selection) = 0;
  virtual void cancel(std::vector<TaskRef> tasks) = 0;
  // Whether the cluster may hold checkpoints a submission's tasks could be read from. Graphs are not
  // fused then, so that each task keeps the key its checkpoint is stored under.
  virtual bool may_hold_checkpoints() = 0;

  // Streams of parameter sets: opens one (the simulation's name is checked first; an unknown one is a
  // SubmissionError), returning its id and the simulation's arity when it declares one.
  struct OpenedStream {
    std::uint64_t id = 0;
    std::optional<std::size_t> arity{};
    // A program simulation's declaration, when known here: pushes are checked against it (finite numbers).
    std::shared_ptr<const ProgramSpec> program{};
    std::uint64_t resume_from = 0;    // a resumed stream: the ids it accepted before; pushes go on from here
    std::string simulation{};         // a resumed stream's
    std::uint64_t max_in_flight = 0;  // a resumed stream's own (its sink took it over)
  };
  virtual OpenedStream open_stream(const StreamSettings& settings, std::shared_ptr<StreamSink> sink) = 0;
  // Resumes stream `id`, incomplete (closed before its input ended, or its client lost), given the same
  // input (else a SubmissionError naming why not): its results go to `sink` now, and pushes go on from
  // OpenedStream::resume_from.
  virtual OpenedStream resume_stream(std::uint64_t id, const StreamInput& input,
                                     std::shared_ptr<StreamSink> sink) = 0;
  virtual void push(std::uint64_t stream, StreamBatch batch) = 0;
  virtual void close(std::uint64_t stream) = 0;
  // Cancels accepted, unanswered sets of a running stream (StreamCancel's selection) and waits for the
  // answer, at most kCancelDeadline. A stream that is not running, or a bad filter, is a
  // std::invalid_argument naming it.
  // `whole`: the stream itself (ranges and where empty): every accepted set, and its pusher is stopped.
  virtual CancelledSets cancel_sets(std::uint64_t stream, std::vector<IdRange> ranges, std::string where,
                                    bool whole) = 0;
  static constexpr std::chrono::seconds kCancelDeadline{60};
  // Where queries over stream results are answered.
  virtual std::shared_ptr<ResultSource> results() = 0;
  // Runs a GLM fit and waits for its answer (an error in it when the fit failed).
  virtual GlmFitted fit_glm(GlmFitRequest request) = 0;
  // What the cluster can run, as its scheduler has it registered: task functions (what calls by name
  // are checked against) and the simulations streams may name.
  virtual std::vector<FunctionInfo> functions() = 0;
  virtual std::vector<SimulationInfo> simulations() = 0;
  // What the scheduler is doing, and its workers (Client::status and Client::workers).
  virtual ClusterStatus status() = 0;
  virtual std::vector<WorkerInfo> workers() = 0;

  // Brings a result held on its worker back: runs tessera.fetch on it (where it is) and waits.
  Value fetch(TaskRef held) {
    auto op = std::make_shared<const Operation>(fetch_function(), 1,
                                                std::vector<Column>{Column::broadcast(held)}, "fetch");
    const OpId id = op->id();
    auto sink = submit({std::move(op)}, {Watch{id, 0, 1, 0}}, 1);
    struct Release {
      ResultSink& sink;
      ~Release() { sink.release(0); }
    } release{*sink};
    return sink->result(0);
  }

 protected:
  // What a sink of this backend fetches held values with.
  ResultSink::Fetcher fetcher() {
    return [backend = weak_from_this()](TaskRef held) -> Value {
      auto self = backend.lock();
      if (!self) throw std::runtime_error("the cluster connection that held this result is gone");
      return self->fetch(held);
    };
  }
};

// The scheduler actor of this process.
// A stream a client resumed (EmbeddedCluster::reopen_stream): its actor, the ids it had accepted, and
// its simulation.
struct ReopenedStream {
  caf::actor actor;
  std::uint64_t resume_from = 0;
  std::string simulation;
  std::vector<std::uint64_t> unanswered{};  // accepted, not answered: the client's sink took them over
  std::uint64_t max_in_flight = 0;          // the stream's own
};

class LocalBackend final : public ClusterBackend {
 public:
  // `streams` opens a stream on the cluster; null when the cluster has none.
  using StreamOpener =
      std::function<std::pair<std::uint64_t, caf::actor>(const StreamSettings&, std::shared_ptr<StreamSink>)>;
  // The actor of a running stream, whoever opened it (null when none runs).
  using StreamFinder = std::function<caf::actor(std::uint64_t)>;
  using StreamReopener =
      std::function<ReopenedStream(std::uint64_t, const StreamInput&, std::shared_ptr<StreamSink>)>;
  LocalBackend(caf::actor scheduler, std::weak_ptr<const SchedulerLink> link, StreamOpener open_stream = {},
               std::function<std::shared_ptr<ResultStore>()> store = {},
               std::function<std::shared_ptr<CheckpointStore>()> checkpoints = {},
               StreamFinder find_stream = {}, std::function<bool()> holds_checkpoints = {},
               StreamReopener reopen_stream = {})
      : scheduler_(std::move(scheduler)),
        link_(std::move(link)),
        open_stream_(std::move(open_stream)),
        store_(std::move(store)),
        checkpoints_(std::move(checkpoints)),
        find_stream_(std::move(find_stream)),
        holds_checkpoints_(std::move(holds_checkpoints)),
        reopen_stream_(std::move(reopen_stream)) {}
  std::shared_ptr<ResultSink> submit(std::vector<OperationPtr> operations, std::vector<Watch> watches,
                                     std::uint32_t slots, bool checkpoint = false) override {
    auto sink = std::make_shared<ResultSink>(slots, link_, watches);
    sink->set_fetcher(fetcher());
    caf::anon_send(scheduler_, submit_atom::value,
                   Submission{std::move(operations), std::move(watches), sink, checkpoint});
    return sink;
  }
  std::vector<CheckpointInfo> checkpoints(const std::string& function, std::size_t limit) override {
    return checkpoint_store().list(function, {}, limit);
  }
  std::uint64_t drop_checkpoints(const CheckpointSelection& selection) override {
    return checkpoint_store().drop(selection);
  }
  void cancel(std::vector<TaskRef> tasks) override {
    caf::anon_send(scheduler_, cancel_atom::value, CancelRequest{std::move(tasks)});
  }
  bool may_hold_checkpoints() override { return holds_checkpoints_ && holds_checkpoints_(); }
  std::vector<FunctionInfo> functions() override { return Registry::global().functions(); }
  ClusterStatus status() override {
    return ClusterStatus{"local", 0, ask<SchedulerStatus>(status_atom::value, "status")};
  }
  std::vector<WorkerInfo> workers() override {
    return ask<std::vector<WorkerInfo>>(workers_atom::value, "workers");
  }
  std::vector<SimulationInfo> simulations() override {
    std::vector<SimulationInfo> out;
    const auto& registry = SimulationRegistry::global();
    for (const auto& name : registry.names()) out.push_back(describe(registry.get(name)));
    return out;
  }
  OpenedStream open_stream(const StreamSettings& settings, std::shared_ptr<StreamSink> sink) override {
    if (!open_stream_) throw std::logic_error("this cluster runs no streams");
    const auto& type = SimulationRegistry::global().get(settings.simulation);
    auto [id, actor] = open_stream_(settings, std::move(sink));
    std::lock_guard lock(streams_mutex_);
    streams_[id] = actor;
    return OpenedStream{id, type.arity, type.program};
  }
  OpenedStream resume_stream(std::uint64_t id, const StreamInput& input,
                             std::shared_ptr<StreamSink> sink) override {
    if (!reopen_stream_) throw std::logic_error("this cluster runs no streams");
    auto reopened = reopen_stream_(id, input, std::move(sink));
    const auto& type = SimulationRegistry::global().get(reopened.simulation);
    std::lock_guard lock(streams_mutex_);
    streams_[id] = reopened.actor;
    return OpenedStream{
        id, type.arity, type.program, reopened.resume_from, reopened.simulation, reopened.max_in_flight};
  }
  void push(std::uint64_t stream, StreamBatch batch) override {
    caf::anon_send(stream_actor(stream), stream_push_atom::value, std::move(batch));
  }
  void close(std::uint64_t stream) override {
    caf::anon_send(stream_actor(stream), stream_close_atom::value);
    std::lock_guard lock(streams_mutex_);
    streams_.erase(stream);
  }
  CancelledSets cancel_sets(std::uint64_t stream, std::vector<IdRange> ranges, std::string where,
                            bool whole) override {
    caf::actor actor = find_stream_ ? find_stream_(stream) : caf::actor{};
    if (!actor) {
      std::lock_guard lock(streams_mutex_);
      if (auto it = streams_.find(stream); it != streams_.end()) actor = it->second;
    }
    if (!actor)
      throw std::invalid_argument("stream " + std::to_string(stream) +
                                  " is not running here (it finished, or there is no such stream): "
                                  "nothing to cancel");
    using Answer = std::pair<CancelledSets, std::string>;
    auto promise = std::make_shared<std::promise<Answer>>();
    auto answer = promise->get_future();
    caf::anon_send(
        actor, stream_cancel_atom::value,
        StreamCancel{std::move(ranges), std::move(where),
                     std::make_shared<CancelReply>([promise](CancelledSets counts, std::string error) {
                       promise->set_value(Answer{counts, std::move(error)});
                     }),
                     whole});
    if (answer.wait_for(kCancelDeadline) != std::future_status::ready)
      throw std::runtime_error("stream " + std::to_string(stream) + " did not answer a cancellation within " +
                               std::to_string(kCancelDeadline.count()) + " s");
    auto [counts, error] = answer.get();
    if (!error.empty()) throw std::invalid_argument(error);
    return counts;
  }
  GlmFitted fit_glm(GlmFitRequest request) override {
    auto promise = std::make_shared<std::promise<GlmFitted>>();
    auto answer = promise->get_future();
    auto reply = std::make_shared<GlmReply>(
        GlmReply{[promise](GlmFitted result) { promise->set_value(std::move(result)); }});
    caf::anon_send(scheduler_, glm_fit_atom::value, std::move(request), reply);
    return answer.get();
  }
  std::shared_ptr<ResultSource> results() override {
    if (!store_) throw std::logic_error("this cluster has no result store");
    return std::make_shared<LocalResultSource>(store_());
  }

 private:
  // Asks the scheduler actor and waits, at most 10 s (it answers at once unless it is stuck).
  template <class Answer, class Atom>
  Answer ask(Atom atom, const char* what) {
    caf::scoped_actor self{scheduler_->home_system()};
    Answer out{};
    self->request(scheduler_, std::chrono::seconds(10), atom)
        .receive([&](const Answer& answer) { out = answer; },
                 [&](const caf::error& e) {
                   throw std::runtime_error(std::string("the scheduler did not answer a ") + what +
                                            " request within 10 s: " + scheduler_->home_system().render(e));
                 });
    return out;
  }

  CheckpointStore& checkpoint_store() {
    if (!checkpoints_) throw std::logic_error("this cluster keeps no checkpoints");
    return *checkpoints_();
  }
  caf::actor stream_actor(std::uint64_t stream) {
    std::lock_guard lock(streams_mutex_);
    auto it = streams_.find(stream);
    if (it == streams_.end())
      throw std::invalid_argument("stream " + std::to_string(stream) + " is not open");
    return it->second;
  }

  caf::actor scheduler_;
  std::weak_ptr<const SchedulerLink> link_;
  StreamOpener open_stream_;
  std::function<std::shared_ptr<ResultStore>()> store_;
  std::function<std::shared_ptr<CheckpointStore>()> checkpoints_;
  StreamFinder find_stream_;
  std::function<bool()> holds_checkpoints_;
  StreamReopener reopen_stream_;
  std::mutex streams_mutex_;
  std::unordered_map<std::uint64_t, caf::actor> streams_;
};

}  // namespace tessera

#include "nodes/scheduler_gateway.hpp"

#include <unordered_map>

#include "actors/messages.hpp"
#include "messages/protocol_codec.hpp"

namespace tessera {
namespace {

// A remote client's result table, seen from the scheduler: deliveries are sent back, not stored.
class RemoteSink final : public ResultSink {
 public:
  RemoteSink(std::uint32_t slots, std::weak_ptr<const SchedulerLink> link, std::vector<Watch> watches,
             std::weak_ptr<transport::Server> server, std::string peer)
      : ResultSink(slots, std::move(link), std::move(watches)),
        server_(std::move(server)),
        peer_(std::move(peer)) {}

  void deliver(std::vector<Delivery>& batch) override {
    auto server = server_.lock();
    if (!server) return;
    transport::Outgoing message;
    wire::encode(tag(), batch, message.envelope().initResults(), message.attachments());
    server->send(peer_, message);
  }

  std::uint32_t unreleased = 0;

 private:
  std::weak_ptr<transport::Server> server_;
  std::string peer_;
};

}  // namespace

struct SchedulerGateway::State {
  caf::actor scheduler;
  std::string name;
  std::weak_ptr<const SchedulerLink> link;
  std::weak_ptr<transport::Server> server;
  struct Client {
    std::unordered_map<OpId, OpId> ids;  // the client's operation ids -> this process's
    std::unordered_map<std::uint64_t, std::shared_ptr<RemoteSink>> sinks;
  };
  std::unordered_map<std::string, Client> clients;  // I/O thread only

  void refuse_submission(const transport::PeerInfo& peer, wire::Submit::Reader submit,
                         const std::string& reason) {
    auto target = server.lock();
    const std::uint32_t slots = std::min<std::uint32_t>(submit.getSlots(), wire::DecodeLimits{}.max_tasks);
    if (!target) return;
    auto error =
        std::make_shared<const TaskFailed>("(submission)", "", "the scheduler rejected it: " + reason, false);
    std::vector<Delivery> deliveries;
    deliveries.reserve(slots);
    for (std::uint32_t slot = 0; slot < slots; ++slot)
      deliveries.push_back(Delivery{slot, TaskState::erred, Value{}, error});
    transport::Outgoing answer;
    wire::encode(submit.getSinkId(), deliveries, answer.envelope().initResults(), answer.attachments());
    target->send(peer.id, answer);
  }

  void handle(const transport::PeerInfo& peer, transport::Received& message) {
    auto envelope = message.envelope();
    Client& client = clients[peer.id];
    switch (envelope.which()) {
      case wire::Envelope::SUBMIT: {
        auto map_id = [&](OpId theirs) {
          auto [it, fresh] = client.ids.emplace(theirs, 0);
          if (fresh) it->second = next_op_id();
          return it->second;
        };
        wire::SubmitMessage submit;
        try {
          submit = wire::decode(envelope.getSubmit(), message.frames(), map_id);
        } catch (const wire::WireError& e) {
          // The client waits on these results: every slot it asked for fails with the reason.
          refuse_submission(peer, envelope.getSubmit(), e.what());
          throw;
        }
        if (client.sinks.count(submit.sink_id)) throw wire::WireError("result table id reused by the client");
        auto sink = std::make_shared<RemoteSink>(submit.slots, link, submit.watches, server, peer.id);
        sink->set_tag(submit.sink_id);
        sink->unreleased = submit.slots;
        client.sinks[submit.sink_id] = sink;
        caf::anon_send(scheduler, submit_atom::value,
                       Submission{std::move(submit.operations), std::move(submit.watches), sink});
        return;
      }
      case wire::Envelope::RELEASE: {
        auto release = envelope.getRelease();
        auto it = client.sinks.find(release.getSinkId());
        if (it == client.sinks.end()) throw wire::WireError("release of an unknown result table");
        auto sink = it->second;
        for (std::uint32_t slot : release.getSlots()) {
          if (slot >= sink->size())
            throw wire::WireError("release of slot " + std::to_string(slot) + " of " +
                                  std::to_string(sink->size()));
          sink->release(slot);
          sink->unreleased -= 1;
        }
        if (sink->unreleased == 0) client.sinks.erase(it);
        return;
      }
      case wire::Envelope::CANCEL: {
        CancelRequest request;
        for (auto t : envelope.getCancel().getTasks()) {
          auto id = client.ids.find(t.getOp());
          if (id != client.ids.end()) request.tasks.push_back(TaskRef{id->second, t.getIndex()});
        }
        caf::anon_send(scheduler, cancel_atom::value, std::move(request));
        return;
      }
      case wire::Envelope::STATUS_REQUEST: {
        SchedulerStatus status;
        caf::scoped_actor self{scheduler->home_system()};
        self->request(scheduler, std::chrono::seconds(10), status_atom::value)
            .receive([&](const SchedulerStatus& s) { status = s; },
                     [&](const caf::error&) {
                       throw wire::WireError("the scheduler did not answer a status request");
                     });
        transport::Outgoing answer;
        auto out = answer.envelope().initStatus();
        out.setName(name);
        out.setWorkers(status.workers);
        out.setRetiringWorkers(status.retiring_workers);
        out.setOperations(status.operations);
        out.setTasksPending(status.tasks_pending);
        out.setResultsHeld(status.results_held);
        out.setTasksDone(status.tasks_done);
        out.setTasksErred(status.tasks_erred);
        out.setTasksCancelled(status.tasks_cancelled);
        out.setTasksStolen(status.tasks_stolen);
        out.setClients(static_cast<std::uint32_t>(clients.size()));
        if (auto target = server.lock()) target->send(peer.id, answer);
        return;
      }
      case wire::Envelope::HEARTBEAT:
        return;
      default:
        throw wire::WireError("a client may not send this kind of message");
    }
  }
};

SchedulerGateway::SchedulerGateway(caf::actor scheduler, std::weak_ptr<const SchedulerLink> link,
                                   transport::ServerOptions options)
    : state_(std::make_shared<State>()) {
  state_->scheduler = std::move(scheduler);
  state_->link = std::move(link);
  state_->name = options.name;
  auto state = state_;
  options.defer_start = true;  // the handler needs state_->server before the first message
  server_ = std::make_shared<transport::Server>(
      std::move(options), [state](transport::Server&, const transport::PeerInfo& peer,
                                  transport::Received& message) { state->handle(peer, message); });
  state_->server = server_;
  server_->start();
}

SchedulerGateway::~SchedulerGateway() = default;

const std::string& SchedulerGateway::endpoint() const {
  return server_->endpoint();
}

std::uint64_t SchedulerGateway::dropped() const {
  return server_->dropped();
}

}  // namespace tessera

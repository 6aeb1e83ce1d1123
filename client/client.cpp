#include "tessera/client.hpp"

#include "nodes/remote_backend.hpp"

namespace tessera {

namespace {
// Consecutive slots that stand for consecutive tasks of one operation share one watch.
std::vector<Watch> coalesce(const std::vector<TaskRef>& tasks) {
  std::vector<Watch> watches;
  for (std::uint32_t slot = 0; slot < tasks.size(); ++slot) {
    const TaskRef& t = tasks[slot];
    if (!watches.empty()) {
      Watch& last = watches.back();
      if (last.op == t.op && last.first_task + last.count == t.index &&
          last.first_slot + last.count == slot) {
        last.count += 1;
        continue;
      }
    }
    watches.push_back(Watch{t.op, t.index, 1, slot});
  }
  return watches;
}
}  // namespace

std::shared_ptr<ResultSink> Client::submit_delayed(const std::vector<const DelayedNode*>& roots) {
  for (std::size_t i = 0; i < roots.size(); ++i)
    if (!roots[i]) throw SubmissionError("compute: value " + std::to_string(i) + " is an empty Delayed");
  LoweredDelayed lowered = lower_delayed(roots);
  return send(std::move(lowered.operations), coalesce(lowered.roots),
              static_cast<std::uint32_t>(roots.size()));
}

Value Client::fit_glm(Value request) {
  return backend_->fit_glm(std::move(request));
}

void Client::send_cancel(std::vector<TaskRef> tasks) {
  backend_->cancel(std::move(tasks));
}

Client::Client(const std::string& scheduler_address) : backend_(connect_remote(scheduler_address)) {}

Client::Client(const std::string& scheduler_address, const ConnectOptions& options)
    : backend_(connect_remote(
          scheduler_address,
          RemoteOptions{.name = options.name,
                        .curve = options.secret_key.empty() ? std::nullopt
                                                            : std::optional(transport::CurveKeys{
                                                                  options.public_key, options.secret_key}),
                        .server_public_key = options.scheduler_public_key})) {}

void Client::release_all(ResultSink& sink) {
  for (std::uint32_t i = 0; i < sink.size(); ++i) sink.release(i);
}

Future<Value> Client::submit_by_name(std::string_view name, std::vector<Value> args) {
  const TaskFunction& function = Registry::global().get(name);
  std::vector<Column> columns;
  columns.reserve(args.size());
  for (auto& arg : args) columns.push_back(Column::broadcast(Arg(std::move(arg))));
  auto op = std::make_shared<Operation>(function, 1, std::move(columns));
  return Future<Value>(send({op}, {Watch{op->id(), 0, 1, 0}}, 1), 0);
}

std::vector<Value> Client::get(const GraphSpec& graph, const std::vector<std::string>& keys) {
  LoweredGraph lowered = lower(graph);
  std::vector<TaskRef> wanted;
  wanted.reserve(keys.size());
  for (const auto& key : keys) {
    auto it = lowered.refs.find(key);
    if (it == lowered.refs.end()) throw SubmissionError("get: key '" + key + "' is not in the graph");
    wanted.push_back(it->second);
  }
  auto sink = send(std::move(lowered.operations), coalesce(wanted), static_cast<std::uint32_t>(keys.size()));
  std::vector<Value> out;
  out.reserve(keys.size());
  try {
    for (std::uint32_t i = 0; i < keys.size(); ++i) out.push_back(sink->result(i));
  } catch (...) {
    release_all(*sink);
    throw;
  }
  release_all(*sink);
  return out;
}

}  // namespace tessera

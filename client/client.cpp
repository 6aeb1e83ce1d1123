#include "tessera/client.hpp"

#include <algorithm>
#include <limits>
#include <mutex>
#include <unordered_map>

#include "actors/cluster_backend.hpp"
#include "actors/result_sink.hpp"
#include "client/local_cluster_access.hpp"
#include "client/lower_delayed.hpp"
#include "graph/fused_task.hpp"
#include "graph/graph_passes.hpp"
#include "nodes/remote_backend.hpp"

namespace tessera {

namespace detail {
struct ClusterFunctions {
  std::mutex mutex;
  std::unordered_map<std::string, const TaskFunction*> by_name;
};
}  // namespace detail

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

FusionLimits fusion_limits(const GraphOptimizations& options) {
  if (options.max_fused_tasks < 2)
    throw SubmissionError("GraphOptimizations.max_fused_tasks must be at least 2, not " +
                          std::to_string(options.max_fused_tasks));
  if (options.max_diamond_width < 1)
    throw SubmissionError("GraphOptimizations.max_diamond_width must be at least 1");
  return FusionLimits{.linear = options.fuse,
                      .diamonds = options.fuse_diamonds,
                      .max_tasks = options.max_fused_tasks,
                      .max_width = options.max_diamond_width,
                      .max_inputs = static_cast<std::uint32_t>(kMaxFusedInputs)};
}

// Whether a submission is fused: not when it stores checkpoints, nor while the cluster may hold some
// (a fused task would not find those stored under its tasks' own keys).
bool fusing(const GraphOptimizations& options, bool checkpoint, ClusterBackend& backend) {
  return (options.fuse || options.fuse_diamonds) && !checkpoint && !backend.may_hold_checkpoints();
}
}  // namespace

std::shared_ptr<ResultSink> Client::submit_delayed(const std::vector<const DelayedNode*>& roots,
                                                   PersistOptions options) {
  for (std::size_t i = 0; i < roots.size(); ++i)
    if (!roots[i]) throw SubmissionError("compute: value " + std::to_string(i) + " is an empty Delayed");
  const FusionLimits limits = fusion_limits(optimizations_);
  const bool fuse = fusing(optimizations_, options.checkpoint || defaults_.checkpoint, *backend_);
  detail::LoweredDelayed lowered = detail::lower_delayed(roots, fuse ? &limits : nullptr);
  auto watches = coalesce(lowered.roots);
  const auto slots = static_cast<std::uint32_t>(roots.size());
  return backend_->submit(std::move(lowered.operations), std::move(watches), slots,
                          options.checkpoint || defaults_.checkpoint);
}

std::vector<CheckpointInfo> Client::checkpoints(const std::string& function, std::size_t limit) {
  return backend_->checkpoints(function, limit);
}

std::uint64_t Client::drop_checkpoints(const CheckpointSelection& selection) {
  return backend_->drop_checkpoints(selection);
}

GlmFitted Client::fit_glm(GlmFitRequest request) {
  return backend_->fit_glm(std::move(request));
}

void Client::send_cancel(std::vector<TaskRef> tasks) {
  backend_->cancel(std::move(tasks));
}

Client::Client(const std::string& scheduler_address)
    : backend_(connect_remote(scheduler_address)),
      cluster_functions_(std::make_shared<detail::ClusterFunctions>()) {}

Client::Client(const std::string& scheduler_address, const ConnectOptions& options)
    : backend_(connect_remote(
          scheduler_address,
          RemoteOptions{.name = options.name,
                        .curve = options.secret_key.empty() ? std::nullopt
                                                            : std::optional(transport::CurveKeys{
                                                                  options.public_key, options.secret_key}),
                        .server_public_key = options.scheduler_public_key,
                        .handshake_timeout = options.handshake_timeout,
                        .heartbeat_timeout = options.heartbeat_timeout,
                        .reconnect_timeout = options.reconnect_timeout,
                        .request_timeout = options.request_timeout})),
      cluster_functions_(std::make_shared<detail::ClusterFunctions>()) {}

Client::Client(LocalCluster& cluster)
    : backend_(detail::LocalClusterAccess::engine(cluster).backend()),
      cluster_functions_(std::make_shared<detail::ClusterFunctions>()) {}

Stream Client::stream(std::string_view simulation, StreamOptions options) {
  return Stream(backend_, std::string(simulation), std::move(options));
}

Stream Client::resume_stream(std::uint64_t id, StreamOptions options) {
  return Stream(backend_, {}, std::move(options), {}, {}, 0, id);
}

Stream Client::ensemble(std::string_view generator, std::string_view simulation, EnsembleOptions options) {
  return Stream(backend_, std::string(simulation), std::move(options.stream), std::string(generator),
                std::move(options.config), options.budget);
}

ResultQuery Client::results(std::uint64_t stream) {
  return ResultQuery(backend_->results(), stream);
}

std::vector<StreamListing> Client::streams() {
  return backend_->results()->streams();
}

void Client::drop_stream(std::uint64_t stream) {
  backend_->results()->drop(stream);
}

CancelledSets Client::cancel_sets(std::uint64_t stream, std::vector<IdRange> ids) {
  std::erase_if(ids, [](const IdRange& r) { return r.first >= r.last; });
  if (ids.empty()) return {};
  return backend_->cancel_sets(stream, std::move(ids), {}, false);
}

CancelledSets Client::cancel_sets_where(std::uint64_t stream, std::string_view filter) {
  return backend_->cancel_sets(stream, {}, std::string(filter), false);
}

CancelledSets Client::cancel_stream(std::uint64_t stream) {
  return backend_->cancel_sets(stream, {}, {}, true);
}

std::shared_ptr<ResultSink> Client::send(std::vector<OperationPtr> operations, std::vector<Watch> watches,
                                         std::uint32_t slots) {
  return backend_->submit(std::move(operations), std::move(watches), slots, defaults_.checkpoint);
}

namespace {
// Takes over the creator's reference on every slot of a table, so each is released however we leave.
std::vector<detail::ResultHandle> adopt_all(const std::shared_ptr<ResultSink>& table) {
  std::vector<detail::ResultHandle> handles;
  handles.reserve(table->size());
  for (std::uint32_t i = 0; i < table->size(); ++i) handles.emplace_back(table, i);
  return handles;
}

std::vector<Value> values_of(const std::vector<detail::ResultHandle>& handles) {
  std::vector<Value> out;
  out.reserve(handles.size());
  for (const auto& handle : handles) out.push_back(handle.result());
  return out;
}
}  // namespace

std::vector<Value> Client::compute_values(const std::vector<const DelayedNode*>& roots) {
  return values_of(adopt_all(submit_delayed(roots)));
}

std::vector<FunctionInfo> Client::functions() {
  return backend_->functions();
}

std::vector<SimulationInfo> Client::simulations() {
  return backend_->simulations();
}

ClusterStatus Client::status() {
  return backend_->status();
}

std::vector<WorkerInfo> Client::workers() {
  return backend_->workers();
}

const TaskFunction& Client::function_named(std::string_view name) {
  if (const TaskFunction* own = Registry::global().find(name)) return *own;
  auto& known = *cluster_functions_;
  {
    std::lock_guard lock(known.mutex);
    if (auto it = known.by_name.find(std::string(name)); it != known.by_name.end()) return *it->second;
  }
  // Asked again on each name not found yet: the cluster may have loaded a plugin since.
  const auto listed = backend_->functions();
  std::lock_guard lock(known.mutex);
  std::string names;
  for (const auto& info : listed) {
    if (info.name == name)
      return *known.by_name.insert_or_assign(info.name, &cluster_function(info)).first->second;
    names += (names.empty() ? "" : ", ") + info.name;
  }
  throw SubmissionError("unknown task function '" + std::string(name) +
                        "': neither this process nor the cluster defines it (the cluster's: " +
                        (names.empty() ? "none" : names) + ")");
}

Future<Value> Client::submit_by_name(std::string_view name, std::vector<Arg> args) {
  const TaskFunction& function = function_named(name);
  std::vector<Column> columns;
  columns.reserve(args.size());
  for (auto& arg : args) columns.push_back(Column::broadcast(std::move(arg)));
  auto op = std::make_shared<Operation>(function, 1, std::move(columns));
  return Future<Value>(detail::ResultHandle(send({op}, {Watch{op->id(), 0, 1, 0}}, 1), 0));
}

std::vector<Future<Value>> Client::map_by_name(std::string_view name, std::vector<std::vector<Arg>> inputs,
                                               std::vector<Value> leading) {
  const TaskFunction& function = function_named(name);
  const std::size_t n = inputs.empty() ? 0 : inputs.front().size();
  std::vector<Column> columns;
  columns.reserve(leading.size() + inputs.size());
  for (auto& value : leading) columns.push_back(Column::broadcast(Arg(std::move(value))));
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    if (inputs[k].size() != n)
      throw SubmissionError("map(" + function.name + "): input " + std::to_string(k) + " has " +
                            std::to_string(inputs[k].size()) + " elements, input 0 has " + std::to_string(n));
    const bool literal = std::ranges::all_of(inputs[k], [](const Arg& a) { return a.index() == 0; });
    if (literal) {
      // The compact form: one Value per task.
      std::vector<Value> values;
      values.reserve(n);
      for (auto& a : inputs[k]) values.push_back(std::move(std::get<Value>(a)));
      columns.push_back(Column::per_task(std::move(values)));
    } else {
      columns.push_back(Column::per_task(std::move(inputs[k])));
    }
  }
  if (n > std::numeric_limits<std::uint32_t>::max())
    throw SubmissionError("map(" + function.name + "): " + std::to_string(n) +
                          " tasks in one call is too many");
  if (n == 0) return {};
  const auto count = static_cast<std::uint32_t>(n);
  auto op = std::make_shared<Operation>(function, count, std::move(columns));
  auto sink = send({op}, {Watch{op->id(), 0, count, 0}}, count);
  std::vector<Future<Value>> futures;
  futures.reserve(n);
  for (std::uint32_t i = 0; i < count; ++i) futures.emplace_back(detail::ResultHandle(sink, i));
  return futures;
}

std::vector<Value> Client::get(const GraphSpec& graph, const std::vector<std::string>& keys) {
  GraphSpec culled;
  const GraphSpec* sent = &graph;
  if (optimizations_.cull) sent = &(culled = cull(graph, keys));
  // A name this process lacks is the cluster's (fusion leaves such tasks as they are).
  const FunctionResolver resolve = [this](const std::string& name) { return &function_named(name); };
  LoweredGraph lowered = fusing(optimizations_, defaults_.checkpoint, *backend_)
                             ? lower(fuse(*sent, keys, fusion_limits(optimizations_)), resolve)
                             : lower(*sent, resolve);
  std::vector<TaskRef> wanted;
  wanted.reserve(keys.size());
  for (const auto& key : keys) {
    auto it = lowered.refs.find(key);
    if (it == lowered.refs.end()) throw SubmissionError("get: key '" + key + "' is not in the graph");
    wanted.push_back(it->second);
  }
  return values_of(adopt_all(
      send(std::move(lowered.operations), coalesce(wanted), static_cast<std::uint32_t>(keys.size()))));
}

}  // namespace tessera

// Client: what user code talks to. Futures (submit, map, gather), delayed graphs (compute, persist)
// and Dask-style dictionary graphs (get), all run by the cluster the client is bound to.
#pragma once

#include <chrono>
#include <cstdint>
#include <iterator>
#include <limits>
#include <memory>
#include <ranges>
#include <string>
#include <tuple>
#include <vector>

#include "graph/checkpoint_info.hpp"
#include "graph/graph_spec.hpp"
#include "graph/operation.hpp"
#include "graph/watch.hpp"
#include "scheduling/cluster_status.hpp"
#include "tessera/delayed.hpp"
#include "tessera/future.hpp"
#include "tessera/local_cluster.hpp"
#include "tessera/results.hpp"
#include "tessera/stream.hpp"
#include "tessera/task_function.hpp"

namespace tessera {

class ClusterBackend;  // where a client's work goes: this process's cluster or a scheduler node
namespace detail {
struct ClusterFunctions;  // client.cpp
}
namespace glm {
class GeneralizedLinearModel;
}

// A GLM fit's request and answer (actors/glm/messages.hpp): only tessera::glm's estimators use them.
struct GlmFitRequest;
struct GlmFitted;

// How a client reaches a scheduler node. With CURVE on at the scheduler, this client's key pair (Z85) and
// the scheduler's public key; the scheduler refuses (and logs) a key it was not given.
struct ConnectOptions {
  std::string name = "client";  // shown in the scheduler's log
  std::string public_key{};
  std::string secret_key{};
  std::string scheduler_public_key{};
  // A scheduler silent this long (it answers every heartbeat) is taken for gone and reconnected to.
  std::chrono::milliseconds heartbeat_timeout{3000};
  // How long a lost scheduler is reconnected to (with backoff) before every waiting and later call
  // fails with ConnectionLost, naming the address and the wait. After a reconnect the client carries on
  // by itself: streams attach again, unacknowledged pushes and unfinished submissions are sent again.
  std::chrono::milliseconds reconnect_timeout{30000};
  // How long connecting waits for the scheduler's handshake, and a question to it (status, workers,
  // functions, simulations) for its answer: a wrong address or a CURVE node reached without keys is a
  // ConnectionError after it, not a hang.
  std::chrono::milliseconds handshake_timeout{5000};
  std::chrono::milliseconds request_timeout{30000};
};

// How persist (and, through Client::with, submit, map and compute) treats what it computes. With
// `checkpoint`, each wanted result is also stored in the scheduler node's database under a key derived
// from what computes it (the function's name, the task's index, its literal arguments, its inputs'
// keys): a later computation that needs the same task (after a worker is lost, after the cluster is
// restarted from the same data_dir, from another client) reads it instead of running it. Functions
// must be deterministic for that to be right; `tessera checkpoints drop --function NAME` forgets a
// function's results after its code changed.
struct PersistOptions {
  bool checkpoint = false;
};

// Passes over a graph before it is sent to the scheduler; each can be switched off, e.g.
// client.with(tessera::GraphOptimizations{.fuse = false}).compute(values).
struct GraphOptimizations {
  // get(graph, keys) sends only the tasks the keys need (what nothing asked for depends on never runs,
  // and is not checked either). Delayed, bag and array graphs hold only what their values need already.
  bool cull = true;
  // A task whose one consumer reads no other task runs inside that consumer's task (linear fusion:
  // x = f(w); y = g(x); z = h(y) becomes one task). Never gives away parallelism.
  bool fuse = true;
  // A small fan-out-fan-in subgraph from one source to one sink (y = exp(x) - 1/x) runs as one task:
  // its parallel branches run one after the other, which pays when tasks are small and there are many.
  bool fuse_diamonds = true;
  // The most tasks one fused task runs (at least 2; a chain longer than this becomes several).
  std::uint32_t max_fused_tasks = 64;
  // The most parallel branches of a fused diamond.
  std::uint32_t max_diamond_width = 4;
};

class Client {
 public:
  // A client of a cluster in this process.
  explicit Client(LocalCluster& cluster);
  // A client of a scheduler node, e.g. "tcp://127.0.0.1:7070" (see tessera-node); the same API.
  explicit Client(const std::string& scheduler_address);
  Client(const std::string& scheduler_address, const ConnectOptions& options);

  // Opens a stream of parameter sets on the simulation registered under `simulation` (see stream.hpp);
  // an unknown name is a SubmissionError listing the known ones.
  Stream stream(std::string_view simulation, StreamOptions options = {});
  // Opens an adaptive ensemble (see EnsembleOptions): `generator` proposes the parameter sets of a stream
  // of `simulation` and reads their results. An unknown generator, or one whose result type is not the
  // simulation's, is a SubmissionError; a budget of 0 or past the limit a std::invalid_argument. Its
  // results come as a stream's do; wait() returns once the generator is done and every set is answered.
  Stream ensemble(std::string_view generator, std::string_view simulation, EnsembleOptions options);
  // Queries over a stream's stored results (see results.hpp).
  ResultQuery results(std::uint64_t stream);
  // Pushes on into stream `id`, which was closed before its input ended or lost its client (incomplete:
  // `tessera stream push --resume`). `options.input` must be the stream's own (the same digest); the
  // stream runs by its own settings, so only options.max_in_flight counts of the rest. The Stream's
  // first push gets the first id the stream had not accepted (Stream::pushed()). A stream that is not
  // incomplete, or another input, is a SubmissionError naming why.
  Stream resume_stream(std::uint64_t id, StreamOptions options);
  // The streams the cluster's store holds, in id order (`tessera stream list`).
  std::vector<StreamListing> streams();
  // Deletes a finished stream: its stored results, its pushes written ahead and its record; the disk space
  // comes back (`tessera stream drop`). An unknown or unfinished stream is a QueryError naming why.
  void drop_stream(std::uint64_t stream);
  // Cancels sets of a running stream of this cluster, whoever opened it (as Stream::cancel and
  // cancel_where do). A stream that is not running is a std::invalid_argument naming it.
  CancelledSets cancel_sets(std::uint64_t stream, std::vector<IdRange> ids);
  CancelledSets cancel_sets_where(std::uint64_t stream, std::string_view filter);
  // Cancels a running stream whole: every set it accepted and has not answered, and its pusher, whose
  // next push (or wait for credit) is a SubmissionError saying the stream was cancelled. A stream cut so
  // before its input ended is incomplete (resume_stream pushes on).
  CancelledSets cancel_stream(std::uint64_t stream);

  // A client of the same cluster whose submit, map, compute and persist calls take `options`, e.g.
  // client.with({.checkpoint = true}).map(fn, inputs) for checkpointed futures.
  Client with(PersistOptions options) const {
    Client copy = *this;
    copy.defaults_ = options;
    return copy;
  }
  // A client of the same cluster whose graph submissions go through `optimizations`.
  Client with(GraphOptimizations optimizations) const {
    Client copy = *this;
    copy.optimizations_ = optimizations;
    return copy;
  }
  // The checkpoints the scheduler node stores (at most `limit`, in key order; of one function when
  // `function` is not empty), and dropping them; drop returns how many it deleted.
  std::vector<CheckpointInfo> checkpoints(const std::string& function = {}, std::size_t limit = SIZE_MAX);
  std::uint64_t drop_checkpoints(const CheckpointSelection& selection);

  // Runs fn(args...) now; arguments may be values or futures of earlier tasks.
  template <class F, class... X>
  Future<detail::task_result_t<F>> submit(const F& fn, X&&... args) {
    using Arguments = detail::task_arguments_t<F>;
    static_assert(sizeof...(X) == std::tuple_size_v<Arguments>,
                  "wrong number of arguments for this task function");
    const TaskFunction& function = detail::resolve(fn);
    std::vector<Column> columns;
    columns.reserve(sizeof...(X));
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      (columns.push_back(
           Column::broadcast(detail::make_arg<std::tuple_element_t<I, Arguments>>(std::forward<X>(args), I))),
       ...);
    }
    (std::index_sequence_for<X...>{});
    auto op = std::make_shared<Operation>(function, 1, std::move(columns));
    return Future<detail::task_result_t<F>>(
        detail::ResultHandle(send({op}, {Watch{op->id(), 0, 1, 0}}, 1), 0));
  }

  // Runs the function registered under `name` with dynamically typed arguments (as a command line or
  // another language would). A name this process does not define is looked up on the cluster (its
  // scheduler's registry, asked once and remembered): a client needs no plugin to call a node's
  // functions. An unknown name, a wrong count or a wrong type is a SubmissionError that names the
  // function and the argument (types Tessera's codecs do not name are checked by the scheduler, which
  // refuses the submission naming the argument). A function this process defines differently from the
  // cluster is refused naming both definitions. An argument is a Value or a future's task
  // (Future::task()), as another language's client passes them; the caller keeps those futures alive
  // until this one is done.
  Future<Value> submit_by_name(std::string_view name, std::vector<Arg> args);
  // One task per element: inputs[k] holds the k-th argument of every task (all of one length).
  // `leading`: arguments every task gets first, sent once (a Python client's pickled function).
  std::vector<Future<Value>> map_by_name(std::string_view name, std::vector<std::vector<Arg>> inputs,
                                         std::vector<Value> leading = {});

  // What the cluster can run, as its scheduler has it registered: task functions with their signatures
  // and identities (graph/definition_identity.hpp), and the simulations streams may name.
  std::vector<FunctionInfo> functions();
  std::vector<SimulationInfo> simulations();
  // What the scheduler is doing (the node's name, its clients, tasks by state, checkpoints, each worker's
  // memory), and its workers: what `tessera status` and `tessera workers` print.
  ClusterStatus status();
  std::vector<WorkerInfo> workers();

  // Runs fn over every element of the ranges (one task per element), as one operation.
  template <class F, std::ranges::sized_range... Ranges>
  std::vector<Future<detail::task_result_t<F>>> map(const F& fn, const Ranges&... inputs) {
    using Arguments = detail::task_arguments_t<F>;
    static_assert(sizeof...(Ranges) == std::tuple_size_v<Arguments>,
                  "map needs one input range per argument of the task function");
    const TaskFunction& function = detail::resolve(fn);
    const std::size_t n = first_size(inputs...);
    std::size_t position = 0;
    for (std::size_t size : {static_cast<std::size_t>(std::ranges::size(inputs))...}) {
      if (size != n)
        throw SubmissionError("map(" + function.name + "): input " + std::to_string(position) + " has " +
                              std::to_string(size) + " elements, input 0 has " + std::to_string(n));
      ++position;
    }
    std::vector<Column> columns(sizeof...(Ranges));
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      (fill_column<std::tuple_element_t<I, Arguments>>(columns[I], inputs, I), ...);
    }
    (std::index_sequence_for<Ranges...>{});
    auto op = std::make_shared<Operation>(function, static_cast<std::uint32_t>(n), std::move(columns));
    auto sink =
        send({op}, {Watch{op->id(), 0, static_cast<std::uint32_t>(n), 0}}, static_cast<std::uint32_t>(n));
    std::vector<Future<detail::task_result_t<F>>> futures;
    futures.reserve(n);
    for (std::uint32_t i = 0; i < n; ++i) futures.emplace_back(detail::ResultHandle(sink, i));
    return futures;
  }

  // Cancels the futures' tasks if they have not finished: they end cancelled, and so does everything
  // that depends on them. A task already running finishes, but its result is not used.
  template <class T>
  void cancel(const std::vector<Future<T>>& futures) {
    std::vector<TaskRef> tasks;
    tasks.reserve(futures.size());
    for (const auto& f : futures) tasks.push_back(f.task());
    send_cancel(std::move(tasks));
  }
  template <class T>
  void cancel(const Future<T>& future) {
    send_cancel({future.task()});
  }

  template <class T>
  T gather(const Future<T>& future) {
    return future.result();
  }
  // Waits for every future; rethrows the first failure (in input order).
  template <class T>
  std::vector<T> gather(const std::vector<Future<T>>& futures) {
    std::vector<T> out;
    out.reserve(futures.size());
    for (const auto& f : futures) out.push_back(f.result());
    return out;
  }

  // Computes delayed values and returns their results; one Delayed gives its value, several a tuple.
  template <class T>
  T compute(const Delayed<T>& value) {
    return std::move(compute(std::vector<Delayed<T>>{value}).front());
  }
  template <class... T>
  requires(sizeof...(T) > 1) std::tuple<T...> compute(const Delayed<T>&... values) {
    auto results = compute_values({values.node().get()...});
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      return std::tuple<T...>(from_value<T>(std::move(results[I]))...);
    }
    (std::index_sequence_for<T...>{});
  }
  template <class T>
  std::vector<T> compute(const std::vector<Delayed<T>>& values) {
    std::vector<const DelayedNode*> roots;
    roots.reserve(values.size());
    for (const auto& v : values) roots.push_back(v.node().get());
    auto results = compute_values(roots);
    std::vector<T> out;
    out.reserve(results.size());
    for (auto& r : results) out.push_back(from_value<T>(std::move(r)));
    return out;
  }

  // Starts computing delayed values and returns futures on their results (kept on the workers); with
  // options.checkpoint, also stored as checkpoints (see PersistOptions).
  template <class T>
  Future<T> persist(const Delayed<T>& value, PersistOptions options = {}) {
    return Future<T>(detail::ResultHandle(submit_delayed({value.node().get()}, options), 0));
  }
  template <class T>
  std::vector<Future<T>> persist(const std::vector<Delayed<T>>& values, PersistOptions options = {}) {
    std::vector<const DelayedNode*> roots;
    for (const auto& v : values) roots.push_back(v.node().get());
    auto sink = submit_delayed(roots, options);
    std::vector<Future<T>> out;
    out.reserve(values.size());
    for (std::uint32_t i = 0; i < values.size(); ++i) out.emplace_back(detail::ResultHandle(sink, i));
    return out;
  }

  // Runs a dictionary graph (key -> function and arguments) and returns the values of `keys`.
  std::vector<Value> get(const GraphSpec& graph, const std::vector<std::string>& keys);

 private:
  // tessera::glm's estimators run their fits through the client's cluster.
  friend class glm::GeneralizedLinearModel;
  // Runs a GLM fit and waits for its answer (see glm.hpp).
  GlmFitted fit_glm(GlmFitRequest request);

  template <class R0, class... R>
  static std::size_t first_size(const R0& r0, const R&...) {
    return static_cast<std::size_t>(std::ranges::size(r0));
  }

  // Plain values take the compact form; futures become references.
  template <class P, class Range>
  static void fill_column(Column& column, const Range& input, std::size_t position) {
    const auto n = static_cast<std::size_t>(std::ranges::size(input));
    if constexpr (is_future<std::remove_cvref_t<std::ranges::range_value_t<Range>>>::value) {
      std::vector<Arg> args;
      args.reserve(n);
      for (const auto& item : input) args.push_back(detail::make_arg<P>(item, position));
      column = Column::per_task(std::move(args));
    } else {
      std::vector<Value> values;
      values.reserve(n);
      for (const auto& item : input) values.push_back(std::get<Value>(detail::make_arg<P>(item, position)));
      column = Column::per_task(std::move(values));
    }
  }

  // Sends operations; the returned table holds one reference per slot, for the caller to adopt.
  std::shared_ptr<ResultSink> send(std::vector<OperationPtr> operations, std::vector<Watch> watches,
                                   std::uint32_t slots);
  std::shared_ptr<ResultSink> submit_delayed(const std::vector<const DelayedNode*>& roots,
                                             PersistOptions options = {});
  // Computes the roots and returns their values in order (the first failure, in that order, is thrown).
  std::vector<Value> compute_values(const std::vector<const DelayedNode*>& roots);
  void send_cancel(std::vector<TaskRef> tasks);

  // The function a call by name runs: this process's, else the cluster's stand-in (cluster_function).
  const TaskFunction& function_named(std::string_view name);

  std::shared_ptr<ClusterBackend> backend_;
  // Functions only the cluster defines, by name, shared by this client's copies.
  std::shared_ptr<detail::ClusterFunctions> cluster_functions_;
  PersistOptions defaults_{};
  GraphOptimizations optimizations_{};
};

}  // namespace tessera

// Streams of parameter sets fed to simulation actors (the main job):
//
//   auto stream = client.stream("costly_simulation", {.max_in_flight = 4096});
//   for (auto& p : params) stream.push(p);     // waits while max_in_flight sets are unanswered
//   stream.close();
//   for (auto& r : stream.results()) use(r.id, r.as<double>());
//
// Each parameter set gets a sequence id (0, 1, 2, ... per stream). Results arrive in completion order,
// through a callback (on_result) or the results() iterator, once they are durable in the node's store.
// A set counts as accepted once the stream has written it ahead to that store; across processes, a
// scheduler that is killed and restarted from the same data_dir resumes the stream, the client
// reconnects and sends again what was not accepted, and each id is still answered exactly once. A
// scheduler gone for longer than ConnectOptions::reconnect_timeout makes push, next and wait throw
// ConnectionLost.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <iterator>
#include <memory>
#include <optional>
#include <ranges>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "graph/codec.hpp"
#include "graph/errors.hpp"
#include "graph/simulation.hpp"
#include "graph/stream_record.hpp"
#include "graph/stream_settings.hpp"
#include "graph/value.hpp"

namespace tessera {

class ClusterBackend;  // where the stream runs: this process's cluster or a scheduler node

// The public face of StreamSettings (graph/stream_settings.hpp), with a duration for the timeout and the
// config by value; Stream converts it in one place.
struct StreamOptions {
  // Parameter sets pushed but not yet answered; a push waits beyond this. Default 4096.
  std::size_t max_in_flight = StreamSettings::kDefaultMaxInFlight;
  // Simulation actors per worker; 0 (default): one per compute thread. At most kMaxPoolSize.
  std::uint32_t pool_size = 0;
  static constexpr std::uint32_t kMaxPoolSize = StreamSettings::kMaxPoolSize;
  // Given to each simulation actor's constructor.
  Config config{};
  // Where the instances run: Isolation::thread (the worker's compute threads, the fastest) or
  // Isolation::process (one supervised child process per simulation actor, started once and reused; a
  // set that crashes it fails naming the signal, and a fresh process takes its place). Unset: the
  // scheduler node's [streams] isolation (thread unless configured).
  std::optional<Isolation> isolation{};
  // A set running longer fails with "timeout after N s". Under process isolation its process is killed
  // and replaced; under thread isolation the result is discarded when it comes, and until then the
  // simulation actor (and its compute thread) stays busy with it. Zero: no timeout. At most kMaxTimeout.
  std::chrono::duration<double> timeout{0};
  static constexpr double kMaxTimeoutSeconds = StreamSettings::kMaxTimeoutSeconds;
  // A set that fails (throws, crashes its process, times out) runs again up to this many times; every
  // attempt's reason is kept in its record. One that crashes its process twice is final whatever is left.
  std::uint32_t retries = 0;
  static constexpr std::uint32_t kMaxRetries = StreamSettings::kMaxRetries;
  // What the parameters are called (tessera stream push passes its CSV's header): the CSV export's header
  // names its parameter columns so. At most kMaxParameterNames names of at most kMaxParameterNameBytes.
  std::vector<std::string> parameter_names{};
  // What this client will push, when it knows (tessera stream push: the CSV's rows, its name and a digest
  // of its bytes). A stream closed before it accepted input.sets sets is incomplete, not finished; a
  // resume (Client::resume_stream) must give the same digest.
  StreamInput input{};
  static constexpr std::size_t kMaxParameterNames = StreamSettings::kMaxParameterNames;
  static constexpr std::size_t kMaxParameterNameBytes = StreamSettings::kMaxParameterNameBytes;
};

// What one push says about its parameter set.
struct SetOptions {
  // Among the sets the stream has queued, a higher priority is dispatched first; equal priorities keep
  // push order. Any finite number; default 0. (Sets already sent to a worker are not overtaken.)
  double priority = 0;
  // This set's timeout, in place of the stream's (StreamOptions::timeout, which says what one costs):
  // zero (default) keeps the stream's. At most StreamOptions::kMaxTimeoutSeconds.
  std::chrono::duration<double> timeout{0};
};

// An adaptive ensemble (Client::ensemble): a generator (graph/generator.hpp; "aposmm" ships with
// Tessera) proposes the parameter sets, reads each result once it is stored, and proposes more, keeping
// every simulation actor busy, until it says it is done or `budget` sets were proposed.
struct EnsembleOptions {
  // The most parameter sets the generator may propose: required, in [1, kMaxBudget].
  std::uint64_t budget = 0;
  static constexpr std::uint64_t kMaxBudget = StreamSettings::kMaxBudget;
  // Given to the generator's constructor (for aposmm: lower, upper, sample_size, ...).
  Config config{};
  // The simulation's stream: its config, isolation, timeout, retries, pool_size, max_in_flight.
  StreamOptions stream{};
};

class Stream {
 public:
  ~Stream();  // closes the stream if it is open
  Stream(Stream&&) noexcept;
  Stream& operator=(Stream&&) noexcept;

  std::uint64_t id() const;

  // Sends one parameter set and returns its id. A set the simulation cannot take (wrong arity) is a
  // SubmissionError naming the simulation, and uses no id. An ensemble's sets come from its generator:
  // a push to one is a std::logic_error.
  template <class P>
  std::uint64_t push(const P& parameters, SetOptions options = {}) {
    return push_value(to_value(parameters), options);
  }
  template <std::ranges::input_range R>
  std::uint64_t push_batch(const R& parameters) {
    std::uint64_t first = pushed();
    for (const auto& p : parameters) push(p);
    return first;
  }
  // A priority that is not finite, or a timeout that is not in [0, kMaxTimeoutSeconds], is a
  // std::invalid_argument naming the set.
  std::uint64_t push_value(Value parameters, SetOptions options = {});
  // Sends what push() has buffered (it batches while the pipeline is busy).
  void flush();
  // No more pushes; results still come. An ensemble's generator proposes no more sets (the ones it has
  // proposed are still answered): closing it early stops it.
  void close();

  // Cancels sets pushed and not answered yet: queued ones never run, running ones are stopped (process
  // isolation: the child is killed and replaced) or abandoned (thread isolation: the compute thread
  // finishes the set and its result is discarded). Each is answered, and stored, as failed with
  // Failure::cancelled; sets already answered keep their result. Sets still buffered here are sent
  // first, so every id pushed so far can be cancelled. Not from an on_result callback (a std::logic_error):
  // that callback runs on the thread that answers the cancellation.
  CancelledSets cancel(std::span<const std::uint64_t> ids);
  CancelledSets cancel(std::initializer_list<std::uint64_t> ids) {
    return cancel(std::span<const std::uint64_t>(ids.begin(), ids.size()));
  }
  CancelledSets cancel(IdRange ids);
  // The same for the sets a filter selects: "id >= 100", "parameters[0] > 2 and parameters[1] < 1"
  // (results.hpp's filters; clauses on results select nothing, as these sets have none). A bad filter is
  // a std::invalid_argument naming the stream and the position.
  // A filter must have a clause on id or parameters ("ok" alone, or nothing, would select every set).
  CancelledSets cancel_where(std::string_view filter);

  // Each result not taken by the iterator goes to `callback` instead: those already waiting at once, on
  // this thread, then each as it comes, on a Tessera thread (never two calls at once).
  void on_result(std::function<void(const StreamRecord&)> callback);
  // The next result in completion order; nullopt once the stream is closed and every result was taken
  // (or the deadline passed).
  std::optional<StreamRecord> next(
      std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max());
  // True once the stream has finished and every result was taken: a nullopt from next(deadline) then
  // means the end rather than the deadline.
  bool drained() const;
  // Waits until the stream is closed and every parameter set answered; false when the deadline passed.
  bool wait(std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max());
  // Parameter sets pushed so far: the id the next push gets.
  std::uint64_t pushed() const;
  // Parameter sets the stream has accepted: written ahead to the store where it runs, so they run (once)
  // even if that node is killed and restarted. Ids below this.
  std::uint64_t accepted() const;
  std::uint64_t completed() const;
  // Set when the stream failed as a whole (its store could not be written, or a client cancelled it).
  const std::string& error() const;
  // From another thread (a signal's watcher): a push waiting for credit, and every later push, throws
  // StreamInterrupted; what was pushed before stays pushed. close() still closes the stream.
  void interrupt();

  class Results {
   public:
    class iterator {
     public:
      using value_type = StreamRecord;
      using difference_type = std::ptrdiff_t;
      iterator() = default;
      explicit iterator(Stream* stream) : stream_(stream) { ++*this; }
      const StreamRecord& operator*() const { return *current_; }
      const StreamRecord* operator->() const { return &*current_; }
      iterator& operator++() {
        current_ = stream_->next();
        if (!current_) stream_ = nullptr;
        return *this;
      }
      void operator++(int) { ++*this; }
      bool operator==(const iterator& other) const { return stream_ == other.stream_; }

     private:
      Stream* stream_ = nullptr;
      std::optional<StreamRecord> current_;
    };
    explicit Results(Stream* stream) : stream_(stream) {}
    iterator begin() { return iterator(stream_); }
    iterator end() { return iterator(); }

   private:
    Stream* stream_;
  };
  // Results in completion order until the stream is closed and all have come. Close it first (or from
  // another thread), or the iteration waits for ever.
  Results results() { return Results(this); }

 private:
  friend class Client;  // Client::stream opens streams
  // Opens the stream; `simulation` is checked where the stream runs (a SubmissionError if unknown). With a
  // generator, an ensemble (checked there too).
  // `resume`: not 0, push on into that incomplete stream (Client::resume_stream).
  Stream(std::shared_ptr<ClusterBackend> backend, std::string simulation, StreamOptions options,
         std::string generator = {}, Config generator_config = {}, std::uint64_t budget = 0,
         std::uint64_t resume = 0);
  struct State;
  std::unique_ptr<State> state_;
};

// StreamRecord's value as a C++ type.
template <class T>
T result_as(const StreamRecord& record) {
  if (record.failed) throw TaskFailed(kSimulationFunction, std::to_string(record.id), record.error, false);
  return from_value<T>(record.value);
}

}  // namespace tessera

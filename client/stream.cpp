#include "tessera/stream.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <mutex>

#include "actors/cluster_backend.hpp"
#include "actors/stream_sink.hpp"

namespace tessera {

struct Stream::State {
  std::shared_ptr<ClusterBackend> backend;
  std::string simulation;
  SimulationType shape;  // name and arity (when the simulation says), for the check at push
  std::shared_ptr<StreamSink> sink;
  std::size_t max_in_flight = 0;
  std::uint64_t id = 0;
  std::mutex mutex;
  std::uint64_t next_id = 0;  // the id the next push gets
  // next_id for readers on other threads: a push waiting for credit holds the mutex (a progress
  // watcher must still read it, and see Ctrl-C).
  std::atomic<std::uint64_t> pushed{0};
  std::uint64_t sent = 0;     // ids below this have been sent
  std::vector<Value> buffer;  // pushed, not yet sent
  // Aligned with buffer once one of its sets has a priority; empty while all are 0.
  std::vector<double> priorities;
  std::vector<double> timeouts;  // the same for per-set timeouts (seconds; 0: the stream's)
  bool closed = false;
  std::string generator;  // an ensemble's: it pushes the sets

  // Sends what is buffered; the caller holds the mutex.
  void flush_locked() {
    if (buffer.empty()) return;
    StreamBatch batch{sent, std::move(buffer), std::move(priorities), std::move(timeouts)};
    sent += batch.parameters.size();
    buffer.clear();
    priorities.clear();
    timeouts.clear();
    backend->push(id, std::move(batch));
  }

  CancelledSets cancel(std::vector<IdRange> ranges, std::string where) {
    if (StreamSink::in_callback())
      throw std::logic_error("stream " + std::to_string(id) +
                             ": cancel cannot be called from an on_result callback, which runs on the thread "
                             "that would answer it; call it from another thread");
    {
      std::lock_guard lock(mutex);
      flush_locked();
    }
    // Every set of a finished stream has its answer: there is nothing to cancel, nor anyone to ask.
    if (sink->wait_finished(std::chrono::steady_clock::now())) return {};
    return backend->cancel_sets(id, std::move(ranges), std::move(where), false);
  }
};

namespace {
// A batch goes out at this size even while the pipeline is busy.
constexpr std::size_t kMaxBatch = 1024;
}  // namespace

Stream::Stream(std::shared_ptr<ClusterBackend> backend, std::string simulation, StreamOptions options,
               std::string generator, Config generator_config, std::uint64_t budget, std::uint64_t resume)
    : state_(std::make_unique<State>()) {
  auto& st = *state_;
  st.backend = std::move(backend);
  st.simulation = std::move(simulation);
  st.max_in_flight = std::max<std::size_t>(1, options.max_in_flight);
  st.sink = std::make_shared<StreamSink>(st.max_in_flight);
  // The one place StreamOptions becomes StreamSettings; check() names what is wrong.
  StreamSettings settings;
  settings.simulation = st.simulation;
  settings.config = std::make_shared<const Config>(std::move(options.config));
  settings.pool_size = options.pool_size;
  settings.max_in_flight = st.max_in_flight;
  settings.isolation = options.isolation;
  settings.timeout_seconds = options.timeout.count();
  settings.retries = options.retries;
  settings.parameter_names = std::move(options.parameter_names);
  settings.input = std::move(options.input);
  if (!generator.empty()) {
    st.generator = generator;
    st.sink->set_generated();
    settings.generator = std::move(generator);
    settings.generator_config = std::make_shared<const Config>(std::move(generator_config));
    settings.budget = budget;
  }
  if (auto wrong = settings.check(); !wrong.empty()) throw std::invalid_argument(wrong);
  // Results past the sink's cap are read back from the store (they are there: delivery follows the write).
  auto stream_id = std::make_shared<std::uint64_t>(0);
  st.sink->set_fetch(
      [source = st.backend->results(), stream_id](std::uint64_t id) -> std::optional<StreamRecord> {
        auto stored = source->records(*stream_id, "", id, id + 1);
        if (stored.empty()) return std::nullopt;
        return stored[0].record();
      });
  auto opened = resume ? st.backend->resume_stream(resume, settings.input, st.sink)
                       : st.backend->open_stream(settings, st.sink);
  st.id = opened.id;
  if (resume) {
    st.simulation = opened.simulation;
    st.next_id = st.sent = opened.resume_from;
    st.pushed.store(st.next_id);
    if (opened.max_in_flight) st.max_in_flight = static_cast<std::size_t>(opened.max_in_flight);
  }
  st.shape.name = st.simulation;
  st.shape.arity = opened.arity;
  st.shape.program = opened.program;
  *stream_id = st.id;
}

Stream::~Stream() {
  if (!state_) return;
  try {
    close();
  } catch (const ConnectionError&) {
    // The scheduler is gone for good: nothing is left to close.
  }
}

Stream::Stream(Stream&&) noexcept = default;
Stream& Stream::operator=(Stream&&) noexcept = default;

std::uint64_t Stream::id() const {
  return state_->id;
}

void Stream::on_result(std::function<void(const StreamRecord&)> callback) {
  state_->sink->on_result(std::move(callback));
}

std::uint64_t Stream::accepted() const {
  return state_->sink->accepted();
}

std::uint64_t Stream::completed() const {
  return state_->sink->delivered();
}

const std::string& Stream::error() const {
  return state_->sink->stream_error();
}

std::uint64_t Stream::pushed() const {
  return state_->pushed.load();
}

std::uint64_t Stream::push_value(Value parameters, SetOptions options) {
  auto& st = *state_;
  std::unique_lock lock(st.mutex);
  if (!st.generator.empty())
    throw std::logic_error("stream " + std::to_string(st.id) + " is an ensemble: generator '" + st.generator +
                           "' proposes its parameter sets");
  if (st.closed) throw SubmissionError("stream " + std::to_string(st.id) + " is closed: no more pushes");
  if (!std::isfinite(options.priority))
    throw std::invalid_argument("parameter set " + std::to_string(st.next_id) + " of stream " +
                                std::to_string(st.id) + ": priority " + std::to_string(options.priority) +
                                " is not a finite number");
  const double timeout = options.timeout.count();
  if (!std::isfinite(timeout) || timeout < 0 || timeout > StreamOptions::kMaxTimeoutSeconds)
    throw std::invalid_argument("parameter set " + std::to_string(st.next_id) + " of stream " +
                                std::to_string(st.id) + ": timeout " + std::to_string(timeout) +
                                " s is not a number of seconds in [0, " +
                                std::to_string(StreamOptions::kMaxTimeoutSeconds) + "] (0: the stream's)");
  if (auto why = st.shape.check(parameters); !why.empty())
    throw SubmissionError("parameter set " + std::to_string(st.next_id) + " of stream " +
                          std::to_string(st.id) + ": " + why);
  // Before waiting for credit, send what is buffered: its answers are the credit.
  if (st.sink->in_flight() + 1 > st.max_in_flight) st.flush_locked();
  // A stream that ended (a client cancelled it whole, its store failed) takes no more sets; an
  // interrupted push throws from here.
  if (!st.sink->acquire(st.next_id))
    throw SubmissionError("stream " + std::to_string(st.id) + ": " + st.sink->stream_error());
  const std::uint64_t id = st.next_id++;
  st.pushed.store(st.next_id);
  if (options.priority != 0 || !st.priorities.empty()) {
    st.priorities.resize(st.buffer.size(), 0.0);  // the sets buffered before it had priority 0
    st.priorities.push_back(options.priority);
  }
  if (timeout != 0 || !st.timeouts.empty()) {
    st.timeouts.resize(st.buffer.size(), 0.0);
    st.timeouts.push_back(timeout);
  }
  st.buffer.push_back(std::move(parameters));
  // Send now when nothing sent is outstanding (latency), else batch until the batch is full.
  if (st.buffer.size() >= kMaxBatch || st.sink->in_flight() <= st.buffer.size()) st.flush_locked();
  return id;
}

void Stream::interrupt() {
  state_->sink->interrupt();
}

void Stream::flush() {
  std::lock_guard lock(state_->mutex);
  state_->flush_locked();
}

CancelledSets Stream::cancel(std::span<const std::uint64_t> ids) {
  std::vector<std::uint64_t> sorted(ids.begin(), ids.end());
  std::sort(sorted.begin(), sorted.end());
  std::vector<IdRange> ranges;  // runs of consecutive ids travel as one range
  for (auto id : sorted) {
    if (!ranges.empty() && ranges.back().last >= id) {
      ranges.back().last = std::max(ranges.back().last, id + 1);
      continue;
    }
    ranges.push_back(IdRange{id, id + 1});
  }
  if (ranges.empty()) return {};
  return state_->cancel(std::move(ranges), {});
}

CancelledSets Stream::cancel(IdRange ids) {
  if (ids.first >= ids.last) return {};
  return state_->cancel({ids}, {});
}

CancelledSets Stream::cancel_where(std::string_view filter) {
  return state_->cancel({}, std::string(filter));
}

void Stream::close() {
  auto& st = *state_;
  std::lock_guard lock(st.mutex);
  if (st.closed) return;
  st.flush_locked();
  st.closed = true;
  st.backend->close(st.id);
}

std::optional<StreamRecord> Stream::next(std::chrono::steady_clock::time_point deadline) {
  flush();
  return state_->sink->next(deadline);
}

bool Stream::drained() const {
  return state_->sink->drained();
}

bool Stream::wait(std::chrono::steady_clock::time_point deadline) {
  flush();
  return state_->sink->wait_finished(deadline);
}

}  // namespace tessera

#include "actors/stream_actor.hpp"

#include <algorithm>
#include <cmath>
#include <deque>
#include <iostream>
#include <map>
#include <span>
#include <sstream>
#include <unordered_map>

#include "actors/generator_actor.hpp"
#include "actors/messages.hpp"
#include "actors/pending_sets.hpp"
#include "actors/protocols/stream.hpp"
#include "actors/protocols/worker.hpp"
#include "actors/python_modules.hpp"
#include "actors/stray_errors.hpp"
#include "graph/printable.hpp"
#include "storage/result_query.hpp"

namespace tessera {
namespace {

// A job should take about this long on a simulation actor: tiny simulations share a job's overhead,
// long ones go one at a time so the pools stay balanced.
constexpr double kTargetJobSeconds = 0.002;
constexpr std::size_t kMaxJob = 4096;

struct StreamState {
  StreamActorArgs args;
  std::vector<StreamWorker> workers;
  std::vector<std::uint32_t> jobs_out;  // per worker
  // Per worker: parameter sets it answered since the scheduler's progress watchdog last asked.
  std::vector<std::uint64_t> answered;
  std::vector<bool> set_up;  // per worker: it has this stream's setup
  // Workers that cannot run the simulation at all (a program missing there), by id: why. They get no jobs.
  std::map<std::uint32_t, std::string> unavailable;
  PendingSets pending;
  struct InFlight {
    Value parameters;
    std::uint32_t worker;
    double priority;
    double pushed_at, dispatched_at;  // SetTimeline's
    double timeout;                   // its own; 0: the stream's
  };
  std::unordered_map<std::uint64_t, InFlight> in_flight;  // until stored
  // Sets that failed and run again: the reasons of their attempts so far, and how many crashed.
  struct Attempts {
    std::vector<std::string> reasons;
    std::uint32_t crashes = 0;
  };
  std::unordered_map<std::uint64_t, Attempts> attempts;
  // Pushes written ahead, by first id: how many of their sets are still unanswered. A push's record is
  // deleted with the result that answers its last set.
  std::map<std::uint64_t, std::uint64_t> pushes;
  double seconds_per_set = -1;     // measured
  std::uint32_t threads_each = 1;  // compute threads one instance of the simulation occupies
  StreamInfo info;                 // its record in the store; info.pushed: sets accepted (ids below it)
  std::uint64_t stored = 0;        // sets answered and stored
  std::uint64_t rerun = 0;         // parameter sets sent again after their worker was lost
  std::uint64_t durable = 0;       // accepted sets below this are synced to disk, and the client was told
  bool sync_queued = false;        // a stream_sync_atom to itself is on its way
  bool closed = false, finished = false;
  std::string cancelled;  // set when a client cancelled the stream whole: why it ends, refusing pushes
  // An ensemble's generator, beside the stream: it pushes the sets and is told their results.
  protocols::generator_actor_type generator;
  std::string generator_error;  // set when it failed: the stream ends with it

  std::uint64_t max_in_flight() const {
    return info.settings.max_in_flight ? info.settings.max_in_flight : StreamSettings::kDefaultMaxInFlight;
  }

  std::uint32_t actors_on(std::size_t w) const {
    return info.settings.pool_size ? info.settings.pool_size
                                   : std::max<std::uint32_t>(1, workers[w].threads / threads_each);
  }
  // Simulation actors over every worker: what the generator keeps busy.
  std::uint32_t slots() const {
    std::uint32_t total = 0;
    for (std::size_t w = 0; w < workers.size(); ++w) total += actors_on(w);
    return total;
  }

  std::size_t job_size() const {
    if (seconds_per_set < 0) return 1;
    return static_cast<std::size_t>(
        std::clamp(kTargetJobSeconds / std::max(seconds_per_set, 1e-9), 1.0, double(kMaxJob)));
  }
};

using StreamActor = protocols::stream_actor_type::stateful_base<StreamState>;

void end(StreamActor* self, std::string error = {}) {
  auto& st = self->state;
  st.finished = true;
  // In order after the last results it was sent (an exit would overtake them): it hears each, then goes.
  if (st.generator) self->send(st.generator, generator_end_atom::value);
  if (st.args.gauge) st.args.gauge->finished(error);
  if (st.args.on_finished) st.args.on_finished();
  st.args.sink->finish(std::move(error));
  self->quit();
}

void finish_if_done(StreamActor* self) {
  auto& st = self->state;
  if (!st.closed || st.finished || !st.pending.empty() || !st.in_flight.empty() || st.sync_queued) return;
  for (std::size_t w = 0; w < st.workers.size(); ++w)
    if (st.set_up[w])
      self->send(caf::actor_cast<protocols::worker_actor_type>(st.workers[w].actor),
                 simulation_end_atom::value, st.args.id);
  try {
    st.info.closed = true;
    st.info.close_requested = true;
    st.args.store->update_stream(st.info);
  } catch (const std::exception& e) {
    end(self, e.what());
    return;
  }
  end(self, st.cancelled.empty() ? st.generator_error : st.cancelled);
}

// No more pushes: it finishes once every accepted set is answered. `ended_early` says why, when its
// client's input had not ended (incomplete: a client may resume it).
void close_stream(StreamActor* self, std::string ended_early) {
  auto& st = self->state;
  if (st.closed || st.finished) return;
  st.closed = true;
  if (st.generator) self->send(st.generator, generator_stop_atom::value);
  st.info.ended_early = std::move(ended_early);
  if (st.args.gauge) st.args.gauge->closed(st.info.ended_early);
  if (!st.info.ended_early.empty())
    std::cerr << "[tessera] stream " << st.args.id << " is incomplete: " << st.info.ended_early << " ("
              << st.info.pushed << " parameter sets accepted"
              << (st.info.settings.input.sets
                      ? " of the " + std::to_string(st.info.settings.input.sets) + " of its input"
                      : std::string())
              << "); what it accepted runs and is stored" << std::endl;
  // Recorded, so that a restart resumes it closed: it finishes once every set is answered.
  st.info.close_requested = true;
  try {
    st.args.store->update_stream(st.info);
  } catch (const std::exception& e) {
    std::cerr << "[tessera] stream " << st.args.id << ": " << e.what() << std::endl;
  }
  finish_if_done(self);
}

// Why a stream closed now ended before its client's input did; empty when it did not. `lost`: its client
// is gone (it never closed the stream), so even an input of unknown length may not have ended.
std::string ended_early(const StreamState& st, const std::string& why, bool lost) {
  if (!st.info.settings.generator.empty()) return {};
  const std::uint64_t expected = st.info.settings.input.sets;
  if (expected > st.info.pushed) return why + " before its input ended";
  if (expected == 0 && lost) return why + " before it closed the stream";
  return {};
}

// Writes a client's push ahead: ids it sent before (again, after a reconnect) are dropped, and what
// would take it past max_in_flight sets unanswered is refused, not kept.
void accept_push(StreamActor* self, StreamBatch& batch) {
  auto& st = self->state;
  const std::uint64_t accepted = st.info.pushed;
  if (batch.first_id > accepted) {
    st.args.sink->refuse("stream " + std::to_string(st.args.id) + ": a push from id " +
                         std::to_string(batch.first_id) + " leaves a gap after id " +
                         std::to_string(accepted) + "; it was refused");
    return;
  }
  const std::uint64_t skip = accepted - batch.first_id;
  if (skip >= batch.parameters.size()) {
    st.args.sink->accept(st.durable);  // all sent before: say so again
    return;
  }
  const std::uint64_t unanswered = accepted - st.stored;
  const std::uint64_t room = st.max_in_flight() > unanswered ? st.max_in_flight() - unanswered : 0;
  const std::uint64_t take = std::min<std::uint64_t>(batch.parameters.size() - skip, room);
  if (take < batch.parameters.size() - skip)
    st.args.sink->refuse("stream " + std::to_string(st.args.id) + ": " +
                         std::to_string(batch.parameters.size() - skip - take) + " parameter sets from id " +
                         std::to_string(accepted + take) + " exceed max_in_flight = " +
                         std::to_string(st.max_in_flight()) + " unanswered; they were refused");
  if (take == 0) return;
  const std::span<const Value> sets(batch.parameters.data() + skip, take);
  const bool prioritised = !batch.priorities.empty();
  if (prioritised && batch.priorities.size() != batch.parameters.size()) {
    st.args.sink->refuse("stream " + std::to_string(st.args.id) + ": a push from id " +
                         std::to_string(batch.first_id) + " has " + std::to_string(batch.priorities.size()) +
                         " priorities for " + std::to_string(batch.parameters.size()) +
                         " parameter sets; it was refused");
    return;
  }
  const auto priorities =
      prioritised ? std::span<const double>(batch.priorities.data() + skip, take) : std::span<const double>();
  const bool timed = !batch.timeouts.empty();
  if (timed && batch.timeouts.size() != batch.parameters.size()) {
    st.args.sink->refuse("stream " + std::to_string(st.args.id) + ": a push from id " +
                         std::to_string(batch.first_id) + " has " + std::to_string(batch.timeouts.size()) +
                         " timeouts for " + std::to_string(batch.parameters.size()) +
                         " parameter sets; it was refused");
    return;
  }
  const auto timeouts =
      timed ? std::span<const double>(batch.timeouts.data() + skip, take) : std::span<const double>();
  st.info.pushed = accepted + take;
  const double pushed_at = timeline_now();
  try {
    // A generator's checkpoint goes with its push only when the push is taken whole (a checkpoint's
    // proposals are all accepted).
    const bool whole = skip == 0 && take == batch.parameters.size();
    st.args.store->accept(st.info, accepted, sets, priorities, pushed_at, timeouts,
                          whole ? batch.checkpoint.get() : nullptr);
  } catch (const std::exception& e) {
    std::cerr << "[tessera] stream " << st.args.id << ": " << e.what() << std::endl;
    end(self, e.what());
    return;
  }
  st.pushes[accepted] = take;
  for (std::uint64_t i = 0; i < take; ++i)
    st.pending.push_back(PendingSet{accepted + i, std::move(batch.parameters[skip + i]),
                                    prioritised ? priorities[i] : 0.0, pushed_at, timed ? timeouts[i] : 0.0});
  // One sync for every push of the next millisecond, or none: a synced result write in between makes
  // everything written before it durable too.
  if (!st.sync_queued) {
    st.sync_queued = true;
    self->delayed_send(self, std::chrono::milliseconds(1), stream_sync_atom::value);
  }
}

// What is accepted so far is durable: the client may forget it.
void acknowledge(StreamActor* self, std::uint64_t durable) {
  auto& st = self->state;
  if (durable <= st.durable) return;
  st.durable = durable;
  if (st.args.gauge) st.args.gauge->accepted(durable);
  st.args.sink->accept(durable);
}

void sync_accepted(StreamActor* self) {
  auto& st = self->state;
  st.sync_queued = false;
  if (st.durable >= st.info.pushed) return;
  try {
    st.args.store->sync();
  } catch (const std::exception& e) {
    std::cerr << "[tessera] stream " << st.args.id << ": " << e.what() << std::endl;
    end(self, e.what());
    return;
  }
  acknowledge(self, st.info.pushed);
}

void dispatch(StreamActor* self) {
  auto& st = self->state;
  if (st.workers.empty()) return;
  const std::size_t size = st.job_size();
  const double dispatched_at = timeline_now();
  const double stream_timeout = st.info.settings.timeout_seconds;
  bool sent = true;
  while (!st.pending.empty() && sent) {
    sent = false;
    for (std::size_t w = 0; w < st.workers.size() && !st.pending.empty(); ++w) {
      // Two jobs per simulation actor: one running, one queued to hide the round trip.
      const std::uint32_t actors = st.actors_on(w);
      if (st.jobs_out[w] >= 2 * actors || st.unavailable.count(st.workers[w].id)) continue;
      if (!st.set_up[w]) {
        // What every job shares travels once, ahead of the first job (messages between two actors stay
        // in order, across processes too). A program's declaration is the scheduler's.
        const SimulationType* type = SimulationRegistry::global().find(st.info.settings.simulation);
        self->send(
            caf::actor_cast<protocols::worker_actor_type>(st.workers[w].actor), simulation_setup_atom::value,
            SimulationSetup{
                st.args.id, st.info.settings.simulation, st.info.settings.config, st.info.settings.pool_size,
                st.info.settings.isolation.value_or(Isolation::thread), st.info.settings.timeout_seconds,
                type ? type->program : nullptr, type ? type->identity : std::string()});
        st.set_up[w] = true;
      }
      SimulationJob job{caf::actor_cast<caf::actor>(self), st.args.id, {}, {}};
      bool timed = false;
      for (std::size_t k = 0; k < size && !st.pending.empty(); ++k) {
        PendingSet next = st.pending.pop();
        job.ids.push_back(next.id);
        job.parameters.push_back(next.parameters);
        // Each set's timeout travels once one of the job's sets has its own.
        if (next.timeout > 0 && !timed) {
          timed = true;
          job.timeouts.assign(job.ids.size() - 1, stream_timeout);
        }
        if (timed) job.timeouts.push_back(next.timeout > 0 ? next.timeout : stream_timeout);
        st.in_flight.emplace(
            next.id, StreamState::InFlight{std::move(next.parameters), st.workers[w].id, next.priority,
                                           next.pushed_at, dispatched_at, next.timeout});
      }
      st.jobs_out[w] += 1;
      self->send(caf::actor_cast<protocols::worker_actor_type>(st.workers[w].actor), simulate_atom::value,
                 std::move(job));
      sent = true;
    }
  }
}

// A failed set runs again while it has retries left, unless it crashed its process twice (a poison
// set). Its reason joins the record's attempts either way.
bool retry(StreamState& st, StreamRecord& record) {
  auto& attempts = st.attempts[record.id];
  if (record.failure == Failure::crash) attempts.crashes += 1;
  const bool again = attempts.reasons.size() < st.info.settings.retries && attempts.crashes < 2;
  if (again) {
    attempts.reasons.push_back((record.node.empty() ? "" : record.node + ": ") + record.error);
    return true;
  }
  if (attempts.crashes >= 2 && attempts.reasons.size() < st.info.settings.retries)
    record.error += " (it crashed its process twice: a poison set, not run again)";
  return false;
}

// Sets to run again go first among their priority, in id order.
void requeue(StreamState& st, std::vector<PendingSet>& again) {
  std::sort(again.begin(), again.end(), [](const PendingSet& a, const PendingSet& b) { return a.id > b.id; });
  for (auto& p : again) st.pending.push_front(std::move(p));
}

// A set in flight, taken back to run again.
PendingSet take_back(StreamState& st, std::unordered_map<std::uint64_t, StreamState::InFlight>::iterator it) {
  PendingSet set{it->first, std::move(it->second.parameters), it->second.priority, it->second.pushed_at,
                 it->second.timeout};
  st.in_flight.erase(it);
  return set;
}

// Stores answers (synced) with the records of the pushes they complete, then delivers them to the
// client. The store's error when it failed: the stream has ended.
std::string store_answers(StreamActor* self, std::vector<StreamResult>& results,
                          std::vector<StreamRecord>& delivered) {
  auto& st = self->state;
  const double stored_at = timeline_now();
  for (auto& r : results) r.timeline.stored = stored_at;
  for (auto& r : delivered) r.timeline.stored = stored_at;
  std::vector<std::uint64_t> completed;
  for (const auto& r : results) {
    auto push = st.pushes.upper_bound(r.id);
    if (push == st.pushes.begin()) continue;
    --push;
    if (--push->second == 0) {
      completed.push_back(push->first);
      st.pushes.erase(push);
    }
  }
  const std::uint64_t written_ahead = st.info.pushed;  // before this synced write in the log
  try {
    // Each id is answered once here (in_flight, pending), so no read-before-write is needed.
    if (!st.args.store->put(st.args.id, results, ResultStore::Check::known_new, completed).empty())
      acknowledge(self, written_ahead);
  } catch (const std::exception& e) {
    std::cerr << "[tessera] stream " << st.args.id << ": " << e.what() << std::endl;
    end(self, e.what());
    return e.what();
  }
  st.stored += results.size();
  if (st.args.gauge) st.args.gauge->stored(results);
  if (st.generator && !results.empty()) self->send(st.generator, generator_tell_atom::value, results);
  st.args.sink->deliver(delivered);
  return {};
}

// The reasons of a set's earlier attempts, now that it has its final answer.
void attach_attempts(StreamState& st, StreamRecord& record) {
  if (st.attempts.empty()) return;
  auto earlier = st.attempts.find(record.id);
  if (earlier == st.attempts.end()) return;
  record.attempts = std::move(earlier->second.reasons);
  st.attempts.erase(earlier);
}

// A worker that cannot run the simulation at all gets no more of the stream's sets, which go to the others;
// with none left that can, the stream ends naming why on each. True when it ended.
bool mark_unavailable(StreamActor* self, const SimulationOutcome& outcome) {
  auto& st = self->state;
  if (!st.unavailable.emplace(outcome.worker, outcome.unavailable).second) return false;
  bool any_left = false;
  for (const auto& w : st.workers) any_left = any_left || !st.unavailable.count(w.id);
  if (any_left) {
    std::cerr << "[tessera] stream " << st.args.id << ": simulation '" << st.info.settings.simulation
              << "' cannot run on " << outcome.unavailable << "; its sets go to the other workers"
              << std::endl;
    return false;
  }
  std::string why;
  for (const auto& [worker, reason] : st.unavailable) (why += why.empty() ? "" : "; ") += reason;
  end(self, "no worker can run simulation '" + st.info.settings.simulation + "': " + why);
  return true;
}

void on_outcome(StreamActor* self, SimulationOutcome& outcome) {
  auto& st = self->state;
  const std::string* ran_on = nullptr;  // the name the worker registered with: who ran each set
  for (std::size_t w = 0; w < st.workers.size(); ++w)
    if (st.workers[w].id == outcome.worker) {
      ran_on = &st.workers[w].name;
      if (st.jobs_out[w] > 0) {
        st.jobs_out[w] -= 1;
        st.answered[w] += outcome.records.size();
      }
    }
  if (!outcome.records.empty()) {
    const double per_set = outcome.busy_seconds / static_cast<double>(outcome.records.size());
    st.seconds_per_set = st.seconds_per_set < 0 ? per_set : 0.7 * st.seconds_per_set + 0.3 * per_set;
    if (st.args.runs) {
      // The job as its worker ran it, when its clock says; else as it is heard of here.
      double finished_at = 0;
      std::uint32_t failed = 0;
      for (const auto& r : outcome.records) {
        finished_at = std::max(finished_at, r.timeline.finished);
        failed += r.failed ? 1 : 0;
      }
      st.args.runs->record_sets(outcome.worker, st.info.settings.simulation,
                                finished_at > 0 ? finished_at : timeline_now(), outcome.busy_seconds,
                                static_cast<std::uint32_t>(outcome.records.size()), failed);
    }
  }
  // A worker that left (retired or lost) may still answer on its way out: what it did not run, or failed
  // to, is out again elsewhere already, and only that rerun answers for it.
  std::vector<PendingSet> again;
  for (auto id : outcome.unrun) {
    auto it = st.in_flight.find(id);
    // Answered meanwhile (cancelled, or a rerun's), or held by another worker now.
    if (it == st.in_flight.end() || it->second.worker != outcome.worker) continue;
    again.push_back(take_back(st, it));
  }
  if (!outcome.unavailable.empty() && mark_unavailable(self, outcome)) return;
  std::vector<StreamResult> results;
  std::vector<StreamRecord> delivered;
  results.reserve(outcome.records.size());
  delivered.reserve(outcome.records.size());
  for (auto& r : outcome.records) {
    auto it = st.in_flight.find(r.id);
    if (it == st.in_flight.end()) continue;  // answered already (a rerun)
    if (ran_on && !ran_on->empty()) r.node = *ran_on;
    if (r.failed && it->second.worker != outcome.worker) continue;
    if (r.failed && st.info.settings.retries > 0 && retry(st, r)) {
      again.push_back(take_back(st, it));
      continue;
    }
    attach_attempts(st, r);
    r.timeline.pushed = it->second.pushed_at;
    r.timeline.dispatched = it->second.dispatched_at;
    results.push_back(StreamResult{r.id, r.value, it->second.parameters, r.failed, r.error, r.node, r.failure,
                                   r.attempts, r.timeline, r.program});
    delivered.push_back(std::move(r));
  }
  requeue(st, again);
  for (const auto& r : delivered) st.in_flight.erase(r.id);
  if (!store_answers(self, results, delivered).empty()) return;
  dispatch(self);
  finish_if_done(self);
}

// Whether `id` is in one of `merged` (sorted, not overlapping).
bool in_ranges(const std::vector<IdRange>& merged, std::uint64_t id) {
  auto after = std::upper_bound(merged.begin(), merged.end(), id,
                                [](std::uint64_t x, const IdRange& range) { return x < range.first; });
  return after != merged.begin() && id < std::prev(after)->last;
}

// Cancels the sets accepted and not answered that the request selects: queued ones leave the queue,
// running ones are answered now and their workers told to stop them; each is stored as cancelled.
void cancel(StreamActor* self, StreamCancel& request) {
  auto& st = self->state;
  const std::string where = "stream " + std::to_string(st.args.id) + ": ";
  const auto reply = [&request](CancelledSets counts, std::string error) {
    if (request.reply) (*request.reply)(counts, std::move(error));
  };
  if (request.ranges.empty() && request.where.empty() && !request.whole)
    return reply({}, where + "a cancellation selects sets by ids or by a filter; this one gave neither");
  ResultFilter filter;
  try {
    filter = ResultFilter::parse(request.where,
                                 FieldNames{st.info.settings.parameter_names, st.info.result_names});
  } catch (const QueryError& e) {
    return reply({}, where + e.what());
  }
  // A filter that compares nothing would cancel every set: say so rather than do it.
  if (!request.where.empty() && !filter.has_clauses())
    return reply({}, where + "the filter " + in_quotes(request.where) +
                         " has no clause on id or parameters, so it would cancel every set; give one "
                         "(e.g. 'id >= 0' to cancel them all)");
  auto ranges = std::move(request.ranges);
  std::sort(ranges.begin(), ranges.end());
  // Overlapping ranges merged, so that the search below finds the one that holds an id.
  std::vector<IdRange> merged;
  for (const auto& r : ranges) {
    if (r.first >= r.last) continue;
    if (!merged.empty() && r.first <= merged.back().last)
      merged.back().last = std::max(merged.back().last, r.last);
    else
      merged.push_back(r);
  }
  if (!ranges.empty() && merged.empty()) return reply({}, "");  // only empty ranges: nothing selected
  const auto selected = [&](std::uint64_t id, const Value& parameters) {
    return request.whole || ((merged.empty() || in_ranges(merged, id)) && filter.matches_set(id, parameters));
  };
  std::vector<StreamResult> results;
  std::vector<StreamRecord> delivered;
  const auto answer = [&](std::uint64_t id, Value parameters, double pushed_at, double dispatched_at) {
    const bool running = dispatched_at > 0;  // sets in flight always have their dispatch time
    StreamRecord record{
        id,   Value{},
        true, running ? "cancelled by request while it ran" : "cancelled by request before it ran",
        {},   Failure::cancelled};
    attach_attempts(st, record);
    record.timeline.pushed = pushed_at;
    record.timeline.dispatched = dispatched_at;
    results.push_back(StreamResult{id,
                                   Value{},
                                   std::move(parameters),
                                   true,
                                   record.error,
                                   {},
                                   Failure::cancelled,
                                   record.attempts,
                                   record.timeline});
    delivered.push_back(std::move(record));
  };
  CancelledSets counts;
  for (auto& set : st.pending.take_if([&](const PendingSet& p) { return selected(p.id, p.parameters); })) {
    answer(set.id, std::move(set.parameters), set.pushed_at, 0);
    ++counts.queued;
  }
  std::map<std::uint32_t, std::vector<std::uint64_t>> running;  // by worker
  for (auto it = st.in_flight.begin(); it != st.in_flight.end();) {
    if (!selected(it->first, it->second.parameters)) {
      ++it;
      continue;
    }
    running[it->second.worker].push_back(it->first);
    answer(it->first, std::move(it->second.parameters), it->second.pushed_at, it->second.dispatched_at);
    it = st.in_flight.erase(it);
    ++counts.running;
  }
  if (!results.empty())
    if (auto failed = store_answers(self, results, delivered); !failed.empty())
      return reply({}, where + "the cancelled sets could not be stored: " + failed);
  // A late answer of these is dropped (they are no longer in flight); the worker stops what it can.
  for (auto& [worker, ids] : running)
    for (const auto& w : st.workers)
      if (w.id == worker)
        self->send(caf::actor_cast<protocols::worker_actor_type>(w.actor), simulation_cancel_atom::value,
                   SimulationCancel{st.args.id, std::move(ids)});
  if (counts.queued + counts.running > 0)
    std::cerr << "[tessera] stream " << st.args.id << ": cancelled " << counts.queued << " queued and "
              << counts.running << " running parameter sets" << std::endl;
  reply(counts, "");
  if (request.whole) {
    // Its pusher hears this as the stream's end, and pushes after it are refused.
    st.cancelled =
        "stream " + std::to_string(st.args.id) + " was cancelled by a client (tessera stream cancel)";
    close_stream(self, ended_early(st, "cancelled by a client", false));
  }
  dispatch(self);
  finish_if_done(self);
}

// A resumed stream: its record and the sets written ahead and not answered come from the store.
void resume(StreamActor* self) {
  auto& st = self->state;
  auto info = st.args.store->stream(st.args.id);
  if (!info) throw StoreError("stream " + std::to_string(st.args.id) + " has no record to resume from");
  st.info = *info;
  std::vector<std::uint64_t> answered;  // pushes answered whole before the restart
  for (auto& push : st.args.store->pending(st.args.id)) {
    if (push.unanswered.empty()) {
      answered.push_back(push.first_id);
      continue;
    }
    st.pushes[push.first_id] = push.unanswered.size();
    for (std::size_t i = 0; i < push.unanswered.size(); ++i)
      st.pending.push_back(PendingSet{push.unanswered[i].first, std::move(push.unanswered[i].second),
                                      push.priorities.empty() ? 0.0 : push.priorities[i], push.accepted_at,
                                      push.timeouts.empty() ? 0.0 : push.timeouts[i]});
  }
  st.args.store->forget_pushes(st.args.id, answered);
  st.stored = st.info.pushed - std::min<std::uint64_t>(st.info.pushed, st.pending.size());
  st.durable = st.info.pushed;  // it survived the restart
  st.closed = st.info.close_requested;
  if (st.args.gauge) {
    st.args.gauge->resumed(st.info.pushed, st.stored);
    if (st.closed) st.args.gauge->closed(st.info.ended_early);
  }
  std::cerr << "[tessera] stream " << st.args.id << " ('" << st.info.settings.simulation
            << "') resumed: " << st.info.pushed << " parameter sets accepted, " << st.pending.size()
            << " to run again" << (st.closed ? ", closed" : "") << std::endl;
}

// The accepted sets not answered yet: queued and out on workers.
std::vector<std::uint64_t> unanswered_ids(StreamState& st) {
  std::vector<std::uint64_t> ids;
  ids.reserve(st.in_flight.size() + st.pending.size());
  for (const auto& [id, set] : st.in_flight) ids.push_back(id);
  st.pending.for_each([&](const PendingSet& p) { ids.push_back(p.id); });
  return ids;
}

// A client that reconnected: what it waits for and the store has goes to it now, the rest as it comes.
bool attach(StreamActor* self, StreamAttach& request) {
  auto& st = self->state;
  st.args.sink = std::move(request.sink);
  std::vector<StreamRecord> again;
  for (std::uint64_t id : request.unanswered) {
    if (id >= st.info.pushed || st.in_flight.count(id)) continue;
    if (auto stored = st.args.store->get(st.args.id, id)) again.push_back(stored->record());
  }
  if (request.resend_from < st.info.pushed)
    st.args.store->scan(st.args.id, request.resend_from, st.info.pushed, [&](const StreamResult& r) {
      again.push_back(r.record());
      return true;
    });
  if (!again.empty()) st.args.sink->deliver(again);
  st.args.sink->accept(st.durable);
  return true;
}

protocols::stream_actor_type::behavior_type stream_actor(StreamActor* self, StreamActorArgs args) {
  self->state.args = std::move(args);
  auto& st = self->state;
  // The stream runs by its record's settings (a resumed one's come from the store, the same).
  st.info.id = st.args.id;
  st.info.settings = std::move(st.args.settings);
  survive_stray_errors(self, "stream " + std::to_string(st.info.id));
  if (const auto* type = SimulationRegistry::global().find(st.info.settings.simulation)) {
    st.threads_each = type->threads;
    if (type->program) {
      st.info.program = true;
      st.info.result_names = type->program->result.outputs;
    }
    if (type->python) st.info.result_names = python_outputs(*type, st.info.settings.config.get());
  }
  if (st.args.resumed) {
    try {
      resume(self);
    } catch (const std::exception& e) {
      std::cerr << "[tessera] stream " << st.args.id << " cannot be resumed: " << e.what() << std::endl;
      end(self, e.what());
    }
  }
  if (!st.finished && !st.info.settings.generator.empty() && !st.closed) {
    const auto* type = GeneratorRegistry::global().find(st.info.settings.generator);
    if (!type) {
      end(self, "no generator is registered as '" + st.info.settings.generator + "' on this node");
    } else {
      // A generator learns the names the stream stores its results under (tessera.outputs), unless its
      // config says: a Python one hands them to ingest as the outputs' keys.
      auto generator_config = st.info.settings.generator_config;
      if (!st.info.result_names.empty() && generator_config && !generator_config->has(kClientOutputsKey)) {
        auto with_names = std::make_shared<Config>(*generator_config);
        Value::List names(st.info.result_names.begin(), st.info.result_names.end());
        with_names->set(std::string(kClientOutputsKey), Value(std::move(names)));
        generator_config = std::move(with_names);
      }
      st.generator = spawn_generator_actor(
          self->home_system(),
          GeneratorActorArgs{st.args.id, self->address(), type, std::move(generator_config),
                             st.info.settings.budget, st.max_in_flight(), st.args.store, st.args.resumed,
                             st.info.pushed});
    }
  }
  if (!st.finished)
    self->request(self->state.args.scheduler, caf::infinite, stream_workers_atom::value)
        .then([=](std::vector<StreamWorker>& workers) {
          auto& st = self->state;
          st.workers = std::move(workers);
          st.jobs_out.assign(st.workers.size(), 0);
          st.answered.assign(st.workers.size(), 0);
          st.set_up.assign(st.workers.size(), false);
          if (st.workers.empty() && !st.args.resumed) {
            end(self, "the cluster has no workers to run simulation '" + st.info.settings.simulation + "'");
            return;
          }
          if (st.generator) self->send(st.generator, generator_slots_atom::value, st.slots());
          dispatch(self);
          finish_if_done(self);
        });
  return {
      [=](stream_push_atom, StreamBatch& batch) {
        if (self->state.finished) return;
        if (!self->state.cancelled.empty()) {
          self->state.args.sink->refuse(self->state.cancelled + ": the push from id " +
                                        std::to_string(batch.first_id) + " was refused");
          return;
        }
        // An ensemble closed by its client takes no more of its generator's sets.
        if (self->state.closed && self->state.generator) return;
        accept_push(self, batch);
        dispatch(self);
      },
      [=](stream_sync_atom) {
        if (self->state.finished) return;
        sync_accepted(self);
        finish_if_done(self);
      },
      [=](stream_attach_atom, StreamAttach& request) { return attach(self, request); },
      [=](stream_cancel_atom, StreamCancel& request) {
        if (self->state.finished) {
          if (request.reply) (*request.reply)({}, "");
          return;
        }
        cancel(self, request);
      },
      [=](simulated_atom, SimulationOutcome& outcome) { on_outcome(self, outcome); },
      [=](worker_joined_atom, const StreamWorker& joined) {
        auto& st = self->state;
        st.workers.push_back(joined);
        st.jobs_out.push_back(0);
        st.answered.push_back(0);
        st.set_up.push_back(false);
        if (st.generator) self->send(st.generator, generator_slots_atom::value, st.slots());
        dispatch(self);
      },
      [=](worker_left_atom, std::uint32_t worker) {
        // Lost or stalled: its unanswered parameter sets run again elsewhere, first. A late answer from
        // it counts if it comes while the set is out again (the rerun's answer is then dropped as answered
        // already) and is dropped while the set waits here; either way each id is stored once.
        auto& st = self->state;
        for (std::size_t w = 0; w < st.workers.size(); ++w)
          if (st.workers[w].id == worker) {
            st.workers.erase(st.workers.begin() + static_cast<std::ptrdiff_t>(w));
            st.jobs_out.erase(st.jobs_out.begin() + static_cast<std::ptrdiff_t>(w));
            st.answered.erase(st.answered.begin() + static_cast<std::ptrdiff_t>(w));
            st.set_up.erase(st.set_up.begin() + static_cast<std::ptrdiff_t>(w));
            break;
          }
        std::vector<PendingSet> again;
        for (auto it = st.in_flight.begin(); it != st.in_flight.end();) {
          if (it->second.worker != worker) {
            ++it;
            continue;
          }
          auto next = std::next(it);
          again.push_back(take_back(st, it));
          it = next;
        }
        requeue(st, again);
        st.rerun += again.size();
        if (st.generator) self->send(st.generator, generator_slots_atom::value, st.slots());
        dispatch(self);
      },
      [=](stream_close_atom) { close_stream(self, ended_early(self->state, "closed by the client", false)); },
      [=](stream_abandon_atom, const std::string& why) {
        close_stream(self, ended_early(self->state, why, true));
      },
      [=](stream_reopen_atom, StreamReopen& request) -> StreamReopened {
        auto& st = self->state;
        // Only a stream that has ended answers kNotReopened (it has left the cluster's map then, so a
        // new actor may take its id); one cancelled whole and still answering goes on with the new
        // client (what was cancelled stays cancelled).
        if (st.finished || !st.info.settings.generator.empty() || request.given_up->load())
          return StreamReopened{protocols::kNotReopened};
        st.cancelled.clear();
        // The new client's sink answers for what is still out before any of it can come back.
        StreamReopened reopened{st.info.pushed, unanswered_ids(st), st.max_in_flight()};
        request.sink->take_over(reopened.unanswered, reopened.max_in_flight);
        // A client still pushing it hears that another took it over (its pushes and waits end).
        st.args.sink->finish("stream " + std::to_string(st.args.id) + " was resumed by another client");
        st.args.sink = std::move(request.sink);
        st.closed = false;
        st.info.close_requested = false;
        st.info.ended_early.clear();
        if (st.args.gauge) st.args.gauge->reopened();
        try {
          st.args.store->update_stream(st.info);
        } catch (const std::exception& e) {
          std::cerr << "[tessera] stream " << st.args.id << ": " << e.what() << std::endl;
        }
        std::cerr << "[tessera] stream " << st.args.id << " resumed by a client from id " << st.info.pushed
                  << std::endl;
        st.args.sink->accept(st.durable);
        return reopened;
      },
      [=](generator_failed_atom, std::string& error) { self->state.generator_error = std::move(error); },
      // The scheduler decides which worker stalled; the stream only says what it sent where.
      [=](stream_progress_atom) -> std::vector<StreamLoad> {
        auto& st = self->state;
        std::vector<StreamLoad> loads;
        for (std::size_t w = 0; w < st.workers.size(); ++w) {
          if (st.jobs_out[w] == 0 && st.answered[w] == 0) continue;
          loads.push_back(StreamLoad{st.workers[w].id, st.jobs_out[w], st.answered[w]});
          st.answered[w] = 0;
        }
        return loads;
      },
  };
}

}  // namespace

caf::actor spawn_stream_actor(caf::actor_system& system, StreamActorArgs args) {
  return caf::actor_cast<caf::actor>(system.spawn(stream_actor, std::move(args)));
}

}  // namespace tessera

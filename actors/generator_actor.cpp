#include "actors/generator_actor.hpp"

#include <algorithm>
#include <chrono>
#include <iostream>
#include <optional>

#include "actors/messages.hpp"
#include "actors/stray_errors.hpp"

namespace tessera {
namespace {

// Whether `id` is in one of `ranges` (sorted, not overlapping).
bool in_ranges(const std::vector<IdRange>& ranges, std::uint64_t id) {
  auto it = std::upper_bound(ranges.begin(), ranges.end(), id,
                             [](std::uint64_t x, const IdRange& r) { return x < r.first; });
  return it != ranges.begin() && std::prev(it)->last > id;
}

// Adds `id` to `ranges` (sorted, merged). Results come in about id order, so this extends a range near
// the end.
void add_to_ranges(std::vector<IdRange>& ranges, std::uint64_t id) {
  auto it = std::upper_bound(ranges.begin(), ranges.end(), id,
                             [](std::uint64_t x, const IdRange& r) { return x < r.first; });
  if (it != ranges.begin() && std::prev(it)->last > id) return;
  if (it != ranges.begin() && std::prev(it)->last == id) {
    std::prev(it)->last = id + 1;
    if (it != ranges.end() && it->first == id + 1) {
      std::prev(it)->last = it->last;
      ranges.erase(it);
    }
    return;
  }
  if (it != ranges.end() && it->first == id + 1) {
    it->first = id;
    return;
  }
  ranges.insert(it, IdRange{id, id + 1});
}

// A checkpoint at most this often: a generator's state can grow with every result (aposmm's does).
constexpr auto kCheckpointInterval = std::chrono::seconds(1);

struct GeneratorState {
  GeneratorActorArgs args;
  std::unique_ptr<Generator> generator;
  std::uint32_t slots = 0;        // simulation actors the stream has now
  std::uint64_t asked = 0;        // the stream's ids proposed: below it
  std::uint64_t sequence = 0;     // sets the generator proposed (its k-th set is its id k)
  std::uint64_t outstanding = 0;  // proposed and not told
  std::vector<IdRange> told;      // stream ids whose results came
  // Stream id `first` on is the generator's set `second` on (one segment, plus one per resume), and the
  // ids proposed by a state a restart lost (orphans: their results are not the generator's to read).
  std::vector<std::pair<std::uint64_t, std::uint64_t>> segments{{0, 0}};
  std::vector<IdRange> orphans;
  std::chrono::steady_clock::time_point last_checkpoint{};
  bool stopped = false;  // no more asks: done, budget spent, failed, or closed by the client
  bool failed = false;   // it threw: told nothing more either
  std::string name;      // "generator 'x' of stream N", for messages

  // The generator's own number for stream id `id`; nullopt for an orphan.
  std::optional<std::uint64_t> sequence_of(std::uint64_t id) const {
    if (in_ranges(orphans, id)) return std::nullopt;
    auto it = std::upper_bound(segments.begin(), segments.end(), id,
                               [](std::uint64_t x, const auto& segment) { return x < segment.first; });
    if (it == segments.begin()) return std::nullopt;
    --it;
    return it->second + (id - it->first);
  }
};

using GeneratorActor = protocols::generator_actor_type::stateful_pointer<GeneratorState>;

// No more sets: the stream finishes once those out are answered.
void stop(GeneratorActor self, const std::string& why, bool failed = false) {
  auto& st = self->state;
  if (st.stopped) return;
  st.stopped = true;
  st.failed = failed;
  std::cerr << "[tessera] " << st.name << ": " << why << std::endl;
  const auto stream = caf::actor_cast<caf::actor>(st.args.stream);
  if (!stream) return;  // gone: its down message ends this actor
  if (failed) caf::anon_send(stream, generator_failed_atom::value, st.name + ": " + why);
  caf::anon_send(stream, stream_close_atom::value);
}

// Asks for what fills every slot twice over, within the budget and the stream's max_in_flight.
void top_up(GeneratorActor self) {
  auto& st = self->state;
  if (st.stopped || st.slots == 0) return;
  try {
    if (st.generator->done()) return stop(self, "done after " + std::to_string(st.asked) + " parameter sets");
    if (st.asked >= st.args.budget)
      return stop(self, "its budget of " + std::to_string(st.args.budget) + " parameter sets is spent");
    const std::uint64_t wanted = std::min<std::uint64_t>(
        {2ull * st.slots, st.args.max_in_flight, st.args.budget - st.asked + st.outstanding});
    if (st.outstanding >= wanted) return;
    auto proposals = st.generator->ask(static_cast<std::size_t>(wanted - st.outstanding));
    if (proposals.size() > wanted - st.outstanding)
      proposals.resize(static_cast<std::size_t>(wanted - st.outstanding));
    if (proposals.empty()) {
      if (st.outstanding == 0)
        stop(self, "it proposed nothing with no set outstanding, after " + std::to_string(st.asked) +
                       " parameter sets");
      return;
    }
    const std::uint64_t first = st.asked;
    st.asked += proposals.size();
    st.sequence += proposals.size();
    st.outstanding += proposals.size();
    StreamBatch push{first, std::move(proposals)};
    // The stream writes it with the push, in one batch, so its proposals are always accepted.
    const auto now = std::chrono::steady_clock::now();
    if (st.generator->can_save() && (first == 0 || now - st.last_checkpoint >= kCheckpointInterval)) {
      st.last_checkpoint = now;
      push.checkpoint = std::make_shared<const GeneratorCheckpoint>(
          GeneratorCheckpoint{st.generator->save(), st.asked, st.told, st.sequence, st.segments, st.orphans});
    }
    if (const auto stream = caf::actor_cast<caf::actor>(st.args.stream))
      caf::anon_send(stream, stream_push_atom::value, std::move(push));
  } catch (const std::exception& e) {
    stop(self, std::string("it failed: ") + e.what(), true);
  }
}

void tell(GeneratorActor self, const StreamResult& result) {
  auto& st = self->state;
  if (in_ranges(st.told, result.id)) return;
  add_to_ranges(st.told, result.id);
  if (st.outstanding > 0) st.outstanding -= 1;
  const auto sequence = st.sequence_of(result.id);
  // A generator that stopped asking (done, its budget spent) still hears the results of what it proposed.
  if (st.failed || !sequence) return;
  try {
    st.generator->tell(*sequence, result.parameters, result.failed ? nullptr : &result.value, result.error);
  } catch (const std::exception& e) {
    stop(self, "it failed when told the result of set " + std::to_string(result.id) + ": " + e.what(), true);
  }
}

// After a restart: the state of the last checkpoint, and the results stored since told now. What it
// proposed after that checkpoint is lost with the state that proposed it: those sets (accepted, so they
// run) become orphans, and the generator goes on from its checkpoint with the stream's next ids.
void resume(GeneratorActor self) {
  auto& st = self->state;
  if (!st.generator->can_save())
    return stop(self, "it cannot save its state, so it does not resume; the sets accepted still run");
  auto saved = st.args.store->generator(st.args.stream_id);
  if (!saved) {
    if (st.args.accepted > 0)
      return stop(self, "its checkpoint is missing; the sets accepted still run", true);
    return;  // stopped before its first push: it starts afresh
  }
  st.generator->load(saved->state);
  st.sequence = saved->sequence;
  st.told = saved->told;
  st.segments = saved->segments;
  st.orphans = saved->orphans;
  if (st.segments.empty()) st.segments.emplace_back(0, 0);
  st.asked = std::max(saved->asked, st.args.accepted);
  if (st.asked > saved->asked) {
    st.orphans.push_back(IdRange{saved->asked, st.asked});
    st.segments.emplace_back(st.asked, st.sequence);
  }
  std::vector<StreamResult> missed;
  st.args.store->scan(st.args.stream_id, 0, st.asked, [&](const StreamResult& r) {
    if (!in_ranges(st.told, r.id)) missed.push_back(r);
    return true;
  });
  std::uint64_t told = 0;
  for (const auto& r : st.told) told += r.last - r.first;
  st.outstanding = st.asked - std::min(st.asked, told);
  std::cerr << "[tessera] " << st.name << " resumed from its checkpoint at " << saved->asked << " of "
            << st.asked << " parameter sets proposed; " << missed.size() << " results told again"
            << std::endl;
  for (const auto& r : missed) tell(self, r);
}

protocols::generator_actor_type::behavior_type generator_actor(GeneratorActor self, GeneratorActorArgs args) {
  auto& st = self->state;
  st.args = std::move(args);
  st.name = "generator '" + st.args.type->name + "' of stream " + std::to_string(st.args.stream_id);
  survive_stray_errors(self, st.name);
  // A stream that ends tells its generator in order (generator_end); one its node lets go of without
  // ending it (a cluster closed under it) does not, and its down message, which comes after everything
  // it sent, ends the generator instead.
  self->monitor(caf::actor_cast<caf::actor>(st.args.stream));
  self->set_down_handler([=](caf::down_msg&) { self->quit(); });
  try {
    st.generator = st.args.type->make(*st.args.config);
    if (st.args.resumed) resume(self);
  } catch (const std::exception& e) {
    stop(self, std::string("it could not be built: ") + e.what(), true);
  }
  return {
      [=](generator_slots_atom, std::uint32_t slots) {
        self->state.slots = slots;
        top_up(self);
      },
      [=](generator_tell_atom, const std::vector<StreamResult>& results) {
        for (const auto& r : results) tell(self, r);
        top_up(self);
      },
      [=](generator_stop_atom) { self->state.stopped = true; },
      [=](generator_end_atom) { self->quit(); },
  };
}

}  // namespace

protocols::generator_actor_type spawn_generator_actor(caf::actor_system& system, GeneratorActorArgs args) {
  return system.spawn(generator_actor, std::move(args));
}

}  // namespace tessera

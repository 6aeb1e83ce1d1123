#include "nodes/stream_codec.hpp"

#include "actors/stream_actor.hpp"

#include <cmath>

#include "graph/printable.hpp"
#include "messages/outcome_codec.hpp"

namespace tessera::wire {
namespace {
unsigned count(std::size_t n) {
  return static_cast<unsigned>(n);
}
// Earlier attempts one record may list: every retry a stream may make.
constexpr std::size_t kMaxAttempts = StreamSettings::kMaxRetries;
}  // namespace

void encode(const Config& config, capnp::List<ConfigEntry>::Builder out, Attachments& attachments) {
  unsigned i = 0;
  for (const auto& [key, value] : config.entries()) {
    out[i].setKey(key);
    encode(value, out[i].initValue(), attachments);
    ++i;
  }
}

std::shared_ptr<const Config> decode(capnp::List<ConfigEntry>::Reader in, const Frames& frames) {
  auto config = std::make_shared<Config>();
  for (auto entry : in) config->set(entry.getKey(), decode(entry.getValue(), frames));
  return config;
}

void encode(const StreamSettings& settings, StreamOpen::Builder out, Attachments& attachments) {
  out.setSimulation(settings.simulation);
  out.setPoolSize(settings.pool_size);
  out.setMaxInFlight(settings.max_in_flight);
  out.setIsolation(settings.isolation ? static_cast<std::uint8_t>(*settings.isolation) + 1 : 0);
  out.setTimeoutSeconds(settings.timeout_seconds);
  out.setRetries(settings.retries);
  auto names = out.initParameterNames(count(settings.parameter_names.size()));
  for (std::size_t i = 0; i < settings.parameter_names.size(); ++i)
    names.set(count(i), settings.parameter_names[i]);
  if (settings.config)
    encode(*settings.config, out.initConfig(count(settings.config->entries().size())), attachments);
  out.setInputSets(settings.input.sets);
  out.setInputName(settings.input.name);
  out.setInputDigest(settings.input.digest);
  if (!settings.generator.empty()) {
    out.setGenerator(settings.generator);
    out.setBudget(settings.budget);
    if (settings.generator_config)
      encode(*settings.generator_config,
             out.initGeneratorConfig(count(settings.generator_config->entries().size())), attachments);
  }
}

StreamSettings decode(StreamOpen::Reader in, const Frames& frames) {
  StreamSettings settings;
  settings.simulation = in.getSimulation();
  const std::string where = "stream of '" + printable(settings.simulation, 200) + "': ";
  if (in.getIsolation() > 2)
    throw WireError(where + "isolation " + std::to_string(in.getIsolation()) +
                    " is unknown (0: the node's default, 1: thread, 2: process)");
  if (in.getParameterNames().size() > StreamSettings::kMaxParameterNames)
    throw WireError(where + std::to_string(in.getParameterNames().size()) +
                    " parameter names exceed the limit of " +
                    std::to_string(StreamSettings::kMaxParameterNames));
  settings.config = decode(in.getConfig(), frames);
  settings.pool_size = in.getPoolSize();
  settings.max_in_flight = in.getMaxInFlight();
  if (in.getIsolation() > 0) settings.isolation = static_cast<Isolation>(in.getIsolation() - 1);
  settings.timeout_seconds = in.getTimeoutSeconds();
  settings.retries = in.getRetries();
  for (auto name : in.getParameterNames()) settings.parameter_names.emplace_back(name);
  settings.generator = in.getGenerator();
  settings.budget = in.getBudget();
  if (!settings.generator.empty()) settings.generator_config = decode(in.getGeneratorConfig(), frames);
  settings.input.sets = in.getInputSets();
  settings.input.name = in.getInputName();
  settings.input.digest = in.getInputDigest();
  return settings;
}

capnp::List<StreamRecord>::Builder init_records(StreamResults::Builder out, std::size_t n) {
  return out.initRecords(count(n));
}

void set_nodes(const NodeNames& nodes, capnp::List<capnp::Text>::Builder out) {
  for (std::size_t i = 0; i < nodes.names().size(); ++i) out.set(count(i), nodes.names()[i]);
}

void encode(const tessera::StreamRecord& record, StreamRecord::Builder out, Attachments& attachments,
            NodeNames* nodes) {
  out.setId(record.id);
  if (nodes) out.setNodeIndex(nodes->index(record.node));
  out.setFailed(record.failed);
  if (record.failed) {
    out.setError(record.error);
    out.setNode(record.node);
    out.setFailure(static_cast<std::uint8_t>(record.failure));
  } else {
    encode(record.value, out.initValue(), attachments);
  }
  if (!record.attempts.empty()) {
    auto attempts = out.initAttempts(count(record.attempts.size()));
    for (std::size_t i = 0; i < record.attempts.size(); ++i) attempts.set(count(i), record.attempts[i]);
  }
  if (record.timeline != SetTimeline{}) {
    const auto& t = record.timeline;
    auto times = out.initTimeline(5);
    unsigned i = 0;
    for (double stamp : {t.pushed, t.dispatched, t.started, t.finished, t.stored}) times.set(i++, stamp);
  }
  if (record.program) encode(*record.program, out.initProgram());
}

std::vector<tessera::StreamRecord> decode(capnp::List<StreamRecord>::Reader in, const Frames& frames,
                                          capnp::List<capnp::Text>::Reader nodes) {
  std::vector<tessera::StreamRecord> out;
  out.reserve(in.size());
  for (auto r : in) {
    tessera::StreamRecord record;
    record.id = r.getId();
    record.failed = r.getFailed();
    if (const unsigned index = r.getNodeIndex(); index > 0 && index <= nodes.size())
      record.node = nodes[index - 1];
    if (record.failed) {
      record.error = r.getError();
      if (record.node.empty()) record.node = r.getNode();
      if (r.getFailure() > static_cast<std::uint8_t>(kLastFailure))
        throw WireError("the record of set " + std::to_string(record.id) + " has failure kind " +
                        std::to_string(r.getFailure()) + ", which is unknown");
      // A peer that does not say why a set failed: the simulation raised an error.
      record.failure = r.getFailure() == 0 ? Failure::error : static_cast<Failure>(r.getFailure());
    } else {
      record.value = decode(r.getValue(), frames);
    }
    if (r.getAttempts().size() > kMaxAttempts)
      throw WireError("the record of set " + std::to_string(record.id) + " lists " +
                      std::to_string(r.getAttempts().size()) + " attempts, more than the " +
                      std::to_string(kMaxAttempts) + " a stream makes");
    for (auto attempt : r.getAttempts()) record.attempts.emplace_back(attempt);
    if (auto times = r.getTimeline(); times.size() != 0) {
      if (times.size() != 5)
        throw WireError("the record of set " + std::to_string(record.id) + " has a timeline of " +
                        std::to_string(times.size()) + " times, not 5");
      for (double stamp : times)
        if (!std::isfinite(stamp) || stamp < 0)
          throw WireError("the record of set " + std::to_string(record.id) +
                          " has a time that is not a number of seconds since 1970");
      record.timeline = SetTimeline{times[0], times[1], times[2], times[3], times[4]};
    }
    if (r.hasProgram())
      record.program = std::make_shared<const tessera::ProgramOutcome>(
          decode(r.getProgram(), "the record of set " + std::to_string(record.id), true));
    out.push_back(std::move(record));
  }
  return out;
}

std::vector<double> decode_timeouts(capnp::List<double>::Reader in, std::size_t sets,
                                    const std::string& where) {
  if (in.size() == 0) return {};
  if (in.size() != sets)
    throw WireError(where + " has " + std::to_string(in.size()) + " timeouts for " + std::to_string(sets) +
                    " parameter sets");
  std::vector<double> out;
  out.reserve(in.size());
  for (unsigned i = 0; i < in.size(); ++i) {
    if (!std::isfinite(in[i]) || in[i] < 0 || in[i] > StreamSettings::kMaxTimeoutSeconds)
      throw WireError(where + ": timeout " + std::to_string(in[i]) + " of its parameter set " +
                      std::to_string(i) + " is not a number of seconds in [0, " +
                      std::to_string(StreamSettings::kMaxTimeoutSeconds) + "]");
    out.push_back(in[i]);
  }
  return out;
}

void encode(const SimulationJob& job, Simulate::Builder out, Attachments& attachments) {
  out.setStreamId(job.stream_id);
  auto ids = out.initIds(count(job.ids.size()));
  for (std::size_t i = 0; i < job.ids.size(); ++i) ids.set(count(i), job.ids[i]);
  auto parameters = out.initParameters(count(job.parameters.size()));
  for (std::size_t i = 0; i < job.parameters.size(); ++i)
    encode(job.parameters[i], parameters[count(i)], attachments);
  if (!job.timeouts.empty()) {
    auto timeouts = out.initTimeouts(count(job.timeouts.size()));
    for (std::size_t i = 0; i < job.timeouts.size(); ++i) timeouts.set(count(i), job.timeouts[i]);
  }
}

SimulationJob decode(Simulate::Reader in, const Frames& frames, caf::actor stream) {
  if (in.getIds().size() != in.getParameters().size())
    throw WireError("a simulate message with " + std::to_string(in.getIds().size()) + " ids and " +
                    std::to_string(in.getParameters().size()) + " parameter sets");
  SimulationJob job;
  job.stream = std::move(stream);
  job.stream_id = in.getStreamId();
  for (auto id : in.getIds()) job.ids.push_back(id);
  for (auto p : in.getParameters()) job.parameters.push_back(decode(p, frames));
  job.timeouts = decode_timeouts(in.getTimeouts(), job.ids.size(),
                                 "a simulate message of stream " + std::to_string(job.stream_id));
  return job;
}

}  // namespace tessera::wire

// The codec for streams of parameter sets on the wire (client <-> scheduler <-> worker): configs,
// records, simulation jobs. Decoding treats input as hostile and throws WireError.
#pragma once

#include <memory>

#include "actors/messages.hpp"
#include "graph/node_names.hpp"
#include "graph/stream_settings.hpp"
#include "messages/protocol.capnp.h"
#include "messages/wire_codec.hpp"

namespace tessera::wire {

void encode(const Config& config, capnp::List<ConfigEntry>::Builder out, Attachments& attachments);
std::shared_ptr<const Config> decode(capnp::List<ConfigEntry>::Reader in, const Frames& frames);

// A stream's settings on the wire: StreamOpen's fields but its requestId and simulationIdentity.
// Isolation travels as 0 (unset: the scheduler's default), 1 (thread), 2 (process).
void encode(const StreamSettings& settings, StreamOpen::Builder out, Attachments& attachments);
// What no StreamSettings can hold (an unknown isolation, more parameter names than it takes) is a
// WireError naming the field; settings.check() judges the rest.
StreamSettings decode(StreamOpen::Reader in, const Frames& frames);

capnp::List<StreamRecord>::Builder init_records(StreamResults::Builder out, std::size_t count);
// With `nodes`, who ran the set goes as an index into the message's table (NodeNames), set after the
// records (set_nodes); without, only a failure's record names it.
void encode(const tessera::StreamRecord& record, StreamRecord::Builder out, Attachments& attachments,
            NodeNames* nodes = nullptr);
void set_nodes(const NodeNames& nodes, capnp::List<capnp::Text>::Builder out);
template <class Builder>
void set_nodes(const NodeNames& nodes, Builder out) {
  if (!nodes.names().empty()) set_nodes(nodes, out.initNodes(static_cast<unsigned>(nodes.names().size())));
}
std::vector<tessera::StreamRecord> decode(capnp::List<StreamRecord>::Reader in, const Frames& frames,
                                          capnp::List<capnp::Text>::Reader nodes = {});

// Per-set timeouts off the wire: as many as `sets`, or none; each a number of seconds in
// [0, StreamSettings::kMaxTimeoutSeconds]. A WireError naming `where` otherwise.
std::vector<double> decode_timeouts(capnp::List<double>::Reader in, std::size_t sets,
                                    const std::string& where);
void encode(const SimulationJob& job, Simulate::Builder out, Attachments& attachments);
// The job's answers go to `stream` (in a worker process: the scheduler's stand-in).
SimulationJob decode(Simulate::Reader in, const Frames& frames, caf::actor stream);

}  // namespace tessera::wire

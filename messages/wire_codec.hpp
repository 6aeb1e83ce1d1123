// The codec between Tessera's values and graph layers and their Cap'n Proto form. Large payloads
// (doubles, vectors, matrices past a threshold) are not copied into the Cap'n Proto header: they travel as
// their own frames beside it, referenced by index. Decoding treats every input as hostile: it checks
// alignment, sizes, indexes and nesting, and answers a malformed message with a WireError saying what
// was wrong and where, never with a crash.
#pragma once

#include <capnp/message.h>
#include <capnp/serialize.h>

#include <cstddef>
#include <functional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "graph/operation.hpp"
#include "graph/value.hpp"
#include "messages/frames.hpp"
#include "messages/values.capnp.h"

namespace tessera::wire {

class WireError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Frames that travel beside a header. For sending, `frames` view payloads that `keep` holds alive.
struct Attachments {
  std::vector<std::span<const std::byte>> frames;
  std::vector<tessera::Value> keep;
};

struct EncodeOptions {
  // Payloads of at least this many bytes travel as their own frame. Default 64 KiB.
  std::size_t attachment_threshold = 64 * 1024;
};

struct DecodeLimits {
  // Most Cap'n Proto words a reader may traverse, as a multiple of the header's size (against
  // amplification through shared pointers), plus a constant.
  std::uint64_t traversal_factor = 8;
  // Deepest nesting of lists and custom values. Default 64 (Cap'n Proto's own).
  int nesting = 64;
  // Most tasks one decoded operation may have. Default 2^28.
  std::uint32_t max_tasks = 1u << 28;
  // How an operation whose function this process does not define, or defines differently from the
  // sender (its `identity`), is taken: false (a scheduler reading a client's submission) a WireError naming
  // both definitions; true (a worker reading the scheduler's assignment) a stand-in whose tasks fail
  // with that reason, so the tasks end instead of waiting on a dropped message.
  bool differing_functions_fail_tasks = false;
  // Non-empty: an operation of Python code sent by a client (python:call/N) is a WireError with this
  // reason (a scheduler whose security.allow_client_code is off).
  std::string client_code_refused{};
};

void encode(const tessera::Value& value, Value::Builder out, Attachments& attachments,
            const EncodeOptions& options = {});
tessera::Value decode(Value::Reader in, const Frames& frames);

void encode(const tessera::Operation& op, wire::Operation::Builder out, Attachments& attachments,
            const EncodeOptions& options = {});
// Operation ids as the receiver knows them: a scheduler gives each client's ids its own numbers.
using IdMap = std::function<OpId(OpId)>;

// Resolves the function by name in this process's registry and checks the sender's identity of it
// against this process's (see DecodeLimits::differing_functions_fail_tasks).
// `map_id` renames the operation's id and the ids its references point to (identity when empty).
tessera::OperationPtr decode(wire::Operation::Reader in, const Frames& frames,
                             const DecodeLimits& limits = {}, const IdMap& map_id = {});

// A whole message as it goes on the wire: the flat Cap'n Proto header and its attachments.
struct Encoded {
  kj::Array<capnp::word> header;
  Attachments attachments;
  std::span<const std::byte> header_bytes() const {
    return std::as_bytes(std::span<const capnp::word>(header.begin(), header.size()));
  }
};

// Reads a header whatever its alignment (a ZeroMQ frame under ~8 KiB is often not 8-byte aligned):
// misaligned bytes are copied into an aligned buffer first.
class HeaderReader {
 public:
  HeaderReader(std::span<const std::byte> bytes, const DecodeLimits& limits = {});
  template <class T>
  typename T::Reader root() {
    try {
      return reader_->getRoot<T>();
    } catch (const kj::Exception& e) {
      throw WireError(std::string("malformed Cap'n Proto header: ") + e.getDescription().cStr());
    }
  }

 private:
  kj::Array<capnp::word> aligned_;
  kj::Own<capnp::FlatArrayMessageReader> reader_;
};

Encoded encode_value_message(const tessera::Value& value, const EncodeOptions& options = {});
tessera::Value decode_value_message(std::span<const std::byte> header, const Frames& frames,
                                    const DecodeLimits& limits = {});

}  // namespace tessera::wire

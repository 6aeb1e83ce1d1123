#include "messages/wire_codec.hpp"

#include <capnp/serialize.h>

#include <cstring>
#include <limits>

#include "graph/definition_identity.hpp"
#include "graph/errors.hpp"
#include "graph/printable.hpp"
#include "graph/python_definition.hpp"
#include "graph/registry.hpp"
#include "messages/chunk_codec.hpp"

namespace tessera::wire {
namespace {

void encode_doubles(const double* data, std::size_t count, const tessera::Value& owner, Doubles::Builder out,
                    Attachments& attachments, const EncodeOptions& options) {
  out.setCount(count);
  const std::size_t bytes = count * sizeof(double);
  if (bytes >= options.attachment_threshold) {
    out.setAttachment(static_cast<std::uint32_t>(attachments.frames.size()));
    attachments.frames.emplace_back(reinterpret_cast<const std::byte*>(data), bytes);
    attachments.keep.push_back(owner);
    return;
  }
  auto list = out.initInline(static_cast<unsigned>(count));
  for (std::size_t i = 0; i < count; ++i) list.set(static_cast<unsigned>(i), data[i]);
}

std::vector<double> decode_doubles(Doubles::Reader in, const Frames& frames, const char* where) {
  const std::uint64_t count = in.getCount();
  if (in.isInline()) {
    auto list = in.getInline();
    if (list.size() != count)
      throw WireError(std::string(where) + ": declares " + std::to_string(count) + " doubles, carries " +
                      std::to_string(list.size()));
    std::vector<double> out;
    out.reserve(list.size());
    for (double x : list) out.push_back(x);
    return out;
  }
  const std::uint32_t index = in.getAttachment();
  if (index >= frames.size())
    throw WireError(std::string(where) + ": refers to frame " + std::to_string(index) + ", the message has " +
                    std::to_string(frames.size()));
  const auto& frame = frames[index];
  if (count > std::numeric_limits<std::size_t>::max() / sizeof(double) ||
      frame.size() != count * sizeof(double))
    throw WireError(std::string(where) + ": frame " + std::to_string(index) + " has " +
                    std::to_string(frame.size()) + " bytes for " + std::to_string(count) + " doubles");
  std::vector<double> out(count);
  if (count) std::memcpy(out.data(), frame.data(), frame.size());  // the frame may be unaligned
  return out;
}

// Whether a value names Python code a client sent (python:call/N, python:class, python:generator), at any
// depth: bag, fused and array tasks call functions by names they are given.
bool names_client_code(const tessera::Value& value) {
  switch (value.kind()) {
    case tessera::ValueKind::string:
      return value.as_string().starts_with(kClientCodePrefix) ||
             value.as_string() == kClientClassSimulation || value.as_string() == kClientGenerator;
    case tessera::ValueKind::list:
      for (const auto& item : value.as_list())
        if (names_client_code(item)) return true;
      return false;
    case tessera::ValueKind::custom:
      return value.as_custom().payload && names_client_code(*value.as_custom().payload);
    default:
      return false;
  }
}

tessera::Value decode_value(Value::Reader in, const Frames& frames) {
  switch (in.which()) {
    case Value::NONE:
      return tessera::Value{};
    case Value::INTEGER:
      return tessera::Value(static_cast<std::int64_t>(in.getInteger()));
    case Value::REAL:
      return tessera::Value(in.getReal());
    case Value::BOOLEAN:
      return tessera::Value(in.getBoolean());
    case Value::TEXT: {
      auto text = in.getText();
      return tessera::Value(std::string(text.begin(), text.end()));
    }
    case Value::BYTES: {
      auto data = in.getBytes();
      return tessera::Value(Bytes{std::vector<std::uint8_t>(data.begin(), data.end())});
    }
    case Value::DOUBLES:
      return tessera::Value(decode_doubles(in.getDoubles(), frames, "doubles value"));
    case Value::VECTOR: {
      auto d = decode_doubles(in.getVector(), frames, "vector value");
      return tessera::Value(
          Eigen::VectorXd(Eigen::Map<Eigen::VectorXd>(d.data(), static_cast<Eigen::Index>(d.size()))));
    }
    case Value::MATRIX: {
      auto m = in.getMatrix();
      const std::uint64_t rows = m.getRows(), cols = m.getCols();
      if (cols != 0 && rows > std::numeric_limits<std::uint64_t>::max() / cols)
        throw WireError("matrix value: " + std::to_string(rows) + " x " + std::to_string(cols) +
                        " overflows");
      if (m.getData().getCount() != rows * cols)
        throw WireError("matrix value: " + std::to_string(rows) + " x " + std::to_string(cols) + " needs " +
                        std::to_string(rows * cols) + " doubles, carries " +
                        std::to_string(m.getData().getCount()));
      auto d = decode_doubles(m.getData(), frames, "matrix value");
      return tessera::Value(Eigen::MatrixXd(Eigen::Map<Eigen::MatrixXd>(
          d.data(), static_cast<Eigen::Index>(rows), static_cast<Eigen::Index>(cols))));
    }
    case Value::LIST: {
      tessera::Value::List out;
      auto list = in.getList();
      out.reserve(list.size());
      for (auto item : list) out.push_back(decode_value(item, frames));
      return tessera::Value(std::move(out));
    }
    case Value::CUSTOM: {
      auto custom = in.getCustom();
      auto name = custom.getTypeName();
      return tessera::Value(
          CustomValue{std::string(name.begin(), name.end()),
                      std::make_shared<const tessera::Value>(decode_value(custom.getPayload(), frames))});
    }
    case Value::CHUNK:
      return tessera::Value(decode_chunk(in.getChunk(), frames));
  }
  throw WireError("value of unknown kind " + std::to_string(static_cast<int>(in.which())) +
                  " (a newer protocol version?)");
}

void encode_arg(const tessera::Value* literal, const tessera::TaskRef* ref, wire::Arg::Builder out,
                Attachments& attachments, const EncodeOptions& options) {
  if (literal) {
    encode(*literal, out.initLiteral(), attachments, options);
  } else {
    auto r = out.initReference();
    r.setOp(ref->op);
    r.setIndex(ref->index);
  }
}

tessera::Arg decode_arg(wire::Arg::Reader in, const Frames& frames, const IdMap& map_id) {
  if (in.isReference()) {
    const OpId op = in.getReference().getOp();
    return tessera::TaskRef{map_id ? map_id(op) : op, in.getReference().getIndex()};
  }
  return decode_value(in.getLiteral(), frames);
}

template <class F>
auto guarded(const char* what, F&& body) {
  try {
    return body();
  } catch (const kj::Exception& e) {
    throw WireError(std::string("malformed ") + what + ": " + e.getDescription().cStr());
  }
}

}  // namespace

void encode(const tessera::Value& value, Value::Builder out, Attachments& attachments,
            const EncodeOptions& options) {
  switch (value.kind()) {
    case ValueKind::none:
      out.setNone();
      return;
    case ValueKind::integer:
      out.setInteger(value.as_int());
      return;
    case ValueKind::real:
      out.setReal(value.as_double());
      return;
    case ValueKind::boolean:
      out.setBoolean(value.as_bool());
      return;
    case ValueKind::string:
      out.setText(value.as_string());
      return;
    case ValueKind::bytes: {
      const auto& b = value.as_bytes().data;
      out.setBytes(kj::arrayPtr(b.data(), b.size()));
      return;
    }
    case ValueKind::doubles: {
      const auto& d = value.as_doubles();
      encode_doubles(d.data(), d.size(), value, out.initDoubles(), attachments, options);
      return;
    }
    case ValueKind::vector: {
      const auto& v = value.as_vector();
      encode_doubles(v.data(), static_cast<std::size_t>(v.size()), value, out.initVector(), attachments,
                     options);
      return;
    }
    case ValueKind::matrix: {
      const auto& m = value.as_matrix();
      auto mb = out.initMatrix();
      mb.setRows(static_cast<std::uint64_t>(m.rows()));
      mb.setCols(static_cast<std::uint64_t>(m.cols()));
      encode_doubles(m.data(), static_cast<std::size_t>(m.size()), value, mb.initData(), attachments,
                     options);
      return;
    }
    case ValueKind::list: {
      const auto& items = value.as_list();
      auto list = out.initList(static_cast<unsigned>(items.size()));
      for (std::size_t i = 0; i < items.size(); ++i)
        encode(items[i], list[static_cast<unsigned>(i)], attachments, options);
      return;
    }
    case ValueKind::custom: {
      const auto& c = value.as_custom();
      auto cb = out.initCustom();
      cb.setTypeName(c.type_name);
      encode(*c.payload, cb.initPayload(), attachments, options);
      return;
    }
    case ValueKind::chunk:
      encode_chunk(value.as_chunk(), out.initChunk(), attachments, options);
      return;
  }
}

tessera::Value decode(Value::Reader in, const Frames& frames) {
  return guarded("value", [&] { return decode_value(in, frames); });
}

void encode(const tessera::Operation& op, wire::Operation::Builder out, Attachments& attachments,
            const EncodeOptions& options) {
  out.setId(op.id());
  out.setFunction(op.function().name);
  out.setIdentity(op.function().identity);
  out.setSize(op.size());
  auto columns = out.initColumns(static_cast<unsigned>(op.columns().size()));
  for (std::size_t j = 0; j < op.columns().size(); ++j) {
    const tessera::Column& column = op.columns()[j];
    auto cb = columns[static_cast<unsigned>(j)];
    if (column.is_broadcast()) {
      encode_arg(column.literal(0), column.reference(0), cb.initBroadcast(), attachments, options);
      continue;
    }
    bool all_literal = true;
    for (std::uint32_t t = 0; t < op.size() && all_literal; ++t) all_literal = column.literal(t) != nullptr;
    if (all_literal) {
      auto values = cb.initValues(op.size());
      for (std::uint32_t t = 0; t < op.size(); ++t)
        encode(*column.literal(t), values[t], attachments, options);
    } else {
      auto args = cb.initPerTask(op.size());
      for (std::uint32_t t = 0; t < op.size(); ++t)
        encode_arg(column.literal(t), column.reference(t), args[t], attachments, options);
    }
  }
  if (op.has_keys()) {
    auto keys = out.initKeys(op.size());
    for (std::uint32_t t = 0; t < op.size(); ++t) keys.set(t, op.key(t));
  }
}

tessera::OperationPtr decode(wire::Operation::Reader in, const Frames& frames, const DecodeLimits& limits,
                             const IdMap& map_id) {
  return guarded("operation", [&]() -> tessera::OperationPtr {
    auto name_text = in.getFunction();
    const std::string name(name_text.begin(), name_text.end());
    const TaskFunction* fn = Registry::global().find(name);
    const auto identity_text = in.getIdentity();
    const std::string_view identity(identity_text.cStr(), identity_text.size());
    const bool differs = fn && !identity.empty() && identity != fn->identity;
    if (limits.differing_functions_fail_tasks && (!fn || differs)) {
      const std::string theirs = printable(identity.empty() ? std::string_view("(not said)") : identity, 300);
      try {
        fn =
            !fn ? &failing_function(name, in.getColumns().size(),
                                    "task function '" + printable(name, 200) +
                                        "' is not defined on this worker (the scheduler's: " + theirs +
                                        "); load the plugin that defines it on every worker")
                : &failing_function(name, fn->arity(),
                                    definitions_differ("task function", printable(name, 200), "the scheduler",
                                                       theirs, "this worker", fn->identity));
      } catch (const SubmissionError& e) {
        throw WireError(e.what());  // past the stand-ins a process keeps
      }
    }
    // Before the lookup: a node that runs no client code does not register its functions at all.
    if (!limits.client_code_refused.empty() && name.starts_with(kClientCodePrefix))
      throw WireError("operation " + std::to_string(in.getId()) + " (" + printable(name, 200) +
                      "): " + limits.client_code_refused);
    if (!fn)
      throw WireError("operation " + std::to_string(in.getId()) + ": unknown task function '" + name + "'");
    if (differs && !limits.differing_functions_fail_tasks)
      throw WireError(definitions_differ("task function", printable(name, 200), "the client",
                                         printable(identity, 300), "the scheduler", fn->identity));
    const std::uint32_t size = in.getSize();
    if (size > limits.max_tasks)
      throw WireError("operation " + std::to_string(in.getId()) + " (" + name + "): " + std::to_string(size) +
                      " tasks exceed the limit of " + std::to_string(limits.max_tasks));
    std::vector<tessera::Column> columns;
    for (auto column : in.getColumns()) {
      switch (column.which()) {
        case wire::Column::BROADCAST:
          columns.push_back(tessera::Column::broadcast(decode_arg(column.getBroadcast(), frames, map_id)));
          break;
        case wire::Column::PER_TASK: {
          std::vector<tessera::Arg> args;
          args.reserve(column.getPerTask().size());
          for (auto a : column.getPerTask()) args.push_back(decode_arg(a, frames, map_id));
          columns.push_back(tessera::Column::per_task(std::move(args)));
          break;
        }
        case wire::Column::VALUES: {
          std::vector<tessera::Value> values;
          values.reserve(column.getValues().size());
          for (auto v : column.getValues()) values.push_back(decode_value(v, frames));
          columns.push_back(tessera::Column::per_task(std::move(values)));
          break;
        }
        default:
          throw WireError("operation " + name + ": column of unknown kind");
      }
    }
    if (!limits.client_code_refused.empty())
      for (const auto& column : columns)
        for (std::uint32_t t = 0; t < (column.is_broadcast() ? 1u : column.size()); ++t)
          if (const tessera::Value* literal = column.literal(t); literal && names_client_code(*literal))
            throw WireError("operation " + std::to_string(in.getId()) + " (" + name +
                            "): an argument names client code (python:...): " + limits.client_code_refused);
    try {
      if (in.hasKeys() && in.getKeys().size() > 0) {
        if (in.getKeys().size() != size)
          throw WireError("operation " + name + ": " + std::to_string(in.getKeys().size()) + " keys for " +
                          std::to_string(size) + " tasks");
        std::vector<std::string> keys;
        for (auto k : in.getKeys()) keys.emplace_back(k.begin(), k.end());
        return std::make_shared<tessera::Operation>(*fn, std::move(keys), std::move(columns),
                                                    map_id ? map_id(in.getId()) : in.getId());
      }
      return std::make_shared<tessera::Operation>(*fn, size, std::move(columns), std::string{},
                                                  map_id ? map_id(in.getId()) : in.getId());
    } catch (const SubmissionError& e) {
      throw WireError(std::string("operation rejected: ") + e.what());
    }
  });
}

HeaderReader::HeaderReader(std::span<const std::byte> bytes, const DecodeLimits& limits) {
  if (bytes.size() % sizeof(capnp::word) != 0)
    throw WireError("Cap'n Proto header of " + std::to_string(bytes.size()) +
                    " bytes is not a whole number of words");
  const std::size_t words = bytes.size() / sizeof(capnp::word);
  kj::ArrayPtr<const capnp::word> view;
  if (reinterpret_cast<std::uintptr_t>(bytes.data()) % alignof(capnp::word) == 0) {
    view = kj::arrayPtr(reinterpret_cast<const capnp::word*>(bytes.data()), words);
  } else {
    aligned_ = kj::heapArray<capnp::word>(words);
    std::memcpy(aligned_.begin(), bytes.data(), bytes.size());
    view = aligned_.asPtr();
  }
  capnp::ReaderOptions options;
  options.traversalLimitInWords = limits.traversal_factor * words + 1024;
  options.nestingLimit = limits.nesting;
  try {
    reader_ = kj::heap<capnp::FlatArrayMessageReader>(view, options);
  } catch (const kj::Exception& e) {
    throw WireError(std::string("malformed Cap'n Proto header: ") + e.getDescription().cStr());
  }
}

Encoded encode_value_message(const tessera::Value& value, const EncodeOptions& options) {
  capnp::MallocMessageBuilder builder;
  Encoded out;
  encode(value, builder.initRoot<Value>(), out.attachments, options);
  out.header = capnp::messageToFlatArray(builder);
  return out;
}

tessera::Value decode_value_message(std::span<const std::byte> header, const Frames& frames,
                                    const DecodeLimits& limits) {
  HeaderReader reader(header, limits);
  return guarded("value", [&] { return decode_value(reader.root<Value>(), frames); });
}

}  // namespace tessera::wire

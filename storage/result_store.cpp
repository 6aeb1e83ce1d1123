#include "storage/result_store.hpp"

#include "graph/node_names.hpp"

#include <capnp/message.h>
#include <capnp/serialize-packed.h>
#include <capnp/serialize.h>
#include <kj/io.h>
#include <rocksdb/db.h>
#include <rocksdb/write_batch.h>

#include <algorithm>
#include <cmath>
#include <unordered_set>

#include "messages/outcome_codec.hpp"
#include "messages/results.capnp.h"
#include "messages/wire_codec.hpp"

namespace tessera {
namespace {

// Keys sort by stream, then id: big-endian numbers after a one-letter kind.
std::string key(char kind, std::uint64_t stream, std::optional<std::uint64_t> id = std::nullopt) {
  std::string out(1, kind);
  for (int shift = 56; shift >= 0; shift -= 8) out += static_cast<char>((stream >> shift) & 0xff);
  if (id)
    for (int shift = 56; shift >= 0; shift -= 8) out += static_cast<char>((*id >> shift) & 0xff);
  return out;
}

std::uint64_t read_be64(const char* p) {
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

// Everything inline: a stored record has no frames beside it.
const wire::EncodeOptions kInline{.attachment_threshold = ~std::size_t{0}};

std::string flat(capnp::MallocMessageBuilder& builder) {
  auto words = capnp::messageToFlatArray(builder);
  auto bytes = words.asChars();
  return std::string(bytes.begin(), bytes.end());
}

// Results were stored one per id, packed: Cap'n Proto's packing squeezes out the zero bytes of a small
// result's unset fields and pointers (a trivial set's record goes from about 180 bytes to about 60), and
// every byte of a result is written to the log, the memtable, a flushed file and each compaction after. A
// packed record starts with a byte that no flat one (written before, and still read) starts with: a flat
// message's first byte is its segment count minus one, which a result never brings to 255. Still read; runs
// (below) are written now.
constexpr char kPackedResult = '\xff';

void fill_result(const StreamResult& r, wire::StoredResult::Builder out, NodeNames& nodes) {
  wire::Attachments none;
  out.setNodeIndex(nodes.index(r.node));
  if (r.failed) {
    auto e = out.initError();
    e.setMessage(r.error);
    e.setNode(r.node);
    out.setFailure(static_cast<std::uint8_t>(r.failure == Failure::none ? Failure::error : r.failure));
  } else {
    wire::encode(r.value, out.initValue(), none, kInline);
  }
  wire::encode(r.parameters, out.initParameters(), none, kInline);
  if (!r.attempts.empty()) {
    auto attempts = out.initAttempts(static_cast<unsigned>(r.attempts.size()));
    for (std::size_t i = 0; i < r.attempts.size(); ++i) attempts.set(static_cast<unsigned>(i), r.attempts[i]);
  }
  if (r.timeline != SetTimeline{}) {
    const auto& t = r.timeline;
    auto times = out.initTimeline(5);
    unsigned i = 0;
    for (double stamp : {t.pushed, t.dispatched, t.started, t.finished, t.stored}) times.set(i++, stamp);
  }
  if (r.program) wire::encode(*r.program, out.initProgram());
}

// Results of consecutive ids are stored as one record, a run, under the first id's key: the byte 0xfe
// (which neither a flat record nor a packed single result starts with), the run's length as four bytes
// little-endian (read without decoding the run: contains and count), then the packed StoredRun.
constexpr char kPackedRun = '\xfe';
constexpr std::size_t kRunHeaderBytes = 5;
// At most this many results a run, so that reading one id decodes a bounded record.
constexpr std::size_t kMaxRunLength = 1024;

std::string encode_run(std::span<const StreamResult* const> run) {
  capnp::MallocMessageBuilder builder;
  auto root = builder.initRoot<wire::StoredRun>();
  auto results = root.initResults(static_cast<unsigned>(run.size()));
  NodeNames nodes;
  for (std::size_t i = 0; i < run.size(); ++i) fill_result(*run[i], results[static_cast<unsigned>(i)], nodes);
  if (!nodes.names().empty()) {
    auto names = root.initNodes(static_cast<unsigned>(nodes.names().size()));
    for (std::size_t i = 0; i < nodes.names().size(); ++i)
      names.set(static_cast<unsigned>(i), nodes.names()[i]);
  }
  kj::VectorOutputStream out(64 + 64 * run.size());
  const auto length = static_cast<std::uint32_t>(run.size());
  const char header[kRunHeaderBytes] = {
      kPackedRun, static_cast<char>(length & 0xff), static_cast<char>((length >> 8) & 0xff),
      static_cast<char>((length >> 16) & 0xff), static_cast<char>((length >> 24) & 0xff)};
  out.write(header, kRunHeaderBytes);
  capnp::writePackedMessage(out, builder);
  const auto bytes = out.getArray();
  return std::string(reinterpret_cast<const char*>(bytes.begin()), bytes.size());
}

// How many consecutive ids a record under a result key holds: a run's length, or 1 for a record of one
// result (flat, or packed, written before runs). 0 for a damaged run header.
std::uint64_t record_length(const rocksdb::Slice& bytes) {
  if (bytes.empty() || bytes[0] != kPackedRun) return 1;
  if (bytes.size() < kRunHeaderBytes) return 0;
  std::uint32_t length = 0;
  for (int i = 4; i >= 1; --i) length = (length << 8) | static_cast<unsigned char>(bytes[i]);
  return length;
}

bool is_result_key(const rocksdb::Slice& k, std::uint64_t stream) {
  return k.size() == 17 && k[0] == 'r' && read_be64(k.data() + 1) == stream;
}

// Where a stream's results lie: runs of consecutive ids under their first id's key, which never overlap
// (each id is stored once), so the record holding an id is the last one at or before the id's key.
class RunCursor {
 public:
  RunCursor(rocksdb::DB& db, std::uint64_t stream)
      : it_(db.NewIterator(rocksdb::ReadOptions())), stream_(stream) {}

  // True when a stored run holds `id`; the cursor then stands on it.
  bool find(std::uint64_t id) {
    if (valid_ && id >= first_ && id < first_ + length_) return true;
    it_->SeekForPrev(key('r', stream_, id));
    valid_ = it_->Valid() && is_result_key(it_->key(), stream_);
    if (!valid_) return false;
    first_ = read_be64(it_->key().data() + 9);
    length_ = record_length(it_->value());
    return id >= first_ && id < first_ + length_;
  }
  rocksdb::Iterator& iterator() { return *it_; }
  std::uint64_t first() const { return first_; }
  rocksdb::Status status() const { return it_->status(); }

 private:
  std::unique_ptr<rocksdb::Iterator> it_;
  std::uint64_t stream_;
  bool valid_ = false;
  std::uint64_t first_ = 0, length_ = 0;
};

StreamResult decode_result(std::uint64_t id, wire::StoredResult::Reader in,
                           capnp::List<capnp::Text>::Reader nodes = {});

StreamResult decode_result(std::uint64_t id, const rocksdb::Slice& bytes) {
  if (bytes.empty() || bytes[0] != kPackedResult) {
    wire::HeaderReader reader(
        std::span<const std::byte>(reinterpret_cast<const std::byte*>(bytes.data()), bytes.size()));
    return decode_result(id, reader.root<wire::StoredResult>());
  }
  kj::ArrayInputStream input(
      kj::arrayPtr(reinterpret_cast<const kj::byte*>(bytes.data()) + 1, bytes.size() - 1));
  capnp::ReaderOptions options;
  // A packed byte unpacks to at most 128 words (a run of zero words); the limit also bounds what a
  // damaged record's segment table can make the reader allocate.
  options.traversalLimitInWords = wire::DecodeLimits{}.traversal_factor * 128 * bytes.size() + 1024;
  try {
    capnp::PackedMessageReader reader(input, options);
    return decode_result(id, reader.getRoot<wire::StoredResult>());
  } catch (const kj::Exception& e) {
    throw wire::WireError(std::string("malformed packed result record: ") + e.getDescription().cStr());
  }
}

StreamResult decode_result(std::uint64_t id, wire::StoredResult::Reader in,
                           capnp::List<capnp::Text>::Reader nodes) {
  StreamResult r;
  r.id = id;
  if (const unsigned index = in.getNodeIndex(); index > 0 && index <= nodes.size()) r.node = nodes[index - 1];
  if (in.isError()) {
    r.failed = true;
    r.error = in.getError().getMessage();
    if (r.node.empty()) r.node = in.getError().getNode();
    // Records stored before failures had kinds say 0: an error.
    const auto failure = in.getFailure();
    r.failure = failure >= 1 && failure <= static_cast<std::uint8_t>(kLastFailure)
                    ? static_cast<Failure>(failure)
                    : Failure::error;
  } else {
    r.value = wire::decode(in.getValue(), {});
  }
  if (in.hasParameters()) r.parameters = wire::decode(in.getParameters(), {});
  for (auto attempt : in.getAttempts()) r.attempts.emplace_back(attempt);
  if (auto times = in.getTimeline(); times.size() == 5) {
    // A damaged record's nan or negative time reads as unknown.
    const auto stamp = [&](unsigned i) { return std::isfinite(times[i]) && times[i] > 0 ? times[i] : 0.0; };
    r.timeline = SetTimeline{stamp(0), stamp(1), stamp(2), stamp(3), stamp(4)};
  }
  if (in.hasProgram())
    r.program = std::make_shared<const ProgramOutcome>(wire::decode(in.getProgram(), {}, false));
  return r;
}

// Visits the results of the record under `first`'s key whose ids lie in [from, to), in id order; a
// visit returning false stops. False when a visit stopped.
bool visit_record(std::uint64_t first, const rocksdb::Slice& bytes, std::uint64_t from, std::uint64_t to,
                  const std::function<bool(StreamResult&)>& visit) {
  if (bytes.empty() || bytes[0] != kPackedRun) {
    if (first < from || first >= to) return true;
    StreamResult result = decode_result(first, bytes);
    return visit(result);
  }
  const std::uint64_t length = record_length(bytes);
  if (length == 0 || length > kMaxRunLength)
    throw wire::WireError("a damaged run of results under id " + std::to_string(first) +
                          " (its header says " + std::to_string(length) + " results)");
  kj::ArrayInputStream input(kj::arrayPtr(reinterpret_cast<const kj::byte*>(bytes.data()) + kRunHeaderBytes,
                                          bytes.size() - kRunHeaderBytes));
  capnp::ReaderOptions options;
  options.traversalLimitInWords = wire::DecodeLimits{}.traversal_factor * 128 * bytes.size() + 1024;
  try {
    capnp::PackedMessageReader reader(input, options);
    const auto run = reader.getRoot<wire::StoredRun>();
    const auto results = run.getResults();
    const auto nodes = run.getNodes();
    if (results.size() != length)
      throw wire::WireError("a damaged run of results under id " + std::to_string(first) +
                            ": its header says " + std::to_string(length) + " results, it holds " +
                            std::to_string(results.size()));
    const std::uint64_t begin = std::max(from, first), end = std::min(to, first + length);
    for (std::uint64_t id = begin; id < end; ++id) {
      StreamResult result = decode_result(id, results[static_cast<unsigned>(id - first)], nodes);
      if (!visit(result)) return false;
    }
    return true;
  } catch (const kj::Exception& e) {
    throw wire::WireError(std::string("malformed run of results under id ") + std::to_string(first) + ": " +
                          e.getDescription().cStr());
  }
}

void encode_config(const Config& config, capnp::List<capnp::Text>::Builder keys,
                   capnp::List<wire::Value>::Builder values) {
  wire::Attachments none;
  unsigned i = 0;
  for (const auto& [name, value] : config.entries()) {
    keys.set(i, name);
    wire::encode(value, values[i], none, kInline);
    ++i;
  }
}

std::shared_ptr<Config> decode_config(std::uint64_t stream, const char* what,
                                      capnp::List<capnp::Text>::Reader keys,
                                      capnp::List<wire::Value>::Reader values) {
  if (keys.size() != values.size())
    throw StoreError("stream " + std::to_string(stream) + ": its stored " + what + " has " +
                     std::to_string(keys.size()) + " keys and " + std::to_string(values.size()) + " values");
  auto config = std::make_shared<Config>();
  for (unsigned i = 0; i < keys.size(); ++i) config->set(keys[i], wire::decode(values[i], {}));
  return config;
}

// A stream's record is two: its settings (key 's'), written once when it is created, and its counters
// (key 'm': pushed, closed), rewritten with each accepted push. A store written before the split keeps
// everything under 'm', which decode_info still reads.
std::string encode_counters(const StreamInfo& info) {
  capnp::MallocMessageBuilder builder;
  auto out = builder.initRoot<wire::StreamInfo>();
  out.setClosed(info.closed);
  out.setPushed(info.pushed);
  out.setCloseRequested(info.close_requested);
  out.setEndedEarly(info.ended_early);
  return flat(builder);
}

std::string encode_settings(const StreamInfo& info) {
  capnp::MallocMessageBuilder builder;
  auto out = builder.initRoot<wire::StreamInfo>();
  const StreamSettings& settings = info.settings;
  out.setSimulation(settings.simulation);
  out.setPoolSize(settings.pool_size);
  out.setMaxInFlight(settings.max_in_flight);
  out.setIsolation(static_cast<std::uint8_t>(settings.isolation.value_or(Isolation::thread)));
  out.setTimeoutSeconds(settings.timeout_seconds);
  out.setRetries(settings.retries);
  out.setProgram(info.program);
  out.setInputSets(settings.input.sets);
  out.setInputName(settings.input.name);
  out.setInputDigest(settings.input.digest);
  if (!info.result_names.empty()) {
    auto names = out.initResultNames(static_cast<unsigned>(info.result_names.size()));
    for (std::size_t i = 0; i < info.result_names.size(); ++i)
      names.set(static_cast<unsigned>(i), info.result_names[i]);
  }
  if (settings.config && !settings.config->entries().empty()) {
    const auto count = static_cast<unsigned>(settings.config->entries().size());
    encode_config(*settings.config, out.initConfigKeys(count), out.initConfigValues(count));
  }
  if (!settings.generator.empty()) {
    out.setGenerator(settings.generator);
    out.setBudget(settings.budget);
    if (settings.generator_config && !settings.generator_config->entries().empty()) {
      const auto count = static_cast<unsigned>(settings.generator_config->entries().size());
      encode_config(*settings.generator_config, out.initGeneratorConfigKeys(count),
                    out.initGeneratorConfigValues(count));
    }
  }
  return flat(builder);
}

// The settings of `in` into `info` (from 's', or from an 'm' written before the split).
void decode_settings(std::uint64_t id, wire::StreamInfo::Reader in, StreamInfo& info) {
  StreamSettings& settings = info.settings;
  settings.simulation = in.getSimulation();
  settings.pool_size = in.getPoolSize();
  settings.max_in_flight = in.getMaxInFlight();
  if (in.getIsolation() > static_cast<std::uint8_t>(Isolation::process))
    throw StoreError("stream " + std::to_string(id) + ": its stored isolation " +
                     std::to_string(in.getIsolation()) + " is unknown");
  settings.isolation = static_cast<Isolation>(in.getIsolation());
  settings.timeout_seconds = in.getTimeoutSeconds();
  settings.retries = in.getRetries();
  info.program = in.getProgram();
  for (auto name : in.getResultNames()) info.result_names.emplace_back(name);
  settings.config = decode_config(id, "config", in.getConfigKeys(), in.getConfigValues());
  settings.generator = in.getGenerator();
  settings.budget = in.getBudget();
  settings.generator_config =
      decode_config(id, "generator config", in.getGeneratorConfigKeys(), in.getGeneratorConfigValues());
  settings.input.sets = in.getInputSets();
  settings.input.name = in.getInputName();
  settings.input.digest = in.getInputDigest();
}

wire::HeaderReader reader_of(const rocksdb::Slice& bytes) {
  return wire::HeaderReader(
      std::span<const std::byte>(reinterpret_cast<const std::byte*>(bytes.data()), bytes.size()));
}

// The counters under 'm', and the settings under 's' (or, in a store written before the split, in 'm').
StreamInfo decode_info(std::uint64_t id, const rocksdb::Slice& counters, const std::string* settings) {
  auto reader = reader_of(counters);
  auto in = reader.root<wire::StreamInfo>();
  StreamInfo info{id, {}, in.getClosed(), in.getPushed()};
  info.close_requested = in.getCloseRequested();
  info.ended_early = in.getEndedEarly();
  if (settings) {
    auto own = reader_of(*settings);
    decode_settings(id, own.root<wire::StreamInfo>(), info);
  } else {
    decode_settings(id, in, info);
  }
  return info;
}

// A stream's parameter names, under their own key ('p'): written once when it is created, not with each
// push that rewrites its record.
std::string encode_names(const std::vector<std::string>& names) {
  capnp::MallocMessageBuilder builder;
  auto list = builder.initRoot<wire::StreamInfo>().initParameterNames(static_cast<unsigned>(names.size()));
  for (std::size_t i = 0; i < names.size(); ++i) list.set(static_cast<unsigned>(i), names[i]);
  return flat(builder);
}

std::vector<std::string> decode_names(const std::string& bytes) {
  wire::HeaderReader reader(
      std::span<const std::byte>(reinterpret_cast<const std::byte*>(bytes.data()), bytes.size()));
  std::vector<std::string> names;
  for (auto name : reader.root<wire::StreamInfo>().getParameterNames()) names.emplace_back(name);
  return names;
}

std::string encode_pending(std::span<const Value> parameters, std::span<const double> priorities,
                           double accepted_at, std::span<const double> timeouts) {
  capnp::MallocMessageBuilder builder;
  wire::Attachments none;
  auto root = builder.initRoot<wire::PendingBatch>();
  root.setAcceptedAt(accepted_at);
  auto list = root.initParameters(static_cast<unsigned>(parameters.size()));
  for (std::size_t i = 0; i < parameters.size(); ++i)
    wire::encode(parameters[i], list[static_cast<unsigned>(i)], none, kInline);
  if (!priorities.empty()) {
    auto out = root.initPriorities(static_cast<unsigned>(priorities.size()));
    for (std::size_t i = 0; i < priorities.size(); ++i) out.set(static_cast<unsigned>(i), priorities[i]);
  }
  if (!timeouts.empty()) {
    auto out = root.initTimeouts(static_cast<unsigned>(timeouts.size()));
    for (std::size_t i = 0; i < timeouts.size(); ++i) out.set(static_cast<unsigned>(i), timeouts[i]);
  }
  return flat(builder);
}

void check(const rocksdb::Status& status, const std::string& what, const std::filesystem::path& dir) {
  if (!status.ok()) throw StoreError("result store " + dir.string() + ": " + what + ": " + status.ToString());
}

std::string encode_checkpoint(const GeneratorCheckpoint& checkpoint) {
  capnp::MallocMessageBuilder builder;
  auto out = builder.initRoot<wire::GeneratorCheckpoint>();
  out.setState(capnp::Data::Reader(reinterpret_cast<const capnp::byte*>(checkpoint.state.data()),
                                   checkpoint.state.size()));
  out.setAsked(checkpoint.asked);
  auto first = out.initToldFirst(static_cast<unsigned>(checkpoint.told.size()));
  auto last = out.initToldLast(static_cast<unsigned>(checkpoint.told.size()));
  for (std::size_t i = 0; i < checkpoint.told.size(); ++i) {
    first.set(static_cast<unsigned>(i), checkpoint.told[i].first);
    last.set(static_cast<unsigned>(i), checkpoint.told[i].last);
  }
  out.setSequence(checkpoint.sequence);
  auto segment_first = out.initSegmentFirst(static_cast<unsigned>(checkpoint.segments.size()));
  auto segment_sequence = out.initSegmentSequence(static_cast<unsigned>(checkpoint.segments.size()));
  for (std::size_t i = 0; i < checkpoint.segments.size(); ++i) {
    segment_first.set(static_cast<unsigned>(i), checkpoint.segments[i].first);
    segment_sequence.set(static_cast<unsigned>(i), checkpoint.segments[i].second);
  }
  auto orphan_first = out.initOrphanFirst(static_cast<unsigned>(checkpoint.orphans.size()));
  auto orphan_last = out.initOrphanLast(static_cast<unsigned>(checkpoint.orphans.size()));
  for (std::size_t i = 0; i < checkpoint.orphans.size(); ++i) {
    orphan_first.set(static_cast<unsigned>(i), checkpoint.orphans[i].first);
    orphan_last.set(static_cast<unsigned>(i), checkpoint.orphans[i].last);
  }
  return flat(builder);
}

}  // namespace

ResultStore::ResultStore(const std::filesystem::path& directory)
    : ResultStore(std::make_shared<NodeDatabase>(directory)) {}

ResultStore::ResultStore(std::shared_ptr<NodeDatabase> database)
    : database_(std::move(database)), directory_(database_->directory()), db_(&database_->db()) {}

ResultStore::~ResultStore() = default;

std::uint64_t ResultStore::create_stream(const std::string& simulation) {
  StreamInfo info;
  info.settings.simulation = simulation;
  return create_stream(std::move(info));
}

std::uint64_t ResultStore::create_stream(StreamInfo info) {
  std::string last;
  std::uint64_t next = 1;
  if (db_->Get(rocksdb::ReadOptions(), "n", &last).ok() && last.size() == 8)
    next = read_be64(last.data()) + 1;
  std::string encoded;
  for (int shift = 56; shift >= 0; shift -= 8) encoded += static_cast<char>((next >> shift) & 0xff);
  rocksdb::WriteBatch batch;
  batch.Put("n", encoded);
  info.id = next;
  batch.Put(key('s', next), encode_settings(info));
  batch.Put(key('m', next), encode_counters(info));
  if (!info.settings.parameter_names.empty())
    batch.Put(key('p', next), encode_names(info.settings.parameter_names));
  rocksdb::WriteOptions sync;
  sync.sync = true;
  check(db_->Write(sync, &batch), "cannot create a stream", directory_);
  return next;
}

void ResultStore::update_stream(const StreamInfo& info) {
  rocksdb::WriteOptions sync;
  sync.sync = true;
  check(db_->Put(sync, key('m', info.id), encode_counters(info)), "cannot update a stream", directory_);
}

void ResultStore::accept(const StreamInfo& info, std::uint64_t first_id, std::span<const Value> parameters,
                         std::span<const double> priorities, double accepted_at,
                         std::span<const double> timeouts, const GeneratorCheckpoint* checkpoint) {
  if (!priorities.empty() && priorities.size() != parameters.size())
    throw StoreError("stream " + std::to_string(info.id) + ": " + std::to_string(priorities.size()) +
                     " priorities for " + std::to_string(parameters.size()) + " parameter sets");
  if (!timeouts.empty() && timeouts.size() != parameters.size())
    throw StoreError("stream " + std::to_string(info.id) + ": " + std::to_string(timeouts.size()) +
                     " timeouts for " + std::to_string(parameters.size()) + " parameter sets");
  rocksdb::WriteBatch batch;
  batch.Put(key('q', info.id, first_id), encode_pending(parameters, priorities, accepted_at, timeouts));
  if (checkpoint) batch.Put(key('g', info.id), encode_checkpoint(*checkpoint));
  batch.Put(key('m', info.id), encode_counters(info));
  check(db_->Write(rocksdb::WriteOptions(), &batch), "cannot write parameter sets ahead", directory_);
}

std::optional<GeneratorCheckpoint> ResultStore::generator(std::uint64_t stream) const {
  std::string bytes;
  auto status = db_->Get(rocksdb::ReadOptions(), key('g', stream), &bytes);
  if (status.IsNotFound()) return std::nullopt;
  check(status, "cannot read the generator's checkpoint", directory_);
  try {
    wire::HeaderReader reader(
        std::span<const std::byte>(reinterpret_cast<const std::byte*>(bytes.data()), bytes.size()));
    auto in = reader.root<wire::GeneratorCheckpoint>();
    GeneratorCheckpoint checkpoint;
    auto state = in.getState();
    checkpoint.state.assign(reinterpret_cast<const char*>(state.begin()), state.size());
    checkpoint.asked = in.getAsked();
    const auto damaged = [&] {
      return StoreError("stream " + std::to_string(stream) + ": its generator's checkpoint is damaged");
    };
    auto first = in.getToldFirst();
    auto last = in.getToldLast();
    if (first.size() != last.size()) throw damaged();
    for (unsigned i = 0; i < first.size(); ++i) checkpoint.told.push_back(IdRange{first[i], last[i]});
    checkpoint.sequence = in.getSequence();
    auto segment_first = in.getSegmentFirst();
    auto segment_sequence = in.getSegmentSequence();
    if (segment_first.size() != segment_sequence.size()) throw damaged();
    for (unsigned i = 0; i < segment_first.size(); ++i)
      checkpoint.segments.emplace_back(segment_first[i], segment_sequence[i]);
    auto orphan_first = in.getOrphanFirst();
    auto orphan_last = in.getOrphanLast();
    if (orphan_first.size() != orphan_last.size()) throw damaged();
    for (unsigned i = 0; i < orphan_first.size(); ++i)
      checkpoint.orphans.push_back(IdRange{orphan_first[i], orphan_last[i]});
    return checkpoint;
  } catch (const StoreError&) {
    throw;
  } catch (const std::exception& e) {
    throw StoreError("stream " + std::to_string(stream) +
                     ": its generator's checkpoint cannot be read: " + e.what());
  }
}

void ResultStore::sync() {
  check(db_->SyncWAL(), "cannot sync the write-ahead log", directory_);
}

std::vector<ResultStore::PendingBatch> ResultStore::pending(std::uint64_t stream) const {
  std::vector<PendingBatch> out;
  const std::string end = key('q', stream + 1);
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions()));
  RunCursor stored(*db_, stream);
  for (it->Seek(key('q', stream)); it->Valid() && it->key().compare(end) < 0; it->Next()) {
    if (it->key().size() != 17) continue;
    PendingBatch batch{read_be64(it->key().data() + 9), {}};
    wire::HeaderReader reader(std::span<const std::byte>(
        reinterpret_cast<const std::byte*>(it->value().data()), it->value().size()));
    auto root = reader.root<wire::PendingBatch>();
    auto list = root.getParameters();
    auto priorities = root.getPriorities();
    const bool prioritised = priorities.size() == list.size() && list.size() > 0;
    auto timeouts = root.getTimeouts();
    const bool timed = timeouts.size() == list.size() && list.size() > 0;
    const double accepted_at = root.getAcceptedAt();
    batch.accepted_at = std::isfinite(accepted_at) && accepted_at > 0 ? accepted_at : 0.0;
    // The stored runs tell which of these ids still need running (consecutive ids mostly share one).
    for (unsigned i = 0; i < list.size(); ++i) {
      const std::uint64_t id = batch.first_id + i;
      if (stored.find(id)) continue;
      batch.unanswered.emplace_back(id, wire::decode(list[i], {}));
      // A damaged record's nan must not reach an ordering.
      if (prioritised) batch.priorities.push_back(std::isfinite(priorities[i]) ? priorities[i] : 0.0);
      if (timed)
        batch.timeouts.push_back(std::isfinite(timeouts[i]) && timeouts[i] > 0
                                     ? std::min(timeouts[i], StreamSettings::kMaxTimeoutSeconds)
                                     : 0.0);
    }
    out.push_back(std::move(batch));
  }
  check(it->status(), "cannot read the parameter sets written ahead", directory_);
  check(stored.status(), "cannot read the stored results", directory_);
  return out;
}

void ResultStore::forget_pushes(std::uint64_t stream, std::span<const std::uint64_t> first_ids) {
  if (first_ids.empty()) return;
  rocksdb::WriteBatch batch;
  for (std::uint64_t first : first_ids) batch.Delete(key('q', stream, first));
  check(db_->Write(rocksdb::WriteOptions(), &batch), "cannot delete answered parameter sets", directory_);
}

std::optional<StreamInfo> ResultStore::stream(std::uint64_t id) const {
  std::string bytes, settings;
  if (!db_->Get(rocksdb::ReadOptions(), key('m', id), &bytes).ok()) return std::nullopt;
  const bool split = db_->Get(rocksdb::ReadOptions(), key('s', id), &settings).ok();
  auto info = decode_info(id, bytes, split ? &settings : nullptr);
  read_names(info);
  return info;
}

std::vector<StreamInfo> ResultStore::streams() const {
  std::vector<StreamInfo> out;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions()));
  for (it->Seek("m"); it->Valid() && it->key().size() == 9 && it->key()[0] == 'm'; it->Next()) {
    const std::uint64_t id = read_be64(it->key().data() + 1);
    std::string settings;
    const bool split = db_->Get(rocksdb::ReadOptions(), key('s', id), &settings).ok();
    out.push_back(decode_info(id, it->value(), split ? &settings : nullptr));
  }
  for (auto& info : out) read_names(info);
  return out;
}

void ResultStore::read_names(StreamInfo& info) const {
  std::string bytes;
  if (db_->Get(rocksdb::ReadOptions(), key('p', info.id), &bytes).ok())
    info.settings.parameter_names = decode_names(bytes);
}

std::vector<std::uint64_t> ResultStore::put(std::uint64_t stream, const std::vector<StreamResult>& results,
                                            Check mode, std::span<const std::uint64_t> answered) {
  rocksdb::WriteBatch batch;
  std::vector<const StreamResult*> fresh;
  fresh.reserve(results.size());
  if (mode == Check::stored) {
    std::unordered_set<std::uint64_t> in_batch;
    RunCursor stored(*db_, stream);
    for (const auto& r : results)
      if (in_batch.insert(r.id).second && !stored.find(r.id))
        fresh.push_back(&r);  // else a rerun's duplicate
    check(stored.status(), "cannot read the stored results", directory_);
  } else {
    for (const auto& r : results) fresh.push_back(&r);  // known_new: unique and not stored
  }
  std::sort(fresh.begin(), fresh.end(),
            [](const StreamResult* a, const StreamResult* b) { return a->id < b->id; });
  std::vector<std::uint64_t> written;
  written.reserve(fresh.size());
  for (std::size_t begin = 0; begin < fresh.size();) {
    std::size_t end = begin + 1;
    while (end < fresh.size() && end - begin < kMaxRunLength && fresh[end]->id == fresh[end - 1]->id + 1)
      ++end;
    const std::span<const StreamResult* const> run(fresh.data() + begin, end - begin);
    batch.Put(key('r', stream, run.front()->id), encode_run(run));
    for (const auto* r : run) written.push_back(r->id);
    begin = end;
  }
  for (std::uint64_t first : answered) batch.Delete(key('q', stream, first));
  if (written.empty() && answered.empty()) return written;
  rocksdb::WriteOptions sync;
  sync.sync = true;
  check(db_->Write(sync, &batch), "cannot write results", directory_);
  return written;
}

bool ResultStore::contains(std::uint64_t stream, std::uint64_t id) const {
  RunCursor stored(*db_, stream);
  const bool found = stored.find(id);
  check(stored.status(), "cannot read the stored results", directory_);
  return found;
}

std::optional<StreamResult> ResultStore::get(std::uint64_t stream, std::uint64_t id) const {
  RunCursor stored(*db_, stream);
  if (!stored.find(id)) {
    check(stored.status(), "cannot read the stored results", directory_);
    return std::nullopt;
  }
  std::optional<StreamResult> out;
  visit_record(stored.first(), stored.iterator().value(), id, id + 1, [&](StreamResult& r) {
    out = std::move(r);
    return false;
  });
  return out;
}

void ResultStore::scan(std::uint64_t stream, std::uint64_t first, std::uint64_t last,
                       const std::function<bool(StreamResult&)>& visit) const {
  if (first >= last) return;
  RunCursor stored(*db_, stream);
  auto& it = stored.iterator();
  // The run holding `first` may begin before it; otherwise the first run after it.
  if (!stored.find(first)) it.Seek(key('r', stream, first));
  for (; it.Valid() && is_result_key(it.key(), stream); it.Next()) {
    const std::uint64_t run_first = read_be64(it.key().data() + 9);
    if (run_first >= last) break;
    if (!visit_record(run_first, it.value(), first, last, visit)) return;
  }
  check(stored.status(), "cannot read the stored results", directory_);
}

std::uint64_t ResultStore::count(std::uint64_t stream) const {
  std::uint64_t n = 0;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions()));
  for (it->Seek(key('r', stream, 0)); it->Valid() && is_result_key(it->key(), stream); it->Next())
    n += record_length(it->value());
  check(it->status(), "cannot count the stored results", directory_);
  return n;
}

bool ResultStore::drop_stream(std::uint64_t stream) {
  std::string counters;
  if (!db_->Get(rocksdb::ReadOptions(), key('m', stream), &counters).ok()) return false;
  rocksdb::WriteBatch batch;
  for (char kind : {'m', 's', 'p', 'g'}) batch.Delete(key(kind, stream));
  // Its results and its pushes written ahead: one range each, whatever their ids.
  const std::string results_from = key('r', stream, 0), results_to = key('r', stream + 1, 0);
  const std::string pushes_from = key('q', stream, 0), pushes_to = key('q', stream + 1, 0);
  batch.DeleteRange(results_from, results_to);
  batch.DeleteRange(pushes_from, pushes_to);
  rocksdb::WriteOptions sync;
  sync.sync = true;
  check(db_->Write(sync, &batch), "cannot drop stream " + std::to_string(stream), directory_);
  // Deleted ranges still hold their files until compaction rewrites them: the space comes back now (the
  // memtable first, so that what it held leaves the log too).
  check(db_->Flush(rocksdb::FlushOptions()),
        "cannot flush before reclaiming the space of stream " + std::to_string(stream), directory_);
  rocksdb::CompactRangeOptions compact;
  compact.bottommost_level_compaction = rocksdb::BottommostLevelCompaction::kForce;
  for (const auto& [from, to] : {std::pair{results_from, results_to}, std::pair{pushes_from, pushes_to}}) {
    const rocksdb::Slice begin(from), end(to);
    check(db_->CompactRange(compact, &begin, &end),
          "cannot reclaim the space of stream " + std::to_string(stream), directory_);
  }
  return true;
}

}  // namespace tessera

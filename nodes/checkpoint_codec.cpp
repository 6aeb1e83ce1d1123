#include "nodes/checkpoint_codec.hpp"

#include "messages/wire_codec.hpp"

namespace tessera::wire {
namespace {

constexpr std::size_t kMaxText = 256;
constexpr std::uint64_t kEntryOverhead = 64;  // Cap'n Proto's words around an entry's texts

std::string bounded(capnp::Text::Reader text, const char* what) {
  if (text.size() > kMaxText)
    throw WireError(std::string("checkpoints request: ") + what + " of " + std::to_string(text.size()) +
                    " bytes, over the limit of " + std::to_string(kMaxText));
  return std::string(text.cStr(), text.size());
}

}  // namespace

CheckpointsQuery decode(CheckpointsRequest::Reader in) {
  CheckpointsQuery q;
  q.request_id = in.getRequestId();
  q.function = bounded(in.getFunction(), "a function name");
  q.after = bounded(in.getAfter(), "a key");
  q.limit = in.getLimit();
  q.drop = in.getDrop();
  q.selection.all = in.getDropAll();
  q.selection.function = q.drop ? q.function : std::string{};
  if (in.getKeys().size() > kMaxCheckpointKeysPerDrop)
    throw WireError("checkpoints request: " + std::to_string(in.getKeys().size()) +
                    " keys, over the limit of " + std::to_string(kMaxCheckpointKeysPerDrop));
  for (auto key : in.getKeys()) q.selection.keys.push_back(bounded(key, "a key"));
  return q;
}

void encode(const CheckpointsQuery& query, CheckpointsRequest::Builder out) {
  out.setRequestId(query.request_id);
  out.setFunction(query.drop ? query.selection.function : query.function);
  out.setAfter(query.after);
  out.setLimit(query.limit);
  out.setDrop(query.drop);
  out.setDropAll(query.selection.all);
  auto keys = out.initKeys(static_cast<unsigned>(query.selection.keys.size()));
  for (std::size_t i = 0; i < query.selection.keys.size(); ++i)
    keys.set(static_cast<unsigned>(i), query.selection.keys[i]);
}

void answer(const CheckpointsQuery& query, CheckpointStore& store, std::uint64_t max_bytes,
            CheckpointsAnswer::Builder out) {
  out.setRequestId(query.request_id);
  if (query.drop) {
    if (!query.selection.all && query.selection.function.empty() && query.selection.keys.empty())
      throw std::invalid_argument("drop needs --all, a function or keys");
    out.setDropped(store.drop(query.selection));
    return;
  }
  // One more than fits says whether the list goes on.
  const std::uint64_t by_bytes = std::max<std::uint64_t>(1, max_bytes / (kEntryOverhead + 2 * kMaxText));
  const std::uint64_t page = std::min<std::uint64_t>(query.limit == 0 ? by_bytes : query.limit, by_bytes);
  auto entries = store.list(query.function, query.after, page + 1);
  out.setMore(entries.size() > page);
  if (entries.size() > page) entries.resize(page);
  auto list = out.initEntries(static_cast<unsigned>(entries.size()));
  for (std::size_t i = 0; i < entries.size(); ++i) {
    auto e = list[static_cast<unsigned>(i)];
    e.setKey(entries[i].key);
    e.setFunction(entries[i].function.substr(0, kMaxText));
    e.setTask(entries[i].task.substr(0, kMaxText));
    e.setBytes(entries[i].bytes);
    e.setWrittenMs(entries[i].written_ms);
  }
}

std::vector<::tessera::CheckpointInfo> decode_entries(CheckpointsAnswer::Reader in) {
  std::vector<::tessera::CheckpointInfo> out;
  out.reserve(in.getEntries().size());
  for (auto e : in.getEntries())
    out.push_back(
        ::tessera::CheckpointInfo{e.getKey(), e.getFunction(), e.getTask(), e.getBytes(), e.getWrittenMs()});
  return out;
}

}  // namespace tessera::wire

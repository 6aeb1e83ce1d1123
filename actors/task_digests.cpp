#include "actors/task_digests.hpp"

#include <openssl/evp.h>

#include <cstring>
#include <memory>
#include <stdexcept>

#include "messages/wire_codec.hpp"

namespace tessera {
namespace {

constexpr char kVersion[] = "tessera-task-digest-1";

class Sha256 {
 public:
  Sha256() : context_(EVP_MD_CTX_new(), EVP_MD_CTX_free) {
    if (!context_ || EVP_DigestInit_ex(context_.get(), EVP_sha256(), nullptr) != 1)
      throw std::runtime_error("task digest: OpenSSL cannot start SHA-256");
  }
  void add(const void* data, std::size_t n) { EVP_DigestUpdate(context_.get(), data, n); }
  template <class T>
  void add_raw(T value) {
    add(&value, sizeof value);
  }
  TaskDigest finish() {
    TaskDigest out{};
    unsigned int n = 0;
    EVP_DigestFinal_ex(context_.get(), out.data(), &n);
    return out;
  }

 private:
  std::unique_ptr<EVP_MD_CTX, void (*)(EVP_MD_CTX*)> context_;
};

}  // namespace

TaskDigest digest_of(const Value& value) {
  const auto encoded = wire::encode_value_message(value);
  Sha256 sha;
  const auto header = encoded.header_bytes();
  sha.add_raw(static_cast<std::uint64_t>(header.size()));
  sha.add(header.data(), header.size());
  for (const auto& frame : encoded.attachments.frames) {
    sha.add_raw(static_cast<std::uint64_t>(frame.size()));
    sha.add(frame.data(), frame.size());
  }
  return sha.finish();
}

TaskDigests::Entry& TaskDigests::entry(const Operation& op) {
  auto [it, fresh] = cache_.try_emplace(op.id());
  if (fresh) {
    it->second.digests.resize(op.size());
    it->second.known.resize(op.size());
    it->second.broadcast.resize(op.columns().size());
  }
  return it->second;
}

TaskDigest TaskDigests::compute(const Operation& op, Entry& e, std::uint32_t task) {
  Sha256 sha;
  sha.add(kVersion, sizeof kVersion);
  const std::string& name = op.function().name;
  sha.add_raw(static_cast<std::uint64_t>(name.size()));
  sha.add(name.data(), name.size());
  sha.add_raw(task);
  const auto& columns = op.columns();
  sha.add_raw(static_cast<std::uint32_t>(columns.size()));
  for (std::size_t j = 0; j < columns.size(); ++j) {
    if (const Value* literal = columns[j].literal(task)) {
      sha.add("L", 1);
      if (columns[j].is_broadcast()) {
        if (!e.broadcast[j]) e.broadcast[j] = digest_of(*literal);
        sha.add(e.broadcast[j]->data(), e.broadcast[j]->size());
      } else {
        const auto d = digest_of(*literal);
        sha.add(d.data(), d.size());
      }
    } else {
      const TaskRef& ref = *columns[j].reference(task);
      const Entry& producer = cache_.at(ref.op);  // computed first, by of()
      sha.add("R", 1);
      sha.add(producer.digests[ref.index].data(), producer.digests[ref.index].size());
    }
  }
  return sha.finish();
}

std::optional<TaskDigest> TaskDigests::of(const Operation& op, std::uint32_t task, const Find& find) {
  if (task >= op.size()) return std::nullopt;
  {
    Entry& e = entry(op);
    if (e.known[task]) return e.digests[task];
  }
  // Depth first over the producers not yet known, with an explicit stack: chains can be long.
  std::vector<std::pair<const Operation*, std::uint32_t>> stack{{&op, task}};
  while (!stack.empty()) {
    auto [current, t] = stack.back();
    Entry& e = entry(*current);
    if (e.known[t]) {
      stack.pop_back();
      continue;
    }
    bool ready = true;
    for (const auto& column : current->columns()) {
      const TaskRef* ref = column.reference(t);
      if (!ref) continue;
      const Operation* producer = find(ref->op);
      if (!producer || ref->index >= producer->size()) return std::nullopt;
      if (!entry(*producer).known[ref->index]) {
        stack.emplace_back(producer, ref->index);
        ready = false;
      }
    }
    if (!ready) continue;
    Entry& again = entry(*current);  // entry() of a producer may have rehashed the map
    again.digests[t] = compute(*current, again, t);
    again.known[t] = true;
    stack.pop_back();
  }
  return entry(op).digests[task];
}

void TaskDigests::prune(const std::function<bool(OpId)>& live) {
  std::erase_if(cache_, [&](const auto& item) { return !live(item.first); });
}

}  // namespace tessera

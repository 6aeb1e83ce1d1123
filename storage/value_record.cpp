#include "storage/value_record.hpp"

#include <cstring>

namespace tessera {
namespace {

constexpr std::uint32_t kMagic = 0x4c505354;  // "TSPL"
constexpr std::size_t kMaxFrames = 1u << 20;
constexpr char kZeros[8] = {};

std::size_t padded(std::size_t n) {
  return (n + 7) & ~std::size_t{7};
}

template <class T>
void put_raw(std::string& out, std::size_t& at, T value) {
  std::memcpy(out.data() + at, &value, sizeof value);
  at += sizeof value;
}
template <class T>
T get_raw(std::string_view in, std::size_t& at) {
  if (in.size() < at + sizeof(T)) throw RecordCorrupt("record is cut short");
  T value;
  std::memcpy(&value, in.data() + at, sizeof value);
  at += sizeof value;
  return value;
}

}  // namespace

ValueRecord::ValueRecord(const Value& value) : encoded_(wire::encode_value_message(value)) {
  const auto header = encoded_.header_bytes();
  const auto& frames = encoded_.attachments.frames;
  prefix_.assign(16 + 8 * frames.size(), '\0');
  std::size_t at = 0;
  put_raw(prefix_, at, kMagic);
  put_raw(prefix_, at, static_cast<std::uint32_t>(frames.size()));
  put_raw(prefix_, at, static_cast<std::uint64_t>(header.size()));
  for (const auto& f : frames) put_raw(prefix_, at, static_cast<std::uint64_t>(f.size()));
  parts_.reserve(2 + 2 * frames.size() + 1);
  size_ = prefix_.size();
  const auto add = [&](const void* data, std::size_t n) {
    parts_.emplace_back(static_cast<const char*>(data), n);
    if (padded(n) != n) parts_.emplace_back(kZeros, padded(n) - n);
    size_ += padded(n);
  };
  parts_.emplace_back(prefix_);
  add(header.data(), header.size());
  for (const auto& f : frames) add(f.data(), f.size());
}

std::string ValueRecord::flat() const {
  std::string out;
  out.reserve(size_);
  for (const auto& part : parts_) out.append(part.data(), part.size());
  return out;
}

Value ValueRecord::decode(std::string_view record, std::shared_ptr<const void> owner) {
  std::size_t at = 0;
  if (get_raw<std::uint32_t>(record, at) != kMagic) throw RecordCorrupt("record has no Tessera header");
  const auto frame_count = get_raw<std::uint32_t>(record, at);
  if (frame_count > kMaxFrames) throw RecordCorrupt("record claims too many frames");
  const auto header_bytes = get_raw<std::uint64_t>(record, at);
  std::vector<std::uint64_t> sizes(frame_count);
  for (auto& s : sizes) s = get_raw<std::uint64_t>(record, at);
  const auto view = [&](std::uint64_t n) {
    if (n > record.size() || at > record.size() - n) throw RecordCorrupt("record is cut short");
    std::span<const std::byte> part(reinterpret_cast<const std::byte*>(record.data()) + at, n);
    at += padded(n);
    return part;
  };
  const auto header = view(header_bytes);
  std::vector<std::span<const std::byte>> frames;
  frames.reserve(frame_count);
  for (auto s : sizes) frames.push_back(view(s));
  try {
    if (owner) {
      std::vector<std::shared_ptr<const void>> owners(frames.size());
      for (std::size_t i = 0; i < frames.size(); ++i)
        if (reinterpret_cast<std::uintptr_t>(frames[i].data()) % kAdoptAlignment == 0) owners[i] = owner;
      return wire::decode_value_message(header, wire::Frames(frames, owners));
    }
    return wire::decode_value_message(header, frames);
  } catch (const wire::WireError& e) {
    throw RecordCorrupt(std::string("record does not decode: ") + e.what());
  }
}

std::optional<std::uint64_t> ValueRecord::first_frame_offset(std::string_view start) {
  if (start.size() < 16) return std::nullopt;
  std::size_t at = 0;
  if (get_raw<std::uint32_t>(start, at) != kMagic) return std::nullopt;
  const auto frame_count = get_raw<std::uint32_t>(start, at);
  const auto header_bytes = get_raw<std::uint64_t>(start, at);
  if (frame_count == 0 || frame_count > kMaxFrames || header_bytes > (std::uint64_t{1} << 48))
    return std::nullopt;
  return 16 + 8 * std::uint64_t{frame_count} + padded(header_bytes);
}

}  // namespace tessera

// The frames beside a message's Cap'n Proto header, and what keeps each one's bytes alive. Decoders copy
// small blobs out; a large one with an owner (a received ZeroMQ message) may become a chunk's storage as it
// is, with the owner kept by the chunk.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <vector>

namespace tessera::wire {

class Frames {
 public:
  Frames() = default;
  // Frames whose bytes live only as long as the caller's message: decoders copy them all.
  Frames(std::span<const std::span<const std::byte>> frames) : frames_(frames) {}
  Frames(const std::vector<std::span<const std::byte>>& frames) : frames_(frames) {}
  // owners[i] keeps frames[i] alive (null: copy it); owners is empty or as long as frames.
  Frames(std::span<const std::span<const std::byte>> frames,
         std::span<const std::shared_ptr<const void>> owners)
      : frames_(frames), owners_(owners) {}

  std::size_t size() const { return frames_.size(); }
  bool empty() const { return frames_.empty(); }
  const std::span<const std::byte>& operator[](std::size_t index) const { return frames_[index]; }
  auto begin() const { return frames_.begin(); }
  auto end() const { return frames_.end(); }
  // What keeps frame `index` alive beyond the message, or null when nothing does.
  std::shared_ptr<const void> owner(std::size_t index) const {
    return index < owners_.size() ? owners_[index] : nullptr;
  }

 private:
  std::span<const std::span<const std::byte>> frames_;
  std::span<const std::shared_ptr<const void>> owners_;
};

}  // namespace tessera::wire

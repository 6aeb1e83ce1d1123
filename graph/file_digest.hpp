// A file's FNV-1a 64-bit hash and size, read in blocks: enough to tell one file's contents from another's
// (a plugin without a build id, a CSV a stream was pushed from), not a defence against a crafted collision.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace tessera {

struct FileDigest {
  std::uint64_t fnv1a = 0;
  std::uint64_t bytes = 0;
  std::string hex() const;  // the hash as 16 hex digits
};

// Nothing when the file cannot be read.
std::optional<FileDigest> file_digest(const std::string& path);

}  // namespace tessera

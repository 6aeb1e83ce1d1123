#include "graph/file_digest.hpp"

#include <cstdio>
#include <fstream>
#include <vector>

namespace tessera {

std::string FileDigest::hex() const {
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(fnv1a));
  return text;
}

std::optional<FileDigest> file_digest(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  FileDigest digest{1469598103934665603ull, 0};
  std::vector<char> buffer(1 << 16);
  while (in) {
    in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
    const auto got = static_cast<std::size_t>(in.gcount());
    for (std::size_t i = 0; i < got; ++i)
      digest.fnv1a = (digest.fnv1a ^ static_cast<unsigned char>(buffer[i])) * 1099511628211ull;
    digest.bytes += got;
  }
  return digest;
}

}  // namespace tessera

// Reading a whole file in a test: what a program wrote, a log, an entry of /proc.
#pragma once

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace tessera::testing {

// The file's bytes as they are (binary); empty when it is missing or cannot be read.
inline std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

}  // namespace tessera::testing

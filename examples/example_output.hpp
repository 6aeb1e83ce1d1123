// Where the examples write what they make unless told: a folder of the system's temporary directory, so
// that running one from a checkout never writes into the source tree.
#pragma once

#include <filesystem>
#include <string>

namespace example {

// TMPDIR/tessera-examples/NAME, the folder made if it is missing.
inline std::string default_output(const std::string& name) {
  const auto folder = std::filesystem::temp_directory_path() / "tessera-examples";
  std::filesystem::create_directories(folder);
  return (folder / name).string();
}

}  // namespace example

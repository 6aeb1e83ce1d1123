// ScratchDir: a directory of a test's own under the system's temporary directory, named after a prefix,
// this process and a counter; new and empty when made, removed with everything in it at the end of its
// scope.
#pragma once

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>

namespace tessera::testing {

class ScratchDir {
 public:
  // TMPDIR/PREFIX-PID-N, with N counted in this process; a name that is taken already (a directory left by
  // an earlier process with this pid) is passed over, so the directory starts empty.
  explicit ScratchDir(const std::string& prefix = "tessera-test") {
    static std::atomic<int> instances{0};
    do {
      path_ = std::filesystem::temp_directory_path() /
              (prefix + "-" + std::to_string(getpid()) + "-" + std::to_string(++instances));
    } while (!std::filesystem::create_directory(path_));
  }
  ~ScratchDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  // A path inside the directory.
  std::filesystem::path operator/(const std::filesystem::path& name) const { return path_ / name; }
  // Writes `text` (as bytes) to the file `name` in the directory; its path.
  std::filesystem::path write(const std::string& name, const std::string& text) const {
    const std::filesystem::path file = path_ / name;
    std::ofstream(file, std::ios::binary) << text;
    return file;
  }

 private:
  std::filesystem::path path_;
};

}  // namespace tessera::testing

#include "nodes/atomic_file.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <system_error>

namespace tessera {

void write_file_atomically(const std::filesystem::path& file, const std::string& text,
                           std::filesystem::perms perms) {
  const std::filesystem::path partial = file.string() + ".partial";
  {
    std::ofstream out(partial, std::ios::trunc);
    out << text;
    out.close();
    if (!out) throw std::runtime_error("cannot write " + partial.string() + ": " + std::strerror(errno));
  }
  std::error_code error;
  std::filesystem::permissions(partial, perms, error);
  if (!error) std::filesystem::rename(partial, file, error);
  if (error)
    throw std::runtime_error("cannot put " + partial.string() + " in place of " + file.string() + ": " +
                             error.message());
}

}  // namespace tessera

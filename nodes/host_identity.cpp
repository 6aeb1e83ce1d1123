#include "nodes/host_identity.hpp"

#include <unistd.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <system_error>

namespace tessera {
namespace {

std::string first_line(const char* path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

// "net:[4026531840]": the namespace's inode, the same for every process that shares it.
std::string namespace_link(const char* path) {
  std::error_code error;
  const auto target = std::filesystem::read_symlink(path, error);
  return error ? std::string() : target.string();
}

}  // namespace

std::string this_host_identity() {
  const std::string boot = first_line("/proc/sys/kernel/random/boot_id");
  const std::string net = namespace_link("/proc/self/ns/net");
  const std::string mount = namespace_link("/proc/self/ns/mnt");
  if (boot.empty() || net.empty() || mount.empty()) return {};
  return boot + "/" + std::to_string(::getuid()) + "/" + net + "/" + mount;
}

}  // namespace tessera

namespace tessera {

std::string process_origin() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) name[0] = '\0';
  std::string host;
  for (const char* c = name; *c; ++c)  // a hostname is plain already; anything else is left out
    if (std::isalnum(static_cast<unsigned char>(*c)) || *c == '-' || *c == '.' || *c == '_') host += *c;
  return (host.empty() ? std::string("host") : host) + "-" + std::to_string(::getpid());
}

}  // namespace tessera

#include "graph/definition_identity.hpp"

#include <elf.h>
#include <link.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <map>
#include <mutex>

#include "graph/file_digest.hpp"

namespace tessera {
namespace {

struct Found {
  explicit Found(const void* at) : address(at) {}
  const void* address;
  std::uintptr_t base = 0;
  std::string path;
  std::string build;
  bool found = false;
};

std::string hex(const unsigned char* bytes, std::size_t size) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * size);
  for (std::size_t i = 0; i < size; ++i) {
    out += digits[bytes[i] >> 4];
    out += digits[bytes[i] & 15];
  }
  return out;
}

// The NT_GNU_BUILD_ID note of one loaded object, from its PT_NOTE segments.
std::string build_id(const dl_phdr_info& info) {
  for (int i = 0; i < info.dlpi_phnum; ++i) {
    const auto& segment = info.dlpi_phdr[i];
    if (segment.p_type != PT_NOTE) continue;
    const auto* at = reinterpret_cast<const unsigned char*>(info.dlpi_addr + segment.p_vaddr);
    const auto* end = at + segment.p_memsz;
    while (at + sizeof(ElfW(Nhdr)) <= end) {
      const auto* note = reinterpret_cast<const ElfW(Nhdr)*>(at);
      const auto* name = at + sizeof(ElfW(Nhdr));
      const auto* desc = name + ((note->n_namesz + 3) & ~3u);
      if (desc + note->n_descsz > end) break;
      if (note->n_type == NT_GNU_BUILD_ID && note->n_namesz == 4 &&
          std::string_view(reinterpret_cast<const char*>(name), 3) == "GNU")
        return hex(desc, note->n_descsz);
      at = desc + ((note->n_descsz + 3) & ~3u);
    }
  }
  return {};
}

int find_module(dl_phdr_info* info, std::size_t, void* data) {
  auto& wanted = *static_cast<Found*>(data);
  const auto address = reinterpret_cast<std::uintptr_t>(wanted.address);
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const auto& segment = info->dlpi_phdr[i];
    if (segment.p_type != PT_LOAD) continue;
    const std::uintptr_t start = info->dlpi_addr + segment.p_vaddr;
    if (address < start || address >= start + segment.p_memsz) continue;
    wanted.found = true;
    wanted.base = info->dlpi_addr;
    wanted.path = info->dlpi_name ? info->dlpi_name : "";
    wanted.build = build_id(*info);
    return 1;
  }
  return 0;
}

// FNV-1a over the file, for an object linked without a build id.
std::string file_hash(const std::string& path) {
  const auto digest = file_digest(path);
  return digest ? digest->hex() : std::string();
}

std::string executable_path() {
  char path[4096];
  const ssize_t size = ::readlink("/proc/self/exe", path, sizeof path - 1);
  return size > 0 ? std::string(path, static_cast<std::size_t>(size)) : std::string();
}

std::uintptr_t own_base() {
  Found self(reinterpret_cast<const void*>(&module_fingerprint));
  dl_iterate_phdr(find_module, &self);
  return self.base;
}

}  // namespace

ModuleFingerprint module_fingerprint(const void* address) {
  Found found(address);
  if (!address || dl_iterate_phdr(find_module, &found) == 0 || !found.found) return {"an unknown module", {}};
  static std::mutex mutex;
  static std::map<std::uintptr_t, ModuleFingerprint> known;
  static const std::uintptr_t tessera_base = own_base();
  std::lock_guard lock(mutex);
  if (auto it = known.find(found.base); it != known.end()) return it->second;
  // The main program has no name in the loader's list.
  const std::string path = found.path.empty() ? executable_path() : found.path;
  ModuleFingerprint out;
  out.module = path.substr(path.find_last_of('/') == std::string::npos ? 0 : path.find_last_of('/') + 1);
  out.build = found.build.empty() ? file_hash(path) : found.build;
  out.builtin = found.base == tessera_base;
  known.emplace(found.base, out);
  return out;
}

std::string definition_identity(std::string_view signature, const void* defined_at,
                                std::string_view version) {
  std::string out(signature);
  if (!version.empty()) return out + " version " + std::string(version);
  const ModuleFingerprint where = module_fingerprint(defined_at);
  if (where.builtin) return out + " built into Tessera";
  out += " from " + where.module;
  // 16 hex digits tell builds apart and stay readable in an error.
  if (!where.build.empty()) out += " build " + where.build.substr(0, 16);
  return out;
}

std::string definitions_differ(std::string_view what, std::string_view name, std::string_view theirs_label,
                               std::string_view theirs, std::string_view ours_label, std::string_view ours) {
  return std::string(what) + " '" + std::string(name) + "': " + std::string(theirs_label) +
         " defines it as " + std::string(theirs) + ", " + std::string(ours_label) + " as " +
         std::string(ours) +
         "; they differ (load the same plugin on both sides, or declare the same version)";
}

}  // namespace tessera

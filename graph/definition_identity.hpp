// What makes two registrations of one name the same definition across processes: a task function or a
// simulation is known by its signature and either the version its author declares or the module that
// defines it (the executable or shared library, fingerprinted by its GNU build id, the linker's hash of
// its contents). A client's and a node's definitions are compared by this text, and so are a
// scheduler's and each worker's: one that differs is refused, naming both.
#pragma once

#include <string>
#include <string_view>

namespace tessera {

struct ModuleFingerprint {
  std::string module;    // the file's name without its directory, e.g. "libtessera_examples.so"
  std::string build;     // its build id in hex (or a hash of the file when it has none); empty if unknown
  bool builtin = false;  // Tessera's own libraries: their functions are Tessera's, whatever the build
};

// The module mapped at `address` (a function's code, a type's typeinfo): found by the loader's list of
// loaded objects, so it works during a plugin's static initialisation too. Cached per module.
ModuleFingerprint module_fingerprint(const void* address);

// "f(int64) -> int64 from libplugin.so build 3fa2c1d0e5b7a9c4", "f(int64) -> int64 version 2" when the
// author declared one, "... built into Tessera" for Tessera's own. `defined_at` null: "from an unknown
// module".
std::string definition_identity(std::string_view signature, const void* defined_at, std::string_view version);

// The error text when a peer's definition of `name` differs from this process's.
std::string definitions_differ(std::string_view what, std::string_view name, std::string_view theirs_label,
                               std::string_view theirs, std::string_view ours_label, std::string_view ours);

}  // namespace tessera

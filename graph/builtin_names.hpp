// The names Tessera registers itself — its array, bag and fetch kernels (tessera.*) and what runs Python
// code a client sends (python:*) — as opposed to those a user's plugin, module or config declares: what
// `tessera status` and `tessera-node --check-config` list by name, counting the others.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tessera {

inline bool is_builtin_name(std::string_view name) {
  return name.starts_with("tessera.") || name.starts_with("python:");
}

// "3 (square, add, cube) and 76 built in", or "none of its own and 76 built in".
inline std::string own_and_builtin(const std::vector<std::string>& names, std::size_t at_most = 64) {
  std::string own;
  std::size_t own_count = 0, builtin = 0;
  for (const auto& name : names) {
    if (is_builtin_name(name)) {
      ++builtin;
      continue;
    }
    if (own_count < at_most) own += (own.empty() ? "" : ", ") + name;
    ++own_count;
  }
  if (own_count > at_most) own += ", and " + std::to_string(own_count - at_most) + " more";
  std::string text = own_count ? std::to_string(own_count) + " (" + own + ")" : "none of its own";
  if (builtin) text += " and " + std::to_string(builtin) + " built in";
  return text;
}

}  // namespace tessera

#include "backends/cpu/cpu_features.hpp"

#include <cstdlib>
#include <iostream>
#include <string_view>

namespace tessera::backends::cpu {

bool wide_kernels_available() {
#if defined(TESSERA_WIDE_KERNELS) && defined(__x86_64__)
  static const bool available = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
           __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
  }();
  return available;
#else
  return false;
#endif
}

bool wide_kernels_enabled() {
  static const bool enabled = [] {
    const char* variable = std::getenv("TESSERA_WIDE_KERNELS");
    const std::string_view setting = variable ? variable : "";
    if (setting == "off") return false;
    if (!setting.empty() && setting != "auto")
      std::cerr << "[tessera] TESSERA_WIDE_KERNELS=" << setting.substr(0, 64)
                << " is neither auto nor off: using auto (the AVX-512 kernels where the CPU has them)"
                << std::endl;
    return wide_kernels_available();
  }();
  return enabled;
}

}  // namespace tessera::backends::cpu

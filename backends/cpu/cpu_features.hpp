// Which builds of the hot loops this process runs: the portable x86-64 ones, or the x86-64-v4 (AVX-512)
// ones of libtessera_wide_kernels (cpu/wide/).
#pragma once

namespace tessera::backends::cpu {

// True when libtessera_wide_kernels was built (x86-64), this CPU has AVX-512 F, DQ, BW and VL, and the
// environment variable TESSERA_WIDE_KERNELS is not "off" ("auto" or unset: use them; read once, at the
// first call; another value is named on stderr and taken as auto).
bool wide_kernels_enabled();

// Whether the library was built and the CPU could run it, whatever TESSERA_WIDE_KERNELS says (tests).
bool wide_kernels_available();

}  // namespace tessera::backends::cpu

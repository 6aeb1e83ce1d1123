#!/usr/bin/env bash
# Builds libcaf_core 0.17.6 (Debian's source, same version and configuration as libcaf-dev) with
# ThreadSanitizer into build-caf-tsan/, for ThreadSanitizer runs only: Debian's libcaf_core is not
# instrumented, so TSan cannot see that a CAF message send happens before its receipt and reports every
# message as a race. A build configured with -DTESSERA_TSAN=ON links this library when it exists:
#   scripts/build-caf-tsan.sh && cmake -S . -B build-tsan -DTESSERA_TSAN=ON && cmake --build build-tsan \
#     && ctest --test-dir build-tsan
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work="$root/build-caf-tsan"
mkdir -p "$work/src" "$work/lists/partial"
echo "deb-src http://deb.debian.org/debian bookworm main" >"$work/sources.list"
apt=(-o Dir::Etc::sourcelist="$work/sources.list" -o Dir::Etc::sourceparts=- -o Dir::State::Lists="$work/lists")
apt-get -q "${apt[@]}" update >/dev/null
(cd "$work/src" && apt-get -q "${apt[@]}" source --download-only actor-framework >/dev/null 2>&1 || true)
tarball=$(ls "$work"/src/actor-framework_0.17.6.orig.tar.gz)
tar -C "$work/src" -xzf "$tarball"
cmake -S "$work/src/actor-framework-0.17.6" -B "$work/build" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CXX_FLAGS="-fsanitize=thread -g" -DCAF_LOG_LEVEL=QUIET -DCAF_NO_EXAMPLES=yes \
  -DCAF_NO_UNIT_TESTS=yes -DCAF_NO_OPENSSL=yes -DCAF_NO_IO=yes -DCAF_NO_TOOLS=yes -DCAF_NO_PYTHON=yes \
  -DCAF_NO_OPENCL=yes >/dev/null
cmake --build "$work/build" --target libcaf_core_shared -j"$(nproc)"
mkdir -p "$work/lib"
cp -P "$work"/build/lib/libcaf_core.so* "$work/lib/"
echo "instrumented libcaf_core in $work/lib"

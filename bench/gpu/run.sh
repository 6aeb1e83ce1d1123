#!/usr/bin/env bash
# The one command to run on a lent GPU machine (an H200): a Release build of the GPU-relevant targets, the
# SVD benchmark on cuda checked against cpu, then the cuda tests. Everything is logged under
# ${OUT:-/tmp}/gpu-logs/; the output shows each step, the benchmark and test results, and a log's tail when a
# step fails. Exits non-zero when any step failed (later steps still run when they can).
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "${repo_root}"
log_dir="${OUT:-/tmp}/gpu-logs"
mkdir -p "${log_dir}"
build_dir=build-gpu
failed_steps=()

# Runs a command quietly into a log; on failure prints the log's tail and records the step.
run_quiet() {
  local name="$1" log="${log_dir}/$1.log"
  shift
  echo "== ${name}: $* (log: ${log})"
  local start=${SECONDS}
  if "$@" >"${log}" 2>&1; then
    echo "   ok in $((SECONDS - start)) s"
  else
    echo "   FAILED after $((SECONDS - start)) s; last lines of ${log}:"
    tail -n 60 "${log}"
    failed_steps+=("${name}")
    return 1
  fi
}

# Runs a command with its output both shown and logged.
run_shown() {
  local name="$1" log="${log_dir}/$1.log"
  shift
  echo "== ${name}: $* (log: ${log})"
  local start=${SECONDS}
  if "$@" 2>&1 | tee "${log}"; then
    echo "   ok in $((SECONDS - start)) s"
  else
    echo "   FAILED after $((SECONDS - start)) s"
    failed_steps+=("${name}")
  fi
}

finish() {
  if ((${#failed_steps[@]} > 0)); then
    echo "== failed steps: ${failed_steps[*]}"
    exit 1
  fi
  echo "== all steps passed"
}

run_shown gpu nvidia-smi -L

generator=()
if command -v ninja >/dev/null 2>&1; then generator=(-G Ninja); fi
if ! run_quiet configure cmake -S . -B "${build_dir}" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CUDA_ARCHITECTURES=90 -DTESSERA_BUILD_TESTS=ON; then
  finish
fi
# Without the toolkit the build quietly falls back to the stub backend: that would make every cuda check moot.
if ! grep -q "Tessera cuda backend: ON" "${log_dir}/configure.log"; then
  echo "   the configure step did not find the CUDA toolkit (no 'Tessera cuda backend: ON' in its log)"
  failed_steps+=(cuda-toolkit)
  finish
fi

# The GPU-relevant targets: the SVD benchmark and example, the cuda tests, and the array tests' cuda case.
targets=(tessera-bench-svd svd_example cuda_test array_test)
if ! run_quiet build cmake --build "${build_dir}" -j16 --target "${targets[@]}"; then finish; fi

run_shown test-cuda "${build_dir}/bin/cuda_test"
run_shown test-array-cuda "${build_dir}/bin/array_test" --gtest_filter='*Cuda*'
run_shown example-svd "${build_dir}/bin/svd_example"

bench="${build_dir}/bin/tessera-bench-svd"
if [[ -x "${bench}" ]]; then
  for chunk_rows in 5000 1000; do
    run_shown "bench-svd-chunk-rows-${chunk_rows}" "${bench}" --rows 10000 --cols 1000 --seed 1 \
      --chunk-rows "${chunk_rows}" --backend cuda --check-against cpu
  done
fi

finish

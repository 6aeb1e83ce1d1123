#!/usr/bin/env bash
# Installs every dependency Tessera needs from Debian's packages; `--main` only what building Tessera
# and running the main job need (the README's first command). Idempotent: a package already present is
# not fetched again, and apt-get update runs only when something is missing.
set -euo pipefail

# What configuring and building need (the main job's targets and the rest alike).
packages=(
  build-essential cmake ninja-build pkg-config dpkg-dev
  libcaf-dev libzmq3-dev cppzmq-dev libcapnp-dev capnproto libeigen3-dev
  librocksdb-dev libtomlplusplus-dev libcpp-httplib-dev libopenblas-dev liblapacke-dev
  libgtest-dev libgmock-dev libbenchmark-dev libcli11-dev nlohmann-json3-dev libyaml-cpp-dev
  libnetfilter-queue-dev
  zlib1g-dev libssl-dev
  libjs-chart.js
  python3 python3-dev pybind11-dev python3-pybind11 python3-cloudpickle
)
# What the test suite, the examples and the benches run besides (a browser, Slurm, MPI, LAMMPS, Python's
# scientific stack, network namespaces): not needed by the main job, so `--main` leaves them out.
test_packages=(
  gnuplot-nox chromium chromium-driver fonts-liberation
  python3-pytest python3-numpy python3-pandas python3-sklearn python3-matplotlib
  python3-venv   # the gest-api test: libEnsemble from PyPI in a virtual environment
  slurmctld slurmd slurm-client munge iproute2 iptables
  openmpi-bin libopenmpi-dev
  lammps   # examples/programs: a Debian program run as a simulation
)
if [[ "${1:-}" != "--main" ]]; then
  packages+=("${test_packages[@]}")
fi
# The peers the benchmarks compare against; only when asked (bench/compare needs them).
if [[ "${TESSERA_WITH_PEERS:-0}" == 1 ]]; then
  packages+=(python3-dask python3-distributed parallel)
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  echo "setup: all ${#packages[@]} packages present"
  exit 0
fi

sudo_cmd=()
[[ $(id -u) -eq 0 ]] || sudo_cmd=(sudo)
echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -q
"${sudo_cmd[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}" </dev/null

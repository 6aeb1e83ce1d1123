#!/usr/bin/python3
"""Programs per parameter set side by side: Tessera's program simulations against GNU parallel and
xargs -P running the same program over the same inputs on the same cores, in one run.

  trivial: 20,000 sets of a program that prints its number (echo), on 2 slots; sets/s
           (goal: at least 2x GNU parallel, with every result durable in RocksDB)
  floor:   2,000 sets of a 50 ms program (sh -c "sleep 0.05; echo x") on 2 slots; overhead against
           sets x 50 ms / slots (goal: within 2%)
  mpi:     sets of a 2-rank MPI program (--mpi-program) under mpirun, against mpirun in a shell loop

Tessera: <build-dir>/bin/tessera-bench-programs (a LocalCluster with a data_dir: each result is a synced
RocksDB write). GNU parallel and xargs write every result line to a file. Markdown to stdout.

  /usr/bin/python3 bench/compare/compare_programs.py [--build-dir build] [--sets 20000] [--floor-sets 2000]
      [--mpi-program build/bin/tessera_mpi_ranks --mpi-sets 40]
"""
import argparse
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path


def timed(command, **kwargs):
    start = time.perf_counter()
    subprocess.run(command, check=True, **kwargs)
    return time.perf_counter() - start


def peer_rows(name, sets, slots, make_command, inputs, unit):
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out"
        with open(out, "w") as sink:
            seconds = timed(make_command(), input=inputs, stdout=sink, text=True, shell=False)
        lines = sum(1 for _ in open(out))
    if lines < sets:
        raise RuntimeError(f"{name}: {lines} result lines for {sets} sets")
    return seconds


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build-dir", default="build")
    parser.add_argument("--sets", type=int, default=20000)
    parser.add_argument("--floor-sets", type=int, default=2000)
    parser.add_argument("--slots", type=int, default=2)
    parser.add_argument("--mpi-program", default="")
    parser.add_argument("--mpi-sets", type=int, default=40)
    parser.add_argument("--only-mpi", action="store_true", help="the MPI rows alone")
    args = parser.parse_args()
    bench = Path(args.build_dir) / "bin" / "tessera-bench-programs"
    if shutil.which("parallel") is None:
        raise SystemExit("GNU parallel is missing: apt-get install parallel (TESSERA_WITH_PEERS=1 scripts/setup.sh)")
    slots = str(args.slots)
    print("| row | runner | sets | seconds | sets/s | vs floor or peer |")
    print("|---|---|---|---|---|---|")

    def tessera(mode, sets, *extra):
        out = subprocess.run([str(bench), "--mode", mode, "--sets", str(sets), "--slots", slots, *extra],
                             check=True, capture_output=True, text=True).stdout
        return json.loads(out.strip().splitlines()[-1])

    if not args.only_mpi:
        # Trivial sets.
        inputs = "".join(f"{i}\n" for i in range(args.sets))
        ours = tessera("trivial", args.sets)
        gnu = peer_rows("parallel", args.sets, args.slots, lambda: ["parallel", "-j", slots, "echo", "{}"], inputs, "")
        xargs = peer_rows("xargs", args.sets, args.slots, lambda: ["xargs", "-P", slots, "-n", "1", "echo"], inputs, "")
        rate = ours["sets_per_second"]
        print(f"| trivial | Tessera (durable) | {args.sets} | {ours['seconds']:.2f} | {rate:.0f} | "
              f"{rate / (args.sets / gnu):.2f}x GNU parallel (goal >= 2x: {'met' if rate >= 2 * args.sets / gnu else 'NOT met'}) |")
        print(f"| trivial | GNU parallel -j{slots} | {args.sets} | {gnu:.2f} | {args.sets / gnu:.0f} | |")
        print(f"| trivial | xargs -P{slots} | {args.sets} | {xargs:.2f} | {args.sets / xargs:.0f} | |")

        # 50 ms sets against the floor.
        floor = args.floor_sets * 0.05 / args.slots
        ours = tessera("floor", args.floor_sets, "--sleep-ms", "50")
        inputs = "".join(f"{i}\n" for i in range(args.floor_sets))
        gnu = peer_rows("parallel", args.floor_sets, args.slots,
                        lambda: ["parallel", "-j", slots, "sh", "-c", "'sleep 0.05; echo {}'"], inputs, "")
        over = ours["seconds"] / floor - 1
        print(f"| 50 ms | Tessera | {args.floor_sets} | {ours['seconds']:.2f} | {args.floor_sets / ours['seconds']:.1f} | "
              f"floor {floor:.1f} s, +{100 * over:.2f}% (goal <= 2%: {'met' if over <= 0.02 else 'NOT met'}) |")
        print(f"| 50 ms | GNU parallel -j{slots} | {args.floor_sets} | {gnu:.2f} | {args.floor_sets / gnu:.1f} | "
              f"+{100 * (gnu / floor - 1):.2f}% |")

    if args.mpi_program:
        args.mpi_program = str(Path(args.mpi_program).resolve())
        env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
        ours = tessera("mpi", args.mpi_sets, "--program", args.mpi_program, "--ranks", "2")
        script = f"for i in $(seq {args.mpi_sets}); do mpirun -n 2 --bind-to none {args.mpi_program} $i; done"
        with tempfile.TemporaryDirectory() as tmp:
            with open(Path(tmp) / "out", "w") as sink:
                loop = timed(["sh", "-c", script], stdout=sink, env=env)
        print(f"| mpi, 2 ranks | Tessera | {args.mpi_sets} | {ours['seconds']:.2f} | {ours['sets_per_second']:.2f} | "
              f"{ours['sets_per_second'] / (args.mpi_sets / loop):.2f}x the loop |")
        print(f"| mpi, 2 ranks | mpirun in a shell loop | {args.mpi_sets} | {loop:.2f} | {args.mpi_sets / loop:.2f} | |")


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""Programs per parameter set side by side: Tessera's program simulations against GNU parallel, xargs -P,
Parsl and libEnsemble running the same program over the same inputs on the same cores, in one run.

  trivial: 20,000 sets of a program that prints its number (echo), on 2 slots; sets/s
           (goals: at least 2x GNU parallel, with every result durable in RocksDB; ahead of Parsl and
           libEnsemble)
  floor:   2,000 sets of a 50 ms program (<build>/bin/tessera-bench-sleep-print 50 x: one exec, one sleep,
           no shell) on 2 slots; overhead against
           sets x 50 ms / slots (goal: within 2%); --floor-sets 0 leaves this row out
  mpi:     sets of a 2-rank MPI program (--mpi-program) under mpirun, against mpirun in a shell loop

Tessera: <build-dir>/bin/tessera-bench-programs (a LocalCluster with a data_dir: each result is a synced
RocksDB write). GNU parallel and xargs write every result line to a file. Parsl (bench/compare/programs_parsl.py:
a bash_app `echo {i}` per set on a local HighThroughputExecutor with --slots workers, each set's stdout read
back) and libEnsemble (bench/compare/programs_libensemble.py: a sim function submitting the app echo through
libEnsemble's Executor per point, --slots workers on local comms, each task's stdout read back) run under the
venv's Python, in a temporary directory, each timed from the first set's submission to the last set's result
(their start-up is reported apart, not timed, as Tessera's cluster start-up is not). Every peer's results are
counted and checked. Markdown to stdout; a peer that fails or hangs past --timeout gets a FAILED row naming it
and the script exits 1 after the other rows.

The Parsl and libEnsemble peers come from PyPI into bench/.venv (git-ignored):
  /usr/bin/python3 -m venv --system-site-packages bench/.venv && bench/.venv/bin/pip install parsl libensemble

  /usr/bin/python3 bench/compare/compare_programs.py [--build-dir build] [--sets 20000] [--floor-sets 2000]
      [--peers parallel,xargs,parsl,libensemble] [--venv bench/.venv] [--timeout 900]
      [--mpi-program build/bin/tessera_mpi_ranks --mpi-sets 40] [--only-mpi]
"""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
PEERS = ("parallel", "xargs", "parsl", "libensemble")
INSTALL = ("/usr/bin/python3 -m venv --system-site-packages bench/.venv && "
           "bench/.venv/bin/pip install parsl libensemble")
# key: (label, the module that runs it, what it imports)
PYTHON_PEERS = {"parsl": ("Parsl", "programs_parsl.py", "parsl"),
                "libensemble": ("libEnsemble", "programs_libensemble.py", "libensemble")}


def timed(name, command, timeout, **kwargs):
    start = time.perf_counter()
    try:
        subprocess.run(command, check=True, timeout=timeout, **kwargs)
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"{name}: no result within {timeout:.0f} s (killed)") from None
    except subprocess.CalledProcessError as e:
        raise RuntimeError(f"{name}: exit status {e.returncode}") from None
    return time.perf_counter() - start


def peer_rows(name, sets, make_command, inputs, timeout):
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out"
        with open(out, "w") as sink:
            seconds = timed(name, make_command(), timeout, input=inputs, stdout=sink, text=True, shell=False)
        lines = sum(1 for _ in open(out))
    if lines < sets:
        raise RuntimeError(f"{name}: {lines} result lines for {sets} sets")
    return seconds


def python_peer(key, sets, slots, venv, timeout):
    """Runs bench/compare/programs_<key>.py under the venv's Python in a temporary directory (also its TMPDIR,
    so that whatever the peer leaves behind is removed). Returns (result, None) or (None, why it was skipped);
    raises RuntimeError naming the peer when it fails or hangs."""
    label, script, module = PYTHON_PEERS[key]
    python = venv / "bin" / "python"  # not resolved: the venv is found from this path
    if not python.exists():
        return None, f"{label} not installed ({python} is missing): {INSTALL}"
    try:
        found = subprocess.run([str(python), "-c", f"import {module}"], capture_output=True, timeout=120,
                               stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"{label}: `import {module}` did not finish within 120 s") from None
    if found.returncode != 0:
        return None, f"{label} not installed in {venv}: {INSTALL}"
    # The peer enforces --timeout itself (and shuts its executor down); this is the backstop.
    backstop = timeout + 60
    with tempfile.TemporaryDirectory(prefix=f"tessera-compare-{key}-") as tmp:
        proc = subprocess.Popen([str(python), str(HERE / script), "--sets", str(sets), "--slots", str(slots),
                                 "--timeout", str(timeout)],
                                cwd=tmp, env=dict(os.environ, TMPDIR=tmp, PYTHONUNBUFFERED="1"),
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, start_new_session=True)
        try:
            out, err = proc.communicate(timeout=backstop)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            raise RuntimeError(f"{label}: hung, no result within {backstop:.0f} s (killed)") from None
    if proc.returncode != 0:
        lines = err.strip().splitlines()
        sys.stderr.write(err)
        raise RuntimeError(f"{label}: exit status {proc.returncode}: {lines[-1] if lines else 'no message'}")
    result = json.loads(out.strip().splitlines()[-1])
    if result.get("sets") != sets:
        raise RuntimeError(f"{label}: reported {result.get('sets')} sets for {sets}")
    return result, None


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build-dir", default="build")
    parser.add_argument("--sets", type=int, default=20000, help="0 leaves the trivial rows out")
    parser.add_argument("--floor-sets", type=int, default=2000, help="0 leaves the 50 ms row out")
    parser.add_argument("--slots", type=int, default=2)
    parser.add_argument("--peers", default=",".join(PEERS),
                        help=f"comma-separated peers for the trivial row, of {','.join(PEERS)} (default all)")
    parser.add_argument("--venv", default=str(REPO / "bench" / ".venv"),
                        help="the virtual environment with parsl and libensemble")
    parser.add_argument("--timeout", type=float, default=900, help="seconds allowed to each runner")
    parser.add_argument("--mpi-program", default="")
    parser.add_argument("--mpi-sets", type=int, default=40)
    parser.add_argument("--only-mpi", action="store_true", help="the MPI rows alone")
    args = parser.parse_args()
    peers = [p.strip() for p in args.peers.split(",") if p.strip()]
    unknown = sorted(set(peers) - set(PEERS))
    if unknown:
        parser.error(f"--peers: unknown {', '.join(unknown)} (known: {', '.join(PEERS)})")
    bench = Path(args.build_dir) / "bin" / "tessera-bench-programs"
    if not args.only_mpi and "parallel" in peers and shutil.which("parallel") is None:
        raise SystemExit("GNU parallel is missing: apt-get install parallel (TESSERA_WITH_PEERS=1 scripts/setup.sh)")
    venv = Path(args.venv)
    slots = str(args.slots)
    failures = []
    print("| row | runner | sets | seconds | sets/s | vs floor or peer |")
    print("|---|---|---|---|---|---|", flush=True)

    def tessera(mode, sets, *extra):
        command = [str(bench), "--mode", mode, "--sets", str(sets), "--slots", slots, *extra]
        try:
            out = subprocess.run(command, check=True, capture_output=True, text=True, timeout=args.timeout).stdout
        except subprocess.TimeoutExpired:
            raise SystemExit(f"Tessera ({bench} --mode {mode}): no result within {args.timeout:.0f} s (killed)")
        except subprocess.CalledProcessError as e:
            raise SystemExit(f"Tessera ({bench} --mode {mode}): exit status {e.returncode}: {e.stderr.strip()}")
        return json.loads(out.strip().splitlines()[-1])

    def attempt(label, run):
        try:
            return run(), None
        except RuntimeError as e:
            print(f"compare_programs.py: {e}", file=sys.stderr, flush=True)
            failures.append(label)
            return None, f"FAILED: {e}"

    if not args.only_mpi:
        if args.sets > 0:
            # Trivial sets: Tessera, then each peer, one after the other on the same cores.
            inputs = "".join(f"{i}\n" for i in range(args.sets))
            ours = tessera("trivial", args.sets)
            rate = ours["sets_per_second"]
            rows = []  # (key, runner, seconds or None, note)
            if "parallel" in peers:
                gnu, why = attempt("GNU parallel", lambda: peer_rows(
                    "GNU parallel", args.sets, lambda: ["parallel", "-j", slots, "echo", "{}"], inputs, args.timeout))
                rows.append(("parallel", f"GNU parallel -j{slots}", gnu, why or ""))
            if "xargs" in peers:
                xargs, why = attempt("xargs", lambda: peer_rows(
                    "xargs", args.sets, lambda: ["xargs", "-P", slots, "-n", "1", "echo"], inputs, args.timeout))
                rows.append(("xargs", f"xargs -P{slots}", xargs, why or ""))
            for key in ("parsl", "libensemble"):
                if key not in peers:
                    continue
                label = PYTHON_PEERS[key][0]
                outcome, why = attempt(label, lambda: python_peer(key, args.sets, args.slots, venv, args.timeout))
                result, skipped = outcome or (None, None)
                if skipped:
                    print(f"compare_programs.py: skipped: {skipped}", file=sys.stderr, flush=True)
                    why = f"skipped: {skipped}"
                if result is None:
                    rows.append((key, label, None, why))
                    continue
                runner = (f"Parsl {result['version']} bash_app, HTEX {slots} workers" if key == "parsl" else
                          f"libEnsemble {result['version']} Executor, {slots} workers")
                note = (f"start-up {result['startup_seconds']:.1f} s, shut-down {result['shutdown_seconds']:.1f} s "
                        f"(not timed)")
                rows.append((key, runner, result["seconds"], note))

            # Tessera's row: its ratio against each peer and the goals.
            versus = []
            ahead_of = {"parsl": "Parsl", "libensemble": "libEnsemble"}
            measured, missing = [], []
            for key, runner, seconds, _ in rows:
                name = {"parallel": "GNU parallel", "xargs": f"xargs -P{slots}"}.get(key, ahead_of.get(key))
                if seconds is None:
                    if key in ahead_of:
                        missing.append(name)
                    continue
                ratio = rate / (args.sets / seconds)
                if key == "parallel":
                    versus.append(f"{ratio:.2f}x GNU parallel (goal >= 2x: {'met' if ratio >= 2 else 'NOT met'})")
                else:
                    versus.append(f"{ratio:.2f}x {name}")
                if key in ahead_of:
                    measured.append((name, ratio))
            if measured:
                goal = "met" if all(ratio > 1 for _, ratio in measured) else "NOT met"
                versus.append(f"goal ahead of {' and '.join(name for name, _ in measured)}: {goal}"
                              + (f" ({' and '.join(missing)} not measured)" if missing else ""))
            elif missing:
                versus.append(f"goal ahead of {' and '.join(missing)}: not measured")
            print(f"| trivial | Tessera (durable) | {args.sets} | {ours['seconds']:.2f} | {rate:.0f} | "
                  f"{'; '.join(versus)} |")
            for key, runner, seconds, note in rows:
                note = note.replace("|", "\\|")  # markdown
                if seconds is None:
                    print(f"| trivial | {runner} | {args.sets} | - | - | {note} |")
                    continue
                ratio = f"Tessera {rate / (args.sets / seconds):.2f}x"
                print(f"| trivial | {runner} | {args.sets} | {seconds:.2f} | {args.sets / seconds:.0f} | "
                      f"{ratio}{'; ' + note if note else ''} |", flush=True)

        # 50 ms sets against the floor.
        if args.floor_sets > 0:
            sleeper = (Path(args.build_dir) / "bin" / "tessera-bench-sleep-print").resolve()
            floor = args.floor_sets * 0.05 / args.slots
            # The simplest runner of the same program on the same cores, keeping nothing: xargs -P. What it
            # takes past the floor is what starting, waking for and reaping a 50 ms process costs this machine.
            floor_inputs = "".join(f"{i}\n" for i in range(args.floor_sets))
            simplest, why = attempt("xargs (50 ms)", lambda: peer_rows(
                "xargs (50 ms)", args.floor_sets,
                lambda: ["xargs", "-P", slots, "-n", "1", str(sleeper), "50"], floor_inputs, args.timeout))
            ours = tessera("floor", args.floor_sets, "--sleep-ms", "50")
            over = ours["seconds"] / floor - 1
            print(f"| 50 ms | Tessera | {args.floor_sets} | {ours['seconds']:.2f} | "
                  f"{args.floor_sets / ours['seconds']:.1f} | "
                  f"floor {floor:.1f} s, +{100 * over:.2f}% (goal <= 2%: {'met' if over <= 0.02 else 'NOT met'})"
                  + (f"; against xargs -P{slots} +{100 * (ours['seconds'] / simplest - 1):.2f}%" if simplest else "")
                  + " |")
            if simplest is None:
                print(f"| 50 ms | xargs -P{slots} | {args.floor_sets} | - | - | {why} |")
            else:
                print(f"| 50 ms | xargs -P{slots} | {args.floor_sets} | {simplest:.2f} | "
                      f"{args.floor_sets / simplest:.1f} | +{100 * (simplest / floor - 1):.2f}% |")
            if "parallel" in peers:
                inputs = "".join(f"{i}\n" for i in range(args.floor_sets))
                gnu, why = attempt("GNU parallel (50 ms)", lambda: peer_rows(
                    "GNU parallel (50 ms)", args.floor_sets,
                    lambda: ["parallel", "-j", slots, str(sleeper), "50", "{}"], inputs, args.timeout))
                if gnu is None:
                    print(f"| 50 ms | GNU parallel -j{slots} | {args.floor_sets} | - | - | {why} |")
                else:
                    print(f"| 50 ms | GNU parallel -j{slots} | {args.floor_sets} | {gnu:.2f} | "
                          f"{args.floor_sets / gnu:.1f} | +{100 * (gnu / floor - 1):.2f}% |")

    if args.mpi_program:
        args.mpi_program = str(Path(args.mpi_program).resolve())
        env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
        ours = tessera("mpi", args.mpi_sets, "--program", args.mpi_program, "--ranks", "2")
        script = f"for i in $(seq {args.mpi_sets}); do mpirun -n 2 --bind-to none {args.mpi_program} $i; done"
        with tempfile.TemporaryDirectory() as tmp:
            with open(Path(tmp) / "out", "w") as sink:
                loop = timed("mpirun loop", ["sh", "-c", script], args.timeout, stdout=sink, env=env)
        print(f"| mpi, 2 ranks | Tessera | {args.mpi_sets} | {ours['seconds']:.2f} | {ours['sets_per_second']:.2f} | "
              f"{ours['sets_per_second'] / (args.mpi_sets / loop):.2f}x the loop |")
        print(f"| mpi, 2 ranks | mpirun in a shell loop | {args.mpi_sets} | {loop:.2f} | {args.mpi_sets / loop:.2f} | |")

    if failures:
        print(f"compare_programs.py: failed: {', '.join(failures)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/python3
"""Every bench/compare/compare_*.py in one run, one after the other on an otherwise idle machine, each
side by side with its peers (Dask, scikit-learn, NumPy, multiprocessing). Writes one markdown report:
the commit, the machine, then each script's own report and how long it took; a script that fails is
reported with the tail of its error output and the others still run.

  /usr/bin/python3 bench/compare/run_all.py [--build-dir build] [--output all.md] [--only tasks,svd]
                                            [--timeout 3600]

Arguments after -- go to every script (they all take --build-dir).
"""
import argparse
import datetime
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent


def log(msg):
    print(f"[run_all] {msg}", file=sys.stderr, flush=True)


def machine():
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    memory = ""
    try:
        with open("/proc/meminfo") as f:
            kib = int(f.readline().split()[1])
            memory = f", {kib / 2**20:.0f} GiB"
    except (OSError, ValueError, IndexError):
        pass
    return f"{os.cpu_count()} cores ({cpu}){memory}"


def commit():
    try:
        return subprocess.run(["git", "-C", str(REPO), "describe", "--always", "--dirty"],
                              capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build-dir", default=str(REPO / "build"))
    parser.add_argument("--output", default="", help="also write the report here")
    parser.add_argument("--only", default="", help="comma-separated names (tasks, glm, svd, ...); default all")
    parser.add_argument("--timeout", type=int, default=3600, help="seconds allowed to each script")
    args, passed = parser.parse_known_args()
    if passed and passed[0] == "--":
        passed = passed[1:]
    scripts = sorted(HERE.glob("compare_*.py"))
    if args.only:
        wanted = {name.strip() for name in args.only.split(",") if name.strip()}
        unknown = wanted - {s.stem.removeprefix("compare_") for s in scripts}
        if unknown:
            parser.error(f"--only: no compare script named {', '.join(sorted(unknown))}")
        scripts = [s for s in scripts if s.stem.removeprefix("compare_") in wanted]

    started = datetime.datetime.now(datetime.timezone.utc)
    lines = [f"One run of every `bench/compare/*.py`, started {started:%Y-%m-%d %H:%M} UTC, commit "
             f"`{commit()}`, on {machine()}.", ""]
    failed = 0
    for script in scripts:
        log(f"{script.name} ...")
        command = [sys.executable, str(script), "--build-dir", args.build_dir] + passed
        start = time.monotonic()
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=args.timeout,
                                  stdin=subprocess.DEVNULL)
            seconds = time.monotonic() - start
            status = "ok" if done.returncode == 0 else f"failed (exit {done.returncode})"
            out, err = done.stdout, done.stderr
        except subprocess.TimeoutExpired as e:
            seconds, status = time.monotonic() - start, f"timed out after {args.timeout} s"
            out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
            err = e.stderr.decode() if isinstance(e.stderr, bytes) else (e.stderr or "")
        log(f"{script.name}: {status} in {seconds:.0f} s")
        lines += [f"### `{script.name}` ({status}, {seconds:.0f} s)", ""]
        # The scripts print JSON lines, then their markdown; the report keeps the markdown.
        report = [line for line in out.splitlines() if not line.startswith("{")]
        lines += [line for line in report] + [""]
        if status != "ok":
            failed += 1
            tail = "\n".join(err.strip().splitlines()[-15:])
            lines += ["```", tail, "```", ""]
    text = "\n".join(lines).rstrip() + "\n"
    print(text)
    if args.output:
        Path(args.output).write_text(text)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/python3
"""The throughput and latency guard: two commits side by side in one run.

Builds the base commit's benchmarks in a git worktree (kept under bench/.guard/ for the next run), then
runs every row below for the base and the head alternately -- base first in odd repeats, head first in
even ones, so that a machine that warms up or slows down during the run charges both sides alike -- and
prints, per row, the median and the spread (min-max) of each side's repeats and the head/base ratio of
the medians. A ratio is "better" or "worse" only when the two sides' spreads do not overlap; otherwise
it is "within noise".

  /usr/bin/python3 bench/compare/guard.py --base REV [--head REV | --head-build build] [--repeat 5]
                                          [--rows map,map10m,...] [--output report.md] [--jobs 2]

Rows (each a Tessera benchmark binary, one repetition per run after its own warm-up):
  map        no-op client.map, 1,000,000 tasks, embedded, 1 worker x 2 threads        tasks/s
  delayed    no-op delayed, 1,000,000 tasks, embedded, 1 worker x 2 threads           tasks/s
  tree       pairwise reduction of 1,000,000 delayed leaves, embedded                  tasks/s
  map10m     10,000,000 tasks in one map, embedded: rate and peak resident memory     tasks/s, MB
  streams    a durable stream of 1,000,000 trivial sets, embedded; push-to-result      sets/s, us
  processes  scheduler process + 2 worker processes x 2 threads: no-op map, submit +
             result p50/p99, 8 MiB chunks between the workers, durable stream        tasks/s, us, GiB/s, sets/s
  chunks     the chunks alone, in worker processes that ran 20,000 tasks before (not 1,000,000)   GiB/s
  zmq        (head only) bare libzmq, the same two round trips as one submit + result
             (client -> scheduler -> worker and back, three processes): the floor     us
             and 8 MiB messages from one process to another over ipc:// and TCP       GiB/s

Chunks move as std::vector<double> values on both sides (--transfer vector where the binary has the flag;
older ones know nothing else). A row whose binary the base commit lacks is shown as n/a for the base. The head defaults to the
build in --head-build (build/); --head REV builds that commit in a worktree too.
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

from compare_tasks import json_lines  # the script's folder is on sys.path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
TARGETS = ["tessera-bench-tasks", "tessera-bench-remote", "tessera-bench-streams", "tessera-node",
           "tessera-bench-zmq-floor"]


def log(msg):
    print(f"[guard] {msg}", file=sys.stderr, flush=True)


def git(*args, cwd=REPO):
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True).stdout.strip()


def resolve(rev):
    try:
        return git("rev-parse", "--verify", f"{rev}^{{commit}}")
    except subprocess.CalledProcessError:
        raise SystemExit(f"guard: no commit named {rev!r} in {REPO}")


def build_commit(rev, work_dir, jobs):
    """The bin/ folder of a Release build of rev's benchmarks, made in a worktree under work_dir (reused when it
    is already there)."""
    sha = resolve(rev)
    tree = work_dir / sha[:12]
    build = tree / "build-guard"
    if not (tree / ".git").exists():
        work_dir.mkdir(parents=True, exist_ok=True)
        log(f"worktree for {rev} ({sha[:12]}) in {tree}")
        git("worktree", "add", "--detach", str(tree), sha)
    configure = ["cmake", "-G", "Ninja", "-S", str(tree), "-B", str(build), "-DCMAKE_BUILD_TYPE=Release",
                 "-DTESSERA_WITH_CUDA=OFF", "-DTESSERA_BUILD_TESTS=OFF", "-DTESSERA_PYTHON=OFF",
                 "-DTESSERA_BUILD_BENCH=ON"]
    if not (build / "build.ninja").exists():
        log(f"configuring {sha[:12]}")
        subprocess.run(configure, check=True, stdout=subprocess.DEVNULL)
    # Only the targets this commit has: an old commit may lack one of them.
    known = subprocess.run(["ninja", "-C", str(build), "-t", "targets", "all"], capture_output=True,
                           text=True, check=True).stdout
    targets = [t for t in TARGETS if f"\n{t}:" in "\n" + known]
    log(f"building {', '.join(targets)} of {sha[:12]} (-j{jobs})")
    started = time.monotonic()
    done = subprocess.run(["cmake", "--build", str(build), "-j", str(jobs), "--target", *targets],
                          capture_output=True, text=True)
    if done.returncode != 0:
        errors = [line for line in done.stdout.splitlines() if "error" in line][:5]
        raise SystemExit(f"guard: {rev} ({sha[:12]}) does not build:\n" + "\n".join(errors))
    log(f"built {sha[:12]} in {time.monotonic() - started:.0f} s")
    return build / "bin", sha


def first(records, **match):
    return next((r for r in records if all(r.get(k) == v for k, v in match.items())), None)


def field(key, **match):
    def get(records):
        record = first(records, **match)
        return None if record is None or record.get(key) is None else float(record[key])
    return get


# name -> (binary, arguments, [(metric label, unit, higher is better, extractor, target)])
ROWS = {
    "map": ("tessera-bench-tasks", ["--mode", "map", "--tasks", 1_000_000, "--workers", 1, "--threads", 2],
            [("no-op map, embedded, 1 worker x 2 threads", "tasks/s", True, field("rate", bench="tasks"),
              ">= 7M/s")]),
    "delayed": ("tessera-bench-tasks", ["--mode", "delayed", "--tasks", 1_000_000, "--workers", 1, "--threads", 2],
                [("no-op delayed, embedded, 1 x 2", "tasks/s", True, field("rate", bench="tasks"), "")]),
    "tree": ("tessera-bench-tasks", ["--mode", "tree", "--tasks", 1_000_000, "--workers", 1, "--threads", 2],
             [("pairwise tree reduction, embedded, 1 x 2", "tasks/s", True, field("rate", bench="tasks"), "")]),
    "map10m": ("tessera-bench-tasks", ["--mode", "map", "--tasks", 10_000_000, "--workers", 1, "--threads", 2],
               [("10M tasks in one map, rate", "tasks/s", True, field("rate", bench="tasks"), ""),
                ("10M tasks in one map, peak resident memory", "MB", False, field("peak_rss_mb", bench="tasks"),
                 "< 1,536 MB")]),
    "streams": ("tessera-bench-streams", ["--sets", 1_000_000, "--workers", 1, "--threads", 2, "--memory-sets", 1],
                [("durable stream of trivial sets, embedded", "sets/s", True,
                  field("rate", bench="stream", mode="embedded"), ">= 1M/s"),
                 ("stream push to result, embedded, p50", "us", False,
                  field("p50_us", bench="stream_latency", mode="embedded"), "")]),
    "processes": ("tessera-bench-remote",
                  ["--topology", "processes", "--worker-processes", 2, "--threads", 2, "--tasks", 1_000_000],
                  [("no-op map, scheduler + 2 worker processes x 2 threads", "tasks/s", True,
                    field("rate", bench="remote_tasks"), ">= 800k/s"),
                   ("submit + result across processes, p50", "us", False, field("p50_us", bench="remote_latency"),
                    "<= 250 us"),
                   ("submit + result across processes, p99", "us", False, field("p99_us", bench="remote_latency"),
                    "<= 600 us"),
                   ("8 MiB chunks between worker processes", "GiB/s", True,
                    field("gib_per_s", bench="chunk_transfer"), ">= 4 GiB/s same host"),
                   ("durable stream across processes", "sets/s", True, field("rate", bench="stream", mode="remote"),
                    ">= 800k/s"),
                   ("stream push to durable result across processes, p50", "us", False,
                    field("p50_us", bench="stream_latency", mode="remote"), "")]),
    # Chunks alone, in a cluster that has run nothing else: the processes row moves them right after a
    # 1,000,000-task map, while the workers still let go of it.
    "chunks": ("tessera-bench-remote",
               ["--topology", "processes", "--worker-processes", 2, "--threads", 2, "--tasks", 20_000,
                "--latency-samples", 200, "--stream-sets", 1000],
               [("8 MiB chunks between worker processes, quiet cluster, as the base moves them", "GiB/s", True,
                 field("gib_per_s", bench="chunk_transfer"), "")]),
    "zmq": ("tessera-bench-zmq-floor", ["--samples", 2000],
            [("bare libzmq, two round trips through three processes, p50", "us", False,
              field("p50_us", bench="zmq_floor"), "(the floor)"),
             ("bare libzmq, two round trips through three processes, p99", "us", False,
              field("p99_us", bench="zmq_floor"), "(the floor)"),
             ("bare libzmq, 8 MiB messages one way over ipc://", "GiB/s", True,
              field("gib_per_s", bench="zmq_floor_chunks", transport="ipc"), "(the floor)"),
             ("bare libzmq, 8 MiB messages one way over TCP loopback", "GiB/s", True,
              field("gib_per_s", bench="zmq_floor_chunks", transport="tcp"), "(the floor)")]),
}


# Flags given only to a binary whose --help lists them: the same workload where a newer build changed a
# default (tessera-bench-remote moves array chunks unless told --transfer vector, which older ones move).
OPTIONAL = {"processes": ["--transfer", "vector"], "chunks": ["--transfer", "vector"]}
HELP = {}


def knows(path, flag):
    if path not in HELP:
        try:
            done = subprocess.run([str(path), "--help"], capture_output=True, text=True, timeout=30,
                                  stdin=subprocess.DEVNULL)
            HELP[path] = done.stdout + done.stderr
        except (OSError, subprocess.TimeoutExpired):
            HELP[path] = ""
    return flag in HELP[path]


def run_row(bin_dir, name, timeout):
    binary, arguments, _ = ROWS[name]
    path = bin_dir / binary
    if not os.access(path, os.X_OK):
        return None
    optional = OPTIONAL.get(name, [])
    extra = optional if optional and knows(path, optional[0]) else []
    command = [str(path), *map(str, arguments), *extra, "--repeat", "1"]
    log("$ " + " ".join(command))
    try:
        done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        log(f"error: {binary} timed out after {timeout} s")
        return []
    if done.returncode != 0:
        log(f"error: {binary} exited with status {done.returncode}: {done.stderr.strip()[-400:]}")
    return json_lines(done.stdout)


def fmt(value, unit):
    if value is None:
        return "n/a"
    if unit in ("tasks/s", "sets/s"):
        for div, suffix in ((1e6, "M"), (1e3, "k")):
            if value >= div:
                return f"{value / div:.3g}{suffix}"
        return f"{value:.3g}"
    if unit == "GiB/s":
        return f"{value:.2f}"
    return f"{value:,.0f}"


def summary(values, unit):
    values = [v for v in values if v is not None]
    if not values:
        return "n/a", None, None, None
    median = statistics.median(values)
    low, high = min(values), max(values)
    return f"{fmt(median, unit)} ({fmt(low, unit)}-{fmt(high, unit)})", median, low, high


def verdict(base, head, higher_better):
    _, bm, blo, bhi = base
    _, hm, hlo, hhi = head
    if bm is None or hm is None or bm == 0:
        return "", ""
    ratio = hm / bm
    if hlo > bhi:
        word = "better" if higher_better else "worse"
    elif hhi < blo:
        word = "worse" if higher_better else "better"
    else:
        word = "within noise"
    return f"{ratio:.2f}x", word


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", required=True, help="the commit to compare against (any git revision)")
    ap.add_argument("--head", default="", help="a commit to build as the head (default: --head-build as it is)")
    ap.add_argument("--head-build", type=Path, default=REPO / "build", help="the head's build folder")
    ap.add_argument("--repeat", type=int, default=5, help="runs of every row on each side")
    ap.add_argument("--rows", default=",".join(ROWS), help=f"comma-separated, of: {', '.join(ROWS)}")
    ap.add_argument("--work-dir", type=Path, default=HERE.parent / ".guard", help="where base worktrees live")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2, help="build parallelism")
    ap.add_argument("--timeout", type=float, default=600, help="seconds allowed to one benchmark run")
    ap.add_argument("--output", default="", help="also write the report here")
    ap.add_argument("--build-only", action="store_true", help="build the commits' benchmarks, run nothing")
    args = ap.parse_args()
    rows = [r.strip() for r in args.rows.split(",") if r.strip()]
    unknown = [r for r in rows if r not in ROWS]
    if unknown:
        ap.error(f"--rows: unknown {', '.join(unknown)} (known: {', '.join(ROWS)})")
    if args.repeat < 1:
        ap.error("--repeat must be at least 1")

    notes = []
    base_bin, base_sha = build_commit(args.base, args.work_dir, args.jobs)
    if args.head:
        head_bin, head_sha = build_commit(args.head, args.work_dir, args.jobs)
        head_name = head_sha[:12]
    else:
        head_bin = args.head_build.resolve() / "bin"
        missing = [t for t in TARGETS if not os.access(head_bin / t, os.X_OK)]
        if missing:
            raise SystemExit(f"guard: the head build {head_bin} lacks {', '.join(missing)}: build them first")
        head_name = git("describe", "--always", "--dirty")
        cache = args.head_build.resolve() / "CMakeCache.txt"
        if cache.exists() and "TESSERA_WITH_CUDA:BOOL=ON" in cache.read_text(errors="replace"):
            warning = ("the head build links CUDA and the base does not: a CUDA build's every process maps the CUDA "
                       "libraries (about 190 MB more resident here), which the memory rows then count; "
                       "--head HEAD builds the head as the base is built")
            log("warning: " + warning)
            notes.append(warning)
    if args.build_only:
        return 0

    # samples[side][row] = list of record lists, one per repeat
    samples = {"base": {r: [] for r in rows}, "head": {r: [] for r in rows}}
    started = time.strftime("%Y-%m-%d %H:%M")
    for repeat in range(args.repeat):
        order = [("base", base_bin), ("head", head_bin)]
        if repeat % 2:
            order.reverse()
        for row in rows:
            for side, bin_dir in order:
                records = run_row(bin_dir, row, args.timeout)
                if records is not None:
                    samples[side][row].append(records)
        log(f"repeat {repeat + 1}/{args.repeat} done")

    lines = [f"### Guard: head `{head_name}` against base `{base_sha[:12]}` ({started}, {platform.node()}, "
             f"{os.cpu_count()} CPUs; {args.repeat} alternating runs per side, median (min-max))", "",
             "| row | unit | base | head | head/base | verdict | target |", "|---|---|---|---|---|---|---|"]
    raw = []
    for row in rows:
        for label, unit, higher_better, extract, target in ROWS[row][2]:
            values = {side: [extract(records) for records in samples[side][row]] for side in samples}
            base, head = summary(values["base"], unit), summary(values["head"], unit)
            ratio, word = verdict(base, head, higher_better)
            lines.append(f"| {label} | {unit} | {base[0]} | {head[0]} | {ratio} | {word} | {target} |")
            raw.append({"row": row, "metric": label, "unit": unit, "base": values["base"], "head": values["head"]})
    lines += [""] + [f"Note: {note}." for note in notes] if notes else []
    text = "\n".join(lines) + "\n"
    for record in raw:
        print(json.dumps(record))
    print()
    print(text)
    if args.output:
        Path(args.output).write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/python3
"""Runs Tessera's task benchmarks and their Dask peers in one go and compares them.

Tessera side (binaries in <build-dir>/bin, one JSON object per stdout line):
  tessera-bench-tasks --mode map     --tasks 1000000  --workers 1 --threads 2   no-op tasks, client.map
  tessera-bench-tasks --mode delayed --tasks 1000000  --workers 1 --threads 2   no-op tasks, delayed API
  tessera-bench-tasks --mode chain   --tasks 200000   --workers 1 --threads 2 --fusion off   dependent chain (continuations)
  tessera-bench-tasks --mode chain   --tasks 200000   --workers 1 --threads 2 --fusion on    the same, fused
  tessera-bench-tasks --mode tree    --tasks 1000000  --workers 1 --threads 2   pairwise reduction
  tessera-bench-tasks --mode map     --tasks 10000000 --workers 1 --threads 2   only with --big (peak RSS)
  tessera-bench-sims  --tasks 500 --workers 10 --threads 4 --max-sleep 0.05     embarrassingly parallel sims
Dask side: bench/compare/dask_tasks.py, run with /usr/bin/python3 (see its docstring).

Ratios printed: Tessera map rate / dask-threaded rate (target >= 100x), Tessera map rate /
dask-distributed rate, and the sims wall times (Tessera target <= 0.35 s; ideal 0.3125 s).
Everything goes to stdout as markdown (raw JSON lines, then the table), ready to paste into
bench/RESULTS.md; progress and the children's stderr go to stderr.

  /usr/bin/python3 bench/compare/compare_tasks.py [--build-dir build] [--repeat 3] [--big]
"""
import argparse
import heapq
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
SIMS_TARGET_S = 0.35
REMOTE_RATE_TARGET = 200_000  # tasks/s across processes (issue 3)
MAP_RATIO_TARGET = 100.0
CHAIN_RATIO_TARGET = 37.0  # and >= 1,000,000 steps/s (issue 20)
CHAIN_RATE_TARGET = 1_000_000


def log(msg):
    print(f"[compare_tasks] {msg}", file=sys.stderr, flush=True)


def json_lines(text):
    """The JSON objects among the lines of text; anything else is ignored."""
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("{"):
            try:
                obj = json.loads(line)
            except ValueError:
                continue
            if isinstance(obj, dict):
                out.append(obj)
    return out


def run(cmd, timeout):
    """Runs cmd, returns its JSON records ([] on failure, which is logged)."""
    log("$ " + " ".join(map(str, cmd)))
    t0 = time.monotonic()
    try:
        proc = subprocess.run(list(map(str, cmd)), stdout=subprocess.PIPE, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        log(f"error: timed out after {timeout} s: {cmd[0]}")
        out = e.stdout or ""
        return json_lines(out.decode(errors="replace") if isinstance(out, bytes) else out)
    records = json_lines(proc.stdout)
    if proc.returncode != 0:
        log(f"error: {cmd[0]} exited with status {proc.returncode}")
    elif not records:
        log(f"error: {cmd[0]} printed no JSON lines")
    log(f"  {len(records)} record(s) in {time.monotonic() - t0:.1f} s")
    return records


def pick(records, **match):
    """The record matching all fields; with several (e.g. one per repetition), the median by seconds."""
    hits = [r for r in records if all(r.get(k) == v for k, v in match.items())]
    if not hits:
        return None
    hits.sort(key=lambda r: r.get("seconds", 0))
    return hits[(len(hits) - 1) // 2]


def fmt_rate(rate):
    for div, unit in ((1e6, "M"), (1e3, "k")):
        if rate >= div:
            return f"{rate / div:.3g}{unit}/s"
    return f"{rate:.3g}/s"


def describe(rec):
    if rec is None:
        return "n/a"
    text = f"{rec.get('tasks', '?'):,} tasks: {rec['seconds']:.3f} s"
    if rec.get("rate"):
        text += f", {fmt_rate(rec['rate'])}"
    if rec.get("peak_rss_mb") is not None:
        text += f", peak RSS {rec['peak_rss_mb']:.0f} MB"
    return text


def rate_ratio(tess, dask, target=None):
    if tess is None or dask is None or not tess.get("rate") or not dask.get("rate"):
        return "n/a", "" if target is None else f">= {target:g}x: n/a"
    ratio = tess["rate"] / dask["rate"]
    verdict = "" if target is None else f">= {target:g}x: {'pass' if ratio >= target else 'FAIL'}"
    return f"{ratio:,.1f}x rate", verdict


def greedy_bound(parts, trials=2000, tasks=500, slots=40, max_sleep=0.05, seed=1):
    """Median makespan of the sims workload under zero-overhead greedy list scheduling (each free
    thread takes the next task), when the 500 sleeps are grouped into `parts` equal tasks. This is
    the best any scheduler can do without knowing the durations in advance; the 0.3125 s "ideal"
    (total sleep / 40) would need perfectly divisible work."""
    rng = random.Random(seed)
    spans = []
    for _ in range(trials):
        sleeps = [rng.random() * max_sleep for _ in range(tasks)]
        per = tasks // parts
        finish = [0.0] * slots
        for p in range(parts):
            heapq.heapreplace(finish, finish[0] + sum(sleeps[p * per:(p + 1) * per]))
        spans.append(max(finish))
    return statistics.median(spans)


def sims_ratio(tess, dask):
    verdict = "n/a" if tess is None else ("pass" if tess["seconds"] <= SIMS_TARGET_S else "FAIL")
    ratio = "n/a" if tess is None or dask is None else f"Dask {dask['seconds'] / tess['seconds']:.2f}x slower"
    return ratio, f"<= {SIMS_TARGET_S} s: {verdict}"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build-dir", type=Path, default=REPO / "build", help="Tessera build folder (binaries in bin/)")
    ap.add_argument("--tasks", type=int, default=1_000_000, help="tasks for Tessera map/delayed")
    ap.add_argument("--big-tasks", type=int, default=10_000_000, help="tasks for the --big Tessera map run")
    ap.add_argument("--big", action="store_true", help="also run Tessera map with --big-tasks (reports peak RSS)")
    ap.add_argument("--repeat", type=int, default=3, help="repetitions, passed to every benchmark")
    ap.add_argument("--chain-tasks", type=int, default=200_000, help="dependent tasks in Tessera's chain")
    ap.add_argument("--dask-chain-tasks", type=int, default=5_000,
                    help="dependent tasks in Dask's chain (its threaded chain of 100,000 ran past 25 minutes here)")
    ap.add_argument("--dask-tasks", type=int, default=100_000, help="tasks for the dask threaded runs")
    ap.add_argument("--dask-distributed-tasks", type=int, default=5_000, help="tasks for the dask distributed run")
    ap.add_argument("--python", default="/usr/bin/python3", help="interpreter with dask + distributed")
    ap.add_argument("--no-python", action="store_true", help="leave out Python code on the workers (python_tasks.py)")
    ap.add_argument("--venv-python", type=Path, default=REPO / "bench" / ".venv" / "bin" / "python",
                    help="interpreter of the PyPI peers' virtual environment (Ray, current Dask; "
                         "../shared/BENCHMARKS.md); left out when it does not exist")
    ap.add_argument("--ray-tasks", type=int, default=20_000, help="no-op tasks per Ray throughput run")
    ap.add_argument("--parsl-tasks", type=int, default=5_000, help="no-op apps per Parsl throughput run")
    ap.add_argument("--timeout", type=float, default=1800, help="seconds allowed to each command")
    args = ap.parse_args()

    bin_dir = args.build_dir.resolve() / "bin"
    tasks_bin, sims_bin = bin_dir / "tessera-bench-tasks", bin_dir / "tessera-bench-sims"
    remote_bin = bin_dir / "tessera-bench-remote"
    streams_bin = bin_dir / "tessera-bench-streams"
    peer = HERE / "dask_tasks.py"
    missing = [p for p in (tasks_bin, sims_bin, remote_bin, peer, Path(args.python)) if not os.access(p, os.R_OK)]
    missing += [p for p in (tasks_bin, sims_bin, remote_bin) if p.exists() and not os.access(p, os.X_OK)]
    if missing:
        for p in missing:
            log(f"error: required file missing or not executable: {p}")
        log("build Tessera first (binaries expected in <build-dir>/bin) or pass --build-dir")
        return 2

    rep = ["--repeat", args.repeat]
    cfg = ["--workers", 1, "--threads", 2]
    tessera = []
    tessera += run([tasks_bin, "--mode", "map", "--tasks", args.tasks, *cfg, *rep], args.timeout)
    tessera += run([tasks_bin, "--mode", "delayed", "--tasks", args.tasks, *cfg, *rep], args.timeout)
    for fusion in ("off", "on"):
        tessera += run([tasks_bin, "--mode", "chain", "--tasks", args.chain_tasks, "--fusion", fusion, *cfg, *rep],
                       args.timeout)
    tessera += run([tasks_bin, "--mode", "tree", "--tasks", args.tasks, *cfg, *rep], args.timeout)
    if args.big:
        tessera += run([tasks_bin, "--mode", "map", "--tasks", args.big_tasks, *cfg, *rep], args.timeout)
    # A client in one process and, on loopback, one tessera-node (scheduler + 2 worker threads), then a
    # scheduler process with 2 worker processes x 2 threads (throughput, latency, chunk transfer).
    tessera += run([remote_bin, "--topology", "both", "--tasks", args.tasks, *cfg, *rep], args.timeout)
    tessera += run([remote_bin, "--topology", "processes", "--worker-processes", 2, "--threads", 2,
                    "--tasks", args.tasks, *rep], args.timeout)
    # The same worker processes with TCP forced (worker.same_host_ipc = false): chunks only. The run above
    # is what users get, same-host workers picking each other's socket file by themselves.
    tessera += run([remote_bin, "--topology", "processes", "--worker-processes", 2, "--threads", 2,
                    "--worker-listen", "tcp-only", "--tasks", 20000, "--latency-samples", 200, "--stream-sets", 100,
                    *rep], args.timeout)
    zmq_floor_bin = bin_dir / "tessera-bench-zmq-floor"
    if zmq_floor_bin.exists():
        tessera += run([zmq_floor_bin, "--samples", 2000, *rep], args.timeout)
    tessera += run([sims_bin, "--tasks", 500, "--workers", 10, "--threads", 4, "--max-sleep", 0.05, *rep],
                   args.timeout)
    # Streams of parameter sets (issue 4): embedded, 1 worker x 2 threads; the remote run above streamed too.
    if streams_bin.exists():
        tessera += run([streams_bin, "--sets", args.tasks, "--workers", 1, "--threads", 2, *rep], args.timeout)
    dask = run([args.python, peer, "--tasks", args.dask_tasks, "--chain-tasks", args.dask_chain_tasks,
                "--distributed-tasks", args.dask_distributed_tasks, *rep], args.timeout)

    # The current peers from PyPI, in the same run: Ray, and Dask beside Debian's 2022.12.
    ray, dask_now, parsl = [], [], []
    if os.access(args.venv_python, os.X_OK):
        parsl = run([args.venv_python, HERE / "parsl_tasks.py", "--tasks", args.parsl_tasks, "--repeat", args.repeat],
                    args.timeout)
        ray = run([args.venv_python, HERE / "ray_tasks.py", "--tasks", args.ray_tasks, "--repeat", args.repeat],
                  args.timeout)
        # Only its process-cluster rows are reported: its threaded scheduler is kept short (Dask 2026.8 ran one
        # threaded map of 100,000 delayed calls past 4 minutes here, where Debian's takes 8 s).
        dask_now = run([args.venv_python, peer, "--tasks", 2000, "--chain-tasks", 200,
                        "--distributed-tasks", args.dask_distributed_tasks, *rep], args.timeout)
    else:
        log(f"no {args.venv_python}: Ray, Parsl and current Dask left out (../shared/BENCHMARKS.md makes the venv)")

    t_map = pick(tessera, bench="tasks", mode="map", tasks=args.tasks)
    t_delayed = pick(tessera, bench="tasks", mode="delayed", tasks=args.tasks)
    t_chain = pick(tessera, bench="tasks", mode="chain", tasks=args.chain_tasks, fusion=False)
    t_chain_fused = pick(tessera, bench="tasks", mode="chain", tasks=args.chain_tasks, fusion=True)
    t_tree = pick(tessera, bench="tasks", mode="tree")
    t_big = pick(tessera, bench="tasks", mode="map", tasks=args.big_tasks) if args.big else None
    t_sims = {api: pick(tessera, bench="sims", api=api) for api in ("map", "delayed", "bag")}
    t_remote = pick(tessera, bench="remote_tasks", mode="map", topology="both")
    t_latency = pick(tessera, bench="remote_latency", topology="both")
    t_cluster = pick(tessera, bench="remote_tasks", mode="map", topology="processes", worker_listen="tcp")
    t_cluster_latency = pick(tessera, bench="remote_latency", topology="processes", worker_listen="tcp")
    t_chunks = pick(tessera, bench="chunk_transfer", worker_listen="tcp")
    t_chunks_tcp = pick(tessera, bench="chunk_transfer", worker_listen="tcp-only")
    floor_tcp = pick(tessera, bench="zmq_floor_chunks", transport="tcp")
    floor_ipc = pick(tessera, bench="zmq_floor_chunks", transport="ipc")
    d_cluster = pick(dask, bench="tasks_map", impl="dask-cluster", mode="map")
    d_latency = pick(dask, bench="latency", impl="dask-cluster")
    d_chunks = pick(dask, bench="chunk_transfer", impl="dask-cluster")
    d_thr = pick(dask, bench="tasks_map", impl="dask-threaded", mode="map")
    d_graph = pick(dask, bench="tasks_map", impl="dask-threaded", mode="graph")
    d_dist = pick(dask, bench="tasks_map", impl="dask-distributed", mode="map")
    d_chain = pick(dask, bench="tasks_map", impl="dask-threaded", mode="chain")
    d_tree = pick(dask, bench="tasks_map", impl="dask-threaded", mode="tree")
    d_sims_map = pick(dask, bench="sims", impl="dask-distributed-map")
    d_bag = pick(dask, bench="sims", impl="dask-bag")

    rows = [
        ("no-op map, 1 worker x 2 threads", "map", t_map, "dask-threaded, delayed + compute", d_thr,
         *rate_ratio(t_map, d_thr, MAP_RATIO_TARGET)),
        ("no-op map, 1 worker x 2 threads", "map", t_map, "dask-threaded, raw graph", d_graph,
         *rate_ratio(t_map, d_graph)),
        ("no-op map vs distributed", "map", t_map, "dask-distributed, 2 procs x 1 thread", d_dist,
         *rate_ratio(t_map, d_dist)),
        ("no-op delayed, 1 worker x 2 threads", "delayed", t_delayed, "dask-threaded, delayed + compute", d_thr,
         *rate_ratio(t_delayed, d_thr)),
    ]
    chain_ratio, chain_verdict = rate_ratio(t_chain, d_chain, CHAIN_RATIO_TARGET)
    if t_chain:
        chain_verdict += (f"; >= {CHAIN_RATE_TARGET:,} steps/s: "
                          f"{'pass' if t_chain['rate'] >= CHAIN_RATE_TARGET else 'FAIL'}")
    rows += [
        ("dependent chain, 1 worker x 2 threads, continuations (fusion off)", "delayed", t_chain,
         "dask-threaded, delayed chain", d_chain, chain_ratio, chain_verdict),
        ("dependent chain, 1 worker x 2 threads, fused (the default)", "delayed", t_chain_fused,
         "dask-threaded, delayed chain", d_chain, *rate_ratio(t_chain_fused, d_chain)),
        ("pairwise tree reduction, 1 worker x 2 threads", "delayed", t_tree, "dask-threaded, delayed tree", d_tree,
         *rate_ratio(t_tree, d_tree)),
    ]
    remote_verdict = "n/a" if not t_remote else ("pass" if t_remote["rate"] >= REMOTE_RATE_TARGET else "FAIL")
    rows.append(("no-op map, client + node process over loopback", "map", t_remote,
                 "dask-distributed, 2 procs x 1 thread", d_dist, rate_ratio(t_remote, d_dist)[0],
                 f">= {REMOTE_RATE_TARGET:,} tasks/s: {remote_verdict}"))
    cluster_verdict = "n/a" if not t_cluster else ("pass" if t_cluster["rate"] >= REMOTE_RATE_TARGET else "FAIL")
    rows.append(("no-op map, scheduler + 2 worker processes x 2 threads", "map", t_cluster,
                 "dask-distributed, 2 procs x 2 threads", d_cluster, rate_ratio(t_cluster, d_cluster)[0],
                 f">= {REMOTE_RATE_TARGET:,} tasks/s: {cluster_verdict}"))
    if args.big:
        rows.append(("no-op map, big", "map", t_big, "(none)", None, "", ""))
    # No scheduler beats greedy list scheduling without knowing durations: the bound each row is held to.
    map_bound, bag_bound = greedy_bound(500), greedy_bound(100)
    rows += [
        ("sims, 500 x sleep U(0,0.05), 10 x 4", "map", t_sims["map"], "dask-distributed, client.map", d_sims_map,
         *sims_ratio(t_sims["map"], d_sims_map)),
        ("sims, 500 x sleep U(0,0.05), 10 x 4", "delayed", t_sims["delayed"], "dask-distributed, client.map",
         d_sims_map, *sims_ratio(t_sims["delayed"], d_sims_map)),
        ("sims, 500 x sleep U(0,0.05), 10 x 4", "bag", t_sims["bag"], "dask.bag, 100 partitions", d_bag,
         sims_ratio(t_sims["bag"], d_bag)[0],
         sims_ratio(t_sims["bag"], d_bag)[1] + f" (bound for 100 partitions: {bag_bound:.3f} s)"),
    ]

    version = next((r.get("dask_version") for r in dask if "dask_version" in r), "?")
    print(f"### Tessera vs Dask, tasks ({time.strftime('%Y-%m-%d %H:%M')}, {platform.node()}, "
          f"{os.cpu_count()} CPUs, Dask {version}, median of {args.repeat} after a warm-up)\n")
    print("Raw JSON lines:\n\n```json")
    for rec in tessera:
        print(json.dumps({"impl": "tessera", **rec}))
    for rec in dask:
        print(json.dumps(rec))
    print("```\n")
    print("| Workload | Tessera API | Tessera | Dask peer | Dask | Ratio | Target |")
    print("|---|---|---|---|---|---|---|")
    for workload, api, tess, peer_name, peer_rec, ratio, target in rows:
        print(f"| {workload} | {api} | {describe(tess)} | {peer_name} | {describe(peer_rec)} | {ratio} | {target} |")
    print("\nSims ideal (expected total sleep / 40 threads): 500 x 0.025 / 40 = 0.3125 s. Zero-overhead greedy "
          f"list scheduling of the same random sleeps (median of 2000 draws): {map_bound:.3f} s for 500 tasks, "
          f"{bag_bound:.3f} s for 100 partitions of 5. "
          "Rates are tasks/s; task counts differ per row (Dask runs fewer tasks).")
    if t_latency:
        print(f"\nOne tiny submit + result through the node: p50 {t_latency['p50_us']:.0f} us, "
              f"p99 {t_latency['p99_us']:.0f} us ({t_latency['samples']} samples).")
    if t_cluster_latency:
        peer = (f"; Dask distributed (2 procs x 2 threads): p50 {d_latency['p50_us']:.0f} us, "
                f"p99 {d_latency['p99_us']:.0f} us" if d_latency else "")
        print(f"\nOne tiny submit + result, scheduler + 2 worker processes: p50 {t_cluster_latency['p50_us']:.0f} us, "
              f"p99 {t_cluster_latency['p99_us']:.0f} us ({t_cluster_latency['samples']} samples){peer}.")
    t_stream = pick(tessera, bench="stream", mode="embedded")
    # Not the ipc run's (100 sets only).
    t_stream_remote = pick(tessera, bench="stream", mode="remote", worker_listen="tcp")
    t_stream_latency = pick(tessera, bench="stream_latency", mode="remote", worker_listen="tcp")
    t_stream_memory = pick(tessera, bench="stream_memory")
    if t_stream or t_stream_remote:
        # Dask has no durable streams of parameter sets; its nearest is client.map of the same trivial
        # function on the same 2 x 2 process cluster (no store, no exactly-once).
        peer = f"{d_cluster['rate']:,.0f}/s (dask-distributed client.map, 2 procs x 2 threads)" if d_cluster else "n/a"
        print("\nStreams of parameter sets through a trivial simulation, every result synced to RocksDB before it "
              "is delivered:")
        if t_stream:
            verdict = "pass" if t_stream["rate"] >= 500_000 else "FAIL"
            print(f"- embedded, 1 worker x 2 threads: {t_stream['rate']:,.0f} sets/s ({t_stream['sets']:,} sets); "
                  f"target >= 500,000/s: {verdict}")
        if t_stream_remote:
            verdict = "pass" if t_stream_remote["rate"] >= 100_000 else "FAIL"
            print(f"- scheduler + 2 worker processes: {t_stream_remote['rate']:,.0f} sets/s; target >= 100,000/s: "
                  f"{verdict}; nearest Dask peer: {peer}")
        if t_stream_latency:
            print(f"- push to durable result across processes: p50 {t_stream_latency['p50_us']:.0f} us, "
                  f"p99 {t_stream_latency['p99_us']:.0f} us")
        if t_stream_memory:
            print(f"- producer 10x faster than the pool, {t_stream_memory['sets']:,} sets: resident memory "
                  f"{t_stream_memory['rss_mb_before']:.0f} MB before, {t_stream_memory['rss_mb_max']:.0f} MB at most")
    if t_chunks:
        verdict = "pass" if t_chunks["gib_per_s"] >= 4.0 else "FAIL"
        peer = (f"; Dask distributed, chunks pinned to worker A and read on worker B: "
                f"{d_chunks['gib_per_s']:.2f} GiB/s" if d_chunks else "")
        print(f"\n8 MiB chunks between worker processes on this host (each other's socket file, picked by "
              f"themselves): {t_chunks['gib_per_s']:.2f} GiB/s "
              f"({t_chunks['crossed_bytes'] / 2**20:.0f} MiB crossed in {t_chunks['seconds']:.3f} s, counted by the "
              f"consumers from each chunk's maker stamp; the time includes reading each chunk that crossed){peer}. "
              f"Target >= 4 GiB/s (issue 45): {verdict}.")
    if t_chunks_tcp:
        print(f"\nThe same with TCP loopback forced (`worker.same_host_ipc = false`): "
              f"{t_chunks_tcp['gib_per_s']:.2f} GiB/s ({t_chunks_tcp['crossed_bytes'] / 2**20:.0f} MiB crossed in "
              f"{t_chunks_tcp['seconds']:.3f} s).")
    if floor_tcp and floor_ipc:
        print(f"\nThe floor, bare libzmq between two processes (8 MiB messages one way, zero-copy from one buffer, "
              f"tessera-bench-zmq-floor): {floor_ipc['gib_per_s']:.2f} GiB/s over ipc://, "
              f"{floor_tcp['gib_per_s']:.2f} GiB/s over TCP loopback.")
    if ray or dask_now or parsl:
        report_pypi_peers(tessera, ray, dask_now, dask, parsl)
    python_failed = report_python_code(args) if not args.no_python else False
    failed = any(r is None for r in (t_map, t_delayed, t_sims["map"], d_thr, d_dist, d_sims_map)) \
        or (args.big and t_big is None) or python_failed
    return 1 if failed else 0


def report_pypi_peers(tessera, ray, dask_now, dask_debian, parsl):
    """Tessera beside Ray, Parsl and current Dask (PyPI) and Debian's Dask, on the same no-op work and round
    trip."""
    def version(records, key):
        return next((r.get(key) for r in records if r.get(key)), "?")

    def rate(record):
        return fmt_rate(record["rate"]) if record and record.get("rate") else "n/a"

    def trip(record):
        return f"{record['p50_us']:,.0f} / {record['p99_us']:,.0f} us" if record else "n/a"

    t_embedded = pick(tessera, bench="tasks", mode="map")
    t_cluster = pick(tessera, bench="remote_tasks", mode="map", topology="processes", worker_listen="tcp")
    t_latency = pick(tessera, bench="remote_latency", topology="processes", worker_listen="tcp")
    r_map = pick(ray, bench="tasks_map", impl="ray")
    r_task, r_actor = pick(ray, bench="latency", impl="ray-task"), pick(ray, bench="latency", impl="ray-actor")
    now_cluster = pick(dask_now, bench="tasks_map", impl="dask-cluster", mode="map")
    now_latency = pick(dask_now, bench="latency", impl="dask-cluster")
    old_cluster = pick(dask_debian, bench="tasks_map", impl="dask-cluster", mode="map")
    old_latency = pick(dask_debian, bench="latency", impl="dask-cluster")
    p_htex, p_threads = pick(parsl, bench="tasks_map", impl="parsl-htex"), pick(parsl, bench="tasks_map",
                                                                               impl="parsl-threads")
    p_htex_trip = pick(parsl, bench="latency", impl="parsl-htex")
    print(f"\nThe current peers from PyPI in the same run (Ray {version(ray, 'ray_version')}, Parsl "
          f"{version(parsl, 'parsl_version')}, Dask {version(dask_now, 'dask_version')}; Debian's Dask "
          f"{version(dask_debian, 'dask_version')} beside):\n")
    print("| measure | Tessera | Ray | Parsl | Dask (PyPI) | Dask (Debian) |")
    print("|---|---|---|---|---|---|")
    print(f"| no-op tasks, one process's 2 threads | {rate(t_embedded)} (embedded map) | {rate(r_map)} (remote "
          f"tasks, 2 CPUs) | {rate(p_threads)} (ThreadPoolExecutor, 2 threads) | | |")
    print(f"| no-op tasks, scheduler + 2 worker processes x 2 threads | {rate(t_cluster)} | | {rate(p_htex)} "
          f"(HighThroughputExecutor, 2 worker processes) | {rate(now_cluster)} | {rate(old_cluster)} |")
    print(f"| one tiny submit + result across processes, p50 / p99 | {trip(t_latency)} | task {trip(r_task)}; "
          f"actor call {trip(r_actor)} | {trip(p_htex_trip)} (htex) | {trip(now_latency)} | {trip(old_latency)} |")


def report_python_code(args):
    """Python code on the workers against Dask and multiprocessing (bench/compare/python_tasks.py, issue
    43), with this build's tessera package. True when a figure is missing or misses its target."""
    env = dict(os.environ, PYTHONPATH=str(args.build_dir / "python"))
    command = [args.python, str(HERE / "python_tasks.py"), "--repeat", str(args.repeat),
               "--node", str(args.build_dir / "bin" / "tessera-node"),
               "--plugin", str(args.build_dir / "lib" / "libtessera_test_plugin.so")]
    log(" ".join(command))
    done = subprocess.run(command, capture_output=True, text=True, timeout=args.timeout, env=env)
    sys.stderr.write(done.stderr)
    records = json_lines(done.stdout)
    print("\nPython code on the workers (python_tasks.py):\n")
    for record in records:
        print(f"    {json.dumps(record)}")
    tasks = {r["system"]: r for r in records if r.get("bench") == "python_tasks" and "rate" in r}
    stream = pick(records, bench="python_stream")
    sims = {r["system"]: r for r in records if r.get("bench") == "python_sims"}
    latency = {r["system"]: r for r in records if r.get("bench") == "python_latency"}
    verdicts = []
    if "tessera" in tasks:
        ok = tasks["tessera"]["rate"] >= 50_000
        verdicts.append(ok)
        peers = ", ".join(f"{name} {r['rate']:,.0f}/s" for name, r in tasks.items() if name != "tessera")
        print(f"\n- no-op Python tasks, 1 worker x 2 threads: {tasks['tessera']['rate']:,.0f}/s ({peers}); "
              f"target >= 50,000/s: {'pass' if ok else 'FAIL'}")
    if stream:
        ok = stream["rate"] >= 50_000
        verdicts.append(ok)
        print(f"- a Python simulation stream of trivial sets, every result durable: {stream['rate']:,.0f} sets/s; "
              f"target >= 50,000/s: {'pass' if ok else 'FAIL'}")
    if "tessera" in sims:
        ok = sims["tessera"]["over_floor"] <= 0.02
        verdicts.append(ok)
        peer = sims.get("multiprocessing")
        print(f"- 2,000 sets of a 20 ms Python simulation on 4 slots: {sims['tessera']['seconds']:.2f} s, "
              f"{100 * sims['tessera']['over_floor']:.1f}% over the floor"
              + (f" (multiprocessing.Pool: {100 * peer['over_floor']:.1f}%)" if peer else "")
              + f"; target within 2%: {'pass' if ok else 'FAIL'}")
    if {"tessera-remote", "compiled-remote"} <= set(latency):
        gap = latency["tessera-remote"]["p50_us"] - latency["compiled-remote"]["p50_us"]
        ok = gap <= 150
        verdicts.append(ok)
        print(f"- submit + result across processes, p50: Python {latency['tessera-remote']['p50_us']:.0f} us, "
              f"compiled {latency['compiled-remote']['p50_us']:.0f} us; target within 150 us: "
              f"{'pass' if ok else 'FAIL'}")
    return done.returncode != 0 or len(verdicts) < 4 or not all(verdicts)


if __name__ == "__main__":
    sys.exit(main())

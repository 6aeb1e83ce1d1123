#!/usr/bin/python3
"""Dask's side of tessera-bench-memory's workload, with the same memory limit.

On a distributed LocalCluster of one worker process with --threads threads and memory_limit = --memory-limit-mib:
  x = da.random.random((rows, cols), chunks=(chunk_rows, cols)).persist()   (--times x the limit)
  y = da.sqrt(x * 2 + 1).persist()
  x.sum(), y.sum(), trace(x.T @ y)
Prints one JSON object: the time, the worker's peak resident memory above its start (VmHWM, after the
kernel's high-water mark is reset), whether it completed (a KilledWorker or a timeout says it did not), and
the answers. Dask's defaults stand: target 0.6, spill 0.7, pause 0.8, terminate 0.95.

  /usr/bin/python3 bench/compare/dask_memory.py [--memory-limit-mib 256] [--times 4] [--chunk-rows 8192]
"""
import argparse
import json
import logging
import os
import sys
import tempfile
import time


def status_bytes(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field):
                return int(line.split()[1]) * 1024
    return 0


def reset_peak():
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    return status_bytes("VmRSS:")


def peak_since(start):
    return status_bytes("VmHWM:") - start


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--memory-limit-mib", type=int, default=256)
    parser.add_argument("--times", type=int, default=4)
    parser.add_argument("--chunk-rows", type=int, default=8192)
    parser.add_argument("--cols", type=int, default=64)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=600)
    args = parser.parse_args()
    logging.getLogger("distributed").setLevel(logging.ERROR)
    import dask
    import dask.array as da
    import numpy as np
    from distributed import Client, LocalCluster

    limit = args.memory_limit_mib << 20
    rows = args.times * limit // (args.cols * 8)
    record = {"bench": "memory_workload", "system": "dask-distributed", "dask": dask.__version__,
              "memory_limit_mib": args.memory_limit_mib, "times": args.times, "rows": rows,
              "chunk_rows": args.chunk_rows, "threads": args.threads, "bound_mib": 1.25 * args.memory_limit_mib}
    with tempfile.TemporaryDirectory(prefix="dask-memory-") as spill_dir:
        dask.config.set({"temporary-directory": spill_dir})
        cluster = LocalCluster(n_workers=1, threads_per_worker=args.threads, processes=True,
                               memory_limit=limit, dashboard_address=None, local_directory=spill_dir)
        client = Client(cluster)
        try:
            client.run(reset_peak)
            start_rss = list(client.run(lambda: status_bytes("VmRSS:")).values())[0]
            start = time.perf_counter()
            try:
                x = da.random.RandomState(11).random_sample((rows, args.cols), chunks=(args.chunk_rows, args.cols)).persist()
                y = da.sqrt(x * 2 + 1).persist()
                sum_x, sum_y, xty = dask.compute(x.sum(), y.sum(), x.T.dot(y))
                record.update(completed=True, sum_x=float(sum_x), sum_y=float(sum_y),
                              trace_xty=float(np.trace(xty)))
                del x, y
            except Exception as error:  # KilledWorker, a timeout: it did not complete
                record.update(completed=False, error=f"{type(error).__name__}: {error}"[:300])
            record["seconds"] = round(time.perf_counter() - start, 3)
            peaks = client.run(peak_since, start_rss)
            record["peak_rss_above_start_mib"] = round(max(peaks.values()) / (1 << 20), 1)
        finally:
            client.close()
            cluster.close()
    print(json.dumps(record), flush=True)


if __name__ == "__main__":
    sys.exit(main())

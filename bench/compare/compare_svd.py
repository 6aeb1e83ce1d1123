#!/usr/bin/python3
"""The thin SVD of a 10000 x 1000 float64 matrix: NumPy, dask.array and Tessera in one run, same matrix.

  /usr/bin/python3 bench/compare/compare_svd.py [--build-dir build] [--repeat 5] [--rows 10000] [--cols 1000]

NumPy:   np.linalg.svd(x, full_matrices=False) (OpenBLAS, all cores).
Dask:    dask.array.linalg.svd on chunks (5000, 1000) and (1000, 1000), threaded scheduler, input in memory.
Tessera: <build>/bin/tessera-bench-svd --input X.npy --chunk-rows C on an embedded cluster of 1 worker with
         2 threads; its U, S and Vt come back as .npy files and are checked against NumPy's: singular
         values (max relative difference), orthonormality of U and V, reconstruction.
Also runs <build>/bin/tessera-bench-arrays (elementwise + reduction against the read bandwidth, with NumPy
on the same expressions; sparse matmul against Eigen). Prints the JSON lines, then a markdown table for bench/RESULTS.md, on stdout.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
TARGET_SECONDS = 0.6  # issue 20


def log(msg):
    print(f"[compare_svd] {msg}", file=sys.stderr, flush=True)


def timed(repeat, body):
    body()  # warm-up
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        body()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def run_json(cmd):
    log("$ " + " ".join(map(str, cmd)))
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=1800)
    return [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build-dir", default=str(REPO / "build"))
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--rows", type=int, default=10000)
    parser.add_argument("--cols", type=int, default=1000)
    args = parser.parse_args()
    import dask
    import dask.array as da

    records = []
    with tempfile.TemporaryDirectory(prefix="tessera-svd-") as tmp:
        x = np.random.default_rng(1).standard_normal((args.rows, args.cols))
        x_path = os.path.join(tmp, "X.npy")
        np.save(x_path, x)

        log("numpy")
        result = {}
        numpy_seconds = timed(args.repeat, lambda: result.update(usv=np.linalg.svd(x, full_matrices=False)))
        s_ref = result["usv"][1]
        records.append({"bench": "svd", "peer": "numpy", "rows": args.rows, "cols": args.cols, "seconds": round(numpy_seconds, 4)})

        for chunk_rows in (5000, 1000):
            log(f"dask chunks ({chunk_rows}, {args.cols})")
            dx = da.from_array(x, chunks=(chunk_rows, args.cols))
            with dask.config.set(scheduler="threads"):
                seconds = timed(args.repeat, lambda: dask.compute(*da.linalg.svd(dx)))
            records.append({"bench": "svd", "peer": "dask", "chunk_rows": chunk_rows, "rows": args.rows,
                            "cols": args.cols, "seconds": round(seconds, 4)})

        for chunk_rows in (5000, 1000):
            out_dir = os.path.join(tmp, f"out{chunk_rows}")
            recs = run_json([os.path.join(args.build_dir, "bin", "tessera-bench-svd"), "--input", x_path,
                             "--chunk-rows", str(chunk_rows), "--repeat", str(args.repeat), "--output-dir", out_dir])
            u, s, vt = (np.load(os.path.join(out_dir, name)) for name in ("U.npy", "S.npy", "Vt.npy"))
            k = s.shape[0]
            check = {
                "max_relative_difference_to_numpy": float(np.max(np.abs(s - s_ref) / np.abs(s_ref))),
                "u_orthogonality_error": float(np.max(np.abs(u.T @ u - np.eye(k)))),
                "v_orthogonality_error": float(np.max(np.abs(vt @ vt.T - np.eye(k)))),
                "reconstruction_error": float(np.max(np.abs((u * s) @ vt - x))),
            }
            for r in recs:
                r["peer"] = "tessera"
                r.update(check)
            records.extend(recs)

        records.extend(run_json([os.path.join(args.build_dir, "bin", "tessera-bench-arrays"), "--repeat", str(args.repeat)]))
        # NumPy on the same expressions and size, for scale (one thread for the arithmetic, temporaries).
        v = np.random.default_rng(5).random(50_000_000)
        for text, expression in (("x.sum()", lambda a: a.sum()), ("(x*2+1).sum()", lambda a: (a * 2 + 1).sum()),
                                 ("(x*2+1).sqrt().sum()", lambda a: np.sqrt(a * 2 + 1).sum())):
            seconds = timed(args.repeat, lambda: expression(v))
            records.append({"bench": "elementwise_reduction", "peer": "numpy", "expression": text,
                            "elements": v.size, "seconds": round(seconds, 4), "gb_per_s": round(v.nbytes / seconds / 1e9, 2)})
        del v

    for r in records:
        print(json.dumps(r))

    numpy_s = next(r["seconds"] for r in records if r.get("peer") == "numpy")
    print()
    print(f"| chunks | NumPy (s) | Dask (s) | Tessera (s) | Tessera vs NumPy | Tessera vs Dask | target <= {TARGET_SECONDS} s | max rel. diff. of S vs NumPy |")
    print("|---|---|---|---|---|---|---|---|")
    for chunk_rows in (5000, 1000):
        dask_s = next(r["seconds"] for r in records if r.get("peer") == "dask" and r["chunk_rows"] == chunk_rows)
        t = next(r for r in records if r.get("peer") == "tessera" and r.get("chunk_rows") == chunk_rows)
        print(f"| ({chunk_rows}, {args.cols}) | {numpy_s:.3f} | {dask_s:.3f} | {t['seconds']:.3f} | "
              f"{numpy_s / t['seconds']:.1f}x | {dask_s / t['seconds']:.1f}x | "
              f"{'met' if t['seconds'] <= TARGET_SECONDS else 'MISSED'} | {t['max_relative_difference_to_numpy']:.1e} |")
    print()
    for e in (r for r in records if r["bench"] == "elementwise_reduction" and "peer" not in r):
        peer = next(r for r in records if r.get("peer") == "numpy" and r.get("expression") == e["expression"])
        print(f"Elementwise + reduction {e['expression']} over {e['elements']:,} float64: {e['gb_per_s']:.1f} GB/s read, "
              f"{100 * e['fraction_of_bandwidth']:.0f}% of the {e['read_bandwidth_gb_per_s']:.1f} GB/s this machine "
              f"reads with {e['threads']} threads in the same run (NumPy: {peer['gb_per_s']:.1f} GB/s).")
    sp = next(r for r in records if r["bench"] == "sparse_matmul")
    print()
    print(f"Sparse x dense ({sp['rows']:,} x {sp['cols']:,}, {sp['nonzeros']:,} stored, times {sp['dense_cols']} columns): "
          f"Tessera {sp['seconds']:.3f} s, Eigen alone {sp['eigen_seconds']:.3f} s ({sp['speedup_over_eigen']:.2f}x).")


if __name__ == "__main__":
    main()

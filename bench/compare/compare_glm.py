#!/usr/bin/python3
"""GLMs: scikit-learn and Tessera side by side in one run, on the same data (written here as .npy files).

  /usr/bin/python3 bench/compare/compare_glm.py [--build-dir build] [--parts big,solvers,linear,processes]
                                               [--max-rows 1000000] [--backend cpu] [--plot bench/glm_solvers.png]

Parts:
  big        logistic regression, 1,000,000 x 100 float64: scikit-learn's LogisticRegression() (lbfgs, C=1)
             against Tessera's lbfgs at the same regularization (lambda = 1 / (C n)); both compared with a
             tight reference fit (scikit-learn's newton-cholesky, tol 1e-10).
  solvers    the seed's solver comparison: fit time of each Tessera solver for 10^2 ... 10^6 samples x 100
             features (l2, lambda = 1/n), scikit-learn's lbfgs beside them; a table and a log-log plot.
  linear     the seed's LinearRegression example: 40000 x 1, y = 0.5 x + 1 + noise.
  processes  the per-round overhead beyond compute, embedded and across tessera-node processes.
Prints one JSON object per measurement.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np
from sklearn.linear_model import LinearRegression, LogisticRegression

warnings.simplefilter("ignore")
SOLVERS = ["gradient_descent", "newton", "lbfgs", "proximal_grad", "admm"]


def logistic_data(n, p, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, p))
    eta = x @ np.full(p, 1 / np.sqrt(p)) + 0.25
    y = (rng.random(n) < 1 / (1 + np.exp(-eta))).astype(np.float64)
    return x, y


def save(tmp, name, x, y):
    xp, yp = os.path.join(tmp, name + "_x.npy"), os.path.join(tmp, name + "_y.npy")
    np.save(xp, x)
    np.save(yp, y)
    return xp, yp


def tessera(build, xp, yp, **flags):
    cmd = [os.path.join(build, "bin", "tessera-bench-glm"), "--x", xp, "--y", yp]
    for key, value in flags.items():
        cmd += ["--" + key.replace("_", "-"), str(value)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def timed(fit, repeat):
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        est = fit()
        times.append(time.perf_counter() - start)
    return est, float(np.median(times))


def emit(record):
    print(json.dumps(record), flush=True)


def part_big(args, tmp):
    n, p = 1_000_000, 100
    x, y = logistic_data(n, p, 1)
    xp, yp = save(tmp, "big", x, y)
    sk, sk_seconds = timed(lambda: LogisticRegression().fit(x, y), args.repeat)
    ref = LogisticRegression(solver="newton-cholesky", tol=1e-10, max_iter=1000).fit(x, y)
    ref_coef = np.concatenate([ref.intercept_, ref.coef_[0]])
    sk_coef = np.concatenate([sk.intercept_, sk.coef_[0]])
    out = os.path.join(tmp, "coef.npy")
    t = tessera(args.build_dir, xp, yp, family="logistic", solver="lbfgs", regularizer="l2", **{"lambda": 1 / n},
                chunk_rows=125000, repeat=args.repeat, out=out, backend=args.backend)
    ours = np.load(out)
    scale = np.abs(ref_coef).max()
    emit({"bench": "glm_big", "peer": "scikit-learn", "rows": n, "cols": p, "solver": "lbfgs", "seconds": round(sk_seconds, 4),
          "max_relative_difference_to_reference": float(np.abs(sk_coef - ref_coef).max() / scale)})
    emit({"bench": "glm_big", "peer": "tessera", "rows": n, "cols": p, "solver": "lbfgs", "backend": args.backend,
          "seconds": t["seconds"], "iterations": t["iterations"], "converged": t["converged"],
          "max_relative_difference_to_reference": float(np.abs(ours - ref_coef).max() / scale),
          "max_relative_difference_to_scikit_learn": float(np.abs(ours - sk_coef).max() / scale)})


def part_solvers(args, tmp):
    rows = [n for n in (100, 1000, 10_000, 100_000, 1_000_000) if n <= args.max_rows]
    table = {}
    for n in rows:
        x, y = logistic_data(n, 100, 2)
        xp, yp = save(tmp, "s%d" % n, x, y)
        sk, sk_seconds = timed(lambda: LogisticRegression(C=1.0).fit(x, y), args.repeat if n < 1_000_000 else 1)
        table.setdefault("scikit-learn lbfgs", {})[n] = sk_seconds
        emit({"bench": "glm_solvers", "peer": "scikit-learn", "solver": "lbfgs", "rows": n, "seconds": round(sk_seconds, 5)})
        for solver in SOLVERS:
            t = tessera(args.build_dir, xp, yp, family="logistic", solver=solver, regularizer="l2", **{"lambda": 1 / n},
                        chunk_rows=max(13, -(-n // 8)), repeat=args.repeat if n < 1_000_000 else 1, backend=args.backend)
            table.setdefault("tessera " + solver, {})[n] = t["seconds"]
            emit({"bench": "glm_solvers", "peer": "tessera", "solver": solver, "backend": args.backend, "rows": n,
                  "seconds": t["seconds"], "iterations": t["iterations"], "converged": t["converged"],
                  "overhead_us_per_round": t["overhead_us_per_round"]})
    print("\n| solver | " + " | ".join("%d" % n for n in rows) + " |")
    print("|---|" + "---:|" * len(rows))
    for name, times in table.items():
        print("| %s | %s |" % (name, " | ".join("%.4f" % times[n] for n in rows)))
    if args.plot:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots(figsize=(6, 4.5))
        for name, times in table.items():
            ax.plot(rows, [times[n] for n in rows], "--" if name.startswith("scikit") else "-o", label=name)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("samples (100 features)")
        ax.set_ylabel("fit time (s)")
        ax.set_title("Logistic regression fit time, %s backend" % args.backend)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(args.plot, dpi=120)
        print("plot: " + args.plot)


def part_linear(args, tmp):
    rng = np.random.default_rng(3)
    big_n = 1000
    x = big_n * rng.random((40000, 1))
    y = (0.5 * x + 1.0 + rng.normal(size=x.shape))[:, 0]
    xp, yp = save(tmp, "linear", x, y)
    sk, sk_seconds = timed(lambda: LinearRegression().fit(x, y), max(args.repeat, 5))
    x_new = np.linspace(0, big_n, 100)[:, np.newaxis]
    _, predict_seconds = timed(lambda: sk.predict(x_new), max(args.repeat, 5))
    emit({"bench": "glm_linear", "peer": "scikit-learn", "rows": 40000, "seconds": round(sk_seconds, 5),
          "predict_seconds": round(predict_seconds, 6), "coef": float(sk.coef_[0]), "intercept": float(sk.intercept_)})
    for solver in ("lbfgs", "newton"):
        out = os.path.join(tmp, "linear_coef.npy")
        t = tessera(args.build_dir, xp, yp, family="normal", solver=solver, chunk_rows=10000, repeat=max(args.repeat, 5),
                    tol=1e-10, out=out)
        ours = np.load(out)
        emit({"bench": "glm_linear", "peer": "tessera", "solver": solver, "rows": 40000, "seconds": t["seconds"],
              "iterations": t["iterations"], "coef": float(ours[1]), "intercept": float(ours[0])})


class Node:
    """A tessera-node child process; the first line it prints names an endpoint."""

    def __init__(self, binary, config, tmp, name):
        self.path = os.path.join(tmp, name + ".toml")
        with open(self.path, "w") as f:
            f.write(config)
        self.proc = subprocess.Popen([binary, "--config", self.path], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     text=True)
        line = self.proc.stdout.readline()
        at = line.find("tcp://")
        self.endpoint = line[at:].split()[0].rstrip(";")

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=30)


def part_processes(args, tmp):
    x, y = logistic_data(10_000, 10, 4)
    xp, yp = save(tmp, "overhead", x, y)
    fixed = dict(family="logistic", solver="gradient_descent", max_iter=500, tol=0, chunk_rows=2500, repeat=3)
    t = tessera(args.build_dir, xp, yp, **fixed)
    emit({"bench": "glm_round_overhead", "placement": "embedded", "rows": 10000, "partitions": 4,
          "rounds": t["rounds"], "seconds": t["seconds"], "overhead_us_per_round": t["overhead_us_per_round"]})
    node = os.path.join(args.build_dir, "bin", "tessera-node")
    scheduler = Node(node, '[node]\nname = "glm-scheduler"\nrole = "scheduler"\n[scheduler]\nlisten = "tcp://127.0.0.1:0"\n',
                     tmp, "scheduler")
    workers = [Node(node, '[node]\nname = "glm-worker-%d"\nrole = "worker"\n[worker]\nscheduler = "%s"\n'
                    'threads_per_worker = 1\n' % (i, scheduler.endpoint), tmp, "worker%d" % i) for i in range(2)]
    try:
        t = tessera(args.build_dir, xp, yp, scheduler=scheduler.endpoint, **fixed)
        emit({"bench": "glm_round_overhead", "placement": "processes", "worker_processes": 2, "rows": 10000,
              "partitions": 4, "rounds": t["rounds"], "seconds": t["seconds"],
              "overhead_us_per_round": t["overhead_us_per_round"]})
    finally:
        for n in workers + [scheduler]:
            n.stop()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build-dir", default="build")
    parser.add_argument("--parts", default="big,solvers,linear,processes")
    parser.add_argument("--max-rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--backend", default="cpu")
    parser.add_argument("--plot", default="bench/glm_solvers.png")
    args = parser.parse_args()
    tmp = tempfile.mkdtemp(prefix="tessera-glm-")
    try:
        for part in args.parts.split(","):
            {"big": part_big, "solvers": part_solvers, "linear": part_linear, "processes": part_processes}[part](args, tmp)
    finally:
        shutil.rmtree(tmp)


if __name__ == "__main__":
    sys.exit(main())

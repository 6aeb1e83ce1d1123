"""libEnsemble peer for compare_programs.py's trivial row: a sim function that submits the registered app
`echo` through libEnsemble's plain Executor for its point, waits for it and reads its stdout; --slots workers
on local comms; a generator that produces the N points in one batch; exit_criteria sim_max N.

Run by the venv's Python (bench/.venv/bin/python, `pip install libensemble`), in a temporary directory of its
own (the tasks' stdout/stderr files and anything libEnsemble writes go there and are removed). Prints one JSON
line:

  {"peer": "libensemble", "version": ..., "sets": N, "seconds": ..., "sets_per_second": ...,
   "startup_seconds": ..., "shutdown_seconds": ...}

seconds runs from the manager handing out the first sim to the manager receiving the last sim's result (the
History's sim_started_time and sim_ended_time); start-up (forking the workers, the generator) and shut-down
are reported apart. Every result is checked: N sims ended, each returned the number echo printed for its
point. Every wait has a deadline: each task's wait has one (--task-timeout), and the run has wallclock_max
(--timeout), past which the run fails with a message naming libEnsemble.
"""
import argparse
import json
import os
import shutil
import sys
import tempfile
import time

import numpy as np


def gen_points(H, persis_info, gen_specs, libE_info):
    """The N parameter sets, 0..N-1, in one batch."""
    out = np.zeros(gen_specs["user"]["sets"], dtype=gen_specs["out"])
    out["x"] = np.arange(len(out))
    return out, persis_info


def sim_echo(H, persis_info, sim_specs, libE_info):
    """One app run per point: submit echo with the point's number, wait for it, parse its stdout."""
    from libensemble.message_numbers import WORKER_DONE

    executor = libE_info["executor"]
    out = np.zeros(len(H), dtype=sim_specs["out"])
    for k, x in enumerate(H["x"]):
        task = executor.submit(app_name="echo", app_args=str(int(x)))
        task.wait(timeout=sim_specs["user"]["task_timeout"])  # raises TimeoutExpired past it
        if task.state != "FINISHED" or task.errcode != 0:
            raise RuntimeError(f"libEnsemble: echo {x} ended {task.state}, exit code {task.errcode}")
        out["y"][k] = int(task.read_stdout().strip())
    return out, persis_info, WORKER_DONE


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", type=int, required=True)
    parser.add_argument("--slots", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=900, help="seconds for the whole run (wallclock_max)")
    parser.add_argument("--task-timeout", type=float, default=60, help="seconds for one echo task")
    args = parser.parse_args()

    import libensemble
    from libensemble.executors.executor import Executor
    from libensemble.libE import libE
    from libensemble.tools import add_unique_random_streams

    echo = shutil.which("echo") or "/bin/echo"
    with tempfile.TemporaryDirectory(prefix="tessera-compare-libensemble-") as tmp:
        os.chdir(tmp)
        executor = Executor()
        executor.register_app(full_path=echo, app_name="echo")
        sim_specs = {"sim_f": sim_echo, "in": ["x"], "out": [("y", int)],
                     "user": {"task_timeout": args.task_timeout}}
        gen_specs = {"gen_f": gen_points, "out": [("x", int)], "user": {"sets": args.sets}}
        libE_specs = {"comms": "local", "nworkers": args.slots, "disable_log_files": True,
                      "workflow_dir_path": tmp, "ensemble_dir_path": os.path.join(tmp, "ensemble")}
        exit_criteria = {"sim_max": args.sets, "wallclock_max": args.timeout}
        persis_info = add_unique_random_streams({}, args.slots + 1)

        begin = time.time()
        H, persis_info, flag = libE(sim_specs, gen_specs, exit_criteria, persis_info, libE_specs=libE_specs)
        end = time.time()
        os.chdir("/")

    if H is None or len(H) == 0:
        raise RuntimeError(f"libEnsemble: no history returned (exit flag {flag})")
    ended = H[H["sim_ended"]]
    if flag != 0 or len(ended) != args.sets:
        reason = " (wallclock_max reached)" if flag == 2 else ""
        raise RuntimeError(f"libEnsemble: exit flag {flag}{reason}, {len(ended)} of {args.sets} sims ended "
                           f"within --timeout {args.timeout:.0f} s")
    xs = np.sort(ended["x"])
    wrong = int(np.count_nonzero(ended["y"] != ended["x"]))
    if not np.array_equal(xs, np.arange(args.sets)) or wrong:
        raise RuntimeError(f"libEnsemble: {len(np.unique(xs))} distinct points of {args.sets}, {wrong} wrong results")
    first = float(ended["sim_started_time"].min())
    last = float(ended["sim_ended_time"].max())
    seconds = last - first
    print(json.dumps({"peer": "libensemble", "version": libensemble.__version__, "sets": args.sets,
                      "slots": args.slots, "seconds": seconds, "sets_per_second": args.sets / seconds,
                      "startup_seconds": first - begin, "shutdown_seconds": end - last}), flush=True)


if __name__ == "__main__":
    try:
        main()
    except Exception as e:  # one clear line for compare_programs.py; the traceback goes to stderr as well
        import traceback
        traceback.print_exc()
        print(f"programs_libensemble.py: {type(e).__name__}: {e}", file=sys.stderr)
        sys.exit(1)

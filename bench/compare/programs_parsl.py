"""Parsl peer for compare_programs.py's trivial row: a bash_app that runs `echo {i}` per parameter set on a
local HighThroughputExecutor (one LocalProvider block, --slots workers), every result collected.

Run by the venv's Python (bench/.venv/bin/python, `pip install parsl`), in a temporary directory of its own
(Parsl's runinfo/ and the apps' stdout files go there and are removed). Prints one JSON line:

  {"peer": "parsl", "version": ..., "sets": N, "seconds": ..., "sets_per_second": ...,
   "startup_seconds": ..., "shutdown_seconds": ...}

seconds runs from the submission of the first set to the last set's result (its return code and its stdout,
read and checked against the set's number); start-up (parsl.load, the worker pool connecting, one warm-up app
per worker) and shut-down are reported apart. Every wait has a deadline (--timeout): past it the executor is
shut down and the run fails with a message naming Parsl.
"""
import argparse
import concurrent.futures
import json
import os
import sys
import tempfile
import time


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", type=int, required=True)
    parser.add_argument("--slots", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=900, help="seconds for the whole run")
    args = parser.parse_args()
    deadline = time.monotonic() + args.timeout

    def left():
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError(f"Parsl: not finished within --timeout {args.timeout:.0f} s")
        return remaining

    # Parsl starts interchange.py and process_worker_pool.py from PATH: the venv's bin/, as if activated.
    os.environ["PATH"] = os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")
    import parsl
    from parsl.app.app import bash_app
    from parsl.config import Config
    from parsl.executors import HighThroughputExecutor
    from parsl.providers import LocalProvider

    with tempfile.TemporaryDirectory(prefix="tessera-compare-parsl-") as tmp:
        os.chdir(tmp)
        out_dir = os.path.join(tmp, "out")
        os.mkdir(out_dir)
        config = Config(
            executors=[HighThroughputExecutor(
                label="htex_local",
                address="127.0.0.1",
                max_workers_per_node=args.slots,
                cores_per_worker=1,
                provider=LocalProvider(init_blocks=1, min_blocks=1, max_blocks=1),
            )],
            run_dir=os.path.join(tmp, "runinfo"),
        )

        @bash_app
        def echo(i, stdout=None, stderr=None):
            return f"echo {i}"

        begin = time.perf_counter()
        dfk = parsl.load(config)
        shutdown = 0.0
        try:
            # Warm-up, not timed: one app per worker, so that the pool has started and connected.
            warm = [echo(-1 - k, stdout=os.path.join(out_dir, f"warm{k}.out")) for k in range(args.slots)]
            for future in warm:
                future.result(timeout=left())
            startup = time.perf_counter() - begin

            start = time.perf_counter()
            futures = {}
            for i in range(args.sets):
                futures[echo(i, stdout=os.path.join(out_dir, f"{i}.out"))] = i
            results = {}
            for future in concurrent.futures.as_completed(futures, timeout=left()):
                i = futures[future]
                rc = future.result()  # a bash app that exits non-zero raises here
                if rc != 0:
                    raise RuntimeError(f"Parsl: set {i} returned {rc}")
                with open(os.path.join(out_dir, f"{i}.out")) as f:
                    results[i] = f.read()
            seconds = time.perf_counter() - start
        except concurrent.futures.TimeoutError as e:
            raise TimeoutError(f"Parsl: not finished within --timeout {args.timeout:.0f} s "
                               f"({len(results) if 'results' in locals() else 0} of {args.sets} results)") from e
        finally:
            stop = time.perf_counter()
            dfk.cleanup()
            parsl.clear()
            shutdown = time.perf_counter() - stop
            os.chdir("/")

    wrong = [i for i in range(args.sets) if results.get(i, "").strip() != str(i)]
    if len(results) != args.sets or wrong:
        raise RuntimeError(f"Parsl: {len(results)} results for {args.sets} sets, {len(wrong)} missing or wrong "
                           f"(the first: {wrong[:1]})")
    print(json.dumps({"peer": "parsl", "version": parsl.__version__, "sets": args.sets, "slots": args.slots,
                      "seconds": seconds, "sets_per_second": args.sets / seconds,
                      "startup_seconds": startup, "shutdown_seconds": shutdown}), flush=True)


if __name__ == "__main__":
    try:
        main()
    except Exception as e:  # one clear line for compare_programs.py; the traceback goes to stderr as well
        import traceback
        traceback.print_exc()
        print(f"programs_parsl.py: {type(e).__name__}: {e}", file=sys.stderr)
        sys.exit(1)

"""An adaptive ensemble driven by a gest-api generator, Tessera and libEnsemble side by side in one run.

What it measures: N parameter sets proposed by libEnsemble 1.6.1's own gest-api generator,
libensemble.gen_classes.sampling.UniformSample (as PyPI ships it, unchanged), over the VOCS
{x0 in [-3, 3], x1 in [-2, 2]; minimize f}, each evaluated by a trivial Python simulation f = x0 + x1,
on K slots; every result goes back to the generator (ingest) and it proposes more (suggest) until N
simulations have ended. Both systems run the same generator object class, built the same way with the
same seed, and the same simulation:

  libensemble  libE() with GenSpecs(generator=UniformSample(vocs), ...) and SimSpecs(sim_f=...) (f = x0 + x1
               over the rows' "x" field, which UniformSample's numpy interface fills), LibeSpecs(comms="local",
               nworkers=K, gen_on_manager=True) so all K workers run simulations as Tessera's K threads do,
               alloc_f only_persistent_gens with async_return (each result goes back to the generator as it
               ends) and initial_batch_size 2K (Tessera keeps 2 x slots sets out), ExitCriteria(sim_max=N,
               wallclock_max=--timeout). It runs in a temporary working directory, removed afterwards.
  tessera      LocalCluster(workers=1, threads_per_worker=K, python=[a module registering the generator with
               @tessera.generator, a factory returning UniformSample(vocs) unchanged, and the simulation with
               @tessera.simulation]), client.ensemble(..., N) and ensemble.wait(); one small warm-up ensemble
               first (interpreters started).

"seconds" runs from just before the run call (libE(); client.ensemble()) to just after it returns (libE()
returning; ensemble.wait() returning), the median of --repeat runs; sets_per_second = N / seconds. For
libEnsemble its own clock is reported too: from the manager handing out the first sim to the last sim's
end (its History's sim_started_time and sim_ended_time), with start-up and shut-down apart. Every result
is checked: libEnsemble's History has N ended sims, each f = x0 + x1; Tessera's stored results have N rows,
ids 0..N-1, none failed, each f = x0 + x1. libEnsemble runs first, before Tessera's threads exist, since its
local comms fork worker processes.

One JSON line per system on stdout, progress on stderr:

  {"bench": "gest_ensemble", "system": "tessera"|"libensemble", "sets": N, "slots": K, "seconds": s,
   "sets_per_second": r, "version": ...}

A system that cannot be imported is reported as {"bench": "gest_ensemble", "system": ..., "missing": ...};
one that fails or passes --timeout as {..., "error": ...} (naming it), and the script exits 1.

Run by the venv that has libEnsemble 1.6.1 and gest-api from PyPI (bench/.venv, made with
--system-site-packages for Debian's numpy and cloudpickle), with Tessera's package from the build:

  PYTHONPATH=build/python bench/.venv/bin/python bench/compare/ensemble_gest.py --sets 10000 --slots 2
"""
import argparse
import faulthandler
import json
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
import traceback

BENCH = "gest_ensemble"
VARIABLES = {"x0": [-3, 3], "x1": [-2, 2]}
OBJECTIVES = {"f": "MINIMIZE"}
SEED = 1
CLOSE_SECONDS = 60  # for closing a LocalCluster after a failure
BACKSTOP_SECONDS = 30  # faulthandler's watchdog, past the Python one

# The module Tessera's workers import: libEnsemble's generator registered unchanged, and the simulation.
MODULE = f'''
import tessera

VARIABLES = {VARIABLES!r}
OBJECTIVES = {OBJECTIVES!r}


@tessera.generator("bench_uniform")
def bench_uniform(config):
    """A factory of the ensemble's generator config: libEnsemble's UniformSample as PyPI ships it."""
    from gest_api.vocs import VOCS
    from libensemble.gen_classes.sampling import UniformSample
    vocs = VOCS(variables=VARIABLES, objectives=OBJECTIVES)
    return UniformSample(vocs, random_seed=int(config.get("seed", {SEED})))


@tessera.simulation("bench_sum")
class BenchSum:
    parameters = ["x0", "x1"]
    outputs = ["f"]

    def __init__(self, config):
        pass

    def run(self, p):
        return {{"f": p["x0"] + p["x1"]}}
'''


def log(message):
    print(f"[ensemble_gest] {message}", file=sys.stderr, flush=True)


def emit(**record):
    # flush: libEnsemble's forked workers flush stdout when they exit, and must find nothing buffered there.
    print(json.dumps({"bench": BENCH, **record}), flush=True)


class Deadline:
    """A watchdog past the deadlines the run calls keep themselves (libEnsemble's wallclock_max, Tessera's
    wait timeout): past it the script names the system and exits 1. A Python timer does it where the
    interpreter still runs; faulthandler's (a C thread, so past a call that blocks holding the GIL, such as
    a native destructor) BACKSTOP_SECONDS later, dumping every thread's stack to stderr."""

    def __init__(self, system, seconds):
        self.system, self.seconds = system, seconds
        self.timer = threading.Timer(seconds, self._expired)
        self.timer.daemon = True

    def _expired(self):
        message = f"{self.system}: no end within {self.seconds:g} s (watchdog)"
        print(f"ensemble_gest.py: {message}", file=sys.stderr, flush=True)
        print(json.dumps({"bench": BENCH, "system": self.system, "error": message}), flush=True)
        os._exit(1)

    def failed(self, error):
        """After a failure: reports it now, then allows CLOSE_SECONDS for what closes (faulthandler's)."""
        self.timer.cancel()
        report(self.system, error)
        log(f"{self.system}: closing; past {CLOSE_SECONDS} s faulthandler ends the script with its stacks")
        faulthandler.dump_traceback_later(CLOSE_SECONDS, exit=True)

    def __enter__(self):
        self.timer.start()
        faulthandler.dump_traceback_later(self.seconds + BACKSTOP_SECONDS, exit=True)
        return self

    def __exit__(self, *exc):
        self.timer.cancel()
        faulthandler.cancel_dump_traceback_later()


def report(system, error):
    """The failure, once, naming the system: a line on stderr and a JSON line on stdout."""
    if getattr(error, "reported", False):
        return
    message = str(error) if str(error).lower().startswith(system[:7]) else f"{system}: {type(error).__name__}: {error}"
    print(f"ensemble_gest.py: {message}", file=sys.stderr, flush=True)
    emit(system=system, error=message)
    try:
        error.reported = True
    except AttributeError:
        pass


# --- libEnsemble ---

def sim_sum(H, persis_info, sim_specs, libE_info):
    """f = x0 + x1 for each row given (UniformSample's numpy interface puts x0, x1 in the field "x")."""
    import numpy as np
    out = np.zeros(len(H), dtype=sim_specs["out"])
    out["f"] = H["x"][:, 0] + H["x"][:, 1]
    return out, persis_info


def libensemble_once(sets, slots, timeout):
    import numpy as np
    from gest_api.vocs import VOCS
    from libensemble.alloc_funcs.start_only_persistent import only_persistent_gens
    from libensemble.gen_classes.sampling import UniformSample
    from libensemble.libE import libE
    from libensemble.specs import AllocSpecs, ExitCriteria, GenSpecs, LibeSpecs, SimSpecs

    vocs = VOCS(variables=VARIABLES, objectives=OBJECTIVES)
    n = len(VARIABLES)
    home = os.getcwd()
    tmp = tempfile.mkdtemp(prefix="tessera-compare-gest-libensemble-")
    try:
        os.chdir(tmp)  # what libEnsemble writes (a History saved on failure, ensemble dirs) goes here
        generator = UniformSample(vocs, random_seed=SEED)
        # UniformSample is a LibensembleGenerator: libEnsemble drives it through suggest_numpy/ingest_numpy,
        # whose rows carry the variables as one field "x" of shape (n,), as its own tests declare.
        gen_specs = GenSpecs(generator=generator, persis_in=["x", "f", "sim_id"], outputs=[("x", float, (n,))],
                             initial_batch_size=2 * slots)
        sim_specs = SimSpecs(sim_f=sim_sum, inputs=["x"], outputs=[("f", float)])
        alloc_specs = AllocSpecs(alloc_f=only_persistent_gens, user={"async_return": True})
        libE_specs = LibeSpecs(comms="local", nworkers=slots, gen_on_manager=True, disable_log_files=True,
                               workflow_dir_path=tmp, ensemble_dir_path=os.path.join(tmp, "ensemble"))
        exit_criteria = ExitCriteria(sim_max=sets, wallclock_max=timeout)
        persis_info = {}  # fresh each run: libEnsemble counts the gens it started in it

        with Deadline("libensemble", timeout + 60):
            begin = time.perf_counter()
            begin_clock = time.time()
            H, persis_info, flag = libE(sim_specs, gen_specs, exit_criteria, persis_info, alloc_specs,
                                        libE_specs=libE_specs)
            seconds = time.perf_counter() - begin
            end_clock = begin_clock + seconds
    finally:
        os.chdir(home)
        shutil.rmtree(tmp, ignore_errors=True)

    if H is None or len(H) == 0:
        raise RuntimeError(f"libEnsemble: no History returned (exit flag {flag})")
    ended = H[H["sim_ended"]]
    if flag != 0 or len(ended) != sets:
        reason = " (wallclock_max reached)" if flag == 2 else ""
        raise RuntimeError(f"libEnsemble: exit flag {flag}{reason}, {len(ended)} of {sets} sims ended "
                           f"within --timeout {timeout:g} s")
    ids = np.sort(ended["sim_id"])
    if not np.array_equal(ids, np.arange(sets)):
        raise RuntimeError(f"libEnsemble: the ended sims are not sim_ids 0..{sets - 1}")
    wrong = int(np.count_nonzero(~np.isclose(ended["f"], ended["x"][:, 0] + ended["x"][:, 1])))
    lower, upper = np.array([v[0] for v in VARIABLES.values()]), np.array([v[1] for v in VARIABLES.values()])
    outside = int(np.count_nonzero(np.any((ended["x"] < lower) | (ended["x"] > upper), axis=1)))
    if wrong or outside:
        raise RuntimeError(f"libEnsemble: {wrong} results with f != x0 + x1, {outside} points outside the VOCS")
    first = float(ended["sim_started_time"].min())
    last = float(ended["sim_ended_time"].max())
    return {"seconds": seconds, "manager_seconds": last - first, "startup_seconds": first - begin_clock,
            "shutdown_seconds": end_clock - last, "history_rows": int(len(H))}


def run_libensemble(args):
    try:
        from importlib.metadata import version

        import gest_api  # noqa: F401
        import libensemble
        import libensemble.gen_classes.sampling  # noqa: F401
        import libensemble.specs  # noqa: F401
    except ImportError as e:
        emit(system="libensemble", missing=f"{type(e).__name__}: {e}")
        return None
    runs = []
    for k in range(args.repeat):
        log(f"libEnsemble {libensemble.__version__}: run {k + 1} of {args.repeat}, {args.sets} sets on "
            f"{args.slots} workers")
        runs.append(libensemble_once(args.sets, args.slots, args.timeout))
    seconds = statistics.median(r["seconds"] for r in runs)
    middle = min(runs, key=lambda r: abs(r["seconds"] - seconds))
    emit(system="libensemble", sets=args.sets, slots=args.slots, seconds=seconds,
         sets_per_second=args.sets / seconds, version=libensemble.__version__, gest_api=version("gest-api"),
         manager_seconds=middle["manager_seconds"], startup_seconds=middle["startup_seconds"],
         shutdown_seconds=middle["shutdown_seconds"], history_rows=middle["history_rows"],
         runs=[r["seconds"] for r in runs])
    return True


# --- Tessera ---

def tessera_once(client, sets, timeout):
    import numpy as np
    begin = time.perf_counter()
    ensemble = client.ensemble("bench_uniform", "bench_sum", sets, generator_config={"seed": SEED})
    try:
        ended = ensemble.wait(timeout=timeout)
        seconds = time.perf_counter() - begin
        if not ended:
            raise RuntimeError(f"Tessera: the ensemble of {sets} sets did not end within --timeout {timeout:g} s "
                               f"({ensemble.completed} completed)")
        if ensemble.error:
            raise RuntimeError(f"Tessera: the ensemble ended with an error: {ensemble.error}")
        stream_id = ensemble.id
    finally:
        # Dropped here, not kept by a traceback: a Stream that outlives its LocalCluster's close blocks in
        # its destructor while its ensemble has not ended (the cluster waits for the ensemble's actors).
        del ensemble
    table = client.results(stream_id).to_pandas()
    if len(table) != sets or not np.array_equal(np.sort(table["id"].to_numpy()), np.arange(sets)):
        raise RuntimeError(f"Tessera: {len(table)} stored results, not ids 0..{sets - 1}")
    failed = table[table["failed"]]
    if len(failed):
        raise RuntimeError(f"Tessera: {len(failed)} of {sets} sets failed, e.g. {failed['error'].iloc[0]}")
    wrong = int(np.count_nonzero(~np.isclose(table["f"], table["x0"] + table["x1"])))
    outside = sum(int(((table[name] < low) | (table[name] > high)).sum()) for name, (low, high) in VARIABLES.items())
    if wrong or outside:
        raise RuntimeError(f"Tessera: {wrong} results with f != x0 + x1, {outside} points outside the VOCS")
    return seconds


def run_tessera(args, workdir):
    try:
        import tessera
    except ImportError as e:
        emit(system="tessera", missing=f"{type(e).__name__}: {e} (PYTHONPATH=build/python?)")
        return None
    try:
        import gest_api  # noqa: F401
        import libensemble.gen_classes.sampling  # noqa: F401
    except ImportError as e:  # the same generator class runs on Tessera's workers too
        emit(system="tessera", missing=f"{type(e).__name__}: {e} (the generator is libEnsemble's)")
        return None
    module = os.path.join(workdir, "bench_gest_module.py")
    with open(module, "w") as f:
        f.write(MODULE)
    os.environ["TESSERA_PYTHON"] = sys.executable  # the workers' interpreters: this venv's
    log(f"Tessera {tessera.__version__}: LocalCluster(1 worker x {args.slots} threads)")
    started = time.perf_counter()
    with Deadline("tessera", args.timeout * (args.repeat + 1) + 120) as watchdog:
        with tessera.LocalCluster(workers=1, threads_per_worker=args.slots, python=[module]) as cluster, \
                tessera.Client(cluster) as client:
            try:
                warm = min(100, args.sets)
                log(f"Tessera: warm-up ensemble of {warm} sets")
                tessera_once(client, warm, args.timeout)
                runs = []
                for k in range(args.repeat):
                    log(f"Tessera: run {k + 1} of {args.repeat}, {args.sets} sets on {args.slots} slots")
                    runs.append(tessera_once(client, args.sets, args.timeout))
            except Exception as e:
                # Reported before the cluster closes: closing a LocalCluster with an ensemble unfinished can
                # block in its destructor holding the GIL (seen with Tessera 0.1.0).
                traceback.print_exc()
                watchdog.failed(e)
                raise
    log(f"Tessera: {time.perf_counter() - started:.1f} s with cluster start-up and close")
    seconds = statistics.median(runs)
    emit(system="tessera", sets=args.sets, slots=args.slots, seconds=seconds, sets_per_second=args.sets / seconds,
         version=tessera.__version__, runs=runs)
    return True


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", type=int, default=10000, help="parameter sets (simulations) per run")
    parser.add_argument("--slots", type=int, default=2, help="simulations at once (workers, threads)")
    parser.add_argument("--repeat", type=int, default=1, help="timed runs per system; the median is reported")
    parser.add_argument("--timeout", type=float, default=600, help="seconds any one run may take")
    args = parser.parse_args()
    if args.sets < 1 or args.slots < 1 or args.repeat < 1 or args.timeout <= 0:
        parser.error("--sets, --slots and --repeat must be at least 1, --timeout positive")

    failed = False
    # libEnsemble first: its local comms fork its workers, best done before Tessera's threads exist.
    for system, run in (("libensemble", run_libensemble), ("tessera", run_tessera)):
        try:
            if system == "tessera":
                with tempfile.TemporaryDirectory(prefix="tessera-compare-gest-") as workdir:
                    run(args, workdir)
            else:
                run(args)
        except Exception as e:  # noqa: BLE001 - reported naming the system; the other still runs
            if not getattr(e, "reported", False):
                traceback.print_exc()
            report(system, e)
            failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

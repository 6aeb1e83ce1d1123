"""examples/python run as a user runs them, their outputs checked."""

import csv
import os
import pathlib
import subprocess
import sys

import numpy as np

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples" / "python"


def run(script, *args, cwd, temporary):
    return subprocess.run([sys.executable, str(EXAMPLES / script), *args], cwd=cwd, capture_output=True, text=True,
                          timeout=240, env=dict(os.environ, TMPDIR=str(temporary)))


def test_main_job(examples_plugin, tmp_path):
    # Run from a folder of its own (a checkout, say): it writes nothing there, only in TMPDIR.
    (tmp_path / "here").mkdir()
    done = run("main_job.py", "--plugin", examples_plugin, "--sets", "300", "--max-sleep", "0.001", "--seed", "5",
               cwd=tmp_path / "here", temporary=tmp_path)
    assert done.returncode == 0, done.stderr
    assert list((tmp_path / "here").iterdir()) == []
    rows = list(csv.DictReader(open(tmp_path / "tessera-examples" / "results.csv")))
    assert len(rows) == 300
    parameters = np.random.default_rng(5).random((300, 4))
    for row in rows:
        assert abs(float(row["result"]) - parameters[int(row["id"])].sum()) < 1e-12
    above = sum(float(r["result"]) > 2 for r in rows)
    assert f"results > 2: {above:,} of 300 ({100 * above / 300:.1f}%)" in done.stdout, done.stdout
    assert "stream 1 [" in done.stderr or "stream 1: 300/300 done (100%)" in done.stderr, done.stderr


def test_seed_notebook(tmp_path):
    # Python functions and a Python simulation class only: no plugin.
    done = run("seed_notebook.py", "--sets", "200", "--max-sleep", "0.002", "--workers", "3", cwd=tmp_path,
               temporary=tmp_path)
    assert done.returncode == 0, done.stderr
    for line in ("delayed: 200 results", "futures: 200 results", "bag: 200 results in 100 partitions",
                 "results > 2: ", "best sum 0."):
        assert line in done.stdout, done.stdout
    assert "stream" in done.stdout
    png = (tmp_path / "tessera-examples" / "results.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 5000

"""Ctrl-C interrupts a wait: a child Python process waiting on a slow task gets SIGINT and raises
KeyboardInterrupt promptly, instead of waiting for the task."""

import os
import signal
import subprocess
import sys
import textwrap
import time


def test_sigint_interrupts_a_wait(test_plugin):
    program = textwrap.dedent(f"""
        import sys, time, tessera
        with tessera.LocalCluster(workers=1, threads_per_worker=1, plugins=[{test_plugin!r}]) as cluster:
            client = tessera.Client(cluster)
            busy = client.map("slower_square", range(2000))  # held: the only thread stays busy
            late = client.submit("square", 3)
            print("waiting", flush=True)
            try:
                late.result()
            except KeyboardInterrupt:
                print("interrupted", flush=True)
                sys.exit(0)
            sys.exit(1)
    """)
    child = subprocess.Popen([sys.executable, "-c", program], stdout=subprocess.PIPE, text=True,
                             env=dict(os.environ))
    try:
        assert child.stdout.readline().strip() == "waiting"
        time.sleep(0.2)  # into the wait (being late only makes it wait longer, never pass falsely)
        sent = time.monotonic()
        child.send_signal(signal.SIGINT)
        assert child.stdout.readline().strip() == "interrupted"
        assert time.monotonic() - sent < 5
    finally:
        child.kill()
        child.wait()

"""Ctrl-C as a terminal sends it, to a ``vta`` command run in its own process.

``ctrl_c(args, ready)`` starts ``python -m vta.cli ARGS`` in a new session (its own
process group, like a shell's foreground job), waits until ``ready()`` is true, sends
SIGINT to the whole group (the command and the worker processes it started) and
returns the exit status and standard error.  The child starts with SIGINT's default
disposition, so the test does not depend on how pytest itself was started: a job a
non-interactive shell starts in the background inherits SIGINT ignored.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence


def ctrl_c(args: Sequence[str], ready: Callable[[], bool], *, ready_within: float = 180,
           stop_within: float = 60) -> tuple[int, str]:
    """(exit status, stderr) of ``vta ARGS`` interrupted once ``ready()`` holds.

    Fails (AssertionError) when ``ready()`` does not hold within ``ready_within`` seconds
    or the command does not stop within ``stop_within`` seconds of the signal.
    """
    proc = subprocess.Popen(
        [sys.executable, "-m", "vta.cli", *map(str, args)], stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE, text=True, start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        deadline = time.monotonic() + ready_within
        while not ready():
            assert proc.poll() is None, f"vta {' '.join(args)} ended before the signal " \
                f"(exit {proc.returncode}): {proc.stderr.read()}"
            assert time.monotonic() < deadline, f"not ready within {ready_within} s"
            time.sleep(0.2)
        os.killpg(proc.pid, signal.SIGINT)
        code = proc.wait(timeout=stop_within)
    finally:
        proc.kill()
    return code, proc.stderr.read()


def lines_at_least(path, count: int) -> Callable[[], bool]:
    """A ``ready`` for :func:`ctrl_c`: ``path`` exists and holds ``count`` lines or more."""
    return lambda: path.exists() and len(path.read_text().splitlines()) >= count

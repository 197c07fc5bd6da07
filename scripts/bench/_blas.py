"""Pin BLAS threads before NumPy loads (import this first in a benchmark script).

``--blas-threads N`` on the command line wins; the default is 1.  On a small
shared machine a multi-threaded OpenBLAS spins against other work and single
matrix products get up to 20x slower, so benchmarks run single-threaded unless
told otherwise, and say which setting they used.
"""

from __future__ import annotations

import os
import sys


def requested_threads(default: str = "1") -> str:
    """The value of ``--blas-threads`` in ``sys.argv`` (or ``default``)."""
    for i, arg in enumerate(sys.argv):
        if arg == "--blas-threads" and i + 1 < len(sys.argv):
            return sys.argv[i + 1]
        if arg.startswith("--blas-threads="):
            return arg.split("=", 1)[1]
    return default


THREADS = requested_threads()
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = THREADS

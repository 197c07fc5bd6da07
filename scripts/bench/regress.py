#!/usr/bin/env python3
"""``vta regress`` throughput: programs per second per worker, 1 -> 2 workers.

For each backend, one period of the program schedule (41 seeds: every kind)
per configuration runs through :func:`vta.regress.run.regress` on a local Dask
cluster, first with one worker, then with ``--workers`` workers, in the same
run (the ratio of the two is the scaling; the machine is shared, so compare
within one run).  Programs per second exclude the cluster's start-up but
include each worker opening its simulator (about a second per configuration,
paid once per worker).

Every program is checked against the golden model; any failure is printed.

    python scripts/bench/regress.py [--programs 41] [--workers 2]
                                    [--backends golden,verilator,icarus]
                                    [--configs tiny,default] [--icarus-configs tiny]
"""

from __future__ import annotations

import argparse
import os
import platform
import tempfile

import _blas  # noqa: F401  (first: pins BLAS threads before NumPy loads)
from conv2d_resnet import _cpu_name as cpu_name

import vta
from vta.regress.run import Plan, regress


def run_once(backend: str, configs: list[str], programs: int, workers: int) -> dict:
    cfgs = [vta.Config.load(c) for c in configs]
    with tempfile.TemporaryDirectory() as out:
        s = regress(Plan.of(backend, cfgs, programs), out, workers=workers, shrink=0)
    bad = {k: v for k, v in s.counts.items() if k != "pass"}
    if bad:
        print(f"  !! {backend} {configs} x{workers}: {bad}: {s.failures[:3]}")
    busy = sum(sum(t) for t in s.per_worker.values())
    return {"programs": s.ran, "seconds": s.seconds, "rate": s.rate,
            "per_program": busy / max(1, s.ran), "startup": s.startup, "failed": sum(bad.values())}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--programs", type=int, default=41, help="seeds per configuration")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--backends", default="golden,verilator,icarus")
    ap.add_argument("--configs", default="tiny,default")
    ap.add_argument("--icarus-configs", default="tiny")
    args = ap.parse_args()
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores ({cpu_name()}), "
          f"load average before: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    print()
    print(f"| backend | configurations | programs | 1 worker: programs/s | "
          f"{args.workers} workers: programs/s | scaling | s per program (busy) |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for backend in args.backends.split(","):
        configs = (args.icarus_configs if backend == "icarus" else args.configs).split(",")
        one = run_once(backend, configs, args.programs, 1)
        many = run_once(backend, configs, args.programs, args.workers)
        print(f"| {backend} | {','.join(configs)} | {one['programs']} | {one['rate']:.2f} | "
              f"{many['rate']:.2f} | {many['rate'] / one['rate']:.2f}x | "
              f"{one['per_program']:.3f} |", flush=True)
    print(f"\nload average after: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()

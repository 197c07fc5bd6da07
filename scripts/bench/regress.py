#!/usr/bin/env python3
"""``vta regress`` throughput: programs per second per worker, 1 -> 2 workers.

For each backend, one period of the program schedule (41 seeds: every kind)
per configuration runs through :func:`vta.regress.run.regress` on a local Dask
cluster, first with one worker, then with ``--workers`` workers, in the same
run (the ratio of the two is the scaling; the machine is shared, so compare
within one run).  Programs per second exclude the cluster's start-up but
include each worker opening its simulator (about a second per configuration,
paid once per worker); the setup-free rate (``without setup``) takes that out.

``--coverage-ab`` instead measures what ``--rtl-coverage`` costs: the same programs
on a Verilator session built with line and toggle coverage and on a plain one,
alternating program by program in one process (the ratio of their summed check
times; the machine is shared, so compare within one run).

Every program is checked against the golden model; any failure is printed.

    python scripts/bench/regress.py [--programs 41] [--workers 2]
                                    [--backends golden,verilator,icarus]
                                    [--configs tiny,default] [--icarus-configs tiny]
    python scripts/bench/regress.py --coverage-ab [--programs 41] [--configs tiny,default]
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
        plan = Plan.of(backend, cfgs, programs,
                       timing="fixed" if backend == "golden" else "random")
        s = regress(plan, out, workers=workers, shrink=0)
    bad = {k: v for k, v in s.counts.items() if k != "pass"}
    if bad:
        print(f"  !! {backend} {configs} x{workers}: {bad}: {s.failures[:3]}")
    busy = sum(sum(t) for t in s.per_worker.values())
    return {"programs": s.ran, "seconds": s.seconds, "rate": s.steady_rate,
            "per_program": busy / max(1, s.ran), "startup": s.startup, "failed": sum(bad.values())}


def coverage_ab(configs: list[str], programs: int) -> None:
    """Check time per program with and without coverage, alternating (see the docstring)."""
    import time

    from vta.regress.check import Session
    from vta.regress.generator import generate
    from vta.regress.timing import device_settings, timing_of

    print("| configuration | programs | plain s/program | coverage s/program | ratio |")
    print("|---|---:|---:|---:|---:|")
    for name in configs:
        cfg = vta.Config.load(name)
        sessions = {"plain": Session("verilator", cfg),
                    "coverage": Session("verilator", cfg, coverage=True)}
        spent = dict.fromkeys(sessions, 0.0)
        try:
            for seed in range(programs):
                for key in (("plain", "coverage") if seed % 2 else ("coverage", "plain")):
                    s = sessions[key]
                    case = generate(cfg, seed, s.base)
                    s.dut.driver.transport.set_timing(**device_settings(timing_of(seed)))
                    t = time.perf_counter()
                    _, _, mismatch = s.check(case)
                    spent[key] += time.perf_counter() - t
                    if mismatch is not None:
                        print(f"  !! {name} seed {seed} ({key}): {mismatch.message}")
        finally:
            for s in sessions.values():
                s.close()
        print(f"| {name} | {programs} | {spent['plain'] / programs:.3f} | "
              f"{spent['coverage'] / programs:.3f} | {spent['coverage'] / spent['plain']:.2f}x |",
              flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--programs", type=int, default=41, help="seeds per configuration")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--backends", default="golden,verilator,icarus")
    ap.add_argument("--configs", default="tiny,default")
    ap.add_argument("--icarus-configs", default="tiny")
    ap.add_argument("--coverage-ab", action="store_true",
                    help="measure the cost of --rtl-coverage instead (Verilator)")
    args = ap.parse_args()
    if args.coverage_ab:
        coverage_ab(args.configs.split(","), args.programs)
        return
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores ({cpu_name()}), "
          f"load average before: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    print()
    print("programs/s without the workers' setup (simulator start-ups and builds); RTL "
          "programs under random DRAM timing, as vta regress runs them\n")
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

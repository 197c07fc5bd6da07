#!/usr/bin/env python3
"""Verilator backend against other C++ flag choices for the same design, measured in one run.

Builds ``vta_tb`` (the design the ``verilator`` backend runs) once per flag set
-- the backend's own build, whose flags come from ``vta.hdltools.build.sim_env(fast=True)``,
and builds with further flags appended to them (the last ``-O``/``-march``
wins) -- opens one device per build, and runs the same program on each,
interleaved, best of ``--repeat``: the chunked 256^3 int8 matmul stream of
``rtl_sim.py`` (138 instructions, GEMM-bound), checked against NumPy every
time.  Speed is simulated cycles per second of the simulator's own run (START
to ``irq``, as the harness measures it).  The limit is the fastest build
measured; the backend's ratio to it is the figure of merit.

    python scripts/bench/verilator_flags.py [--repeat 7] [--size 256] [--config default]
        [--flags "LABEL=CXXFLAGS" ...] [--only-extra]

Each flag set not in the build cache costs one Verilator build (about a minute
of one core).
"""

from __future__ import annotations

import argparse
import os
import platform

import _blas  # noqa: F401  (first: pins BLAS threads before NumPy loads)
import numpy as np
from conv2d_resnet import _cpu_name as cpu_name

import vta
from vta.hdltools import build as simbuild
from vta.progfile.handbuilt import build_matmul

#: label -> flags appended to the backend's CXXFLAGS ("" is the backend's own build).
CANDIDATES = {
    "backend": "",
    "previous default: -O2, generic x86-64": "-O2 -march=x86-64 -mtune=generic",
    "-O3 -march=x86-64-v3": "-O3 -march=x86-64-v3",
    "-O3 -march=native": "-O3 -march=native",
}


def open_with_flags(cfg: vta.Config, extra: str):
    """A verilator device whose build has ``extra`` appended to the backend's CXXFLAGS."""
    saved = os.environ.get("CXXFLAGS")
    os.environ["CXXFLAGS"] = f"{saved or ''} {extra}".strip()
    try:
        return vta.open_device("verilator", cfg), simbuild.sim_env(fast=True)["CXXFLAGS"]
    finally:
        if saved is None:
            os.environ.pop("CXXFLAGS", None)
        else:
            os.environ["CXXFLAGS"] = saved


class Matmul:
    """The chunked size^3 matmul, placed once on a device and run again and again."""

    def __init__(self, dev, size: int):
        cfg = dev.cfg
        self.dev = dev
        self.prog = build_matmul(cfg, size, size, size, shift=None,
                                 col_blocks=max(1, size // cfg.BLOCK_OUT // 4), row_blocks=32)
        rng = np.random.default_rng(size)
        self.a = rng.integers(-128, 128, (size, size), dtype=np.int8)
        self.w = rng.integers(-128, 128, (size, size), dtype=np.int8)
        mem = np.zeros(self.prog.end, dtype=np.uint8)
        self.prog.write(mem, self.a, self.w)
        self.buf = dev.alloc(self.prog.end - 4096)
        if self.buf.addr != 4096:
            raise SystemExit("expected the first allocation at 0x1000 (build_matmul's base)")
        dev.write(self.buf, mem[4096:])
        self.expected = self.prog.expected(self.a, self.w)

    def run(self) -> tuple[int, float]:
        """(cycles, simulator seconds) of one run, result checked."""
        stats = self.dev.run(self.prog.insn_addr, self.prog.insn_count)
        full = np.zeros(self.prog.end, dtype=np.uint8)
        full[4096:] = self.dev.read(self.buf)
        if not np.array_equal(self.prog.read_result(full), self.expected):
            raise SystemExit(f"{self.dev.backend}: matmul differs from NumPy")
        return stats.cycles, self.dev.driver.transport.last_run_seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7, help="interleaved rounds; best kept")
    parser.add_argument("--size", type=int, default=256, help="matmul M = K = N")
    parser.add_argument("--config", default="default", help="preset or vta_config.json")
    parser.add_argument("--flags", action="append", default=[], metavar="LABEL=CXXFLAGS",
                        help="a further flag set to compare (repeatable)")
    parser.add_argument("--only-extra", action="store_true",
                        help="compare the backend with the --flags sets only")
    parser.add_argument("--blas-threads", default="1")
    args = parser.parse_args()
    cfg = vta.Config.load(args.config)
    candidates = {"backend": ""} if args.only_extra else dict(CANDIDATES)
    for item in args.flags:
        label, sep, flags = item.partition("=")
        if not sep:
            parser.error(f"--flags must be LABEL=CXXFLAGS, not {item!r}")
        candidates[label] = flags

    runs, flags_used, failed = {}, {}, {}
    try:
        for label, extra in candidates.items():
            print(f"building/opening: {label} ...", flush=True)
            try:
                dev, flags_used[label] = open_with_flags(cfg, extra)
            except vta.VTAError as exc:
                failed[label] = str(exc).splitlines()[0]
                continue
            runs[label] = Matmul(dev, args.size)
        best = {label: 0.0 for label in runs}
        cycles = {}
        for _ in range(args.repeat):
            for label, mm in runs.items():
                n, seconds = mm.run()
                cycles[label] = n
                best[label] = max(best[label], n / seconds)
    finally:
        for mm in runs.values():
            mm.dev.close()

    limit = max(best.values())
    print(f"\nmachine: {platform.machine()}, {os.cpu_count()} cores, {cpu_name()}, python "
          f"{platform.python_version()}; config {cfg.name}; {args.size}^3 chunked matmul, "
          f"best of {args.repeat}; host CPU fingerprint {simbuild.host_cpu_flags()[1]}\n")
    print("| build | CXXFLAGS | cycles | cycles/s | of the fastest |")
    print("|---|---|---:|---:|---:|")
    for label in runs:
        print(f"| {label} | `{flags_used[label]}` | {cycles[label]:,} | {best[label]:,.0f} | "
              f"{best[label] / limit:.2f}x |")
    for label, why in failed.items():
        print(f"| {label} | `{candidates[label]}` appended | build failed: {why} | | |")
    print(f"\nbackend / fastest: {best['backend'] / limit:.2f}x (target >= 0.90x)")


if __name__ == "__main__":
    main()

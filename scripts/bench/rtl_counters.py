#!/usr/bin/env python3
"""Per-run cost of reading the counters on a simulator: one request per register vs one batch.

After every run the driver reads the 22 counters (44 32-bit registers; without a
clock the timing ones are left out).  Each read is a request to the simulator
process (a socket round trip and an AXI4-Lite transaction); the RTL transport
reads them all in one request (``Transport.read32_many``).  This script times,
on the same open device and interleaved, ``Driver.read_counters()`` as it is
(one batch) and the same reads one request each (the base class's loop, as
before), and a whole small run (``Device.run`` of a 7-instruction GEMM) with
each, checking both give the same counters.

    python scripts/bench/rtl_counters.py [--simulators verilator,icarus] [--repeat 50]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time

import numpy as np

import vta
from vta.driver.transport import Transport
from vta.progfile import parse, replay

GEMM = """\
.config tiny
.run @code
.region x
.i8 1 -2 3 4
.region w
.i8 1 0 0 0   0 1 0 0   0 0 1 0   2 2 2 2
.region out size=4 role=out
.region kernels
UOP
UOP
.region code
LOAD UOP dram_base=@kernels y_size=1 x_size=2 x_stride=2
LOAD INP dram_base=@x y_size=1 x_size=1 x_stride=1
LOAD WGT dram_base=@w y_size=1 x_size=1 x_stride=1 deps=push_next
GEMM reset_reg=1 uop_bgn=0 uop_end=1 iter_out=1 iter_in=1
GEMM uop_bgn=1 uop_end=2 iter_out=1 iter_in=1 deps=pop_prev,push_next
STORE OUT dram_base=@out y_size=1 x_size=1 x_stride=1 deps=pop_prev
FINISH
"""


def one_by_one(transport: Transport):
    """Make ``transport`` read registers one request each (the loop of the base class)."""
    transport.read32_many = lambda offsets: Transport.read32_many(transport, offsets)


def measure(simulator: str, repeat: int) -> dict:
    prog = parse(GEMM)
    with vta.open_device(simulator, prog.cfg) as dev:
        transport = dev.driver.transport
        batched = transport.read32_many
        times = {"batch": [], "single": []}
        runs = {"batch": [], "single": []}
        counters = {}
        for _ in range(repeat):
            for mode in ("batch", "single"):
                if mode == "single":
                    one_by_one(transport)
                else:
                    transport.read32_many = batched
                start = time.perf_counter()
                counters[mode] = dev.driver.read_counters()
                times[mode].append(time.perf_counter() - start)
                start = time.perf_counter()
                result = replay(prog, dev)
                runs[mode].append(time.perf_counter() - start)
                out = np.frombuffer(result.outputs["out"], dtype=np.int8)
                assert list(out) == [1, -2, 3, 12], out  # x @ w.T, low 8 bits
        transport.read32_many = batched
        assert counters["batch"] == counters["single"], counters
    return {name: (statistics.median(times[name]), statistics.median(runs[name]))
            for name in times}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--simulators", default="verilator,icarus")
    ap.add_argument("--repeat", type=int, default=50)
    args = ap.parse_args()
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, load average "
          f"{os.getloadavg()[0]:.1f}; medians of {args.repeat} interleaved repeats\n")
    print("| simulator | counters, one request each | counters, one batch | ratio "
          "| small run (replay), one each | small run, batch |")
    print("|---|---:|---:|---:|---:|---:|")
    for simulator in args.simulators.split(","):
        r = measure(simulator, args.repeat)
        (single, run_single), (batch, run_batch) = r["single"], r["batch"]
        print(f"| {simulator} | {1e3 * single:.2f} ms | {1e3 * batch:.2f} ms | "
              f"{single / batch:.1f}x | {1e3 * run_single:.1f} ms | {1e3 * run_batch:.1f} ms |")


if __name__ == "__main__":
    main()

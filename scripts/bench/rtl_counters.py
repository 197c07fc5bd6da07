#!/usr/bin/env python3
"""Per-run cost of reading the counters on a simulator: one request per register vs one batch.

After every run the driver reads the 22 counters (44 32-bit registers; without a
clock the timing ones are left out).  Each read is a request to the simulator
process (a socket round trip and an AXI4-Lite transaction); the RTL transport
reads them all in one request (``Transport.read32_many``).  This script times,
on the same open device and interleaved, ``Driver.read_counters()`` as it is
(one batch) and the same reads one request each (the base class's loop, as
before), and a whole small run (``Device.run`` of a 4x8x4 matmul, checked
against NumPy) with each, checking both give the same counters.

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
from vta.progfile.handbuilt import build_matmul


def one_by_one(transport: Transport):
    """Make ``transport`` read registers one request each (the loop of the base class)."""
    transport.read32_many = lambda offsets: Transport.read32_many(transport, offsets)


def measure(simulator: str, repeat: int) -> dict:
    with vta.open_device(simulator, "tiny") as dev:
        prog = build_matmul(dev.cfg, 4, 8, 4)  # a few instructions: the run costs little
        rng = np.random.default_rng(0)
        a = rng.integers(-128, 128, (4, 8), dtype=np.int8)
        w = rng.integers(-128, 128, (4, 8), dtype=np.int8)
        mem = np.zeros(prog.end, dtype=np.uint8)
        prog.write(mem, a, w)
        buf = dev.alloc(prog.end - 4096)
        assert buf.addr == 4096  # build_matmul places everything from one page on
        dev.write(buf, mem[4096:].tobytes())
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
                dev.run(prog.insn_addr, prog.insn_count)
                runs[mode].append(time.perf_counter() - start)
                mem[4096:] = dev.read(buf, prog.end - 4096)
                np.testing.assert_array_equal(prog.read_result(mem), prog.expected(a, w))
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
          "| small run, one each | small run, batch |")
    print("|---|---:|---:|---:|---:|---:|")
    for simulator in args.simulators.split(","):
        r = measure(simulator, args.repeat)
        (single, run_single), (batch, run_batch) = r["single"], r["batch"]
        print(f"| {simulator} | {1e3 * single:.2f} ms | {1e3 * batch:.2f} ms | "
              f"{single / batch:.1f}x | {1e3 * run_single:.1f} ms | {1e3 * run_batch:.1f} ms |")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Host transfers through the simulated AWS wrapper: bytes per clk_main_a0 cycle.

Moves one block each way through the shell's PCIS port model (sim/aws) into card
memory, as one-beat requests (BAR4 write-combining / uncached reads, the F2 path)
and as 4 KiB bursts (the F1 XDMA path), and prints bytes per cycle, what that is
at the shell's clock, and the longest any request waited.  Cycles are the
testbench's; the PCIe link and the host are not modelled (the shell's 32
outstanding requests per direction are).

    python scripts/bench/aws_pcis.py [--shell f1] [--simulator verilator] [--kib 256]
                                     [--latency 20]
"""

from __future__ import annotations

import argparse

import numpy as np

import vta
from vta.aws.regs import SHELLS


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shell", default="f1", choices=tuple(SHELLS))
    parser.add_argument("--simulator", default="verilator", choices=("verilator", "icarus"))
    parser.add_argument("--config", default="aws")
    parser.add_argument("--kib", type=int, default=256, help="block size")
    parser.add_argument("--latency", type=int, default=20, help="card-memory latency, cycles")
    args = parser.parse_args()
    spec = SHELLS[args.shell]
    with vta.open_device(f"{args.shell}-sim", args.config, simulator=args.simulator,
                         latency=args.latency) as dev:
        sim = dev.driver.transport.platform.sim
        data = np.random.default_rng(0).integers(0, 256, args.kib << 10, dtype=np.uint8).tobytes()
        print(f"{args.shell}-sim ({args.simulator}, {args.config}), {args.kib} KiB, card-memory "
              f"latency {args.latency} cycles, clk_main_a0 {spec.clock_mhz} MHz")
        print("| path | direction | bytes/cycle | GB/s at clk_main_a0 | "
              "longest request so far (cycles) |")
        print("|---|---|---:|---:|---:|")
        for name, beats in (("one-beat requests (BAR4)", 1), ("4 KiB bursts (XDMA)", 64)):
            for direction in ("write", "read"):
                before = sim.info()
                if direction == "write":
                    sim.pcis_write(0x100000, data, 0x20, beats)
                else:
                    assert sim.pcis_read(0x100000, len(data), 0x20, beats) == data
                after = sim.info()
                cycles = after["cycle"] - before["cycle"]
                rate = len(data) / cycles
                print(f"| {name} | {direction} | {rate:.1f} | {rate * spec.clock_mhz / 1e3:.2f} | "
                      f"{after['pc_max_wait']} |")


if __name__ == "__main__":
    main()

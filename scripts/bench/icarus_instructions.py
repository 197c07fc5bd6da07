#!/usr/bin/env python3
"""Icarus's cost of one run in simulator instructions (valgrind callgrind), design against design.

On a shared 2-core machine wall-clock and even CPU-time rates of the same Icarus run vary by
several percent from run to run; the instructions the simulator process executes for it do
not.  Each design -- the current ``hdl/`` and every ``--hdl NAME=DIR`` (for example
``git archive <commit> hdl | tar -x -C DIR`` gives ``DIR/hdl``) -- gets an Icarus device
whose simulator process runs under ``valgrind --tool=callgrind`` with instrumentation off;
counting is switched on (``callgrind_control``) only around one run of the size^3 matmul of
``rtl_sim.py`` (its result checked against NumPy), and the instructions of that run
(callgrind's ``Ir``: the simulator, cocotb and the harness's Python together, the last two
the same for every design) are printed with the ratio to the first design.  The cycles
must be equal, or the designs are not doing the same work.

    python scripts/bench/icarus_instructions.py [--size 64] [--config default]
                                                 [--hdl NAME=DIR ...]

Needs valgrind (Debian: ``apt-get install valgrind``).  Under valgrind the simulator starts
in a minute or two and runs about 50x slower: the 64^3 matmul (3,144 cycles) takes about
5 minutes per design on this machine.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import _blas  # noqa: F401  (first: pins BLAS threads before NumPy loads)
from rtl_sim import design_from, matmul_run  # same folder

import vta
from vta.backends import rtl
from vta.hdltools import build as simbuild


def control(*args: str) -> str:
    return subprocess.run(["callgrind_control", *args], check=True, capture_output=True,
                          text=True).stdout


def measure(cfg: str, size: int, hdl: str | None, out: Path) -> tuple[int, int]:
    """(cycles, instructions) of one size^3 matmul on Icarus with the design in ``hdl``."""
    launch = simbuild.launch_command

    def under_callgrind(*args, **kwargs):
        argv, env = launch(*args, **kwargs)
        return ["valgrind", "--tool=callgrind", "--instr-atstart=no",
                f"--callgrind-out-file={out}/callgrind.%p"] + argv, env

    simbuild.launch_command = under_callgrind
    startup = rtl.STARTUP_TIMEOUT
    rtl.STARTUP_TIMEOUT = 3600.0  # valgrind starts the simulator slowly
    try:
        with design_from(hdl):
            dev = vta.open_device("icarus", cfg, timeout=3600, run_timeout=3600)
    finally:
        simbuild.launch_command = launch
        rtl.STARTUP_TIMEOUT = startup
    try:
        pid = str(dev.driver.transport._proc.pid)
        matmul_run(dev, dev.cfg.BLOCK)  # the harness's first-run work, not counted
        control("-i", "on", pid)
        control("-z", pid)
        run = matmul_run(dev, size)
        for old in out.glob(f"callgrind.{pid}*"):
            old.unlink()
        control("-d", pid)
        control("-i", "off", pid)
        totals = None
        for _ in range(100):  # the dump is written asynchronously
            for path in out.glob(f"callgrind.{pid}*"):
                found = re.search(r"^totals: (\d+)", path.read_text(), flags=re.M)
                if found:
                    totals = int(found.group(1))
            if totals is not None:
                break
            time.sleep(0.5)
        if totals is None:
            raise SystemExit(f"no callgrind dump for pid {pid} in {out}")
        return run["cycles"], totals
    finally:
        dev.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=64, help="matmul size (default 64)")
    parser.add_argument("--config", default="default")
    parser.add_argument("--hdl", action="append", default=[], metavar="NAME=DIR",
                        help="another design to measure: a folder of hdl/*.v (repeatable)")
    args = parser.parse_args()
    for tool in ("valgrind", "callgrind_control"):
        if shutil.which(tool) is None:
            raise SystemExit(f"{tool} is not installed (Debian: apt-get install valgrind)")
    designs = [("this", None)]
    for spec in args.hdl:
        name, sep, path = spec.partition("=")
        if not sep or not name or not path:
            raise SystemExit(f"--hdl must be NAME=DIR, not {spec!r}")
        designs.append((name, path))
    print(f"Icarus, configuration {args.config}, {args.size}^3 matmul; instructions of the "
          "simulator process during the run (valgrind callgrind Ir)\n")
    print("| design | cycles | instructions | per cycle | against the first |")
    print("|---|---:|---:|---:|---:|")
    first = None
    with tempfile.TemporaryDirectory(prefix="vta-callgrind-") as tmp:
        for name, hdl in designs:
            cycles, ir = measure(args.config, args.size, hdl, Path(tmp))
            first = first or (cycles, ir)
            if cycles != first[0]:
                raise SystemExit(f"{name}: {cycles} cycles, {first[0]} for the first design")
            print(f"| {name} | {cycles:,} | {ir:,} | {ir / cycles:,.0f} | {ir / first[1]:.4f} |",
                  flush=True)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Cycles per layer through the AWS custom logic (wrapper + VTA), this design against another.

Runs the 256^3 matmul of ``rtl_sim.py`` and ResNet-18 layers (``conv2d_resnet.py``'s
shapes, ``vta.ops.conv2d``) on the simulated F1 or F2 custom logic (backend ``f1-sim`` /
``f2-sim`` under Verilator: VTA behind the OCL decoder, the upsizer, the crossbar and card
memory with its latency), checks each result against NumPy, and prints the cycles VTA's
counter reports for every design.  ``--baseline-hdl DIR`` also runs the design in DIR (a
folder with the ``*.v`` of ``hdl/`` and ``aws/*.v`` of ``hdl/aws/``, for example
``git archive <commit> hdl | tar -x -C /tmp/x`` gives ``/tmp/x/hdl``).  Cycles are exact:
one run each.

    python scripts/bench/aws_cycles.py [--shell f2] [--configs aws,aws32] [--size 256]
                                       [--layers C4] [--baseline-hdl DIR]
"""

from __future__ import annotations

import argparse
import contextlib
from pathlib import Path

import _blas  # noqa: F401  (first: pins BLAS threads before NumPy loads)
from rtl_sim import matmul_run, resnet  # same folder

import vta
from vta.backends import aws_sim
from vta.hdltools import hdlgen


@contextlib.contextmanager
def design_from(hdl: str | None):
    """Build the simulation from the Verilog in ``hdl`` and ``hdl/aws`` (None: this tree's)."""
    if hdl is None:
        yield
        return
    core, wrapper = sorted(Path(hdl).glob("*.v")), sorted(Path(hdl, "aws").glob("*.v"))
    if not core or not wrapper:
        raise SystemExit(f"--baseline-hdl: no *.v files in {hdl} and {hdl}/aws")
    saved = hdlgen.hdl_sources, aws_sim.aws_sources
    hdlgen.hdl_sources, aws_sim.aws_sources = (lambda: core), (lambda: wrapper)
    try:
        yield
    finally:
        hdlgen.hdl_sources, aws_sim.aws_sources = saved


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shell", default="f2", choices=("f1", "f2"))
    parser.add_argument("--configs", default="aws,aws32")
    parser.add_argument("--size", type=int, default=256)
    parser.add_argument("--layers", default="C4")
    parser.add_argument("--baseline-hdl")
    args = parser.parse_args()
    designs = [("this", None)] + ([("baseline", args.baseline_hdl)] if args.baseline_hdl
                                  else [])
    layers = [] if args.layers == "none" else args.layers.split(",")
    rows = []
    for preset in args.configs.split(","):
        for label, hdl in designs:
            with design_from(hdl), vta.open_device(f"{args.shell}-sim", preset) as dev:
                row = {"config": preset, "design": label,
                       f"matmul {args.size}^3": matmul_run(dev, args.size)["cycles"]}
                for name, cycles, *_ in resnet(dev, layers):
                    row[f"ResNet-18 {name}"] = cycles
            rows.append(row)
            print(row, flush=True)
    cols = [k for k in rows[0] if k not in ("config", "design")]
    print(f"\n| {args.shell}-sim (Verilator) | design | " + " | ".join(cols) + " |")
    print("|---|---|" + "---:|" * len(cols))
    for row in rows:
        print(f"| {row['config']} | {row['design']} | "
              + " | ".join(f"{row[c]:,}" for c in cols) + " |")


if __name__ == "__main__":
    main()

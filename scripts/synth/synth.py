#!/usr/bin/env python3
"""Synthesise vta_top with yosys synth_xilinx (UltraScale+) and print its figures.

LUT / FF / CARRY8 / DSP / BRAM / URAM per top-level instance and per module,
whether every scratchpad became block RAM, block-RAM and DSP outputs that
reach logic before a register, and the deepest register-to-register path in
LUT levels (how it is counted: ``vta/hdltools/synth.py``).  A few CPU minutes per
configuration; needs Debian's yosys (``apt-get install yosys``).

    python scripts/synth/synth.py [--config default,aws] [--uram] [--workdir DIR] [--json FILE]
                                   [--hdl DIR] [--brief]
"""

from __future__ import annotations

import argparse
import dataclasses
import json

from vta.hdltools.synth import format_report, synthesize


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="default,aws",
                        help="comma-separated presets or vta_config.json paths")
    parser.add_argument("--uram", action="store_true", help="allow URAM288 for large memories")
    parser.add_argument("--workdir", help="keep the yosys script, log and netlist here")
    parser.add_argument("--json", help="also write the figures as JSON to this file")
    parser.add_argument("--hdl", help="synthesise the design in this folder instead of hdl/")
    parser.add_argument("--brief", action="store_true", help="leave out the per-module table")
    args = parser.parse_args()
    results = {}
    for name in args.config.split(","):
        work = f"{args.workdir}/{name}" if args.workdir else None
        report = synthesize(name, uram=args.uram, workdir=work, hdl=args.hdl)
        print(format_report(report, detail=not args.brief), flush=True)
        print()
        results[name] = dataclasses.asdict(report)
        results[name]["log"] = str(report.log) if report.log else None
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(results, fh, indent=1)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Resources and logic depth of the AWS custom logic (wrapper + VTA) on each shell.

Synthesises ``vta_aws_f1`` / ``vta_aws_f2`` (hdl/aws, with VTA inside) with yosys
``synth_xilinx -family xcup`` (vta.hdltools.synth) and prints LUT, FF, DSP, BRAM and URAM
against the device's totals less the shell's share, and the deepest
register-to-register paths of the whole custom logic in LUT levels (vta.hdltools.synth's
count): overall and ending in each block of the wrapper (VTA, crossbar, upsizer, ID
queue, OCL decoder, the wrapper's own registers), with the signals they start and
end in.  yosys's mapping is not Vivado's: the figures size the design, they are not
a placement or timing result.  10-30 CPU minutes per configuration; needs Debian's
yosys.

    python scripts/synth/aws_size.py [--build f1:aws,f2:aws,f2:aws32] [--workdir DIR [--reuse]]
                                     [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from vta import Config
from vta.aws.regs import SHELLS
from vta.backends.aws_sim import aws_sources, write_aws_header
from vta.hdltools import hdlgen
from vta.hdltools.synth import analyse, run_yosys

#: Device totals (AMD Virtex UltraScale+ product tables): CLB LUTs, CLB flip-flops,
#: DSP48E2 slices, 36 Kb block RAMs, 288 Kb UltraRAMs.
DEVICES = {
    "VU9P": {"LUT": 1_182_240, "FF": 2_364_480, "DSP": 6_840, "BRAM36": 2_160, "URAM": 960},
    "VU47P": {"LUT": 1_303_680, "FF": 2_607_360, "DSP": 9_024, "BRAM36": 2_016, "URAM": 960},
}
#: The part each shell runs on and the share of it the custom logic may use:
#: the F1 XDMA shell takes about 20% of the VU9P, the F2 Small Shell leaves 88%
#: of the VU47P (aws/aws-fpga documentation; docs/aws.md).
BUDGET = {"f1": ("VU9P", 0.80), "f2": ("VU47P", 0.88)}


def measure(shell: str, preset: str, work: Path, reuse: bool = False) -> dict:
    cfg = Config.load(preset)
    spec = SHELLS[shell]
    start = time.perf_counter()
    saved = work / f"{spec.module}.json"
    if reuse and saved.exists():  # the netlist of an earlier run of this script
        netlist = json.loads(saved.read_text())
    else:
        hdr = work / "include"
        hdlgen.write_headers(cfg, hdr)
        write_aws_header(hdr)
        params = {k: v for k, v in hdlgen.top_parameters(cfg).items()
                  if k not in ("MEM_SIZE", "ADDR_WIDTH", "ID_WIDTH")}
        params["LOG_MEM_BYTES"] = spec.log_mem_bytes
        netlist = run_yosys(spec.module, [*hdlgen.hdl_sources(), *aws_sources()], work,
                            includes=(hdr,), parameters=params)
    report = analyse(netlist, f"{shell}:{preset}", level=2)
    t = report.total
    used = {"LUT": t.get("LUT", 0) + t.get("SRL", 0) + 4 * t.get("LUTRAM", 0),
            "FF": t.get("FF", 0), "DSP": t.get("DSP", 0),
            "BRAM36": t.get("BRAM36", 0) + t.get("BRAM18", 0) / 2, "URAM": t.get("URAM", 0)}
    device, share = BUDGET[shell]
    budget = {k: int(v * share) for k, v in DEVICES[device].items()}
    # the wrapper's own logic: every instance outside VTA (cl.vta.*)
    wrapper: dict[str, int] = {}
    for path, counts in report.modules.items():
        if path != "cl.vta" and not path.startswith("cl.vta."):
            for res, n in counts.items():
                wrapper[res] = wrapper.get(res, 0) + n
    paths = {name: {"levels": p.levels, "start": p.start, "end": p.end, "luts": p.luts,
                    "carry": p.carry}
             for name, p in report.paths_by_instance.items() if p.cells}
    d = report.deepest
    return {"shell": shell, "preset": preset, "device": device, "share": share,
            "used": used, "budget": budget, "macs": cfg.BATCH * cfg.BLOCK_IN * cfg.BLOCK_OUT,
            "instances": report.instances, "wrapper": wrapper,
            "deepest": {"levels": d.levels, "start": d.start, "end": d.end, "luts": d.luts,
                        "carry": d.carry},
            "paths": paths, "seconds": time.perf_counter() - start}


def table(rows: list[dict]) -> str:
    cols = ("LUT", "FF", "DSP", "BRAM36", "URAM")
    out = ["| shell:preset (MACs) | " + " | ".join(cols) + " |", "|---|" + "---:|" * len(cols)]
    for r in rows:
        cells = [f"{r['used'][c]:,.0f} / {r['budget'][c]:,} "
                 f"({100 * r['used'][c] / r['budget'][c]:.1f}%)" for c in cols]
        out.append(f"| {r['shell']}:{r['preset']} ({r['macs']}) on {r['device']} x "
                   f"{r['share']:.0%} | " + " | ".join(cells) + " |")
    out.append("")
    out.append("| shell:preset: the wrapper alone (outside vta_top) | LUT | FF | LUTRAM | DSP | "
               "BRAM36 | BRAM18 |")
    out.append("|---|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        w = r["wrapper"]
        out.append(f"| {r['shell']}:{r['preset']} | " + " | ".join(
            f"{w.get(c, 0):,}" for c in ("LUT", "FF", "LUTRAM", "DSP", "BRAM36", "BRAM18")) + " |")
    out.append("")
    out.append("| shell:preset | deepest path ending in | levels | from -> to |")
    out.append("|---|---|---:|---|")
    for r in rows:
        d = r["deepest"]
        out.append(f"| {r['shell']}:{r['preset']} | **the whole custom logic** | "
                   f"**{d['levels']:.2f}** | {d['start'] or '?'} -> {d['end'] or '?'} |")
        for name, p in sorted(r["paths"].items(), key=lambda kv: -kv[1]["levels"]):
            out.append(f"| | {name} | {p['levels']:.2f} | {p['start'] or '?'} -> "
                       f"{p['end'] or '?'} |")
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default="f1:aws,f2:aws,f2:aws32",
                        help="comma-separated shell:preset pairs")
    parser.add_argument("--workdir", help="keep the yosys scripts, logs and netlists here")
    parser.add_argument("--json", help="also write the figures as JSON to this file")
    parser.add_argument("--reuse", action="store_true",
                        help="measure the netlists an earlier run left in --workdir")
    args = parser.parse_args()
    rows = []
    for item in args.build.split(","):
        shell, preset = item.split(":")
        if args.workdir:
            work = Path(args.workdir) / f"{shell}-{preset}"
            rows.append(measure(shell, preset, work, args.reuse))
        else:
            with tempfile.TemporaryDirectory(prefix="vta-aws-size-") as tmp:
                rows.append(measure(shell, preset, Path(tmp)))
        print(f"{item}: {rows[-1]['seconds']:.0f} s", flush=True)
    print(table(rows))
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()

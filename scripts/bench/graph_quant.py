#!/usr/bin/env python3
"""Real int8 models on VTA (issue 20): onnxruntime-quantized networks, and before / after.

1. **Measured**: models made by onnxruntime's ``quantize_static`` from the
   float digits CNN (``digits_float.onnx``, calibrated on 256 training images,
   judged on the 360 held-out ones) and from the float ResNet-style network
   (``vta.graph.quantize.resnet_float``, 11 convolutions, 4 residual adds,
   random weights, 64 random inputs), in QDQ and QOperator form, per tensor
   and per channel, uint8 and int8 activations, on golden: share of MACs on
   VTA, nodes on VTA, top-1 agreement with onnxruntime and the largest
   difference in output LSBs, accuracy (digits) of float / onnxruntime int8 /
   VTA, the largest fixed-point error bound E of the model, bit-exactness.
2. **Before / after**: the shipped digits network (power-of-two scales, 360
   images in one batch) and the generated ResNet-18 on golden and Verilator,
   with the code of another revision (``--before``, default ``main``; a
   temporary git worktree run in a child process) and this tree, alternately:
   wall time, cycles, GEMM utilisation, ALU micro-ops, MAC share on VTA.
3. **Fixed-point requantization cost**: the same onnxruntime-quantized
   network with its calibrated scales (``--scheme fixed``) and with scales
   rounded to powers of two (``pow2``) on Verilator: cycles, ALU micro-ops,
   and the difference per output element of the convolutions and dense
   layers.

    python scripts/bench/graph_quant.py [--before main] [--no-rtl] [--skip measured,ab,cost]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import _blas  # noqa: F401  (first: pins BLAS threads before NumPy loads)
import numpy as np
from conv2d_resnet import _cpu_name as cpu_name

ROOT = Path(__file__).resolve().parents[2]

# Runs under either revision's code (the API both have): prints one JSON line.
_CHILD = r"""
import json, sys, time
import numpy as np
import vta
from vta import graph
from vta.graph.executor import Executor
from vta.graph.models import digits_model, digits_test_set, resnet18
which, backend = sys.argv[1], sys.argv[2]
if which == "digits":
    g = graph.load_onnx(digits_model())
    x = digits_test_set()[0]
else:
    g = graph.load_onnx(resnet18())
    x = np.random.default_rng(1).normal(size=(1, 3, 224, 224)).astype(np.float32)
ref = graph.run_reference(g, {"input": x})
with vta.open_device(backend, "default") as dev, Executor(g, dev) as ex:
    ex.run({"input": x})
    t0 = time.perf_counter()
    out = ex.run({"input": x})
    wall = time.perf_counter() - t0
    rep = ex.report()
shapes = ex.shapes
total = 0
for n in g.nodes:
    if n.op in ("conv", "dense"):
        w = n.attrs["weight"]
        y = shapes[n.output]
        total += int(np.prod(w.shape)) * int(np.prod(y)) // y[1]
s = rep.stats
print(json.dumps({"wall": wall, "cycles": rep.cycles, "util": rep.gemm_utilisation(),
                  "alu_uops": s.alu_uops, "gemm_uops": s.gemm_uops,
                  "vta_nodes": len(rep.vta_nodes), "nodes": len(rep.nodes),
                  "mac_share": sum(n.macs for n in rep.vta_nodes) / total,
                  "exact": bool(np.array_equal(out["logits"], ref["logits"]))}))
"""


def child(tree: Path, which: str, backend: str) -> dict:
    env = dict(os.environ, PYTHONPATH=str(tree))
    out = subprocess.run([sys.executable, "-c", _CHILD, which, backend], env=env, check=True,
                         capture_output=True, text=True, cwd=tree)
    return json.loads(out.stdout.strip().splitlines()[-1])


def before_after(rev: str, backends: list[str]) -> None:
    print(f"\n## Before ({rev}) and after (this tree), alternately in one run\n")
    with tempfile.TemporaryDirectory() as tmp:
        old = Path(tmp) / "before"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(old), rev],
                       check=True, capture_output=True)
        try:
            print("| network | backend | code | wall s | cycles | GEMM util | ALU micro-ops | "
                  "nodes on VTA | MACs on VTA | bit-exact |")
            print("|---|---|---|---:|---:|---:|---:|---:|---:|---|")
            for which in ("digits", "resnet18"):
                for backend in backends:
                    for label, tree in ((rev, old), ("this tree", ROOT)):
                        r = child(tree, which, backend)
                        cyc = "" if r["cycles"] is None else f"{r['cycles']:,}"
                        util = "" if r["util"] is None else f"{r['util']:.1%}"
                        print(f"| {which} | {backend} | {label} | {r['wall']:.3f} | {cyc} | "
                              f"{util} | "
                              f"{r['alu_uops']:,} | {r['vta_nodes']} of {r['nodes']} | "
                              f"{r['mac_share']:.2%} | {'yes' if r['exact'] else 'NO'} |",
                              flush=True)
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(old)],
                           check=False, capture_output=True)


def _variants():
    return [dict(form=f, per_channel=pc, activations=act)
            for f in ("qdq", "qoperator") for pc in (False, True) for act in ("uint8", "int8")]


def measured() -> None:
    import vta
    from vta import graph
    from vta.graph import judge
    from vta.graph.executor import Executor
    from vta.graph.models import digits_calibration, digits_float_model, digits_test_set
    from vta.graph.quantize import quantize, resnet_float

    print("\n## onnxruntime-quantized models on VTA (golden)\n")
    print("| network | form | weights | activations | MACs on VTA | nodes on VTA | "
          "top-1 = onnxruntime | max LSB | accuracy float / ORT int8 / VTA | E max | "
          "bit-exact |")
    print("|---|---|---|---|---:|---:|---:|---:|---|---:|---|")
    x_d, labels = digits_test_set()
    rng = np.random.default_rng(0)
    cases = [("digits", digits_float_model(), digits_calibration(), x_d, labels),
             ("ResNet-style", resnet_float(),
              rng.normal(size=(64, 3, 32, 32)).astype(np.float32),
              rng.normal(size=(64, 3, 32, 32)).astype(np.float32), None)]
    for name, float_model, calib, x, y in cases:
        fl = judge.run_onnxruntime(float_model, {"input": x})["logits"]
        for kw in _variants():
            model = quantize(float_model, calib, **kw)
            g = graph.load_onnx(model)
            ref = graph.run_reference(g, {"input": x})["logits"]
            ort = judge.run_onnxruntime(model, {"input": x})["logits"]
            with vta.open_device("golden") as dev, Executor(g, dev) as ex:
                out = ex.run({"input": x})["logits"]
                rep = ex.report()
            (agr,) = judge.compare(g, {"logits": ref}, {"logits": ort})
            errs = [n.attrs["fixed"].error for n in g.nodes
                    if n.attrs.get("fixed") is not None]
            if y is not None:
                acc = " / ".join(f"{(v.argmax(1) == y).mean():.2%}" for v in (fl, ort, out))
            else:
                acc = "top-1 = float: " + " / ".join(
                    f"{(v.argmax(1) == fl.argmax(1)).mean():.0%}" for v in (ort, out))
            print(f"| {name} | {kw['form']} | "
                  f"{'per channel' if kw['per_channel'] else 'per tensor'} | "
                  f"{kw['activations']} | {rep.mac_share():.2%} | "
                  f"{len(rep.vta_nodes)} of {len(rep.nodes)} | "
                  f"{agr.top1_equal}/{agr.count} | {agr.max_lsb:.0f} | {acc} | "
                  f"{max(errs):.3f} | {'yes' if np.array_equal(out, ref) else 'NO'} |",
                  flush=True)


def cost(backends: list[str]) -> None:
    import vta
    from vta import graph
    from vta.graph.executor import Executor
    from vta.graph.models import digits_calibration, digits_float_model, digits_test_set
    from vta.graph.quantize import quantize, resnet_float

    print("\n## Fixed-point requantization against power-of-two scales (same network)\n")
    print("| network | backend | scheme | wall s | cycles | ALU micro-ops | GEMM util | "
          "outputs (conv, dense) | extra cycles / output | bit-exact |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---|")
    rng = np.random.default_rng(0)
    cases = [("digits (360 images)", digits_float_model(), digits_calibration(),
              digits_test_set()[0]),
             ("ResNet-style (8 images)", resnet_float(),
              rng.normal(size=(64, 3, 32, 32)).astype(np.float32),
              rng.normal(size=(8, 3, 32, 32)).astype(np.float32))]
    for name, float_model, calib, x in cases:
        for backend in backends:
            base = None
            for scheme in ("pow2", "fixed"):
                g = graph.load_onnx(quantize(float_model, calib, per_channel=True,
                                             scheme=scheme, form="qdq"))
                ref = graph.run_reference(g, {"input": x})["logits"]
                with vta.open_device(backend, "default") as dev, Executor(g, dev) as ex:
                    ex.run({"input": x})
                    t0 = time.perf_counter()
                    out = ex.run({"input": x})["logits"]
                    wall = time.perf_counter() - t0
                    rep = ex.report()
                    outputs = sum(int(np.prod(ex.shapes[n.output])) for n in g.nodes
                                  if n.op in ("conv", "dense"))
                cyc, alu = rep.cycles, rep.stats.alu_uops
                extra = ""
                if base is None:
                    base = (cyc, alu)
                elif cyc is not None:
                    extra = f"{(cyc - base[0]) / outputs:.3f}"
                util = rep.gemm_utilisation()
                print(f"| {name} | {backend} | {scheme} | {wall:.3f} | "
                      f"{'' if cyc is None else f'{cyc:,}'} | {alu:,} | "
                      f"{'' if util is None else f'{util:.1%}'} | {outputs:,} | {extra} | "
                      f"{'yes' if np.array_equal(out, ref) else 'NO'} |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", default="main", help="revision to compare with")
    parser.add_argument("--no-rtl", action="store_true", help="golden only")
    parser.add_argument("--skip", default="", help="comma list: measured, ab, cost")
    args = parser.parse_args()
    import onnxruntime

    print(f"Machine: {platform.machine()}, {cpu_name()}, {os.cpu_count()} cores, Python "
          f"{platform.python_version()}, NumPy {np.__version__}, onnxruntime "
          f"{onnxruntime.__version__}")
    backends = ["golden"] + ([] if args.no_rtl else ["verilator"])
    skip = args.skip.split(",")
    if "measured" not in skip:
        measured()
    if "cost" not in skip:
        cost(backends)
    if "ab" not in skip:
        before_after(args.before, backends)


if __name__ == "__main__":
    main()

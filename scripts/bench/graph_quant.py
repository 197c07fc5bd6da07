#!/usr/bin/env python3
"""Real int8 models on VTA (issue 20): onnxruntime-quantized networks, and before / after.

1. **Measured**: models made by onnxruntime's ``quantize_static`` from the
   float digits CNN (``digits_float.onnx``) and the trained float ResNet-style
   digits network (``digits_resnet_float.onnx``, 8 convolutions, 3 residual
   adds), both calibrated on 256 training images and judged on the 360
   held-out ones, and from the random-weight ResNet-style network
   (``vta.graph.quantize.resnet_float``, 11 convolutions, 4 residual adds, 64
   random inputs), in QDQ and QOperator form, per tensor and per channel,
   uint8 and int8 activations, on golden: share of MACs on VTA, nodes on VTA,
   top-1 agreement with onnxruntime and the largest difference in output
   LSBs, the proven bounds beside them (``vta.graph.judge.certify`` for these
   inputs with the inputs whose top-1 is certain, ``network_bound`` for any
   input) and how many values of either run lie outside the proven
   intervals (``judge.assess``; 0 unless something is wrong), accuracy
   (digits) of float / onnxruntime int8 / VTA, the largest fixed-point error
   bound E of the model, bit-exactness.  Then, for every
   input whose top-1 differs from onnxruntime's, the logits' margin and the
   layers where the two runs part (``trace``).
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

    python scripts/bench/graph_quant.py [--before main] [--no-rtl] [--skip measured,trace,ab,cost]
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


def _networks():
    """(name, float model, calibration inputs, evaluation inputs, labels or None)."""
    from vta.graph.models import (
        digits_calibration,
        digits_float_model,
        digits_resnet_float_model,
        digits_test_set,
    )
    from vta.graph.quantize import resnet_float

    x_d, labels = digits_test_set()
    rng = np.random.default_rng(0)
    return [("digits", digits_float_model(), digits_calibration(), x_d, labels),
            ("digits ResNet", digits_resnet_float_model(), digits_calibration(), x_d, labels),
            ("random ResNet", resnet_float(), rng.normal(size=(64, 3, 32, 32)).astype(np.float32),
             rng.normal(size=(64, 3, 32, 32)).astype(np.float32), None)]


def measured() -> list[tuple]:
    """The measured table; returns the (network, variant, model, inputs) that disagree on top-1."""
    import vta
    from vta import graph
    from vta.graph import judge
    from vta.graph.executor import Executor
    from vta.graph.quantize import quantize

    print("\n## onnxruntime-quantized models on VTA (golden)\n")
    print("| network | form | weights | activations | MACs on VTA | nodes on VTA | "
          "top-1 = onnxruntime | max LSB | proven LSB, these inputs | top-1 certain | "
          "proven LSB, any input | outside proven | accuracy float / ORT int8 / VTA | E max | "
          "bit-exact |")
    print("|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---|")
    disagree = []
    for name, float_model, calib, x, y in _networks():
        fl = judge.run_onnxruntime(float_model, {"input": x})["logits"]
        for kw in _variants():
            model = quantize(float_model, calib, **kw)
            g = graph.load_onnx(model)
            feeds = {"input": x}
            ref = graph.run_reference(g, feeds)
            ort = judge.run_onnxruntime(model, feeds)
            with vta.open_device("golden") as dev, Executor(g, dev) as ex:
                out = ex.run(feeds)["logits"]
                rep = ex.report()
            (a,) = judge.assess(g, feeds, ref, ort, model)
            agr = a.agreement
            if agr.top1_equal < agr.count:
                disagree.append((name, kw, model, x))
            errs = [n.attrs["fixed"].error for n in g.nodes
                    if n.attrs.get("fixed") is not None]
            outs = (fl, ort["logits"], out)
            if y is not None:
                acc = " / ".join(f"{(v.argmax(1) == y).mean():.2%}" for v in outs)
            else:
                acc = "top-1 = float: " + " / ".join(
                    f"{(v.argmax(1) == fl.argmax(1)).mean():.0%}" for v in outs[1:])
            print(f"| {name} | {kw['form']} | "
                  f"{'per channel' if kw['per_channel'] else 'per tensor'} | "
                  f"{kw['activations']} | {rep.mac_share():.2%} | "
                  f"{len(rep.vta_nodes)} of {len(rep.nodes)} | "
                  f"{agr.top1_equal}/{agr.count} | {agr.max_lsb:.0f} | {a.certified:.0f} | "
                  f"{a.top1_certain}/{agr.count} | {a.bound:.0f} | {a.outside} | {acc} | "
                  f"{max(errs):.3f} | {'yes' if np.array_equal(out, ref['logits']) else 'NO'} |",
                  flush=True)
    return disagree


def trace(disagree: list[tuple]) -> None:
    """For every input on which a network's top-1 differs from onnxruntime's: the logits'
    margin, and layer by layer how many values differ (not for a QDQ model that
    onnxruntime would fuse otherwise with its intermediate tensors as outputs)."""
    from vta import graph
    from vta.graph import judge

    if not disagree:
        print("\nNo network disagrees with onnxruntime on top-1.")
        return
    print("\n## Where the top-1 disagreements come from\n")
    for name, kw, model, x in disagree:
        g = graph.load_onnx(model)
        feeds = {"input": x}
        ref = graph.run_reference(g, feeds)["logits"]
        ort = judge.run_onnxruntime(model, feeds)["logits"]
        lsb = judge.output_lsb(g, "logits")
        cert = judge.certify(g, feeds, model)
        try:
            layers = judge.layer_differences(g, model, feeds)
        except graph.GraphError as exc:
            layers = []
            print(f"  (no values per layer: {exc})")
        rows = np.flatnonzero(ref.argmax(1) != ort.argmax(1))
        print(f"{name}, {kw['form']}, {'per channel' if kw['per_channel'] else 'per tensor'}, "
              f"{kw['activations']}: {len(rows)} of {len(x)} inputs")
        for row in rows:
            ours = np.round(ref[row] / lsb).astype(int)
            theirs = np.round(ort[row] / lsb).astype(int)
            top = np.argsort(-ours, kind="stable")[:2]
            first = next((n for n, count, _ in layers if count[row]), "unknown")
            path = ", ".join(f"{n} {int(c[row])} (max {int(m[row])})" for n, c, m in layers
                             if c[row])
            print(f"  input {row}: ours class {top[0]} by {ours[top[0]] - ours[top[1]]} LSB "
                  f"over class {top[1]} (logits {ours[top[0]]}, {ours[top[1]]}); onnxruntime "
                  f"{theirs[top[0]]}, {theirs[top[1]]} -> class {int(ort[row].argmax())}; "
                  f"largest logit difference {int(np.abs(ours - theirs).max())} LSB, proven "
                  f"at most {cert.row_steps('logits')[row]:.0f}; first differing layer {first}")
            if layers:
                print(f"    values that differ, per layer: {path}")


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
    parser.add_argument("--skip", default="", help="comma list: measured, trace, ab, cost")
    args = parser.parse_args()
    import onnxruntime

    print(f"Machine: {platform.machine()}, {cpu_name()}, {os.cpu_count()} cores, Python "
          f"{platform.python_version()}, NumPy {np.__version__}, onnxruntime "
          f"{onnxruntime.__version__}")
    backends = ["golden"] + ([] if args.no_rtl else ["verilator"])
    skip = args.skip.split(",")
    if "measured" not in skip:
        disagree = measured()
        if "trace" not in skip:
            trace(disagree)
    if "cost" not in skip:
        cost(backends)
    if "ab" not in skip:
        before_after(args.before, backends)


if __name__ == "__main__":
    main()

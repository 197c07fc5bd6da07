#!/usr/bin/env python3
"""Whole networks through the graph runtime: digits and ResNet-18, side by side in one run.

* Digits (the bundled CNN): images/s for a batch of ``--images`` held-out
  images (one inference of the batch) and for single images, on golden and
  Verilator; accuracy on the batch.
* ResNet-18 (batch 1, 224x224, generated, QDQ): wall time per inference on
  golden (best of ``--repeat``, after one warm-up that also builds the plan)
  and on Verilator per preset (``--presets default,aws``: one inference after
  the warm-up), total cycles, GEMM utilisation per VTA layer and overall; and
  onnxruntime's CPU int8 time for the same ONNX file (best of ``--repeat``,
  1 thread, and all threads).
  Every run is checked bit for bit against the int8 reference.  CPU s is this
  process's CPU time (the simulator of an RTL backend runs in another process),
  a steadier figure than wall time on a shared machine.

    python scripts/bench/graph_networks.py [--images 360] [--repeat 3]
        [--presets default,aws] [--no-rtl] [--blas-threads 1]
"""

from __future__ import annotations

import argparse
import platform
import time

import _blas  # noqa: F401  (first: pins BLAS threads before NumPy loads)
import numpy as np
from conv2d_resnet import _cpu_name as cpu_name

import vta
from vta import graph
from vta.graph import judge
from vta.graph.executor import Executor
from vta.graph.models import digits_model, digits_test_set, resnet18


def timed(fn, repeat: int) -> tuple[float, object]:
    """Best wall time of ``repeat`` calls (and the last result); CPU time in ``timed.cpu``."""
    best, result = float("inf"), None
    timed.cpu = float("inf")
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        result = fn()
        best = min(best, time.perf_counter() - t0)
        timed.cpu = min(timed.cpu, time.process_time() - c0)
    return best, result


def digits(backends: list[str], images: int, repeat: int) -> None:
    g = graph.load_onnx(digits_model())
    x, labels = digits_test_set()
    x, labels = x[:images], labels[:images]
    ref = graph.run_reference(g, {"input": x})["logits"]
    print(f"\n## digits CNN ({images} held-out images)\n")
    print("| backend | batch | wall s | images/s | cycles | cycles/image | GEMM util | "
          "accuracy | bit-exact |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---|")
    for backend in backends:
        with vta.open_device(backend, "default") as dev, Executor(g, dev) as ex:
            ex.run({"input": x})  # plan, weights, simulator warm-up
            wall, out = timed(lambda ex=ex: ex.run({"input": x}), repeat)
            rep = ex.report()
            exact = np.array_equal(out["logits"], ref)
            acc = (out["logits"].argmax(1) == labels).mean()
            _row(backend, images, wall, rep, images, f"{acc:.2%}", exact)
            ex.run({"input": x[:1]})
            wall1, out1 = timed(lambda ex=ex: ex.run({"input": x[:1]}), repeat)
            exact1 = np.array_equal(out1["logits"], ref[:1])
            _row(backend, 1, wall1, ex.report(), 1, "", exact1)


def _row(backend, batch, wall, rep, n, acc, exact) -> None:
    cyc = rep.cycles
    util = rep.gemm_utilisation()
    print(f"| {backend} | {batch} | {wall:.3f} | {n / wall:,.1f} | "
          f"{'' if cyc is None else f'{cyc:,}'} | {'' if cyc is None else f'{cyc / n:,.0f}'} | "
          f"{'' if util is None else f'{util:.1%}'} | {acc} | {'yes' if exact else 'NO'} |")


def resnet(presets: list[str], repeat: int, rtl: bool) -> None:
    model = resnet18()
    g = graph.load_onnx(model)
    x = np.random.default_rng(1).normal(size=(1, 3, 224, 224)).astype(np.float32)
    t_ref, ref = timed(lambda: graph.run_reference(g, {"input": x}), 1)
    print("\n## ResNet-18 (batch 1, 224x224, QDQ, generated weights)\n")
    print("| run | wall s / inference | CPU s (this process) | cycles | GEMM util | bit-exact |")
    print("|---|---:|---:|---:|---:|---|")
    print(f"| int8 reference (NumPy) | {t_ref:.3f} | {timed.cpu:.3f} | | | (defines) |")
    layers = {}
    runs = [("golden", "default")] + ([("verilator", p) for p in presets] if rtl else [])
    for backend, preset in runs:
        with vta.open_device(backend, preset) as dev, Executor(g, dev) as ex:
            ex.run({"input": x})
            n = repeat if backend == "golden" else 1
            wall, out = timed(lambda ex=ex: ex.run({"input": x}), n)
            rep = ex.report()
            exact = np.array_equal(out["logits"], ref["logits"])
            util = rep.gemm_utilisation()
            print(f"| {backend} ({preset}) | {wall:.3f} | {timed.cpu:.3f} | "
                  f"{'' if rep.cycles is None else f'{rep.cycles:,}'} | "
                  f"{'' if util is None else f'{util:.1%}'} | {'yes' if exact else 'NO'} |")
            if rep.cycles is not None:
                layers[preset] = rep
    if judge.onnxruntime_available():
        import onnxruntime as ort

        for threads in (1, 0):
            opts = ort.SessionOptions()
            opts.intra_op_num_threads = threads
            sess = ort.InferenceSession(model.SerializeToString(), opts,
                                        providers=["CPUExecutionProvider"])
            sess.run(None, {"input": x})
            wall, out = timed(lambda sess=sess: sess.run(None, {"input": x}), repeat)
            (agr,) = judge.compare(g, ref, {"logits": out[0]})
            print(f"| onnxruntime {ort.__version__} CPU, "
                  f"{'1 thread' if threads == 1 else 'all threads'} | {wall:.3f} | "
                  f"{timed.cpu:.3f} | | | "
                  f"top-1 {'equal' if agr.top1_equal else 'DIFFERS'}, max {agr.max_lsb:g} LSB |")
    if layers:
        presets_run = list(layers)
        print("\n| layer | MMACs | " + " | ".join(f"cycles ({p}) | GEMM util ({p})"
                                               for p in presets_run) + " |")
        print("|---|---:|" + "---:|---:|" * len(presets_run))
        first = layers[presets_run[0]]
        for i, node in enumerate(first.nodes):
            if node.placement != "vta":
                continue
            cells = []
            for p in presets_run:
                nd = layers[p].nodes[i]
                util = nd.gemm_utilisation(layers[p].cfg)
                cells += [f"{nd.cycles:,}", "ALU" if util is None else f"{util:.1%}"]
            print(f"| {node.name} | {node.macs / 1e6:.1f} | " + " | ".join(cells) + " |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--images", type=int, default=360)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--presets", default="default,aws")
    parser.add_argument("--no-rtl", action="store_true", help="golden only")
    parser.add_argument("--blas-threads", default="1")
    parser.add_argument("--skip", default="", help="comma list: digits, resnet")
    args = parser.parse_args()
    print(f"Machine: {platform.machine()}, {cpu_name()}, Python {platform.python_version()}, "
          f"NumPy {np.__version__}, BLAS threads {args.blas_threads}")
    backends = ["golden"] + ([] if args.no_rtl else ["verilator"])
    if "digits" not in args.skip:
        digits(backends, args.images, args.repeat)
    if "resnet" not in args.skip:
        resnet([p for p in args.presets.split(",") if p], args.repeat, not args.no_rtl)


if __name__ == "__main__":
    main()

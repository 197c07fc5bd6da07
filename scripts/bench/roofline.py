#!/usr/bin/env python3
"""ResNet-18 (or the digits CNN) at the roofline: cycles against every layer's bound, A/B.

Runs the network through the graph runtime on an RTL backend and prints, per
VTA node, its cycles, its roofline (:mod:`vta.roofline`: the lower bound from
the configuration alone, and the resource that binds), the share of the
roofline reached and the GEMM utilisation; then the totals (cycles against
the sum of the bounds), and the host's cost per node (a node's wall time
less its device runs': the staging writes, the counter reads, transfers).

With ``--baseline DIR`` (a checkout of another revision, e.g. ``git archive
main | tar -x -C DIR``) the same network runs on that revision's ``vta`` in
a child process and on this tree's, alternately (``--repeat`` pairs), so the
wall times are compared within one run on a shared machine; cycles are
exact and need one run.  ``--tuning-log`` plans this tree's layers from a
``vta tune`` log (the baseline's planner has none).

    python scripts/bench/roofline.py [--network resnet18|digits] [--preset default]
        [--backend verilator] [--repeat 3] [--baseline DIR] [--tuning-log FILE]
        [--batch N] [--cpu NODE,...]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def child(network: str, preset: str, backend: str, repeat: int, tuning_log: str, batch: int,
          cpu: str) -> None:
    """Measure in this process (whatever ``vta`` is importable) and print one JSON line."""
    import _blas  # noqa: F401  (pins BLAS threads before NumPy loads)
    import numpy as np

    import vta
    from vta import graph
    from vta.graph.executor import Executor
    from vta.graph.models import digits_model, digits_test_set, resnet18

    if tuning_log:
        from vta.tune import log

        log.use(tuning_log).__enter__()
    if network == "resnet18":
        g = graph.load_onnx(resnet18())
        feeds = {"input": np.random.default_rng(1).normal(size=(1, 3, 224, 224)).astype(
            np.float32)}
    else:
        g = graph.load_onnx(digits_model())
        feeds = {"input": digits_test_set()[0][:batch]}
    ref = graph.run_reference(g, feeds)
    runs = []
    cpu_nodes = [c for c in cpu.split(",") if c]
    with vta.open_device(backend, preset) as dev, Executor(g, dev, cpu_nodes=cpu_nodes) as ex:
        t0 = time.perf_counter()
        ex.run(feeds)  # plan, weights, streams built
        first = time.perf_counter() - t0
        for _ in range(repeat):
            t0 = time.perf_counter()
            out = ex.run(feeds)
            runs.append(time.perf_counter() - t0)
            assert all(np.array_equal(out[k], ref[k]) for k in g.outputs), "NOT bit-exact"
        rep = ex.report()
    nodes = []
    for n in rep.nodes:
        info = {"name": n.name, "op": n.op, "on": n.placement, "seconds": n.seconds,
                "epilogue": n.epilogue}
        if n.stats is not None:
            info.update(cycles=n.stats.cycles or 0, gemm_uops=n.stats.gemm_uops,
                        device_seconds=n.stats.wall_time, runs=n.stats.runs,
                        insns=n.stats.insn_count)
        bound = getattr(n, "bound", None)
        if bound is not None:
            info["bound"] = bound.as_dict()
        nodes.append(info)
    print(json.dumps({"vta": vta.__file__, "first": first, "runs": runs, "nodes": nodes,
                      "cycles": rep.cycles or 0, "gemm_uops": rep.stats.gemm_uops}))


def run_child(path: str, args, tuning_log: str) -> dict:
    """One inference after a warm-up, in a child process importing ``vta`` from ``path``."""
    env = dict(os.environ, PYTHONPATH=str(Path(path).resolve()),
               VTA_TUNING_LOG=tuning_log)  # no log: the analytic plans
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", "--network", args.network,
           "--preset", args.preset, "--backend", args.backend, "--repeat", "1",
           "--tuning-log", tuning_log, "--batch", str(args.batch), "--cpu", args.cpu]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if done.returncode:
        sys.exit(f"child ({path or 'this tree'}) failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--network", choices=["resnet18", "digits"], default="resnet18")
    parser.add_argument("--preset", default="default")
    parser.add_argument("--backend", default="verilator")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--baseline", default=None, metavar="DIR")
    parser.add_argument("--tuning-log", default=None)
    parser.add_argument("--batch", type=int, default=1, help="digits: images in the batch")
    parser.add_argument("--cpu", default="", metavar="NODES",
                        help="comma-separated nodes kept on the CPU (e.g. conv1: as upstream)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.network, args.preset, args.backend, args.repeat, args.tuning_log,
              args.batch, args.cpu)
        return
    ours_path = str(HERE.parents[1])
    mine, base = [], []
    for _ in range(args.repeat):  # alternate: the machine's load hits both alike
        if args.baseline:
            base.append(run_child(args.baseline, args, ""))
        mine.append(run_child(ours_path, args, args.tuning_log or ""))
    print(f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python "
          f"{platform.python_version()}, load average {os.getloadavg()[0]:.1f} at the end")
    print(f"{args.network} (batch {args.batch}) on {args.backend} ({args.preset})"
          + (f", on the CPU: {args.cpu}" if args.cpu else "") + f"; this tree: {mine[0]['vta']}"
          + (f"; baseline: {base[0]['vta']}" if base else ""))
    new = mine[0]
    old = {n["name"]: n for n in base[0]["nodes"]} if base else {}
    if new["cycles"]:
        table(new, old, base, args)
    summary(mine, base, args)


def table(new: dict, old: dict, base: list, args) -> None:
    """The per-node table and the totals (cycles against the bounds)."""
    print("\n| node | op | " + ("cycles before | " if base else "") + "cycles | bound | "
          "of bound | binds | GEMM util | host ms |")
    print("|---|---|" + ("---:|" if base else "") + "---:|---:|---:|---|---:|---:|")
    for n in new["nodes"]:
        if n["on"] != "vta":
            continue
        before = old.get(n["name"], {}).get("cycles")
        if "cycles" not in n:  # folded into another node
            cells = [n["name"], n["op"]] + ([f"{before:,}" if before else ""] if base else []) \
                + [n["epilogue"], "", "", "", "", ""]
            print("| " + " | ".join(cells) + " |")
            continue
        b = n.get("bound")
        host = (n["seconds"] - n["device_seconds"]) * 1e3
        util = n["gemm_uops"] / n["cycles"] if n["op"] != "add" else None
        cells = [n["name"], n["op"]] + ([f"{before:,}" if before else ""] if base else []) + [
            f"{n['cycles']:,}", f"{b['cycles']:,}" if b else "",
            f"{b['cycles'] / n['cycles']:.1%}" if b else "", b["binding"] if b else "",
            "ALU" if util is None else f"{util:.1%}", f"{host:.1f}"]
        print("| " + " | ".join(cells) + " |")
    bound = sum(n["bound"]["cycles"] for n in new["nodes"] if "bound" in n and "cycles" in n)
    print(f"\ncycles {new['cycles']:,}"
          + (f" (before {base[0]['cycles']:,}, {1 - new['cycles'] / base[0]['cycles']:.1%} "
             "fewer)" if base else "")
          + f"; sum of the bounds {bound:,}; cycles / bound {new['cycles'] / bound:.3f}; "
          f"GEMM utilisation {new['gemm_uops'] / new['cycles']:.1%}"
          + (f" (before {base[0]['gemm_uops'] / base[0]['cycles']:.1%})" if base else ""))


def summary(mine: list, base: list, args) -> None:
    """Wall time per inference, device runs and the host's share, for both revisions."""
    for name, results in (("this tree", mine), ("baseline", base)):
        if not results:
            continue
        walls = sorted(r["runs"][0] for r in results)
        nodes = [n for r in results for n in r["nodes"] if "cycles" in n]
        device = [sum(n["device_seconds"] for n in r["nodes"] if "cycles" in n) for r in results]
        host = [r["runs"][0] - d for r, d in zip(results, device, strict=True)]
        runs = sum(n["runs"] for n in results[0]["nodes"] if "cycles" in n)
        per_image = (f" ({args.batch / walls[0]:,.1f} images/s"
                     + (f", {results[0]['cycles'] / args.batch:,.0f} cycles/image"
                        if results[0]["cycles"] else "") + ")"
                     if args.network == "digits" else "")
        print(f"{name}: inference wall s {walls[0]:.3f} best{per_image}, "
              f"{walls[len(walls) // 2]:.3f} median of {len(walls)}; device runs (START to "
              "counters read) "
              f"{min(device):.3f} s for {runs} runs; the rest of the host "
              f"{min(host):.3f} s ({min(host) / max(1, len(nodes) // len(results)) * 1e3:.1f} "
              f"ms per VTA node); first inference (plan, weights, streams) "
              f"{min(r['first'] for r in results):.3f} s")


if __name__ == "__main__":
    main()

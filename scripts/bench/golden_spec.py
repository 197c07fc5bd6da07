#!/usr/bin/env python3
"""What the specification model costs: ``SpecModel`` against the fast ``GoldenModel``.

Runs the same captured programs on both models, fresh models each time (cold plans),
alternating, and checks that both leave the same device memory: the chunked 256^3
matmul stream of ``rtl_sim.py``, ``vta.ops.conv2d`` on the given ResNet-18 layers
(captured as ``golden_fsim.py`` captures them), and the programs of ``vta regress``'s
generator for seeds ``0 .. --programs - 1`` (every kind).  Reports the best time of
each, the ratio, and the specification's time per GEMM/ALU micro-op.

    python scripts/bench/golden_spec.py [--layers C4,C7] [--programs 82] [--repeat 3]
"""

from __future__ import annotations

import argparse
import time

import _blas  # noqa: F401  (first: pins BLAS threads before NumPy loads)
import numpy as np
from golden_fsim import Capture, _mem_size, conv_workload, matmul_workload  # same folder

import vta
from vta import ops
from vta.golden import GoldenModel, SpecModel
from vta.regress.generator import ARENA_BYTES, generate


def timed(model_class, cfg, caps: list[Capture]) -> tuple[float, list[np.ndarray], int]:
    """Seconds to run ``caps`` one after the other on one fresh model, the memories after
    each, and the micro-ops run."""
    size = max(_mem_size(cap.image.size) for cap in caps)
    model = model_class(cfg, size)
    seconds, mems, uops = 0.0, [], 0
    for cap in caps:
        model.mem[:] = 0
        model.mem[:cap.image.size] = cap.image
        start = time.perf_counter()
        try:
            counters = model.run(cap.insn_addr, cap.insn_count)
        except (vta.ExecutionError, vta.DeadlockError):
            counters = model.counters  # the fault programs of the generator
        seconds += time.perf_counter() - start
        uops += counters.gemm_uops + counters.alu_uops
        mems.append(model.mem.copy())
    return seconds, mems, uops


def generated(cfg, programs: int) -> list[Capture]:
    base, caps = 0x10000, []
    for seed in range(programs):
        case = generate(cfg, seed, base)
        image = np.zeros(base + ARENA_BYTES, dtype=np.uint8)
        data = np.frombuffer(bytes(case.image()), dtype=np.uint8)
        image[base:base + data.size] = data
        caps.append(Capture(image, case.insn_addr, case.insn_count))
    return caps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", default="C4,C7", help="ResNet-18 layers (or none)")
    parser.add_argument("--programs", type=int, default=82,
                        help="generator programs on tiny and default (default 82: two "
                        "periods of the kinds' schedule)")
    parser.add_argument("--repeat", type=int, default=3, help="best of (default 3)")
    parser.add_argument("--blas-threads", default="1", help="BLAS threads (default 1)")
    args = parser.parse_args()

    default, tiny = vta.Config.load("default"), vta.Config.load("tiny")
    rng = np.random.default_rng(0)
    layers = [] if args.layers == "none" else args.layers.split(",")
    workloads = [("matmul 256^3, chunked", default, matmul_workload(default, 256).runs)]
    unknown = set(layers) - set(ops.RESNET18_LAYERS)
    if unknown:
        raise SystemExit(f"--layers: no ResNet-18 layer {', '.join(sorted(unknown))}")
    for name in layers:
        workloads.append((name, default, conv_workload(default, name, rng).runs))
    for cfg in (tiny, default):
        workloads.append((f"{args.programs} generator programs, {cfg.name}", cfg,
                          generated(cfg, args.programs)))

    print(f"best of {args.repeat}, fresh models, BLAS threads {args.blas_threads}")
    print()
    print("| programs | micro-ops | fast ms | spec ms | spec / fast | spec us per micro-op |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, cfg, caps in workloads:
        best = {}
        for r in range(args.repeat):
            order = (GoldenModel, SpecModel) if r % 2 == 0 else (SpecModel, GoldenModel)
            results = {cls: timed(cls, cfg, caps) for cls in order}
            fast, spec = results[GoldenModel], results[SpecModel]
            if any(not np.array_equal(a, b) for a, b in zip(fast[1], spec[1], strict=True)):
                raise SystemExit(f"{name}: the models leave different memory")
            for cls, (seconds, _, _) in results.items():
                best[cls] = min(best.get(cls, seconds), seconds)
        uops = fast[2]
        f_ms, s_ms = best[GoldenModel] * 1e3, best[SpecModel] * 1e3
        per_uop = f"{s_ms * 1e3 / uops:.2f}" if uops else ""
        print(f"| {name} | {uops:,} | {f_ms:.1f} | {s_ms:.1f} | {s_ms / f_ms:.0f}x | {per_uop} |")


if __name__ == "__main__":
    main()

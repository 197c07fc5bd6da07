#!/usr/bin/env python3
"""conv2d of ResNet-18 layers C2..C11 (batch 1) on a VTA backend, against NumPy, in one run.

For each layer of upstream's benchmark list (vta/tests/python/integration/
test_benchmark_topi_conv2d.py) this times ``vta.ops.conv2d`` end to end --
packing, device transfers, building the instruction stream, running it,
reading and unpacking the result, with upstream's epilogue (>> 8, ReLU,
clip to 127) -- and, in the same process, the same convolution and epilogue
computed directly with NumPy (im2col and one exact float64 BLAS product).
Results are checked for equality; the best of ``--repeat`` runs is kept for
both.  Prints a table: wall time per layer and in total, and the ratio.

    python scripts/bench/conv2d_resnet.py [--backend golden] [--config default] [--repeat 3]
                                          [--blas-threads 1] [--layers C2,C3,...]
"""

from __future__ import annotations

import argparse
import os
import platform
import time

import _blas  # noqa: F401  (first: pins BLAS threads before NumPy loads)
import numpy as np
from rich.console import Console
from rich.table import Table

import vta
from vta import ops

LAYERS = ops.RESNET18_LAYERS  # name: (H, W, C_in, C_out, kernel, pad, stride)


def numpy_conv2d(data: np.ndarray, kernel: np.ndarray, stride: int, pad: int) -> np.ndarray:
    """Direct convolution with upstream's epilogue in NumPy: im2col and one exact float64 GEMM."""
    n, c, h, w = data.shape
    o, _, kh, kw = kernel.shape
    oh, ow = (h + 2 * pad - kh) // stride + 1, (w + 2 * pad - kw) // stride + 1
    padded = np.zeros((n, c, h + 2 * pad, w + 2 * pad))
    padded[:, :, pad:pad + h, pad:pad + w] = data
    windows = np.lib.stride_tricks.sliding_window_view(padded, (kh, kw), axis=(2, 3))
    cols = windows[:, :, ::stride, ::stride].transpose(0, 2, 3, 1, 4, 5)  # n, oh, ow, c, kh, kw
    acc = cols.reshape(n * oh * ow, c * kh * kw) @ kernel.reshape(o, -1).T.astype(np.float64)
    out = np.clip(acc.astype(np.int64) >> 8, 0, 127).astype(np.int8)
    return out.reshape(n, oh, ow, o).transpose(0, 3, 1, 2)


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown cpu"


def best_of(fn, repeat: int) -> tuple[float, object]:
    best, result = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    return best, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="golden", help="device backend (default golden)")
    parser.add_argument("--config", default="default", help="preset or vta_config.json")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs per layer; best kept")
    parser.add_argument("--blas-threads", default="1",
                        help="BLAS threads for NumPy and the golden model (default 1)")
    parser.add_argument("--layers", default=",".join(LAYERS),
                        help="comma-separated subset of C2..C11")
    args = parser.parse_args()

    console = Console()
    rng = np.random.default_rng(0)
    table = Table(title=f"conv2d ResNet-18, batch 1, {args.backend} backend, {args.config}")
    for col in ("layer", "shape (CxHxW -> O, k/s/p)", "MMACs", "insns", "tiles x chunks",
                "vta (ms)", "numpy (ms)", "ratio"):
        table.add_column(col, justify="left" if col.startswith(("layer", "shape")) else "right")
    totals = [0.0, 0.0]
    with vta.open_device(args.backend, args.config) as dev:
        cfg = dev.cfg
        for name in args.layers.split(","):
            h, w, ci, co, k, pad, stride = LAYERS[name]
            data = rng.integers(-128, 128, (1, ci, h, w), dtype=np.int8)
            kernel = rng.integers(-128, 128, (co, ci, k, k), dtype=np.int8)

            def on_vta(data=data, kernel=kernel, stride=stride, pad=pad):
                return ops.conv2d(dev, data, kernel, stride=stride, padding=pad, shift=8,
                                  relu=True, clip=(0, 127), return_stats=True)

            vta_s, (out, stats) = best_of(on_vta, args.repeat)
            np_s, expected = best_of(lambda d=data, kk=kernel, s=stride, p=pad:
                                     numpy_conv2d(d, kk, s, p), args.repeat)
            if not np.array_equal(out, expected):
                raise SystemExit(f"{name}: VTA result differs from NumPy")
            plan = ops.plan_conv2d(cfg, (1, ci // cfg.BLOCK_IN, h, w),
                                   (co // cfg.BLOCK_OUT, ci // cfg.BLOCK_IN, k, k), stride, pad)
            oh = (h + 2 * pad - k) // stride + 1
            macs = oh * oh * co * ci * k * k
            totals[0] += vta_s
            totals[1] += np_s
            table.add_row(name, f"{ci}x{h}x{w} -> {co}, {k}/{stride}/{pad}", f"{macs / 1e6:.1f}",
                          str(stats.insn_count), f"{plan.tiles} x {plan.chunks}",
                          f"{vta_s * 1e3:.1f}", f"{np_s * 1e3:.2f}", f"{vta_s / np_s:.1f}x")
    table.add_row("total", "", "", "", "", f"{totals[0] * 1e3:.1f}", f"{totals[1] * 1e3:.2f}",
                  f"{totals[0] / totals[1]:.1f}x", end_section=True)
    console.print(f"machine: {platform.machine()}, {os.cpu_count()} cores, "
                  f"{_cpu_name()}, numpy {np.__version__}, python {platform.python_version()}, "
                  f"BLAS threads {os.environ['OPENBLAS_NUM_THREADS']}")
    console.print(table)
    console.print("ratio = VTA wall time / NumPy wall time (lower is better); every result "
                  "checked equal to NumPy")


if __name__ == "__main__":
    main()

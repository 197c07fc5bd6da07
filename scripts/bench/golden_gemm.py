#!/usr/bin/env python3
"""Golden-model GEMM throughput against NumPy, measured side by side in one run.

Runs a tiled int8 matmul (default 256x256x256 on the default 1x16x16
configuration, no ALU epilogue: a GEMM-heavy stream) through the golden model,
checks the result against NumPy, then times NumPy's float32 matmul of the same
shapes in the same process.  Prints MAC/s for both and their ratio.

    python scripts/bench/golden_gemm.py [--size 256] [--repeat 20] [--config default]
                                        [--blas-threads 1]
"""

from __future__ import annotations

import argparse
import os
import platform
import time

import _blas  # noqa: F401  (first: pins BLAS threads before NumPy loads)
import numpy as np

import vta
from vta.golden import GoldenModel
from vta.progfile.handbuilt import build_matmul


def best_of(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=256, help="M = K = N (default 256)")
    parser.add_argument("--repeat", type=int, default=20, help="timed runs; best is kept")
    parser.add_argument("--config", default="default", help="preset or vta_config.json")
    parser.add_argument("--blas-threads", default="1",
                        help="BLAS threads for NumPy and the golden model (default 1)")
    args = parser.parse_args()

    cfg = vta.Config.load(args.config)
    size = args.size
    rng = np.random.default_rng(0)
    a = rng.integers(-128, 128, (size, size), dtype=np.int8)
    w = rng.integers(-128, 128, (size, size), dtype=np.int8)
    prog = build_matmul(cfg, size, size, size, shift=None)
    model = GoldenModel(cfg, prog.end)
    prog.write(model.mem, a, w)

    counters = model.run(prog.insn_addr, prog.insn_count)
    if not np.array_equal(prog.read_result(model.mem), prog.expected(a, w)):
        raise SystemExit("golden model result differs from NumPy")
    macs = size ** 3
    if counters.gemm_uops * cfg.BATCH * cfg.BLOCK_IN * cfg.BLOCK_OUT != macs:
        raise SystemExit("GEMM micro-op count does not match the product size")

    def cold_run() -> None:
        fresh = GoldenModel(cfg, prog.end)
        prog.write(fresh.mem, a, w)
        start = time.perf_counter()
        fresh.run(prog.insn_addr, prog.insn_count)
        cold.append(time.perf_counter() - start)

    cold: list[float] = []
    best_of(cold_run, max(3, args.repeat // 4))
    cold_s = min(cold)
    golden_s = best_of(lambda: model.run(prog.insn_addr, prog.insn_count), args.repeat)
    af, wf = a.astype(np.float32), w.astype(np.float32)
    numpy_s = best_of(lambda: af @ wf.T, args.repeat * 5)

    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, numpy {np.__version__}, "
          f"python {platform.python_version()}, BLAS threads {args.blas_threads}")
    print(f"config {cfg.name} ({cfg.bitstream}), {size}x{size}x{size} int8 matmul, "
          f"{prog.insn_count} instructions, {counters.gemm_uops} GEMM micro-ops")
    print(f"golden model : {golden_s * 1e3:8.2f} ms  {macs / golden_s / 1e9:7.2f} GMAC/s"
          "  (repeat run: GEMM plans cached)")
    print(f"golden cold  : {cold_s * 1e3:8.2f} ms  {macs / cold_s / 1e9:7.2f} GMAC/s"
          "  (fresh model: plans built)")
    print(f"numpy float32: {numpy_s * 1e3:8.2f} ms  {macs / numpy_s / 1e9:7.2f} GMAC/s")
    print(f"ratio golden/numpy: 1/{golden_s / numpy_s:.1f} (cold 1/{cold_s / numpy_s:.1f})"
          "  (target: 1/10 or better)")


if __name__ == "__main__":
    main()

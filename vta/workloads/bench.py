"""The headline benchmarks of BENCHMARKS.md, as functions ``vta bench`` runs.

Each function measures one figure on this machine and checks the result it
timed against NumPy, so a fast wrong answer is never reported:

* :func:`golden_gemm`: the golden model running a tiled 256^3 int8 matmul
  stream (best of ``repeat`` repeat runs) against NumPy's float32 matmul.
* :func:`resnet_layer`: ``vta.ops.conv2d`` of one ResNet-18 layer on the
  golden backend, end to end, against a NumPy convolution.
* :func:`rtl_matmul`: the GEMM-heavy matmul on an RTL backend: cycles,
  simulated cycles per second and GEMM utilisation.

``scripts/bench/`` holds the fuller versions (more rows, more options) whose
figures BENCHMARKS.md records.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from ..config import Config
from ..progfile.handbuilt import build_matmul


def _best(fn: Callable[[], object], repeat: int) -> float:
    best = float("inf")
    for _ in range(max(1, repeat)):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def _operands(size: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return (rng.integers(-128, 128, (size, size), dtype=np.int8),
            rng.integers(-128, 128, (size, size), dtype=np.int8))


def golden_gemm(cfg: Config, size: int = 256, repeat: int = 10) -> dict:
    """Golden-model GEMM throughput of a ``size``^3 matmul against NumPy float32."""
    from ..golden import GoldenModel

    a, w = _operands(size)
    prog = build_matmul(cfg, size, size, size, shift=None)
    model = GoldenModel(cfg, prog.end)
    prog.write(model.mem, a, w)
    model.run(prog.insn_addr, prog.insn_count)
    if not np.array_equal(prog.read_result(model.mem), prog.expected(a, w)):
        raise AssertionError("the golden model's matmul differs from NumPy")
    golden_s = _best(lambda: model.run(prog.insn_addr, prog.insn_count), repeat)
    af, wf = a.astype(np.float32), w.astype(np.float32)
    numpy_s = _best(lambda: af @ wf.T, repeat * 5)
    macs = size ** 3
    return {"name": f"golden GEMM {size}^3", "golden_ms": golden_s * 1e3,
            "golden_gmacs": macs / golden_s / 1e9, "numpy_ms": numpy_s * 1e3,
            "ratio": golden_s / numpy_s, "insns": prog.insn_count}


def _numpy_conv(data, kernel, stride: int, pad: int) -> np.ndarray:
    """int64 NCHW convolution (im2col and one product), then >> 8, ReLU, clip 127."""
    n, c, h, w = data.shape
    o, _, kh, kw = kernel.shape
    x = np.pad(data.astype(np.int64), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh, ow = (h + 2 * pad - kh) // stride + 1, (w + 2 * pad - kw) // stride + 1
    cols = np.stack([x[:, :, i:i + stride * oh:stride, j:j + stride * ow:stride]
                     for i in range(kh) for j in range(kw)], axis=2)  # n c k oh ow
    acc = np.einsum("nckhw,ock->nohw", cols, kernel.reshape(o, c, kh * kw).astype(np.int64))
    acc = ((acc + 2**31) % 2**32) - 2**31
    return np.clip(acc >> 8, 0, 127).astype(np.int8)


def resnet_layer(device, name: str, repeat: int = 1) -> dict:
    """``ops.conv2d`` of ResNet-18 layer ``name`` on ``device`` (end to end), checked."""
    from .. import ops

    h, w, c, o, k, pad, stride = ops.RESNET18_LAYERS[name]
    rng = np.random.default_rng(1)
    data = rng.integers(-128, 128, (1, c, h, w), dtype=np.int8)
    kernel = rng.integers(-128, 128, (o, c, k, k), dtype=np.int8)
    result = {}

    def once():
        result["out"] = ops.conv2d(device, data, kernel, stride=stride, padding=pad, shift=8,
                                   relu=True, clip=(0, 127))

    seconds = _best(once, repeat)
    if not np.array_equal(result["out"], _numpy_conv(data, kernel, stride, pad)):
        raise AssertionError(f"conv2d {name} differs from NumPy")
    oh, ow = result["out"].shape[2:]
    return {"name": f"conv2d ResNet-18 {name}", "ms": seconds * 1e3,
            "mmacs": o * c * k * k * oh * ow / 1e6}


def rtl_matmul(device, size: int = 128) -> dict:
    """The GEMM-heavy ``size``^3 matmul on an RTL ``device``: cycles and utilisation."""
    cfg = device.cfg
    prog = build_matmul(cfg, size, size, size, shift=None,
                        col_blocks=max(1, size // cfg.BLOCK_OUT // 4), row_blocks=32)
    a, w = _operands(size, seed=size)
    mem = np.zeros(prog.end, dtype=np.uint8)
    prog.write(mem, a, w)
    buf = device.alloc(prog.end - 4096)
    try:
        if buf.addr != 4096:
            raise AssertionError("the matmul needs a freshly opened device (base 0x1000)")
        device.write(buf, mem[4096:])
        stats = device.run(prog.insn_addr, prog.insn_count)
        mem[4096:] = device.read(buf)
    finally:
        device.free(buf)
    if not np.array_equal(prog.read_result(mem), prog.expected(a, w)):
        raise AssertionError(f"{device.backend}: the matmul differs from NumPy")
    seconds = getattr(device.driver.transport, "last_run_seconds", None) or stats.wall_time
    return {"name": f"{device.backend} matmul {size}^3", "cycles": stats.cycles,
            "cycles_per_s": stats.cycles / seconds, "gemm_utilisation":
            stats.gemm_uops / stats.cycles, "seconds": seconds}

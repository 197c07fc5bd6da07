#!/usr/bin/env python3
"""Golden model against upstream VTA's C++ functional simulator (fsim), same programs, one run.

Captures the device-memory image and instruction stream of every run of
``vta.ops.conv2d`` on upstream's ResNet-18 layers C2..C11 (batch 1, upstream's
epilogue >> 8, ReLU, clip) and of the chunked 256^3 int8 matmul stream
(``vta/progfile/handbuilt.py``, 138 instructions, as in ``rtl_sim.py``), then times, on
exactly those images, interleaved:

* **golden cold**: ``device.run`` on a freshly opened golden device (empty plan
  cache) whose memory holds the captured image;
* **golden warm**: ``device.run`` again on that device, image rewritten first;
* **fsim**: ``VTADeviceRun`` alone in upstream's simulator (the harness of
  ``../shared/tools/fsim``, a fresh process per run so token queues start empty,
  scratchpads zero-filled as in the golden model).

Times are wall clock (what the fsim harness reports); the golden cold run's thread
CPU time is printed too, its cost without preemption on a busy machine.

After every timed run the whole device memory of the golden device is checked
byte-equal to fsim's.  Best of ``--repeat`` interleaved rounds.  fsim is not part
of the package: build it with ``../shared/tools/fsim/build.sh CONFIG_JSON OUT``
and pass ``--fsim OUT``.

    python scripts/bench/golden_fsim.py --fsim ~/.cache/fsim/default [--repeat 5]
        [--layers C2,...|none] [--no-matmul] [--config default] [--blas-threads 1]
"""

from __future__ import annotations

import argparse
import os
import platform
import struct
import subprocess
import sys
import time
from dataclasses import dataclass

import _blas  # noqa: F401  (first: pins BLAS threads before NumPy loads)
import numpy as np
from conv2d_resnet import LAYERS, numpy_conv2d  # same folder
from conv2d_resnet import _cpu_name as cpu_name

import vta
from vta import ops
from vta.progfile.handbuilt import build_matmul

PAGE = 4096


@dataclass
class Capture:
    """One device run: the memory image before it, and where its instructions are."""

    image: np.ndarray  # bytes 0..image_len of device memory at START
    insn_addr: int
    insn_count: int


@dataclass
class Workload:
    name: str
    macs: int
    runs: list[Capture]


def _mem_size(image_len: int) -> int:
    """Device memory for an image: a power of two with at least 1 MiB to spare (fsim's guard)."""
    size = 1 << 24
    while size < image_len + (1 << 20):
        size <<= 1
    return size


def capture_runs(cfg: vta.Config, body) -> list[Capture]:
    """Run ``body(dev)`` on a golden device, recording every run's image and stream."""
    runs: list[Capture] = []
    with vta.open_device("golden", cfg) as dev:
        driver = dev.driver
        real_run = driver.run

        def recording_run(insn_addr, insn_count, timeout=60.0):
            top = max(b.addr + b.nbytes for b in driver.live_buffers)
            top = -(-top // PAGE) * PAGE
            runs.append(Capture(driver.transport.mem[:top].copy(), insn_addr, insn_count))
            return real_run(insn_addr, insn_count, timeout)

        driver.run = recording_run
        body(dev)
    return runs


def conv_workload(cfg: vta.Config, name: str, rng: np.random.Generator) -> Workload:
    h, w, ci, co, k, pad, stride = LAYERS[name]
    data = rng.integers(-128, 128, (1, ci, h, w), dtype=np.int8)
    kernel = rng.integers(-128, 128, (co, ci, k, k), dtype=np.int8)

    def body(dev):
        out = ops.conv2d(dev, data, kernel, stride=stride, padding=pad, shift=8, relu=True,
                         clip=(0, 127))
        if not np.array_equal(out, numpy_conv2d(data, kernel, stride, pad)):
            raise SystemExit(f"{name}: golden result differs from NumPy")

    oh = (h + 2 * pad - k) // stride + 1
    return Workload(name, oh * oh * co * ci * k * k, capture_runs(cfg, body))


def matmul_workload(cfg: vta.Config, size: int) -> Workload:
    prog = build_matmul(cfg, size, size, size, shift=None,
                        col_blocks=max(1, size // cfg.BLOCK_OUT // 4), row_blocks=32)
    rng = np.random.default_rng(size)
    a = rng.integers(-128, 128, (size, size), dtype=np.int8)
    w = rng.integers(-128, 128, (size, size), dtype=np.int8)
    image = np.zeros(prog.end, dtype=np.uint8)
    prog.write(image, a, w)
    with vta.open_device("golden", cfg, mem_size=_mem_size(prog.end)) as dev:
        dev.driver.transport.mem[:prog.end] = image
        dev.run(prog.insn_addr, prog.insn_count)
        if not np.array_equal(prog.read_result(dev.driver.transport.mem), prog.expected(a, w)):
            raise SystemExit(f"matmul {size}: golden result differs from NumPy")
    return Workload(f"matmul {size}^3, chunked", size ** 3,
                    [Capture(image, prog.insn_addr, prog.insn_count)])


class Fsim:
    """One fsim harness process (``fsim_main.cc``'s pipe protocol)."""

    def __init__(self, binary: str, mem_bytes: int):
        self.mem_bytes = mem_bytes
        self.proc = subprocess.Popen([binary, str(mem_bytes), "0", "0"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE)
        hello = self._read(28)
        if hello[:8] != b"FSIMORC1" or struct.unpack("<I", hello[8:12])[0] != PAGE:
            raise SystemExit(f"{binary}: not an fsim harness (hello {hello[:8]!r})")

    def _read(self, n: int) -> bytes:
        data = self.proc.stdout.read(n)
        if len(data) != n:
            raise SystemExit(f"fsim harness exited early (exit status {self.proc.wait()})")
        return data

    def run(self, cap: Capture) -> tuple[float, np.ndarray]:
        """Run once; return (seconds of VTADeviceRun, memory image after the run)."""
        stdin = self.proc.stdin
        stdin.write(b"RUN1" + struct.pack("<QIQ", cap.insn_addr, cap.insn_count, cap.image.size))
        stdin.write(cap.image.tobytes())
        stdin.flush()
        if self._read(4) != b"RES1":
            raise SystemExit("fsim harness: bad reply")
        status, msg_len = struct.unpack("<II", self._read(8))
        msg = self._read(msg_len).decode()
        dirty, image_len = struct.unpack("<QQ", self._read(16))
        image = np.frombuffer(self._read(image_len), dtype=np.uint8)
        if status:
            raise SystemExit(f"fsim failed: {msg}")
        if dirty:
            raise SystemExit(f"fsim wrote past the image, at 0x{dirty:x}")
        return int(msg.removeprefix("run_ns=")) * 1e-9, image

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait()


def time_golden(cfg: vta.Config, cap: Capture) -> tuple[float, float, float, np.ndarray]:
    """Seconds of ``device.run`` on ``cap``: cold, warm, the cold run's thread CPU time; and
    the device memory after the cold run (the warm run must leave the same)."""
    size = _mem_size(cap.image.size)
    with vta.open_device("golden", cfg, mem_size=size) as dev:
        mem = dev.driver.transport.mem
        times = []
        for run in range(2):
            mem[:cap.image.size] = cap.image
            if run:  # a fresh device's memory is zero; the warm run clears what the cold wrote
                mem[cap.image.size:] = 0
            start, start_cpu = time.perf_counter(), time.thread_time()
            dev.run(cap.insn_addr, cap.insn_count)
            times.append(time.perf_counter() - start)
            if run == 0:
                cold_cpu = time.thread_time() - start_cpu
                after_cold = mem.copy()
        if not np.array_equal(mem, after_cold):
            raise SystemExit("golden: the warm run left different memory from the cold run")
        return times[0], times[1], cold_cpu, after_cold


def check_equal(name: str, golden: np.ndarray, fsim: np.ndarray) -> None:
    n = fsim.size
    # bytes below 0x1000 are unreachable in fsim (the harness returns zeros)
    diff = np.flatnonzero(golden[PAGE:n] != fsim[PAGE:])
    if diff.size:
        a = PAGE + int(diff[0])
        raise SystemExit(f"{name}: device memory differs at 0x{a:x} (golden {golden[a]}, "
                         f"fsim {fsim[a]}; {diff.size} bytes differ)")
    beyond = np.flatnonzero(golden[n:])
    if beyond.size:
        raise SystemExit(f"{name}: golden wrote past the image, at 0x{n + int(beyond[0]):x}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fsim", default=os.environ.get("VTA_FSIM"),
                        help="path of a built fsim harness (../shared/tools/fsim/build.sh); "
                             "default $VTA_FSIM")
    parser.add_argument("--config", default="default", help="preset or vta_config.json")
    parser.add_argument("--repeat", type=int, default=5, help="interleaved rounds; best kept")
    parser.add_argument("--layers", default=",".join(LAYERS),
                        help="comma-separated subset of C2..C11, or 'none'")
    parser.add_argument("--no-matmul", action="store_true", help="skip the 256^3 matmul stream")
    parser.add_argument("--size", type=int, default=256, help="matmul M = K = N (default 256)")
    parser.add_argument("--blas-threads", default="1",
                        help="BLAS threads for the golden model (default 1)")
    args = parser.parse_args()
    if not args.fsim or not os.access(args.fsim, os.X_OK):
        sys.exit(f"no fsim binary {'at ' + repr(args.fsim) if args.fsim else 'given'}: build "
                 "one with ../shared/tools/fsim/build.sh vta/presets/default.json OUT and pass "
                 "--fsim OUT (or set VTA_FSIM)")

    cfg = vta.Config.load(args.config)
    rng = np.random.default_rng(0)
    layers = [] if args.layers == "none" else args.layers.split(",")
    workloads = [conv_workload(cfg, name, rng) for name in layers]
    if not args.no_matmul:
        workloads.append(matmul_workload(cfg, args.size))

    best = {w.name: [float("inf")] * 4 for w in workloads}  # cold, warm, fsim, cold CPU
    for _ in range(args.repeat):
        for wl in workloads:
            sums = [0.0, 0.0, 0.0, 0.0]
            for cap in wl.runs:
                cold, warm, cold_cpu, mem = time_golden(cfg, cap)
                fsim = Fsim(args.fsim, mem.size)
                try:
                    fsim_s, image = fsim.run(cap)
                finally:
                    fsim.close()
                check_equal(wl.name, mem, image)
                for i, t in enumerate((cold, warm, fsim_s, cold_cpu)):
                    sums[i] += t
            best[wl.name] = [min(b, s) for b, s in zip(best[wl.name], sums, strict=True)]

    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, {cpu_name()}, "
          f"numpy {np.__version__}, python {platform.python_version()}, "
          f"BLAS threads {args.blas_threads}; config {cfg.name}; best of {args.repeat}")
    print()
    print("| program | MMACs | runs | insns | fsim ms | golden cold ms | golden warm ms "
          "| fsim / cold | fsim / warm | golden cold CPU ms |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    layer_total = [0.0, 0.0, 0.0, 0.0]
    for wl in workloads:
        cold, warm, fsim_s, cold_cpu = best[wl.name]
        if wl.name in LAYERS:
            layer_total = [a + b for a, b in zip(layer_total, best[wl.name], strict=True)]
        print(f"| {wl.name} | {wl.macs / 1e6:.1f} | {len(wl.runs)} | "
              f"{sum(c.insn_count for c in wl.runs)} | {fsim_s * 1e3:.2f} | {cold * 1e3:.2f} | "
              f"{warm * 1e3:.2f} | {fsim_s / cold:.2f}x | {fsim_s / warm:.2f}x | "
              f"{cold_cpu * 1e3:.2f} |")
    if layers:
        cold, warm, fsim_s, cold_cpu = layer_total
        print(f"| **{layers[0]}..{layers[-1]}** | | | | {fsim_s * 1e3:.2f} | {cold * 1e3:.2f} | "
              f"{warm * 1e3:.2f} | {fsim_s / cold:.2f}x | {fsim_s / warm:.2f}x | "
              f"{cold_cpu * 1e3:.2f} |")
    print()
    print("fsim / golden > 1: the golden model is faster (wall-clock times, best of "
          f"{args.repeat}; fsim reports the wall time of VTADeviceRun).  golden cold CPU: the "
          "thread CPU time of the cold run (the golden model without preemption by other "
          "processes).  Device memory checked byte-equal after every run.")


if __name__ == "__main__":
    main()

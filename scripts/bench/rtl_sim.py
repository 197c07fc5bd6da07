#!/usr/bin/env python3
"""RTL simulation figures, Verilator and Icarus side by side in one run.

* **Simulation speed**: a GEMM-heavy stream (tiled int8 matmul, no ALU epilogue,
  ``vta/progfile/handbuilt.py``) on the default configuration; simulated cycles per
  wall-clock second of the run itself (from START to ``irq``, as the harness
  measures it) and end to end (the driver's run: register protocol and every
  counter read included).  The same ``--size`` on both simulators, plus
  ``--big`` on Verilator.
* **GEMM-core utilisation** = MACs / (cycles x BATCH x BLOCK_IN x BLOCK_OUT):
  the ``--big`` matmul (compute-bound) and each ResNet-18 layer C2..C11
  through ``vta.ops.conv2d`` (upstream's epilogue), on Verilator.
* **LOAD and STORE bandwidth**: one INP and one WGT load of the whole buffer, one
  STORE of the whole OUT buffer, and one STORE of one-element rows (a DMA write
  request per row); bytes per cycle of the engine's busy time against the bus
  width, on every design (``--baseline-hdl`` too).
* **ALU opcodes**: cycles of a run (ACC load, one ALU instruction of 1,024
  independent micro-ops, OUT store) per opcode, on Verilator, each checked
  against the golden model: MUL issues a micro-op every other cycle.
* **Verilator build time**: from scratch (a fresh cache folder) and from cache.

Speed is the best of ``--repeat`` runs of the same stream on the same simulator
process (the machine is shared and noisy; the range is printed too).
``--baseline-hdl DIR`` also runs every simulator on the design in DIR (for
example ``git archive <commit> hdl | tar -x -C DIR`` gives ``DIR/hdl``), in the
same process and interleaved with the current design, so before/after ratios
come from one run.  ``--progress`` also runs every speed measurement on the
current design with a progress listener (``vta.backends.rtl.run_progress``: the
harness reports the run every half second, as ``vta run`` on a terminal asks),
interleaved with the runs without one: the cost of progress reports.

Every result is checked against NumPy.  Prints Markdown tables.

    python scripts/bench/rtl_sim.py [--size 128] [--big 256] [--icarus-size 128]
                                    [--repeat 3] [--simulators verilator,icarus]
                                    [--baseline-hdl DIR] [--progress] [--layers C2,...|none]
                                    [--no-scratch-build] [--config default]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import tempfile
import time
from pathlib import Path

import _blas  # noqa: F401  (first: pins BLAS threads before NumPy loads)
import numpy as np
from conv2d_resnet import LAYERS, numpy_conv2d  # same folder
from conv2d_resnet import _cpu_name as cpu_name

import vta
from vta import ops
from vta.backends import rtl
from vta.isa import AluInsn, GemmInsn, MemId, MemInsn, Opcode, Uop, encode, encode_uop
from vta.progfile.handbuilt import build_matmul


def matmul_run(dev, size: int) -> dict:
    """Run the size^3 GEMM-heavy matmul; check it; return its figures."""
    cfg = dev.cfg
    # small first tiles and double-buffered weight chunks keep the GEMM core fed
    prog = build_matmul(cfg, size, size, size, shift=None,
                        col_blocks=max(1, size // cfg.BLOCK_OUT // 4), row_blocks=32)
    rng = np.random.default_rng(size)
    a = rng.integers(-128, 128, (size, size), dtype=np.int8)
    w = rng.integers(-128, 128, (size, size), dtype=np.int8)
    mem = np.zeros(prog.end, dtype=np.uint8)
    prog.write(mem, a, w)
    buf = dev.alloc(prog.end - 4096)
    if buf.addr != 4096:
        raise SystemExit("expected the first allocation at 0x1000 (build_matmul's base)")
    dev.write(buf, mem[4096:])
    stats = dev.run(prog.insn_addr, prog.insn_count)
    full = np.zeros(prog.end, dtype=np.uint8)
    full[4096:] = dev.read(buf)
    dev.free(buf)
    if not np.array_equal(prog.read_result(full), prog.expected(a, w)):
        raise SystemExit(f"{dev.backend}: matmul {size} differs from NumPy")
    t = dev.driver.transport
    unit = cfg.BATCH * cfg.BLOCK_IN * cfg.BLOCK_OUT
    return {"cycles": stats.cycles, "sim_s": getattr(t, "last_run_seconds", None),
            "e2e_s": stats.wall_time,
            "util": stats.gemm_uops * unit / (stats.cycles * unit), "insns": prog.insn_count,
            "macs": size ** 3}


def best_of(runs: list[dict]) -> dict:
    """The fastest of several runs of one stream, with the range of cycles/s."""
    best = min(runs, key=lambda r: r["sim_s"])
    rates = [r["cycles"] / r["sim_s"] for r in runs]
    if len({r["cycles"] for r in runs}) != 1:
        raise SystemExit("cycle counts differ between repeats of one stream")
    return {**best, "rate_min": min(rates), "rate_max": max(rates), "repeat": len(runs)}


@contextlib.contextmanager
def design_from(hdl: str | None):
    """Build the simulator from the Verilog files in ``hdl`` (None: the current design)."""
    from vta.hdltools import hdlgen

    if hdl is None:
        yield
        return
    files = sorted(Path(hdl).glob("*.v"))
    if not files:
        raise SystemExit(f"--baseline-hdl: no *.v files in {hdl}")
    saved = hdlgen.hdl_sources
    hdlgen.hdl_sources = lambda: files
    try:
        yield
    finally:
        hdlgen.hdl_sources = saved


ALU_OPS = ("MIN", "MAX", "ADD", "SHR", "MUL")


def alu_run(dev, gold, op: int, n: int = 1024) -> int:
    """Cycles of a run whose ALU instruction has ``n`` micro-ops of ``op`` (ACC[i] op= ACC[i+n]
    for i < n: independent micro-ops); its OUT stored and checked against the golden model."""
    cfg = dev.cfg
    acc = np.random.default_rng(op).integers(-(2**31), 2**31, 2 * n * cfg.ACC_ELEM_BYTES // 4,
                                             dtype=np.int64).astype(np.int32)
    if op == 3:  # shift amounts: a few beyond each end
        acc[acc.size // 2:] %= 80
        acc[acc.size // 2:] -= 40
    outs = []
    for d in (dev, gold):
        bufs = [d.alloc(acc.nbytes), d.alloc(4), d.alloc(n * cfg.OUT_ELEM_BYTES)]
        d.write(bufs[0], acc.view(np.uint8))
        d.write(bufs[1], np.frombuffer(encode_uop(Uop(src_idx=n), cfg), dtype=np.uint8))
        stream = b"".join(encode(i, cfg) for i in (
            MemInsn(opcode=Opcode.LOAD, memory_type=MemId.UOP, dram_base=bufs[1].addr // 4,
                    y_size=1, x_size=1, x_stride=1),
            MemInsn(opcode=Opcode.LOAD, memory_type=MemId.ACC,
                    dram_base=bufs[0].addr // cfg.ACC_ELEM_BYTES, y_size=1, x_size=2 * n,
                    x_stride=2 * n),
            AluInsn(opcode=Opcode.ALU, alu_opcode=op, uop_bgn=0, uop_end=1, iter_out=n,
                    iter_in=1, dst_factor_out=1, src_factor_out=1, push_next_dep=1),
            MemInsn(opcode=Opcode.STORE, memory_type=MemId.OUT,
                    dram_base=bufs[2].addr // cfg.OUT_ELEM_BYTES, y_size=1, x_size=n,
                    x_stride=n, pop_prev_dep=1, push_prev_dep=1),
            GemmInsn(opcode=Opcode.FINISH, pop_next_dep=1)))
        insns = d.alloc(len(stream))
        d.write(insns, stream)
        stats = d.run(insns, 5)
        outs.append((stats.cycles, d.read(bufs[2]).copy()))
        for b in (*bufs, insns):
            d.free(b)
    if not np.array_equal(outs[0][1], outs[1][1]):
        raise SystemExit(f"ALU {ALU_OPS[op]}: OUT differs from the golden model")
    return outs[0][0]


def load_bandwidth(dev) -> list[tuple[str, int, int, float]]:
    """(transfer, bytes, busy cycles, bytes/cycle): one whole-buffer INP and WGT LOAD, one
    whole-buffer OUT STORE, and one STORE of one-element rows (one write request each)."""
    cfg = dev.cfg
    out = []
    for mem, depth, elem in ((MemId.INP, cfg.INP_BUFF_DEPTH, cfg.INP_ELEM_BYTES),
                             (MemId.WGT, cfg.WGT_BUFF_DEPTH, cfg.WGT_ELEM_BYTES)):
        data = dev.alloc(depth * elem)
        dev.write(data, np.random.default_rng(1).integers(0, 256, depth * elem, dtype=np.uint8))
        stream = encode(MemInsn(opcode=Opcode.LOAD, memory_type=mem, dram_base=data.addr // elem,
                                y_size=1, x_size=depth, x_stride=depth), cfg)
        stream += encode(GemmInsn(opcode=Opcode.FINISH), cfg)
        insns = dev.alloc(len(stream))
        dev.write(insns, stream)
        stats = dev.run(insns, 2)
        nbytes = stats.inp_load_bytes + stats.wgt_load_bytes
        out.append((f"LOAD {mem.name}", nbytes, stats.load_busy, nbytes / stats.load_busy))
        dev.free(insns)
        dev.free(data)
    depth, elem = cfg.OUT_BUFF_DEPTH, cfg.OUT_ELEM_BYTES
    rows = min(depth, 1024)
    for name, y_size, x_size, x_stride in (("STORE OUT", 1, depth, depth),
                                           ("STORE OUT, 1-element rows", rows, 1, 2)):
        data = dev.alloc(y_size * x_stride * elem)
        stream = encode(MemInsn(opcode=Opcode.STORE, memory_type=MemId.OUT,
                                dram_base=data.addr // elem, y_size=y_size, x_size=x_size,
                                x_stride=x_stride), cfg)
        stream += encode(GemmInsn(opcode=Opcode.FINISH), cfg)
        insns = dev.alloc(len(stream))
        dev.write(insns, stream)
        stats = dev.run(insns, 2)
        nbytes = stats.out_store_bytes
        out.append((name, nbytes, stats.store_busy, nbytes / stats.store_busy))
        dev.free(insns)
        dev.free(data)
    return out


def resnet(dev, layers: list[str]) -> list[tuple]:
    rows = []
    rng = np.random.default_rng(0)
    cfg = dev.cfg
    unit = cfg.BATCH * cfg.BLOCK_IN * cfg.BLOCK_OUT
    for name in layers:
        h, w, ci, co, k, pad, stride = LAYERS[name]
        data = rng.integers(-8, 8, (1, ci, h, w), dtype=np.int8)
        kernel = rng.integers(-8, 8, (co, ci, k, k), dtype=np.int8)
        start = time.perf_counter()
        out, stats = ops.conv2d(dev, data, kernel, stride=stride, padding=pad, shift=8,
                                relu=True, clip=(0, 127), return_stats=True)
        wall = time.perf_counter() - start
        if not np.array_equal(out, numpy_conv2d(data, kernel, stride, pad)):
            raise SystemExit(f"{dev.backend}: conv2d {name} differs from NumPy")
        oh, ow = out.shape[2], out.shape[3]
        macs = oh * ow * co * ci * k * k
        rows.append((name, stats.cycles, macs, macs / (stats.cycles * unit),
                     stats.gemm_uops * unit / (stats.cycles * unit), wall, stats.runs))
    return rows


def build_times(cfg) -> tuple[float, float]:
    saved = os.environ.get("VTA_CACHE_DIR")
    with tempfile.TemporaryDirectory(prefix="vta-bench-cache-") as tmp:
        os.environ["VTA_CACHE_DIR"] = tmp
        try:
            start = time.perf_counter()
            rtl.build_testbench("verilator", cfg)
            scratch = time.perf_counter() - start
            start = time.perf_counter()
            b = rtl.build_testbench("verilator", cfg)
            cached = time.perf_counter() - start
            assert b.cached
        finally:
            if saved is None:
                os.environ.pop("VTA_CACHE_DIR", None)
            else:
                os.environ["VTA_CACHE_DIR"] = saved
    return scratch, cached


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=128, help="matmul size on both simulators")
    parser.add_argument("--big", type=int, default=256, help="compute-bound matmul on Verilator")
    parser.add_argument("--icarus-size", type=int, help="matmul size on Icarus (default --size)")
    parser.add_argument("--repeat", type=int, default=3,
                        help="runs of each speed measurement; the best is reported")
    parser.add_argument("--simulators", default="verilator,icarus")
    parser.add_argument("--baseline-hdl",
                        help="folder of another version of hdl/*.v, measured side by side")
    parser.add_argument("--progress", action="store_true",
                        help="also measure runs that report progress (interleaved)")
    parser.add_argument("--config", default="default")
    parser.add_argument("--layers", default=",".join(LAYERS),
                        help="ResNet-18 layers on Verilator (comma-separated, or 'none')")
    parser.add_argument("--no-scratch-build", action="store_true",
                        help="skip the from-scratch Verilator build timing")
    parser.add_argument("--bus-configs", default="aws",
                        help="further presets whose LOAD and STORE bandwidth is measured on "
                             "Verilator (comma-separated, or 'none'; aws: 512-bit bus)")
    parser.add_argument("--blas-threads", default="1")
    args = parser.parse_args()
    cfg = vta.Config.load(args.config)
    print(f"Machine: {platform.machine()}, {os.cpu_count()} cores ({cpu_name()}), "
          f"Python {platform.python_version()}; configuration {cfg.name} ({cfg.bitstream}, "
          f"bus {cfg.BUS_WIDTH} bits)\n")

    if not args.no_scratch_build:
        scratch, cached = build_times(cfg)
        print("| Verilator build of vta_tb | seconds |\n|---|---:|")
        print(f"| from scratch | {scratch:.1f} |\n| from cache | {cached:.3f} |\n")

    speed = []
    bandwidth, rows, alu = [], [], []
    designs = [("", None)] + ([("baseline ", args.baseline_hdl)] if args.baseline_hdl else [])
    for sim in args.simulators.split(","):
        sizes = [args.icarus_size or args.size] if sim == "icarus" else [args.size, args.big]
        with contextlib.ExitStack() as stack:
            devs = []
            for label, hdl in designs:
                start = time.perf_counter()
                with design_from(hdl):
                    devs.append((label, stack.enter_context(vta.open_device(sim, cfg)),
                                 time.perf_counter() - start))
            if args.progress:  # the current design's device, its runs reporting progress
                devs.append(("progress ", devs[0][1], devs[0][2]))
            reports = []
            for size in filter(None, sizes):
                # interleaved: run r of every design before run r + 1 of any
                runs = {label: [] for label, _, _ in devs}
                for _ in range(args.repeat):
                    for label, dev, _ in devs:
                        with (rtl.run_progress(reports.append) if label == "progress "
                              else contextlib.nullcontext()):
                            runs[label].append(matmul_run(dev, size))
                if args.progress:
                    print(f"{sim} {size}^3: {len(reports)} progress reports so far")
                for label, _, opened in devs:
                    speed.append((label + sim, size, best_of(runs[label]),
                                  opened if size == sizes[0] else None))
            if sim == "verilator":
                for label, dev, _ in devs[:len(designs)]:
                    bandwidth += [(label + cfg.name, cfg.BUS_BYTES, *row)
                                  for row in load_bandwidth(dev)]
                with vta.open_device("golden", cfg) as gold:
                    alu = [(label, [alu_run(dev, gold, op) for op in range(len(ALU_OPS))])
                           for label, dev, _ in devs if label != "progress "]
                dev = devs[0][1]
                layers = [] if args.layers == "none" else args.layers.split(",")
                rows = resnet(dev, layers)
    print("| simulator | matmul | instructions | cycles | run s | cycles/s (run, best) | "
          "range of runs | cycles/s (end to end) | GEMM utilisation | device open s |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for sim, size, r, opened in speed:
        print(f"| {sim} | {size}^3 | {r['insns']} | {r['cycles']:,} | {r['sim_s']:.3f} | "
              f"{r['cycles'] / r['sim_s']:,.0f} | {r['rate_min']:,.0f}-{r['rate_max']:,.0f} "
              f"(best of {r['repeat']}) | {r['cycles'] / r['e2e_s']:,.0f} | "
              f"{r['util']:.1%} | {'' if opened is None else f'{opened:.2f}'} |")
    if alu:
        print("\n| design (Verilator) | " + " | ".join(ALU_OPS) + " |")
        print("|---|" + "---:|" * len(ALU_OPS))
        for label, cycles in alu:
            print(f"| {label or 'this'} | " + " | ".join(f"{c:,}" for c in cycles) + " |")
    if not bandwidth:
        return
    for preset in [] if args.bus_configs == "none" else args.bus_configs.split(","):
        with vta.open_device("verilator", preset) as dev:
            bandwidth += [(preset, dev.cfg.BUS_BYTES, *row) for row in load_bandwidth(dev)]
    print("\n| config | transfer | bytes | busy cycles | bytes/cycle | bus bytes/cycle | "
          "of the bus |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for preset, bus, name, nbytes, cycles, bpc in bandwidth:
        print(f"| {preset} | {name} | {nbytes:,} | {cycles:,} | {bpc:.2f} | {bus} | "
              f"{bpc / bus:.1%} |")
    if rows:
        print("\n| layer | cycles | MACs | GEMM utilisation | (incl. padding MACs) | wall s "
              "| runs |")
        print("|---|---:|---:|---:|---:|---:|---:|")
        for name, cycles, macs, util, util_pad, wall, runs in rows:
            print(f"| {name} | {cycles:,} | {macs:,} | {util:.1%} | {util_pad:.1%} | "
                  f"{wall:.2f} | {runs} |")


if __name__ == "__main__":
    main()

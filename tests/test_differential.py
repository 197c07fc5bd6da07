"""Differential test: random valid programs, golden model against the RTL simulation.

Each seed generates a program (random shapes, padding, strides, memory types,
GEMM and ALU micro-op loops, every ALU op with and without immediates, sync
no-ops carrying tokens) arranged in double-buffered iterations whose tokens let
load, compute and store overlap while keeping every scratchpad and DRAM access
race-free, so the result is defined by the golden model alone.  The program
runs on a fresh golden device and on the simulator; the whole program arena,
the functional counters and the normalised per-instruction traces must be
identical.  A failure prints the seed and the first differing byte.

    pytest tests/test_differential.py                   # a few seeds per simulator
    pytest -m slow tests/test_differential.py           # many seeds
    VTA_DIFF_SEEDS=100-199 pytest -m slow tests/test_differential.py -k verilator-default
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np
import pytest

import vta
from vta import trace as vtrace
from vta.driver.regs import TIMING_COUNTERS
from vta.isa import AluInsn, AluOp, GemmInsn, MemId, MemInsn, Opcode, Uop, encode, encode_uop

PAGE = 4096
DATA_BYTES = 1 << 16
UOP_BYTES = 1 << 14
OUT_BYTES = 1 << 16
ALU_OPS = (AluOp.MIN, AluOp.MAX, AluOp.ADD, AluOp.SHR, AluOp.MUL)


def _align(n: int, to: int = PAGE) -> int:
    return -(-n // to) * to


@dataclass
class Program:
    """A generated program: the arena image and where its stream starts."""

    seed: int
    image: bytearray
    insn_off: int
    insn_count: int
    notes: list[str] = field(default_factory=list)


class Generator:
    """Random race-free programs for one configuration (see the module docstring)."""

    def __init__(self, cfg: vta.Config, seed: int, base: int):
        self.cfg = cfg
        self.rng = np.random.default_rng(seed)
        self.seed = seed
        self.base = base
        c = cfg
        self.depth = {"inp": c.INP_BUFF_DEPTH, "wgt": c.WGT_BUFF_DEPTH, "acc": c.ACC_BUFF_DEPTH,
                      "uop": c.UOP_BUFF_DEPTH}
        self.elem = {MemId.INP: c.INP_ELEM_BYTES, MemId.WGT: c.WGT_ELEM_BYTES,
                     MemId.ACC: c.ACC_ELEM_BYTES, MemId.UOP: c.UOP_ELEM_BYTES,
                     MemId.ACC_8BIT: c.BATCH * c.BLOCK_OUT, MemId.OUT: c.OUT_ELEM_BYTES}
        zeros = max(c.INP_BUFF_DEPTH * c.INP_ELEM_BYTES, c.WGT_BUFF_DEPTH * c.WGT_ELEM_BYTES,
                    c.ACC_BUFF_DEPTH * c.ACC_ELEM_BYTES)
        self.zeros_off = 0
        self.data_off = _align(zeros)
        self.uop_off = self.data_off + DATA_BYTES
        self.out_off = self.uop_off + UOP_BYTES
        self.insn_off = self.out_off + OUT_BYTES
        self.uops: list[Uop] = []
        self.out_used = 0
        self.insns: list = []

    # ------------------------------------------------------------ helpers
    def r(self, lo: int, hi: int) -> int:
        """Uniform integer in lo..hi inclusive."""
        return int(self.rng.integers(lo, hi + 1))

    def half(self, buf: str, h: int) -> tuple[int, int]:
        n = self.depth[buf] // 2
        return h * n, n

    def _mem(self, opcode: int, mem: int, sram: int, dram_el: int, y: int, x: int,
             stride: int, pads=(0, 0, 0, 0), **deps: int) -> MemInsn:
        return MemInsn(opcode=opcode, memory_type=mem, sram_base=sram, dram_base=dram_el,
                       y_size=y, x_size=x, x_stride=stride, y_pad_0=pads[0], y_pad_1=pads[1],
                       x_pad_0=pads[2], x_pad_1=pads[3], **deps)

    def rand_load(self, mem: int, buf: str, h: int) -> MemInsn:
        """A LOAD of random data into half ``h`` of ``buf`` (random shape, padding, stride)."""
        lo, n = self.half(buf, h)
        e = self.elem[mem]
        avail = DATA_BYTES // e
        for _ in range(100):
            y, x = self.r(1, 3), self.r(1, 4)
            pads = (self.r(0, 2), self.r(0, 2), self.r(0, 2), self.r(0, 2)) \
                if self.rng.random() < 0.6 else (0, 0, 0, 0)
            total = (pads[0] + y + pads[1]) * (pads[2] + x + pads[3])
            stride = self.r(max(1, x - 1), x + 3)  # overlapping rows are legal for loads
            span = (y - 1) * stride + x
            if total <= n and span <= avail:
                break
        else:
            raise AssertionError("could not fit a load")
        sram = lo + self.r(0, n - total)
        dram = (self.base + self.data_off) // e + self.r(0, avail - span)
        return self._mem(Opcode.LOAD, mem, sram, dram, y, x, stride, pads)

    def kernel(self, uops: list[Uop]) -> MemInsn:
        """A UOP LOAD placing ``uops`` at a random micro-op buffer position; sets self.kbase."""
        start = len(self.uops)
        self.uops.extend(uops)
        assert len(self.uops) * 4 <= UOP_BYTES
        self.kbase = self.r(0, self.depth["uop"] - len(uops))
        dram = (self.base + self.uop_off) // 4 + start
        return self._mem(Opcode.LOAD, MemId.UOP, self.kbase, dram, 1, len(uops), len(uops))

    def loops(self, n_uops: int, bufs: dict[str, tuple[int, int]]):
        """Random loop nest and micro-ops staying inside the given (lo, n) index ranges."""
        io, ii = self.r(1, 3), self.r(1, 3)
        factors = {k: (self.r(0, 2), self.r(0, 2)) for k in bufs}
        uops = []
        for _ in range(n_uops):
            idx = {}
            for k, (lo, n) in bufs.items():
                fo, fi = factors[k]
                span = (io - 1) * fo + (ii - 1) * fi + 1
                if span > n:
                    factors[k] = (0, 0)
                    span = 1
                idx[k] = lo + self.r(0, n - span)
            uops.append(idx)
        return io, ii, factors, uops

    def gemm(self, h: int, reset: bool) -> list:
        acc, inp, wgt = self.half("acc", h), self.half("inp", h), self.half("wgt", h)
        io, ii, f, idx = self.loops(self.r(1, 4), {"dst": acc, "src": inp, "wgt": wgt})
        uops = [Uop(dst_idx=u["dst"], src_idx=u["src"], wgt_idx=u["wgt"]) for u in idx]
        load = self.kernel(uops)
        insn = GemmInsn(opcode=Opcode.GEMM, reset_reg=int(reset), uop_bgn=self.kbase,
                        uop_end=self.kbase + len(uops), iter_out=io, iter_in=ii,
                        dst_factor_out=f["dst"][0], dst_factor_in=f["dst"][1],
                        src_factor_out=f["src"][0], src_factor_in=f["src"][1],
                        wgt_factor_out=f["wgt"][0], wgt_factor_in=f["wgt"][1])
        return [load, insn]

    def alu(self, h: int) -> list:
        acc = self.half("acc", h)
        io, ii, f, idx = self.loops(self.r(1, 3), {"dst": acc, "src": acc})
        uops = [Uop(dst_idx=u["dst"], src_idx=u["src"]) for u in idx]
        load = self.kernel(uops)
        op = ALU_OPS[self.r(0, len(ALU_OPS) - 1)]
        use_imm = int(self.rng.random() < 0.5)
        imm = self.r(-40, 40) if op == AluOp.SHR else self.r(-(1 << 15), (1 << 15) - 1)
        insn = AluInsn(opcode=Opcode.ALU, uop_bgn=self.kbase, uop_end=self.kbase + len(uops),
                       iter_out=io, iter_in=ii, dst_factor_out=f["dst"][0],
                       dst_factor_in=f["dst"][1], src_factor_out=f["src"][0],
                       src_factor_in=f["src"][1], alu_opcode=int(op), use_imm=use_imm,
                       imm=imm if use_imm else 0)
        return [load, insn]

    def store(self, h: int) -> MemInsn:
        lo, n = self.half("acc", h)  # OUT has as many entries as ACC
        e = self.elem[MemId.OUT]
        y, x = self.r(1, 3), self.r(1, 4)
        y = min(y, max(1, n // x))
        stride = self.r(x, x + 3)
        span = (y - 1) * stride + x
        if (self.out_used + span) * e > OUT_BYTES:
            self.out_used = 0  # reuse the output area: later stores overwrite, in order
        dram = (self.base + self.out_off) // e + self.out_used
        self.out_used += span
        sram = lo + self.r(0, n - y * x)
        return self._mem(Opcode.STORE, MemId.OUT, sram, dram, y, x, stride)

    @staticmethod
    def flag(insns: list, index: int, **deps: int) -> None:
        insns[index] = insns[index].replace(**deps)

    # ------------------------------------------------------------ program
    def generate(self) -> Program:
        c = self.cfg
        zero_el = {m: (self.base + self.zeros_off) // e for m, e in self.elem.items()}
        stream: list = []
        # Prologue: every INP/WGT/ACC entry zeroed, OUT written (ALU ADD 0 over all of ACC),
        # so no result depends on scratchpad contents from before this program.
        stream.append(self._mem(Opcode.LOAD, MemId.INP, 0, zero_el[MemId.INP], 1,
                                c.INP_BUFF_DEPTH, c.INP_BUFF_DEPTH))
        stream.append(self._mem(Opcode.LOAD, MemId.WGT, 0, zero_el[MemId.WGT], 1,
                                c.WGT_BUFF_DEPTH, c.WGT_BUFF_DEPTH, push_next_dep=1))
        prologue_c = [self._mem(Opcode.LOAD, MemId.ACC, 0, zero_el[MemId.ACC], 1,
                                c.ACC_BUFF_DEPTH, c.ACC_BUFF_DEPTH, pop_prev_dep=1)]
        prologue_c.append(self.kernel([Uop(dst_idx=0, src_idx=0)]))
        prologue_c.append(AluInsn(opcode=Opcode.ALU, uop_bgn=self.kbase, uop_end=self.kbase + 1,
                                  iter_out=c.ACC_BUFF_DEPTH, iter_in=1, dst_factor_out=1,
                                  src_factor_out=1, alu_opcode=int(AluOp.ADD), use_imm=1,
                                  imm=0))
        stream += prologue_c
        iterations = self.r(2, 6)
        self.notes = [f"{iterations} iterations"]
        for t in range(iterations):
            h = t % 2
            # load engine: INP/WGT into half h, after compute released it (t >= 2)
            loads = []
            for _ in range(self.r(1, 3)):
                if self.rng.random() < 0.5:
                    loads.append(self.rand_load(MemId.INP, "inp", h))
                else:
                    loads.append(self.rand_load(MemId.WGT, "wgt", h))
            if self.rng.random() < 0.3:  # a sync no-op carrying the tokens
                loads.append(self._mem(Opcode.LOAD, MemId.INP, 0, 0, 0, 0, 0))
            if t >= 2:
                self.flag(loads, 0, pop_next_dep=1)
            self.flag(loads, -1, push_next_dep=1)
            # compute engine: optional ACC loads, GEMMs, ALUs on half h
            comp: list = []
            for _ in range(self.r(0, 1)):
                mem = MemId.ACC if self.rng.random() < 0.6 else MemId.ACC_8BIT
                comp.append(self.rand_load(mem, "acc", h))
            for k in range(self.r(1, 2)):
                comp += self.gemm(h, reset=(k == 0 and self.rng.random() < 0.3))
            for _ in range(self.r(0, 2)):
                comp += self.alu(h)
            if self.rng.random() < 0.3:
                comp.append(self._mem(Opcode.LOAD, MemId.UOP, 0, 0, 0, 0, 0))
            self.flag(comp, 0, pop_prev_dep=1, **({"pop_next_dep": 1} if t >= 2 else {}))
            self.flag(comp, -1, push_prev_dep=1, push_next_dep=1)
            # store engine: OUT half h once compute is done with it
            stores = [self.store(h) for _ in range(self.r(1, 2))]
            if self.rng.random() < 0.3:
                stores.append(self._mem(Opcode.STORE, MemId.OUT, 0, 0, 0, 0, 0))
            self.flag(stores, 0, pop_prev_dep=1)
            self.flag(stores, -1, push_prev_dep=1)
            # interleave the engines' instructions in the stream, in a random merge
            queues = [loads, comp, stores]
            while any(queues):
                live = [q for q in queues if q]
                q = live[self.r(0, len(live) - 1)]
                stream.append(q.pop(0))
        stream.append(GemmInsn(opcode=Opcode.FINISH))
        return self._image(stream)

    def _image(self, stream: list) -> Program:
        c = self.cfg
        size = self.insn_off + _align(len(stream) * 16)
        image = bytearray(size)
        data = self.rng.integers(0, 256, DATA_BYTES, dtype=np.uint8)
        image[self.data_off:self.data_off + DATA_BYTES] = data.tobytes()
        raw_uops = b"".join(encode_uop(u, c) for u in self.uops)
        image[self.uop_off:self.uop_off + len(raw_uops)] = raw_uops
        raw = b"".join(encode(i, c) for i in stream)
        image[self.insn_off:self.insn_off + len(raw)] = raw
        return Program(self.seed, image, self.insn_off, len(stream), self.notes)


def generate(cfg: vta.Config, seed: int, base: int) -> Program:
    """The random program of ``seed`` for an arena at device address ``base``."""
    return Generator(cfg, seed, base).generate()


# ------------------------------------------------------------------ checking
def run_both(golden, rtl, prog: Program, arena_g, arena_r):
    golden.write(arena_g, bytes(prog.image))
    rtl.write(arena_r, bytes(prog.image))
    sg = golden.run(arena_g.addr + prog.insn_off, prog.insn_count)
    sr = rtl.run(arena_r.addr + prog.insn_off, prog.insn_count)
    return sg, sr


def compare(prog: Program, golden, rtl, arena_g, arena_r, sg, sr, where: str) -> None:
    mg = golden.read(arena_g)
    mr = rtl.read(arena_r)
    diff = np.flatnonzero(mg != mr)
    assert diff.size == 0, (
        f"{where} seed {prog.seed} ({', '.join(prog.notes)}): device memory differs at "
        f"{diff.size} bytes; first at arena offset 0x{diff[0]:x}: golden {mg[diff[0]]}, "
        f"rtl {mr[diff[0]]} (rerun: VTA_DIFF_SEEDS={prog.seed})")
    for name, value in sg.counters.items():
        if name in TIMING_COUNTERS:
            continue
        assert sr.counters[name] == value, (
            f"{where} seed {prog.seed}: counter {name} golden {value}, rtl {sr.counters[name]}")
    assert sr.cycles and sr.cycles > 0


def seeds(default: str) -> list[int]:
    text = os.environ.get("VTA_DIFF_SEEDS", default)
    out: list[int] = []
    for part in text.split(","):
        if "-" in part:
            lo, hi = part.split("-")
            out += list(range(int(lo), int(hi) + 1))
        elif part:
            out.append(int(part))
    return out


CASES = [("icarus", "tiny"), ("verilator", "tiny"), ("verilator", "default")]
ARENA = 1 << 20


@pytest.fixture(scope="module")
def devices():
    """(golden, rtl) device pairs per (simulator, preset), opened once for the module."""
    opened: dict = {}

    def get(sim: str, preset: str):
        key = (sim, preset)
        if key not in opened:
            from vta.sim.build import SimulatorError, simulator_version

            try:
                simulator_version(sim.split(":")[1] if ":" in sim else
                                  "verilator" if sim.endswith("-sim") else sim)
            except SimulatorError as exc:
                pytest.skip(str(exc))
            backend, _, simulator = sim.partition(":")  # "f1-sim:icarus": an AWS wrapper
            options = {"simulator": simulator} if simulator else {}
            rtl = vta.open_device(backend, preset, trace=True, **options)
            golden = vta.open_device("golden", preset, mem_size=rtl.driver.transport.mem_size,
                                     trace=True)
            opened[key] = (golden, rtl, golden.alloc(ARENA), rtl.alloc(ARENA))
        return opened[key]

    yield get
    for golden, rtl, _, _ in opened.values():
        golden.close()
        rtl.close()


def _check_seed(devices, sim: str, preset: str, seed: int) -> None:
    golden, rtl, ag, ar = devices(sim, preset)
    assert ag.addr == ar.addr
    prog = generate(golden.cfg, seed, ag.addr)
    assert len(prog.image) <= ARENA
    sg, sr = run_both(golden, rtl, prog, ag, ar)
    compare(prog, golden, rtl, ag, ar, sg, sr, f"{sim}-{preset}")
    # every engine retired the same instructions with the same token effects
    g_trace = vtrace.normalise(golden.driver.transport.last_trace)
    r_trace = vtrace.normalise(rtl.driver.transport.last_trace)
    assert r_trace == g_trace, (
        f"{sim}-{preset} seed {seed}: traces differ:\n"
        + "".join(f"  golden {a.line()}\n  rtl    {b.line()}\n"
                  for a, b in zip(g_trace, r_trace, strict=False) if a != b)[:2000])


@pytest.mark.parametrize("sim,preset", CASES, ids=[f"{s}-{p}" for s, p in CASES])
def test_random_programs(devices, sim, preset):
    for seed in seeds("1-3"):
        _check_seed(devices, sim, preset, seed)


#: Through the AWS wrappers (the f1/f2 transport, the shell models): "backend[:simulator]",
#: with the seeds of the default run (Icarus simulates the 512-bit fabric slowly).
AWS_CASES = [("f1-sim", "default", "1-2"), ("f2-sim:icarus", "tiny", "1")]


@pytest.mark.parametrize("sim,preset,default_seeds", AWS_CASES,
                         ids=[f"{s}-{p}" for s, p, _ in AWS_CASES])
def test_random_programs_through_the_aws_wrappers(devices, sim, preset, default_seeds):
    for seed in seeds(default_seeds):
        _check_seed(devices, sim, preset, seed)


SLOW_CASES = [*CASES, ("verilator", "aws"),  # aws: 512-bit bus
              *((s, p) for s, p, _ in AWS_CASES), ("f1-sim:icarus", "tiny"),
              ("f2-sim", "default"), ("f2-sim", "aws"), ("f2-sim", "aws32")]


@pytest.mark.slow
@pytest.mark.parametrize("sim,preset", SLOW_CASES, ids=[f"{s}-{p}" for s, p in SLOW_CASES])
def test_random_programs_long(devices, sim, preset):
    for seed in seeds("1000-1199"):
        _check_seed(devices, sim, preset, seed)


def test_generator_programs_run_on_golden():
    """The generator's programs are valid: they run to DONE on the golden model."""
    cfg = vta.Config.load("tiny")
    with vta.open_device("golden", cfg, mem_size=1 << 24) as dev:
        arena = dev.alloc(ARENA)
        for seed in range(20):
            prog = generate(cfg, seed, arena.addr)
            dev.write(arena, bytes(prog.image))
            stats = dev.run(arena.addr + prog.insn_off, prog.insn_count)
            assert stats.gemm_uops > 0 and stats.store_insns > 0

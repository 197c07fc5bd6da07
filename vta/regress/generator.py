"""Random VTA programs whose result the golden model alone defines.

:func:`generate` turns ``(configuration, seed)`` into a :class:`Case`: an
instruction stream, the micro-ops its UOP LOADs bring in, and the data its
LOADs read, laid out in one arena of device memory.  The same seed always
gives the same case, so a seed is a complete bug report.

Program kinds (:data:`KINDS`):

``normal``
    Double-buffered iterations of random LOADs (random shapes, padding,
    strides, memory types), GEMM and ALU micro-op loops (every ALU op with
    and without immediates), STOREs and sync no-ops, whose tokens let load,
    compute and store overlap while keeping every scratchpad and DRAM access
    race-free.  A prologue zeroes INP, WGT, ACC and OUT first, so nothing
    depends on what ran before.
``edge``
    A ``normal`` program plus the corners the ISA allows: empty loop nests
    (an iteration count of 0, ``uop_end <= uop_bgn``), padded micro-op
    LOADs, LOADs of padding only (``y_size`` 0), STOREs with overlapping
    rows, sync no-ops with junk in their other fields, the largest pads.
``flood-<engine>``
    An engine blocked on a token behind a slow producer while more than its
    command queue's worth of its instructions follow in the stream, so the
    fetch unit meets back-pressure from that engine.
``fill-<queue>``
    A dependency-token queue filled to its capacity before its consumer pops.
``fault-<CODE>``
    A program with exactly one fault of :class:`vta.errors.ErrorCode`
    ``CODE``; the device must report that fault, at that instruction.

The targeted kinds of version 2 (``chain``, ``late-pop``, ``reach``, ``over-SRAM``,
``over-DRAM``, ``fault-BUS_ERROR``) are in :mod:`vta.regress.targeted`.

:func:`kind_of_seed` maps a seed to a kind through a fixed weighted schedule per
generator version (:data:`VERSIONS`), so every run of ``len(schedule())`` consecutive
seeds exercises every kind of that version.  A kind's programs never change: a change
that would alter one makes a new kind (and a new version of the schedule).
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np

from ..config import TOKEN_QUEUE_DEPTH, Config
from ..errors import PROGRAM_FAULTS
from ..isa import (
    ENGINES,
    QUEUES,
    UOP_BYTES,
    AluInsn,
    AluOp,
    GemmInsn,
    Insn,
    MemId,
    MemInsn,
    Opcode,
    Uop,
    dispatch_engine,
)
from .case import (  # noqa: F401  (re-exported: the generator's names for a case's parts)
    ARENA_BYTES,
    BUS_ERROR_WINDOW,
    DATA_BYTES,
    OUT_BYTES,
    PAGE,
    QUEUE_ENDS,
    UOP_AREA_BYTES,
    Case,
    Layout,
    is_noop,
    noop,
)
from .targeted import Targeted

ALU_OPS = (AluOp.MIN, AluOp.MAX, AluOp.ADD, AluOp.SHR, AluOp.MUL)
#: Entries of each engine's command queue in the RTL (``LOG_QUEUE_DEPTH`` in hdl/vta_top.v).
COMMAND_QUEUE_DEPTH = 512
#: Instructions the RTL fetch unit requests at a time (``CHUNK`` in hdl/vta_fetch.v).
FETCH_CHUNK = 16
#: Instructions a ``flood-*`` program queues behind its blocked engine.
FLOOD = COMMAND_QUEUE_DEPTH + 88

#: Fault classes a ``fault-*`` program can hold (every code a stream alone can cause).
FAULTS = tuple(c.name for c in PROGRAM_FAULTS)
#: The version of the generator new runs use: a seed names the same program as long as the
#: version is the same (each version's schedule below; a kind's programs never change).
VERSION = 2
#: Relative frequency of each program kind in the schedule of seeds, version 1.
WEIGHTS: dict[str, int] = {
    "normal": 12,
    "edge": 12,
    **{f"flood-{e}": 1 for e in ENGINES},
    **{f"fill-{q}": 1 for q in QUEUES},
    **{f"fault-{f}": 1 for f in FAULTS},
}
#: Version 2: fewer random programs, the targeted kinds (:mod:`vta.regress.targeted`).
WEIGHTS_V2: dict[str, int] = {
    "normal": 10,
    "edge": 10,
    "chain": 6,
    "reach": 2,
    "late-pop": 1,
    **{k: v for k, v in WEIGHTS.items() if k not in ("normal", "edge")},
    "over-SRAM": 1,
    "over-DRAM": 1,
    "fault-BUS_ERROR": 1,
}
#: The schedule weights of each generator version.
VERSIONS: dict[int, dict[str, int]] = {1: WEIGHTS, 2: WEIGHTS_V2}
KINDS = tuple(WEIGHTS_V2)
#: What each kind ends with when the device is right: ``ok`` or an ErrorCode name.
OUTCOMES: dict[str, str] = {
    **{k: "ok" for k in KINDS},
    **{k: k.removeprefix("fault-") for k in KINDS if k.startswith("fault-")},
    "over-SRAM": "SRAM_RANGE",
    "over-DRAM": "DRAM_RANGE",
}


@functools.cache
def schedule(version: int = VERSION) -> tuple[str, ...]:
    """One period of a version's kind schedule: each kind as often as its weight says,
    spread out."""
    if version not in VERSIONS:
        raise ValueError(f"generator version must be one of {', '.join(map(str, VERSIONS))}, "
                         f"not {version!r}")
    weights = VERSIONS[version]
    kinds = len(weights)
    slots: list[tuple[float, int, str]] = []
    for order, (kind, weight) in enumerate(weights.items()):
        # occurrence k of a kind at (k + its offset) / weight of the period; the offsets
        # differ per kind, so that the rare kinds do not bunch together
        slots += [((k + (order + 0.5) / kinds) / weight, order, kind) for k in range(weight)]
    return tuple(kind for _, _, kind in sorted(slots))


def kind_of_seed(seed: int, version: int = VERSION) -> str:
    """The program kind a seed draws when none is asked for (in that generator version)."""
    sched = schedule(version)
    return sched[seed % len(sched)]


# ----------------------------------------------------------------- generator
class Generator(Targeted):
    """Random programs of every kind for one configuration (see the module docstring)."""

    def __init__(self, cfg: Config, seed: int, base: int, mem_size: int | None = None):
        if base % PAGE:
            raise ValueError(f"base must be a multiple of {PAGE}, not 0x{base:x}")
        self.cfg = cfg
        self.rng = np.random.default_rng(seed)
        self.seed = seed
        self.base = base
        self.lay = Layout.of(cfg)
        c = cfg
        self.depth = {"inp": c.INP_BUFF_DEPTH, "wgt": c.WGT_BUFF_DEPTH, "acc": c.ACC_BUFF_DEPTH,
                      "uop": c.UOP_BUFF_DEPTH}
        self.elem = {MemId.INP: c.INP_ELEM_BYTES, MemId.WGT: c.WGT_ELEM_BYTES,
                     MemId.ACC: c.ACC_ELEM_BYTES, MemId.UOP: c.UOP_ELEM_BYTES,
                     MemId.ACC_8BIT: c.BATCH * c.BLOCK_OUT, MemId.OUT: c.OUT_ELEM_BYTES}
        self.edge = False
        self.uops_used = 0
        self.out_used = 0
        self.notes: list[str] = []
        self.kbase = 0
        self.mem_size = mem_size  # of the device (``over-DRAM`` needs it)

    # ------------------------------------------------------------ helpers
    def r(self, lo: int, hi: int) -> int:
        """Uniform integer in lo..hi inclusive."""
        return int(self.rng.integers(lo, hi + 1))

    def chance(self, p: float) -> bool:
        return bool(self.rng.random() < p)

    def half(self, buf: str, h: int) -> tuple[int, int]:
        n = self.depth[buf] // 2
        return h * n, n

    def _mem(self, opcode: int, mem: int, sram: int, dram_el: int, y: int, x: int,
             stride: int, pads=(0, 0, 0, 0), **deps: int) -> MemInsn:
        return MemInsn(opcode=opcode, memory_type=mem, sram_base=sram, dram_base=dram_el,
                       y_size=y, x_size=x, x_stride=stride, y_pad_0=pads[0], y_pad_1=pads[1],
                       x_pad_0=pads[2], x_pad_1=pads[3], **deps)

    def data_el(self, mem: int) -> int:
        """Element index of the data area's start for memory type ``mem``."""
        return (self.base + self.lay.data) // self.elem[mem]

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
            y, x, pads, stride, total, span = 1, 1, (0, 0, 0, 0), 1, 1, 1
        sram = lo + self.r(0, n - total)
        dram = self.data_el(mem) + self.r(0, avail - span)
        return self._mem(Opcode.LOAD, mem, sram, dram, y, x, stride, pads)

    def kernel(self, uops: list[Uop], kernels: list) -> MemInsn:
        """A UOP LOAD placing ``uops`` at a random micro-op buffer position; sets self.kbase.

        The micro-ops go to ``kernels`` (one entry per instruction made here).
        """
        self.uops_used += len(uops)
        if self.uops_used * UOP_BYTES > UOP_AREA_BYTES:
            raise ValueError("the micro-op area is full")
        depth = self.depth["uop"]
        pads = (0, 0, 0, 0)
        if self.edge and self.chance(0.3):
            pads = (self.r(0, 1), self.r(0, 1), self.r(0, 2), self.r(0, 2))
            width = pads[2] + len(uops) + pads[3]
            if (pads[0] + 1 + pads[1]) * width > depth:
                pads = (0, 0, 0, 0)
        width = pads[2] + len(uops) + pads[3]
        total = (pads[0] + 1 + pads[1]) * width
        sram = self.r(0, depth - total)
        # the micro-ops sit after the top padding row and the left pad
        self.kbase = sram + pads[0] * width + pads[2]
        kernels.append(list(uops))
        return self._mem(Opcode.LOAD, MemId.UOP, sram, 0, 1, len(uops), len(uops), pads)

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

    def _empty_nest(self, fields: dict) -> dict:
        """Edge programs: sometimes make a nest run zero times (one of three ways)."""
        if self.edge and self.chance(0.25):
            how = self.r(0, 2)
            if how == 0:
                fields["iter_out"] = 0
            elif how == 1:
                fields["iter_in"] = 0
            else:
                fields["uop_end"] = fields["uop_bgn"] - self.r(0, min(1, fields["uop_bgn"]))
        return fields

    def gemm(self, h: int, reset: bool, kernels: list) -> list:
        acc, inp, wgt = self.half("acc", h), self.half("inp", h), self.half("wgt", h)
        io, ii, f, idx = self.loops(self.r(1, 4), {"dst": acc, "src": inp, "wgt": wgt})
        uops = [Uop(dst_idx=u["dst"], src_idx=u["src"], wgt_idx=u["wgt"]) for u in idx]
        load = self.kernel(uops, kernels)
        fields = self._empty_nest(dict(
            uop_bgn=self.kbase, uop_end=self.kbase + len(uops), iter_out=io, iter_in=ii))
        insn = GemmInsn(opcode=Opcode.GEMM, reset_reg=int(reset), **fields,
                        dst_factor_out=f["dst"][0], dst_factor_in=f["dst"][1],
                        src_factor_out=f["src"][0], src_factor_in=f["src"][1],
                        wgt_factor_out=f["wgt"][0], wgt_factor_in=f["wgt"][1])
        kernels.append(None)
        return [load, insn]

    def alu(self, h: int, kernels: list) -> list:
        acc = self.half("acc", h)
        io, ii, f, idx = self.loops(self.r(1, 3), {"dst": acc, "src": acc})
        uops = [Uop(dst_idx=u["dst"], src_idx=u["src"]) for u in idx]
        load = self.kernel(uops, kernels)
        op = ALU_OPS[self.r(0, len(ALU_OPS) - 1)]
        use_imm = int(self.rng.random() < 0.5)
        if op != AluOp.SHR:
            imm = self.r(-(1 << 15), (1 << 15) - 1)
        elif self.edge:  # each kind of shift equally often: right, left, >= 32, <= -32
            imm = [self.r(0, 31), self.r(-31, -1), self.r(32, 99), self.r(-99, -32)][self.r(0, 3)]
        else:
            imm = self.r(-40, 40)
        fields = self._empty_nest(dict(
            uop_bgn=self.kbase, uop_end=self.kbase + len(uops), iter_out=io, iter_in=ii))
        insn = AluInsn(opcode=Opcode.ALU, **fields, dst_factor_out=f["dst"][0],
                       dst_factor_in=f["dst"][1], src_factor_out=f["src"][0],
                       src_factor_in=f["src"][1], alu_opcode=int(op), use_imm=use_imm,
                       imm=imm if use_imm else 0)
        kernels.append(None)
        return [load, insn]

    def store(self, h: int) -> MemInsn:
        lo, n = self.half("acc", h)  # OUT has as many entries as ACC
        e = self.elem[MemId.OUT]
        y, x = self.r(1, 3), self.r(1, 4)
        y = min(y, max(1, n // x))
        stride = self.r(x, x + 3)
        if self.edge and y > 1 and self.chance(0.25):
            stride = self.r(0, x - 1)  # overlapping rows: later rows win
        span = (y - 1) * stride + x
        if (self.out_used + span) * e > OUT_BYTES:
            self.out_used = 0  # reuse the output area: later stores overwrite, in order
        dram = (self.base + self.lay.out) // e + self.out_used
        self.out_used += span
        sram = lo + self.r(0, n - y * x)
        return self._mem(Opcode.STORE, MemId.OUT, sram, dram, y, x, stride)

    def edge_load(self, h: int) -> MemInsn:
        """A LOAD of padding only (y_size 0), or one with the largest pads that fit."""
        mem, buf = [(MemId.INP, "inp"), (MemId.WGT, "wgt")][self.r(0, 1)]
        lo, n = self.half(buf, h)
        if self.chance(0.5):
            pads = (self.r(0, 2), self.r(0, 2), self.r(0, 2), self.r(0, 2))
            y, x = 0, self.r(1, 3)
        else:
            pads = (15, 0, 0, 0) if self.chance(0.5) else (0, 0, 0, 15)
            y, x = 1, 1
        total = (pads[0] + y + pads[1]) * (pads[2] + x + pads[3])
        if total > n:
            y, x, pads, total = 1, 1, (0, 0, 0, 0), 1
        sram = lo + self.r(0, n - total)
        return self._mem(Opcode.LOAD, mem, sram, self.data_el(mem), y, x, x, pads)

    def junk_noop(self, engine: str) -> MemInsn:
        """A sync no-op whose size, pads and addresses are non-zero (they must be ignored)."""
        insn = noop(engine, sram_base=self.r(0, 0xFFFF), dram_base=self.r(0, 0xFFFFFFFF),
                    y_size=self.r(0, 5), x_stride=self.r(0, 9), y_pad_0=self.r(0, 15),
                    x_pad_1=self.r(0, 15))
        if engine == "store":  # the memory type of a STORE no-op does not matter either
            insn = insn.replace(memory_type=self.r(0, 7))
        return insn

    @staticmethod
    def flag(insns: list, index: int, **deps: int) -> None:
        insns[index] = insns[index].replace(**deps)

    # ------------------------------------------------------------ programs
    def generate(self, kind: str) -> Case:
        if kind in ("normal", "edge"):
            self.edge = kind == "edge"
            insns, kernels = self.iterations()
        elif kind.startswith("flood-"):
            insns, kernels = self.flood(kind.removeprefix("flood-"))
        elif kind.startswith("fill-"):
            insns, kernels = self.fill(kind.removeprefix("fill-"), TOKEN_QUEUE_DEPTH)
        elif kind == "fault-BUS_ERROR":
            insns, kernels = self.bus_error()
        elif kind.startswith("fault-"):
            insns, kernels = self.fault(kind.removeprefix("fault-"))
        elif kind in ("chain", "late-pop", "reach", "over-SRAM"):
            insns, kernels = getattr(self, kind.lower().replace("-", "_"))()
        elif kind == "over-DRAM":
            if self.mem_size is None:
                raise ValueError("an over-DRAM program needs the device's memory size")
            insns, kernels = self.over_dram(self.mem_size)
        else:
            raise ValueError(f"kind must be one of {', '.join(KINDS)}, not {kind!r}")
        data = self.rng.integers(0, 256, DATA_BYTES, dtype=np.uint8).tobytes()
        return Case(self.cfg, self.seed, kind, self.base, insns, kernels, data, self.notes)

    def prologue(self, kernels: list) -> list[Insn]:
        """Zero every INP/WGT/ACC entry and write OUT (ALU ADD 0 over all of ACC).

        No result then depends on scratchpad contents from before the program.
        """
        c = self.cfg
        zero_el = {m: (self.base + self.lay.zeros) // e for m, e in self.elem.items()}
        stream = [
            self._mem(Opcode.LOAD, MemId.INP, 0, zero_el[MemId.INP], 1, c.INP_BUFF_DEPTH,
                      c.INP_BUFF_DEPTH),
            self._mem(Opcode.LOAD, MemId.WGT, 0, zero_el[MemId.WGT], 1, c.WGT_BUFF_DEPTH,
                      c.WGT_BUFF_DEPTH, push_next_dep=1),
            self._mem(Opcode.LOAD, MemId.ACC, 0, zero_el[MemId.ACC], 1, c.ACC_BUFF_DEPTH,
                      c.ACC_BUFF_DEPTH, pop_prev_dep=1)]
        kernels += [None, None, None]
        self.edge, edge = False, self.edge  # the prologue's kernel is never padded
        stream.append(self.kernel([Uop(dst_idx=0, src_idx=0)], kernels))
        self.edge = edge
        stream.append(AluInsn(opcode=Opcode.ALU, uop_bgn=self.kbase, uop_end=self.kbase + 1,
                              iter_out=c.ACC_BUFF_DEPTH, iter_in=1, dst_factor_out=1,
                              src_factor_out=1, alu_opcode=int(AluOp.ADD), use_imm=1, imm=0))
        kernels.append(None)
        return stream

    def iterations(self) -> tuple[list[Insn], list]:
        """A ``normal`` (or ``edge``) program: see the module docstring."""
        kernels: list = []
        stream = self.prologue(kernels)
        iterations = self.r(2, 6)
        self.notes = [f"{iterations} iterations"]
        for t in range(iterations):
            h = t % 2
            # load engine: INP/WGT into half h, after compute released it (t >= 2)
            loads: list = []
            for _ in range(self.r(1, 3)):
                if self.rng.random() < 0.5:
                    loads.append(self.rand_load(MemId.INP, "inp", h))
                else:
                    loads.append(self.rand_load(MemId.WGT, "wgt", h))
            if self.edge and self.chance(0.3):
                loads.append(self.edge_load(h))
            if self.rng.random() < 0.3:  # a sync no-op carrying the tokens
                loads.append(self.junk_noop("load") if self.edge else noop("load"))
            if t >= 2:
                self.flag(loads, 0, pop_next_dep=1)
            self.flag(loads, -1, push_next_dep=1)
            # compute engine: optional ACC loads, GEMMs, ALUs on half h
            comp: list = []
            comp_k: list = []
            for _ in range(self.r(0, 1)):
                mem = MemId.ACC if self.rng.random() < 0.6 else MemId.ACC_8BIT
                comp.append(self.rand_load(mem, "acc", h))
                comp_k.append(None)
            for k in range(self.r(1, 2)):
                comp += self.gemm(h, reset=(k == 0 and self.rng.random() < 0.3), kernels=comp_k)
            for _ in range(self.r(0, 2)):
                comp += self.alu(h, comp_k)
            if self.rng.random() < 0.3:
                comp.append(self.junk_noop("compute") if self.edge else noop("compute"))
                comp_k.append(None)
            self.flag(comp, 0, pop_prev_dep=1, **({"pop_next_dep": 1} if t >= 2 else {}))
            self.flag(comp, -1, push_prev_dep=1, push_next_dep=1)
            # store engine: OUT half h once compute is done with it
            stores = [self.store(h) for _ in range(self.r(1, 2))]
            if self.rng.random() < 0.3:
                stores.append(self.junk_noop("store") if self.edge
                              else noop("store", memory_type=MemId.OUT))
            self.flag(stores, 0, pop_prev_dep=1)
            self.flag(stores, -1, push_prev_dep=1)
            # interleave the engines' instructions in the stream, in a random merge
            queues = [[(i, None) for i in loads], list(zip(comp, comp_k, strict=True)),
                      [(i, None) for i in stores]]
            while any(queues):
                live = [q for q in queues if q]
                q = live[self.r(0, len(live) - 1)]
                insn, kernel = q.pop(0)
                stream.append(insn)
                kernels.append(kernel)
        stream.append(GemmInsn(opcode=Opcode.FINISH))
        kernels.append(None)
        return stream, kernels

    def flood(self, engine: str) -> tuple[list[Insn], list]:
        """``engine`` waits for a slow producer while FLOOD of its no-ops queue up behind it."""
        c = self.cfg
        kernels: list = []
        if engine in ("load", "store"):
            # producer: compute, a long GEMM (resetting ACC entry 0 over and over)
            flag = "push_prev_dep" if engine == "load" else "push_next_dep"
            pop = "pop_next_dep" if engine == "load" else "pop_prev_dep"
            n = 16 * FLOOD
            stream: list[Insn] = [self.kernel([Uop()], kernels)]
            stream.append(GemmInsn(opcode=Opcode.GEMM, reset_reg=1, uop_bgn=self.kbase,
                                   uop_end=self.kbase + 1, iter_out=n // 64, iter_in=64,
                                   **{flag: 1}))
            kernels.append(None)
        elif engine == "compute":
            # producer: the load engine, whole-buffer WGT loads taking many bus beats
            pop = "pop_prev_dep"
            nbytes = c.WGT_BUFF_DEPTH * c.WGT_ELEM_BYTES
            count = max(1, min(64, -(-16 * FLOOD * c.BUS_BYTES // nbytes)))
            zero = (self.base + self.lay.zeros) // c.WGT_ELEM_BYTES
            stream = [self._mem(Opcode.LOAD, MemId.WGT, 0, zero, 1, c.WGT_BUFF_DEPTH,
                                c.WGT_BUFF_DEPTH) for _ in range(count)]
            self.flag(stream, -1, push_next_dep=1)
            kernels += [None] * count
        else:
            raise ValueError(f"engine must be one of {', '.join(ENGINES)}, not {engine!r}")
        stream.append(noop(engine, **{pop: 1}))
        stream += [noop(engine) for _ in range(FLOOD)]
        stream.append(GemmInsn(opcode=Opcode.FINISH))
        kernels += [None] * (FLOOD + 2)
        self.notes = [f"{engine} blocked behind {FLOOD} no-ops"]
        return stream, kernels

    def fill(self, queue: str, pushes: int, pops: int | None = None) -> tuple[list[Insn], list]:
        """``pushes`` tokens on ``queue`` before its consumer (after as many no-ops) pops them.

        With ``pops`` not given, every token is popped, and then the consumer
        asks for one more through the reverse queue and waits for it on the
        now empty queue.  The producer's and the consumer's instructions
        alternate in the stream, so neither engine's command queue can hold
        up the other's instructions.
        """
        producer, push, consumer, pop = QUEUE_ENDS[queue]
        prod = [noop(producer, **{push: 1}) for _ in range(pushes)]
        cons = [noop(consumer) for _ in range(pushes)] + \
            [noop(consumer, **{pop: 1}) for _ in range(pushes if pops is None else pops)]
        self.notes = [f"{pushes} tokens on {queue}"]
        if pops is None:
            reverse = next(q for q, ends in QUEUE_ENDS.items()
                           if ends[0] == consumer and ends[2] == producer)
            cons[-1] = cons[-1].replace(**{QUEUE_ENDS[reverse][1]: 1})
            cons.append(noop(consumer, **{pop: 1}))
            prod.append(noop(producer, **{QUEUE_ENDS[reverse][3]: 1, push: 1}))
            self.notes.append(f"one more through {reverse}")
        stream: list[Insn] = []
        for k in range(max(len(prod), len(cons))):
            stream += prod[k:k + 1] + cons[k:k + 1]
        stream.append(GemmInsn(opcode=Opcode.FINISH))
        return stream, [None] * len(stream)

    # ------------------------------------------------------------ faults
    def fault(self, code: str) -> tuple[list[Insn], list]:
        """A program with exactly one fault of class ``code`` (an ErrorCode name)."""
        if code not in FAULTS:
            raise ValueError(f"fault must be one of {', '.join(FAULTS)}, not {code!r}")
        if code == "TOKEN_OVERFLOW":
            queue = QUEUES[self.r(0, len(QUEUES) - 1)]
            insns, kernels = self.fill(queue, TOKEN_QUEUE_DEPTH + 1, pops=0)
            self.notes.append("none popped")
            return insns, kernels
        insns, kernels = self.iterations()
        inject: Callable = getattr(self, f"_fault_{code.lower()}")
        where = inject(insns, kernels)
        self.notes.append(f"{code} at instruction {where}")
        return insns, kernels

    def _pick(self, insns: list[Insn], test: Callable[[Insn], bool]) -> int:
        choices = [i for i, insn in enumerate(insns) if test(insn)]
        return choices[self.r(0, len(choices) - 1)]

    @staticmethod
    def _moves_data(insn: Insn) -> bool:
        return insn.opcode in (Opcode.LOAD, Opcode.STORE) and insn.x_size > 0

    def _fault_bad_opcode(self, insns, kernels) -> int:
        i = self._pick(insns, lambda insn: True)
        insns[i] = Insn(opcode=self.r(5, 7))
        kernels[i] = None
        return i

    def _fault_bad_memory_type(self, insns, kernels) -> int:
        # a STORE, or a LOAD the compute engine runs (so that its flags keep their meaning)
        i = self._pick(insns, lambda insn: self._moves_data(insn)
                       and dispatch_engine(insn) != "load")
        insn = insns[i]
        if insn.opcode == Opcode.STORE:
            bad = [m for m in range(8) if m != MemId.OUT][self.r(0, 6)]
        else:
            bad = (MemId.OUT, 6, 7)[self.r(0, 2)]
            kernels[i] = None
        insns[i] = insn.replace(memory_type=bad)
        return i

    def _fault_sram_range(self, insns, kernels) -> int:
        i = self._pick(insns, lambda insn: self._moves_data(insn)
                       or insn.opcode in (Opcode.GEMM, Opcode.ALU))
        insn = insns[i]
        c = self.cfg
        if insn.opcode == Opcode.LOAD:
            buf = {MemId.INP: "inp", MemId.WGT: "wgt", MemId.UOP: "uop"}.get(insn.memory_type,
                                                                            "acc")
            total = (insn.y_pad_0 + insn.y_size + insn.y_pad_1) * \
                (insn.x_pad_0 + insn.x_size + insn.x_pad_1)
            insns[i] = insn.replace(sram_base=min(0xFFFF, self.depth[buf] - total
                                                  + self.r(1, total)))
        elif insn.opcode == Opcode.STORE:
            total = insn.y_size * insn.x_size
            insns[i] = insn.replace(sram_base=min(0xFFFF, c.OUT_BUFF_DEPTH - total
                                                  + self.r(1, total)))
        elif self.chance(0.5):
            insns[i] = insn.replace(uop_end=c.UOP_BUFF_DEPTH + self.r(1, 2),
                                    uop_bgn=min(insn.uop_bgn, c.UOP_BUFF_DEPTH - 1),
                                    iter_out=max(1, insn.iter_out), iter_in=max(1, insn.iter_in))
        else:
            # a loop factor that walks the destination past the end of ACC
            insns[i] = insn.replace(iter_out=max(3, insn.iter_out), iter_in=max(1, insn.iter_in),
                                    uop_end=max(insn.uop_end, insn.uop_bgn + 1),
                                    dst_factor_out=c.ACC_BUFF_DEPTH - 1)
        return i

    def _fault_dram_range(self, insns, kernels) -> int:
        i = self._pick(insns, lambda insn: self._moves_data(insn)
                       and insn.memory_type != MemId.UOP)
        insn = insns[i]
        # beyond every device memory the backends use (at most 4 GiB)
        elem = self.elem.get(insn.memory_type, 1)
        insns[i] = insn.replace(dram_base=(1 << 32) // elem - self.r(0, 1) * insn.x_size)
        return i

    def _fault_bad_alu_opcode(self, insns, kernels) -> int:
        i = self._pick(insns, lambda insn: insn.opcode == Opcode.ALU)
        insns[i] = insns[i].replace(alu_opcode=self.r(5, 7))
        return i

    def _fault_bad_dep_flag(self, insns, kernels) -> int:
        i = self._pick(insns, lambda insn: dispatch_engine(insn) in ("load", "store"))
        engine = dispatch_engine(insns[i])
        flags = ("pop_prev_dep", "push_prev_dep") if engine == "load" else \
            ("pop_next_dep", "push_next_dep")
        insns[i] = insns[i].replace(**{flags[self.r(0, 1)]: 1})
        return i

    def _fault_store_pad(self, insns, kernels) -> int:
        i = self._pick(insns, lambda insn: insn.opcode == Opcode.STORE and insn.x_size > 0)
        pad = ("y_pad_0", "y_pad_1", "x_pad_0", "x_pad_1")[self.r(0, 3)]
        insns[i] = insns[i].replace(**{pad: self.r(1, 15)})
        return i

    def _fault_deadlock(self, insns, kernels) -> int:
        # drop one push of a queue whose every token is popped: its last pop waits forever
        pushes: dict[str, list[int]] = {q: [] for q in QUEUES}
        pops = dict.fromkeys(QUEUES, 0)
        for i, insn in enumerate(insns):
            for q, (prod, push, cons, pop) in QUEUE_ENDS.items():
                engine = dispatch_engine(insn)
                if engine == prod and getattr(insn, push):
                    pushes[q].append(i)
                if engine == cons and getattr(insn, pop):
                    pops[q] += 1
        full = [q for q in QUEUES if pushes[q] and len(pushes[q]) == pops[q]]
        q = full[self.r(0, len(full) - 1)]
        i = pushes[q][self.r(0, len(pushes[q]) - 1)]
        insns[i] = insns[i].replace(**{QUEUE_ENDS[q][1]: 0})
        return i

    def _fault_no_finish(self, insns, kernels) -> int:
        i = len(insns) - 1
        del insns[i]
        del kernels[i]
        return i


def generate(cfg: Config, seed: int, base: int, kind: str | None = None, *,
             version: int = VERSION, mem_size: int | None = None) -> Case:
    """The random case of ``seed`` for an arena at device byte address ``base``.

    ``kind`` is one of :data:`KINDS`; by default :func:`kind_of_seed` chooses (from the
    schedule of generator ``version``).  ``mem_size``: the device memory's bytes (an
    ``over-DRAM`` program's LOAD or STORE crosses its end).
    """
    kind = kind_of_seed(seed, version) if kind is None else kind
    return Generator(cfg, seed, base, mem_size).generate(kind)

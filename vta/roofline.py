"""The roofline: a lower bound in cycles for a layer or a program, from the configuration alone.

VTA has three engines and one DRAM bus; each resource has a rate fixed by the
configuration, so the work a layer must do gives a floor under its cycles:

=============  ==============================================================
resource       cycles at least
=============  ==============================================================
compute        GEMM micro-ops + accumulator resets + ALU micro-ops (one
               micro-op enters the compute pipeline per cycle, GEMM or ALU:
               they share it; a MUL instruction's enter every other cycle)
               + the compute engine's own LOADs (UOP, ACC, ACC_8BIT), which
               it waits for
load           INP and WGT bytes, at most one scratchpad entry per cycle and
               at most the bus width per cycle
store          OUT bytes, likewise
bus (read)     every byte loaded, at the bus width
bus (write)    every byte stored, at the bus width (AXI reads and writes use
               separate channels, so the two sides do not add up)
=============  ==============================================================

The bound is the largest of them, and the binding resource is the one that
gives it.  Nothing else is assumed: fixed costs (DRAM latency, instruction
issue, the first loads before anything can be computed) are what a measured
run spends above the bound.

A layer's *minimal work* (:func:`conv2d_work`, :func:`add_work`) is what
any schedule of it has to do on this ISA: every output entry reset once (a
GEMM always accumulates, so the ISA forces the reset), one GEMM micro-op per
(output entry, input-channel block, kernel position), each epilogue ALU step
once per output entry, the bias reaching the accumulator through one ADD per
entry; every input entry the kernel reads, every weight, the bias and every
output crossing the bus once.  A program's *issued work* (:func:`program_work`)
counts what its instructions actually ask for (reloads, padding, the
micro-op kernels), so the engines' busy time of a trace can be held against it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, fields

from .config import Config
from .isa import AluOp, Insn, MemId, Opcode

__all__ = ["RESOURCES", "Bound", "Work", "add_work", "bound", "conv2d_work", "program_work"]

#: The resources of :func:`bound`, in report order.
RESOURCES = ("compute", "load", "store", "bus read", "bus write")


@dataclass(frozen=True)
class Work:
    """Micro-ops and bytes of a layer or a program (see the module docstring).

    Attributes
    ----------
    gemm_uops : int
        GEMM micro-ops that multiply (one BATCH x BLOCK_IN x BLOCK_OUT product each).
    resets : int
        GEMM micro-ops that reset an accumulator entry.
    alu_uops : int
        ALU micro-op cycles (a MUL instruction of n micro-ops counts 2n - 1).
    inp_bytes, wgt_bytes : int
        Bytes loaded into INP and WGT (the load engine).
    uop_bytes, acc_bytes, acc8_bytes : int
        Bytes loaded into UOP, ACC (int32 entries) and ACC through ACC_8BIT
        (int8 lanes widened): the compute engine loads these itself.
    out_bytes : int
        Bytes stored from OUT.
    """

    gemm_uops: int = 0
    resets: int = 0
    alu_uops: int = 0
    inp_bytes: int = 0
    wgt_bytes: int = 0
    uop_bytes: int = 0
    acc_bytes: int = 0
    acc8_bytes: int = 0
    out_bytes: int = 0

    def __add__(self, other: Work) -> Work:
        return Work(*(getattr(self, f.name) + getattr(other, f.name) for f in fields(self)))

    @property
    def read_bytes(self) -> int:
        return (self.inp_bytes + self.wgt_bytes + self.uop_bytes + self.acc_bytes
                + self.acc8_bytes)

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


@dataclass(frozen=True)
class Bound:
    """The roofline of some :class:`Work` on one configuration.

    Attributes
    ----------
    work : Work
        What was bounded.
    resources : dict[str, float]
        Cycles each resource needs at least (:data:`RESOURCES`).
    """

    work: Work
    resources: dict[str, float]

    @property
    def cycles(self) -> int:
        """The bound: the largest resource's cycles, rounded up."""
        return math.ceil(max(self.resources.values()))

    @property
    def binding(self) -> str:
        """The resource that gives the bound (the first in :data:`RESOURCES` order on a tie)."""
        return max(RESOURCES, key=lambda r: (self.resources[r], -RESOURCES.index(r)))

    def of(self, measured: int | None) -> float | None:
        """``bound / measured``: the roofline's share of a run (None without cycles)."""
        if not measured:
            return None
        return self.cycles / measured

    def __add__(self, other: Bound) -> Bound:
        """Two pieces of work run one after the other: their resources' cycles add."""
        return Bound(self.work + other.work,
                     {r: self.resources[r] + other.resources[r] for r in RESOURCES})

    def as_dict(self) -> dict:
        return {"cycles": self.cycles, "binding": self.binding,
                "resources": {r: round(self.resources[r], 1) for r in RESOURCES},
                "work": self.work.as_dict()}


def _per_cycle(cfg: Config, entry_bytes: int) -> int:
    """Bytes a LOAD or STORE moves per cycle at most: one scratchpad entry, one bus word."""
    return min(cfg.BUS_BYTES, entry_bytes)


def bound(cfg: Config, work: Work) -> Bound:
    """The :class:`Bound` of ``work`` on ``cfg`` (see the module docstring)."""
    acc8_entry = cfg.BATCH * cfg.BLOCK_OUT
    compute = (work.gemm_uops + work.resets + work.alu_uops
               + work.uop_bytes / _per_cycle(cfg, cfg.UOP_ELEM_BYTES)
               + work.acc_bytes / _per_cycle(cfg, cfg.ACC_ELEM_BYTES)
               + work.acc8_bytes / _per_cycle(cfg, acc8_entry))
    load = (work.inp_bytes / _per_cycle(cfg, cfg.INP_ELEM_BYTES)
            + work.wgt_bytes / _per_cycle(cfg, cfg.WGT_ELEM_BYTES))
    store = work.out_bytes / _per_cycle(cfg, cfg.OUT_ELEM_BYTES)
    return Bound(work, {"compute": float(compute), "load": float(load), "store": float(store),
                        "bus read": work.read_bytes / cfg.BUS_BYTES,
                        "bus write": work.out_bytes / cfg.BUS_BYTES})


# ------------------------------------------------------------ layers
def _used(n_out: int, stride: int, pad: int, k: int, n_in: int) -> int:
    """Input rows (or columns) of ``n_in`` that some output reads (padding excluded)."""
    if k >= stride:  # the windows touch or overlap: one range
        lo = max(0, -pad)
        hi = min(n_in, (n_out - 1) * stride - pad + k)
        return max(0, hi - lo)
    used = set()
    for o in range(n_out):
        start = o * stride - pad
        used.update(i for i in range(start, start + k) if 0 <= i < n_in)
    return len(used)


def conv2d_work(cfg: Config, data_shape: Sequence[int], kernel_shape: Sequence[int],
                stride: Sequence[int] = (1, 1), padding: Sequence[int] = (0, 0), *,
                rows: int = 0, alu_steps: int = 0) -> Work:
    """Minimal work of a packed convolution (the shapes of :func:`vta.ops.conv2d_packed`).

    ``alu_steps`` is the number of ALU micro-op cycles per output entry after
    the accumulation (bias ADD, shift, clamps; :func:`vta.ops.conv2d_bound`
    counts an epilogue's); ``rows`` per-channel int32 rows (a bias: 1) reach
    the accumulator once.  A dense layer is the 1x1 convolution of a one-row
    image (:func:`vta.ops.dense`).
    """
    nb, cb, h, w = data_shape[:4]
    ob, _, kh, kw = kernel_shape[:4]
    sh, sw = stride
    ph, pw = padding
    oh = (h + 2 * ph - kh) // sh + 1
    ow = (w + 2 * pw - kw) // sw + 1
    entries = nb * ob * oh * ow
    used_rows, used_cols = _used(oh, sh, ph, kh, h), _used(ow, sw, pw, kw, w)
    return Work(gemm_uops=entries * cb * kh * kw, resets=entries,
                alu_uops=entries * alu_steps,
                inp_bytes=nb * cb * used_rows * used_cols * cfg.INP_ELEM_BYTES,
                wgt_bytes=ob * cb * kh * kw * cfg.WGT_ELEM_BYTES,
                acc_bytes=rows * ob * cfg.ACC_ELEM_BYTES,
                out_bytes=entries * cfg.OUT_ELEM_BYTES)


def add_work(cfg: Config, elems: int, alu_uops: int) -> Work:
    """Minimal work of an element-wise add of two int8 tensors on the ALU.

    ``elems`` entries of BATCH x BLOCK_OUT lanes; both operands reach the
    accumulator through ACC_8BIT loads, the entries then take ``alu_uops``
    ALU micro-op cycles in all (the operands' steps, the ADD, the rounding,
    shift and clamps), and the result is stored.
    """
    lanes = cfg.BATCH * cfg.BLOCK_OUT
    return Work(alu_uops=alu_uops, acc8_bytes=2 * elems * lanes,
                out_bytes=elems * cfg.OUT_ELEM_BYTES)


# ---------------------------------------------------------- programs
def _elem_bytes(cfg: Config, memory_type: int) -> int:
    if memory_type == MemId.ACC_8BIT:
        return cfg.BATCH * cfg.BLOCK_OUT
    if memory_type == MemId.UOP:
        return cfg.UOP_ELEM_BYTES
    return cfg.elem_bytes_of(MemId(memory_type).name)


_LOADED = {MemId.INP: "inp_bytes", MemId.WGT: "wgt_bytes", MemId.UOP: "uop_bytes",
           MemId.ACC: "acc_bytes", MemId.ACC_8BIT: "acc8_bytes"}


def program_work(cfg: Config, insns: Iterable[Insn]) -> Work:
    """The work an instruction stream issues: its micro-ops and the bytes its LOADs and STOREs move.

    A LOAD counts the bytes it reads from DRAM (padding is written but not
    read); instructions of undefined opcode or memory type count nothing.
    """
    totals = dict.fromkeys((f.name for f in fields(Work)), 0)
    for insn in insns:
        op = insn.opcode
        if op in (Opcode.GEMM, Opcode.ALU):
            n = insn.iter_out * insn.iter_in * max(0, insn.uop_end - insn.uop_bgn)
            if op == Opcode.ALU:
                # a MUL instruction issues its micro-ops every other cycle: 2n - 1 cycles
                totals["alu_uops"] += 2 * n - 1 if insn.alu_opcode == AluOp.MUL and n else n
            elif insn.reset_reg:
                totals["resets"] += n
            else:
                totals["gemm_uops"] += n
        elif op in (Opcode.LOAD, Opcode.STORE) and insn.x_size:
            mem = insn.memory_type
            if op == Opcode.STORE:
                if mem == MemId.OUT:
                    totals["out_bytes"] += insn.x_size * insn.y_size * cfg.OUT_ELEM_BYTES
            elif mem in _LOADED:
                totals[_LOADED[mem]] += insn.x_size * insn.y_size * _elem_bytes(cfg, mem)
    return Work(**totals)

"""Operators on VTA: int8 matmul / dense and conv2d, tiled and double-buffered.

Every operator takes NumPy arrays in the user's layout, packs them into VTA's
blocked layouts, builds one instruction stream with :class:`vta.runtime.CommandQueue`,
runs it on a :class:`vta.device.Device` and returns NumPy arrays.

Arithmetic (exact, as the hardware does it)::

    acc = sum(int8 * int8)        int32, wrapping modulo 2**32
    acc = acc + bias              if bias is given (int32 per output channel)
    acc = acc >> shift            arithmetic, if shift > 0
    acc = max(acc, 0)             if relu
    acc = min(max(acc, lo), hi)   if clip = (lo, hi)
    out = low 8 bits of acc       int8 (two's complement wrap, no saturation)

Layouts (upstream's packed layouts, ``b = BATCH``, ``bi = BLOCK_IN``, ``bo = BLOCK_OUT``)::

    activations NCHW{b}n{bi}c  (N/b, C/bi, H, W, b, bi)      int8
    weights     OIHW{bo}o{bi}i (O/bo, I/bi, KH, KW, bo, bi)  int8
    outputs     NCHW{b}n{bo}c  (N/b, O/bo, OH, OW, b, bo)    int8

How a convolution is scheduled
------------------------------
The output is cut into tiles of ``tob`` output-channel blocks x ``th`` rows x
``tw`` columns; the input channels into chunks of ``tcb`` blocks (a split
reduction when they do not all fit).  For each tile the compute engine resets
an ACC region, then for each chunk the load engine brings the chunk's input
window (one 2-D LOAD per channel block, the padding made by the LOAD's pad
fields) and weights, and one GEMM accumulates; an ALU epilogue and a STORE
finish the tile.  The scratchpads are split in halves used by alternate
chunks (INP, WGT) and alternate tiles (ACC/OUT): two virtual threads, so the
load engine fills one half while compute works on the other and store drains
the previous tile.  Dependency tokens (through the runtime's dep_push /
dep_pop) guard every reuse of a half; each stream starts by granting two free
halves and ends by taking them back, so the token queues are balanced at
every synchronize.  Before that, each stream loads what the compute engine
needs throughout: every micro-op kernel it will run (one UOP LOAD, when they
fit the micro-op buffer) and the whole bias (one ACC LOAD, kept at the top of
ACC).  The compute engine's own LOADs share the DRAM bus with the load
engine's weight bursts; made mid-stream they stalled compute by hundreds of
cycles each.

A chunk's GEMM work has four axes: output-channel blocks ``o``, rows ``y``,
columns ``x`` and input-channel blocks ``c``.  A GEMM's two loops run over two
of them (:attr:`ConvPlan.loops`) and its micro-op kernel enumerates the
others (the kernel positions of the GEMM outermost, then ``c``, ``o``, ``y``,
``x``), so that neighbouring micro-ops never write the same destination (the
runtime's read-after-write rule).  The RTL reads a kernel's micro-ops once
before it runs the GEMM, so long loops over a short kernel cost least.  Each
chunk runs one GEMM per kernel position or one GEMM for all of them
(:attr:`ConvPlan.split_kernel`).

The planner (:func:`plan_conv2d`) predicts the RTL's cycles of every tiling
(:func:`predict_cycles`: per step, the load engine's transfers against the
compute engine's micro-ops, plus what each instruction costs beyond them)
and, among the plans within 3% of the best prediction, takes the one the
golden model runs fastest; a tuning log (:mod:`vta.tune`) overrides it with
the plan measured fastest on the RTL.  :func:`conv2d_bound` gives the
roofline of a layer (:mod:`vta.roofline`).  Matmul and dense are the 1x1
convolution of a one-row image whose columns are the rows of the left
operand.

Element-wise add (a residual connection) runs on the ALU alone::

    acc = (a << a_lshift) + (b << b_lshift)   int8 lanes sign-extended (ACC_8BIT loads)
    acc = acc + offset                         16-bit immediate (e.g. a rounding offset)
    acc = acc >> shift, max(acc, 0) if relu, clip, low 8 bits, as above

Both operands are cut into tiles of a quarter of the ACC buffer: the compute
engine loads the tile of ``a`` and of ``b`` into one ACC half (LOADs of ACC
belong to the compute stage), runs the ALU steps, and the store engine drains
the half while compute fills the other one.  ``emit_add`` also takes any ALU
steps per operand and after the sum (a fixed-point add with zero points).

General epilogues (:class:`Epilogue`, for :func:`emit_conv2d`): per-channel
int32 rows (a bias, multipliers, shifts, corrections; kept at the top of the
accumulator for the whole stream when they fit, else loaded beside each
tile), ``ADD`` of a row over output rectangles, then ALU steps with
immediates or with a row as the tensor source (``MUL``, ``SHR`` per channel).

Pooling (:func:`emit_pool2d`) runs on the ALU too: input rows loaded into the
accumulator (``ACC_8BIT``), one ``MAX`` or ``ADD`` per window position over
the outputs whose window has that position inside the input, then ALU steps.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import roofline
from .config import Config
from .driver.host import Buffer, RunStats
from .isa import AluOp, MemId
from .runtime import _MAX_16 as _MAX_STRIDE  # LOAD/STORE strides: 16-bit fields
from .runtime import (
    COMPUTE_STAGE,
    LOAD_STAGE,
    MODE_ALU,
    MODE_GEMM,
    STORE_STAGE,
    CommandQueue,
)
from .tune import log as tuning_log

__all__ = [
    "Epilogue",
    "PoolPlan",
    "Residual",
    "add",
    "add_bound",
    "conv2d",
    "conv2d_bound",
    "conv2d_output_shape",
    "conv2d_packed",
    "dense",
    "dense_bound",
    "emit_add",
    "emit_conv2d",
    "emit_pool2d",
    "matmul",
    "pack_nchw",
    "pack_oihw",
    "plan_conv2d",
    "plan_pool2d",
    "pool2d_bound",
    "unpack_nchw",
]

_LOOP_MAX = (1 << 14) - 1
_IMM_MIN, _IMM_MAX = -(1 << 15), (1 << 15) - 1


# --------------------------------------------------------------- packing
#: Upstream's ResNet-18 benchmark layers (batch 1): name -> (H, W, C_in, C_out, kernel, pad,
#: stride), from TVM's vta/tests/python/integration/test_benchmark_topi_conv2d.py.
RESNET18_LAYERS: dict[str, tuple[int, int, int, int, int, int, int]] = {
    "C2": (56, 56, 64, 64, 3, 1, 1),
    "C3": (56, 56, 64, 128, 3, 1, 2),
    "C4": (56, 56, 64, 128, 1, 0, 2),
    "C5": (28, 28, 128, 128, 3, 1, 1),
    "C6": (28, 28, 128, 256, 3, 1, 2),
    "C7": (28, 28, 128, 256, 1, 0, 2),
    "C8": (14, 14, 256, 256, 3, 1, 1),
    "C9": (14, 14, 256, 512, 3, 1, 2),
    "C10": (14, 14, 256, 512, 1, 0, 2),
    "C11": (7, 7, 512, 512, 3, 1, 1),
}


def _ceil_to(n: int, unit: int) -> int:
    return -(-n // unit) * unit


def pack_nchw(data: np.ndarray, cfg: Config) -> np.ndarray:
    """NCHW int8 -> packed (N/b, C/bi, H, W, b, bi), zero-padding N and C up to the blocks."""
    data = _as_int8("data", data, 4)
    n, c, h, w = data.shape
    b, bi = cfg.BATCH, cfg.BLOCK_IN
    padded = np.zeros((_ceil_to(n, b), _ceil_to(c, bi), h, w), dtype=np.int8)
    padded[:n, :c] = data
    return np.ascontiguousarray(
        padded.reshape(padded.shape[0] // b, b, padded.shape[1] // bi, bi, h, w)
        .transpose(0, 2, 4, 5, 1, 3))


def unpack_nchw(packed: np.ndarray, n: int | None = None, c: int | None = None) -> np.ndarray:
    """Packed (N/b, C/bc, H, W, b, bc) -> NCHW, cropped to ``n`` images and ``c`` channels."""
    if packed.ndim != 6:
        raise ValueError(f"packed activations must have 6 dimensions, not {packed.ndim}")
    nb, cb, h, w, b, bc = packed.shape
    out = packed.transpose(0, 4, 1, 5, 2, 3).reshape(nb * b, cb * bc, h, w)
    return np.ascontiguousarray(out[:n, :c])


def pack_oihw(kernel: np.ndarray, cfg: Config) -> np.ndarray:
    """OIHW int8 -> packed (O/bo, I/bi, KH, KW, bo, bi), zero-padding O and I up to the blocks."""
    kernel = _as_int8("kernel", kernel, 4)
    o, i, kh, kw = kernel.shape
    bo, bi = cfg.BLOCK_OUT, cfg.BLOCK_IN
    padded = np.zeros((_ceil_to(o, bo), _ceil_to(i, bi), kh, kw), dtype=np.int8)
    padded[:o, :i] = kernel
    return np.ascontiguousarray(
        padded.reshape(padded.shape[0] // bo, bo, padded.shape[1] // bi, bi, kh, kw)
        .transpose(0, 2, 4, 5, 1, 3))


def _as_int8(name: str, array: Any, ndim: int) -> np.ndarray:
    array = np.asarray(array)
    if array.ndim != ndim:
        raise ValueError(f"{name} must have {ndim} dimensions, not {array.ndim} "
                         f"(shape {array.shape})")
    if array.dtype != np.int8:
        raise TypeError(f"{name} must be an int8 array, not {array.dtype}")
    return array


def _pair(name: str, value: int | Sequence[int], lo: int, hi: int) -> tuple[int, int]:
    pair = (value, value) if np.isscalar(value) else tuple(value)
    if len(pair) != 2:
        raise ValueError(f"{name} must be an integer or a pair, not {value!r}")
    for v in pair:
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not lo <= v <= hi:
            raise ValueError(f"{name} must be in {lo}..{hi}, not {value!r}")
    return int(pair[0]), int(pair[1])


# --------------------------------------------------------------- epilogue
@dataclass(frozen=True)
class Epilogue:
    """The ALU steps that finish a convolution tile after its accumulation.

    Attributes
    ----------
    rows : int
        Per-output-channel int32 rows the operator loads into the accumulator
        beside each tile: a buffer of ``rows`` x (O/bo, BATCH, BLOCK_OUT) int32,
        row-major (e.g. a bias, per-channel multipliers and shifts).
    regions : tuple of (row, oh0, oh1, ow0, ow1)
        ``ADD`` of that row over the output rectangle ``[oh0, oh1) x [ow0, ow1)``
        (e.g. a zero point's correction where the window overlaps the
        padding), done first.
    steps : tuple of (AluOp, value, from_row)
        ALU ops over the whole tile, in order: with the immediate ``value``, or
        (``from_row``) the tensor op whose source is row ``value``.
    """

    rows: int = 0
    regions: tuple[tuple[int, int, int, int, int], ...] = ()
    steps: tuple[tuple[AluOp, int, bool], ...] = ()

    @property
    def alu_steps(self) -> list[tuple[AluOp, int]]:
        """The immediate steps (for the old bias / shift / ReLU / clip form)."""
        return [(op, v) for op, v, row in self.steps if not row]

    def check(self) -> None:
        """ValueError naming a step whose immediate or row is out of range."""
        for op, value, row in self.steps:
            if row and not 0 <= value < self.rows:
                raise ValueError(f"epilogue step {op.name} reads row {value}, but there are "
                                 f"{self.rows} rows")
            if not row and not _IMM_MIN <= value <= _IMM_MAX:
                raise ValueError(f"epilogue step {op.name} {value}: ALU immediates are 16-bit")
        for region in self.regions:
            if not 0 <= region[0] < self.rows:
                raise ValueError(f"epilogue region {region} reads a row beyond {self.rows}")


def _simple_epilogue(bias: bool, shift: int, relu: bool, clip: tuple[int, int] | None
                     ) -> Epilogue:
    steps = [(AluOp.ADD, 0, True)] if bias else []
    if shift:
        steps.append((AluOp.SHR, shift, False))
    if relu:
        steps.append((AluOp.MAX, 0, False))
    if clip is not None:
        steps += [(AluOp.MAX, clip[0], False), (AluOp.MIN, clip[1], False)]
    return Epilogue(int(bias), (), tuple(steps))


def _epilogue(bias: np.ndarray | None, n_out: int, shift: int, relu: bool,
              clip: tuple[int, int] | None) -> tuple[Epilogue, np.ndarray | None]:
    if isinstance(shift, bool) or not isinstance(shift, (int, np.integer)) or not 0 <= shift <= 31:
        raise ValueError(f"shift must be an integer in 0..31, not {shift!r}")
    if clip is not None:
        lo, hi = clip
        for v in (lo, hi):
            if not _IMM_MIN <= int(v) <= _IMM_MAX:
                raise ValueError(f"clip bounds must be in {_IMM_MIN}..{_IMM_MAX} (16-bit ALU "
                                 f"immediates), not {clip!r}")
        if lo > hi:
            raise ValueError(f"clip must be (lo, hi) with lo <= hi, not {clip!r}")
        clip = (int(lo), int(hi))
    if bias is not None:
        bias = np.asarray(bias)
        if bias.shape != (n_out,):
            raise ValueError(f"bias must have shape ({n_out},) (one value per output channel), "
                             f"not {bias.shape}")
        if not np.issubdtype(bias.dtype, np.integer):
            raise TypeError(f"bias must be an integer array, not {bias.dtype}")
        if bias.min(initial=0) < -(1 << 31) or bias.max(initial=0) >= 1 << 31:
            raise ValueError("bias values must fit int32")
        bias = bias.astype(np.int32)
    return _simple_epilogue(bias is not None, int(shift), bool(relu), clip), bias


# ---------------------------------------------------------------- tiling
#: The axes of a chunk's GEMM work: output-channel blocks, rows, columns, input-channel blocks.
GEMM_AXES = "oyxc"


@dataclass(frozen=True)
class ConvPlan:
    """How a packed convolution is tiled and scheduled (see the module docstring).

    Attributes
    ----------
    nb, cb, h, w, ob, kh, kw, oh, ow : int
        Packed shape: batch blocks, input-channel blocks, input rows and
        columns, output-channel blocks, kernel size, output rows and columns.
    sh, sw, ph, pw : int
        Strides and paddings.
    tob, th, tw, tcb : int
        Tile: output-channel blocks, output rows, output columns, input-channel
        blocks per reduction chunk (divides ``cb``).
    split_kernel : bool
        One GEMM per kernel position (else one GEMM per chunk whose kernel
        enumerates every position).
    loops : str
        The two axes of :data:`GEMM_AXES` that a GEMM's loops run over (outer,
        then inner); its micro-op kernel enumerates the others (kernel
        positions outermost, then input-channel blocks, output-channel blocks,
        rows, columns).  The RTL reads a kernel's micro-ops once before the
        GEMM runs, so long loops over a short kernel cost least.
    """

    nb: int
    cb: int
    h: int
    w: int
    ob: int
    kh: int
    kw: int
    oh: int
    ow: int
    sh: int
    sw: int
    ph: int
    pw: int
    tob: int
    th: int
    tw: int
    tcb: int
    split_kernel: bool = True
    loops: str = "yc"

    @property
    def tiles(self) -> int:
        """Output tiles (each one ACC half's worth of work)."""
        return (self.nb * -(-self.ob // self.tob) * -(-self.oh // self.th)
                * -(-self.ow // self.tw))

    @property
    def chunks(self) -> int:
        """Reduction chunks per tile."""
        return self.cb // self.tcb

    @property
    def tiling(self) -> dict[str, Any]:
        """The choices of this plan (what :func:`plan_conv2d` takes as ``tiling``)."""
        return {"tob": self.tob, "th": self.th, "tw": self.tw, "tcb": self.tcb,
                "split_kernel": self.split_kernel, "loops": self.loops}


def _candidates(n: int) -> list[int]:
    """Tile sizes worth trying for an axis of ``n``: ceil(n / k), ascending."""
    return sorted({-(-n // k) for k in range(1, n + 1)})


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def conv2d_output_shape(h: int, w: int, kh: int, kw: int, stride: tuple[int, int],
                        padding: tuple[int, int]) -> tuple[int, int]:
    """Output rows and columns of a convolution."""
    oh = (h + 2 * padding[0] - kh) // stride[0] + 1
    ow = (w + 2 * padding[1] - kw) // stride[1] + 1
    return oh, ow


@dataclass(frozen=True)
class _Regions:
    """Scratchpad areas of a convolution: two halves of INP, WGT and ACC, and the bias."""

    inp_half: int
    wgt_half: int
    acc_half: int
    rows_base: int | None  # where the epilogue's rows stay for the stream (None: per tile)
    tile_rows: int  # rows each tile loads at the top of its ACC half (0: resident, or none)
    residual: bool = False  # a folded add: its operand's tile beside the last window, W_id atop

    def fits(self, tob: int, entries: int, window: int = 0) -> bool:
        """Whether a tile of ``entries`` (``tob`` channel blocks) fits an ACC half and its
        chunk's input ``window`` an INP half (with a folded add, beside the other operand's
        tile)."""
        return (entries + tob * self.tile_rows <= self.acc_half
                and window + (entries if self.residual else 0) <= self.inp_half)

    @property
    def wgt_cap(self) -> int:
        """Weight entries a chunk may use in a WGT half (a folded add keeps its top entry)."""
        return self.wgt_half - (1 if self.residual else 0)


def _regions(cfg: Config, ob: int, rows: int, residual: bool = False) -> _Regions:
    acc = min(cfg.ACC_BUFF_DEPTH, cfg.OUT_BUFF_DEPTH)
    resident = rows and rows * ob <= acc // 8  # every row at the top of ACC, loaded once
    return _Regions(cfg.INP_BUFF_DEPTH // 2, cfg.WGT_BUFF_DEPTH // 2,
                    min((acc - (rows * ob if resident else 0)) // 2, _LOOP_MAX),
                    acc - rows * ob if resident else None, 0 if resident else rows, residual)


def _gemm_axes(p: ConvPlan, tob: int, th: int, tw: int, tih: int,
               tiw: int) -> dict[str, tuple[int, int, int, int]]:
    """(extent, dst, src, wgt step) of each axis of a chunk's GEMM work."""
    khw = p.kh * p.kw
    return {"o": (tob, th * tw, 0, p.tcb * khw), "y": (th, tw, p.sh * tiw, 0),
            "x": (tw, 1, p.sw, 0), "c": (p.tcb, 0, tih * tiw, khw)}


def _kernel_ok(extent: dict[str, int], loops: str, group: int) -> bool:
    """Whether a GEMM kernel over the axes outside ``loops`` is free of hazards.

    Neighbouring micro-ops of a kernel must not write one destination
    (:meth:`vta.runtime.CommandQueue.uop_push`).  The kernel enumerates the
    positions of a group and the input-channel blocks (no destination step)
    outside the output axes, so it repeats destinations only when those
    repeat, after every run of output entries: that run needs three entries.
    """
    run = 1
    for a in "oyx":
        if a not in loops:
            run *= extent[a]
    repeats = group * (1 if "c" in loops else extent["c"])
    return repeats == 1 or run >= 3


# RTL cost model (cycles; the Verilator RTL, measured with `vta trace`): what an instruction
# costs beyond its micro-ops or its transfer, and a micro-op LOAD that waits behind the load
# engine's weight bursts on the shared bus (a kernel not preloaded).
_C_INSN = 7
_C_LOAD = 24
_C_STORE = 36
_C_KERNEL_LOAD = 400
_PAIRS = ("oy", "ox", "oc", "yx", "yc", "xc")  # loop pairs, outer first


def _loop_choices(tcb: int, tob: int, th: int, tw: int, group: int) -> list[str]:
    """Loop pairs for a tile's GEMMs, longest loops first (in :data:`_PAIRS` order among
    equals; the reduction ``c`` is the inner loop whenever it is a loop)."""
    e = (tob, th, tw, tcb)
    scored = []
    for i, (a, b, rest) in enumerate(((0, 1, (2,)), (0, 2, (1,)), (0, 3, (1, 2)),
                                      (1, 2, (0,)), (1, 3, (0, 2)), (2, 3, (0, 1)))):
        if e[a] > _LOOP_MAX or e[b] > _LOOP_MAX:
            continue
        run = math.prod(e[r] for r in rest)
        repeats = group * (1 if b == 3 else tcb)
        if repeats == 1 or run >= 3:  # _kernel_ok
            scored.append((-e[a] * e[b], i))
    scored.sort()
    return [_PAIRS[i] for _, i in scored]


def _sizes(n: int, t: int) -> list[tuple[int, int]]:
    """(size, count) of the tiles of an axis of ``n`` cut into tiles of ``t``."""
    full, rest = divmod(n, t)
    return ((t, full), (rest, 1)) if rest else ((t, full),)


class _Model:
    """The planner's RTL cost model for one layer (see :func:`predict_cycles`)."""

    def __init__(self, cfg: Config, shape: tuple, rows: int, alu_steps: int = 3,
                 residual: bool = False):
        (self.nb, self.cb, self.h, self.w, self.ob, self.kh, self.kw, self.oh, self.ow,
         self.sh, self.sw, self.ph, self.pw) = shape
        self.rows, self.alu_steps = rows, alu_steps
        self.regions = _regions(cfg, self.ob, rows, residual)
        bus = cfg.BUS_BYTES
        self.inp, self.wgt, self.acc, self.out = (
            max(1.0, cfg.elem_bytes_of(m) / bus) for m in ("INP", "WGT", "ACC", "OUT"))
        self.uop_depth = cfg.UOP_BUFF_DEPTH

    def cycles(self, tob_: int, th_: int, tw_: int, tcb: int, split: bool, loops: str) -> float:
        khw = self.kh * self.kw
        n_gemm = khw if split else 1
        group = 1 if split else khw
        chunks = self.cb // tcb
        tiles_pix = self.nb * -(-self.oh // th_) * -(-self.ow // tw_)
        total = 0.0
        first_load = None
        kernel_uops = 0
        epilogue = self.alu_steps + (1 if self.rows else 0)
        for (tob, n_o), (th, n_h), (tw, n_w) in itertools.product(
                _sizes(self.ob, tob_), _sizes(self.oh, th_), _sizes(self.ow, tw_)):
            entries = tob * th * tw
            tih, tiw = (th - 1) * self.sh + self.kh, (tw - 1) * self.sw + self.kw
            extent = {"o": tob, "y": th, "x": tw, "c": tcb}
            if not _kernel_ok(extent, loops, group):
                return math.inf
            gemm = entries * tcb * khw
            kernel = gemm // (n_gemm * extent[loops[0]] * extent[loops[1]])
            kernel_uops += 4 * kernel * n_gemm  # two ACC halves x two INP halves
            c_chunk = gemm + n_gemm * (_C_INSN + kernel + 2)
            l_inp = tcb * (_C_LOAD + max(tih * tiw,
                                         min(tih, self.h) * min(tiw, self.w) * self.inp))
            w_load = _C_LOAD + tob * tcb * khw * self.wgt
            if chunks == 1:
                w_share = w_load * min(2, tiles_pix) / tiles_pix
            elif chunks == 2:
                w_share = w_load / tiles_pix
            else:
                w_share = w_load
            c_tile = entries + _C_INSN + epilogue * (entries + _C_INSN)
            if self.regions.tile_rows:
                c_tile += _C_LOAD + tob * self.regions.tile_rows * self.acc
            if self.regions.residual:  # its GEMM and about four ALU steps
                c_tile += 5 * (entries + _C_INSN)
            s_tile = (1 if tw == self.ow else tob) * _C_STORE + entries * self.out
            tile = chunks * max(c_chunk, l_inp + w_share) + c_tile
            total += self.nb * n_o * n_h * n_w * max(tile, s_tile)
            if first_load is None:
                first_load = l_inp + w_load
        if kernel_uops > self.uop_depth:  # not preloaded: micro-op loads wait mid-stream
            preload = tiles_pix * -(-self.ob // tob_) * chunks * n_gemm * _C_KERNEL_LOAD
        else:
            preload = kernel_uops + (self.rows * self.ob * self.acc
                                     if self.regions.rows_base is not None else 0)
        return total + first_load + preload


def predict_cycles(cfg: Config, p: ConvPlan, bias: bool | int = True, alu_steps: int = 3,
                   residual: bool = False) -> float:
    """Cycles the RTL should take for plan ``p`` (the planner's cost model).

    Per reduction step the load engine brings the next input window (and the
    weights, unless they are still in their half) while compute runs the
    GEMMs; every instruction costs a few cycles beyond its micro-ops or bytes
    and every GEMM reads its kernel once (the RTL's range check); the tile's
    reset and ALU epilogue and the first step's loads add up; the stores
    overlap the next tile.  ``bias``: the epilogue's per-channel rows
    (:attr:`Epilogue.rows`; ``True`` is one); ``alu_steps`` counts its ALU steps
    after the first row's ADD; ``residual``: a folded add (:class:`Residual`)
    follows.  A ranking, not a promise: `vta tune` measures.
    """
    shape = (p.nb, p.cb, p.h, p.w, p.ob, p.kh, p.kw, p.oh, p.ow, p.sh, p.sw, p.ph, p.pw)
    return _Model(cfg, shape, int(bias), alu_steps, residual).cycles(
        p.tob, p.th, p.tw, p.tcb, p.split_kernel, p.loops)


def _fits(cfg: Config, regions: _Regions, p: ConvPlan) -> bool:
    """Whether plan ``p``'s tiles fit the scratchpad halves and its loops their fields."""
    tih, tiw = (p.th - 1) * p.sh + p.kh, (p.tw - 1) * p.sw + p.kw
    khw = p.kh * p.kw
    group = 1 if p.split_kernel else khw
    extent = {"o": p.tob, "y": p.th, "x": p.tw, "c": p.tcb}
    kernel = group * math.prod(extent[a] for a in GEMM_AXES if a not in p.loops)
    return (p.cb % p.tcb == 0 and p.tob * p.tcb * khw <= regions.wgt_cap
            and regions.fits(p.tob, p.tob * p.th * p.tw, p.tcb * tih * tiw)
            and len(p.loops) == 2 and p.loops[0] != p.loops[1]
            and set(p.loops) <= set(GEMM_AXES)
            and all(extent[a] <= _LOOP_MAX for a in p.loops)
            and kernel <= cfg.UOP_BUFF_DEPTH // 2
            and _kernel_ok(extent, p.loops, group))


# Host cost of a plan on the golden model (microseconds: per instruction, per GEMM, per lane
# of a GEMM whose kernel sums several of its own micro-ops into one destination -- kernel
# positions or input-channel blocks inside the kernel, which the golden model cannot read as
# one dot product per destination; measured on 2-core EPYC and Xeon hosts): among the plans
# the RTL should run about as fast as the best (within _RTL_TOLERANCE), the planner takes the
# cheapest for the golden model, the default backend.
_HOST_INSN = 40
_HOST_GEMM = 90
_HOST_LANE = 0.025
_RTL_TOLERANCE = 0.03


def _host_cost(cfg: Config, p: ConvPlan) -> float:
    khw = p.kh * p.kw
    tiles = p.tiles
    steps = tiles * p.chunks
    tih, tiw = (p.th - 1) * p.sh + p.kh, (p.tw - 1) * p.sw + p.kw
    n_gemm = khw if p.split_kernel else 1
    cost = ((steps * (p.tcb + 3) + tiles * (12 + p.tob)) * _HOST_INSN
            + steps * p.tcb * tih * tiw * 0.02 + steps * p.tob * p.tcb * khw * 0.1
            + steps * n_gemm * (_HOST_INSN + _HOST_GEMM))
    if p.split_kernel and ("c" in p.loops or p.tcb == 1):
        return cost
    lanes = steps * khw * p.tob * p.th * p.tw * p.tcb * cfg.BATCH * cfg.BLOCK_OUT
    return cost + lanes * _HOST_LANE


@functools.lru_cache(maxsize=256)
def _plans(cfg: Config, nb: int, cb: int, h: int, w: int, ob: int, kh: int, kw: int,
           sh: int, sw: int, ph: int, pw: int, rows: int,
           residual: bool = False) -> tuple[ConvPlan, ...]:
    """Every tiling worth considering, the planner's choice first, then by predicted cycles.

    The choice: of the plans whose predicted RTL cycles (:func:`predict_cycles`)
    are within 3% of the best, the cheapest for the golden model to run.
    """
    oh, ow = conv2d_output_shape(h, w, kh, kw, (sh, sw), (ph, pw))
    regions = _regions(cfg, ob, rows, residual)
    shape = (nb, cb, h, w, ob, kh, kw, oh, ow, sh, sw, ph, pw)
    model = _Model(cfg, shape, rows, residual=residual)
    found: list[tuple] = []
    for tcb in reversed(_divisors(cb)):
        for tob in _candidates(ob):
            if tob * tcb * kh * kw > regions.wgt_cap:
                break
            for th in _candidates(oh):
                tih = (th - 1) * sh + kh
                if tcb * tih * kw > regions.inp_half or not regions.fits(tob, tob * th):
                    break
                for tw in _candidates(ow):
                    tiw = (tw - 1) * sw + kw
                    if not regions.fits(tob, tob * th * tw, tcb * tih * tiw):
                        break
                    for split in ((True, False) if kh * kw > 1 else (True,)):
                        group = 1 if split else kh * kw
                        for loops in _loop_choices(tcb, tob, th, tw, group)[:1]:
                            extent = {"o": tob, "y": th, "x": tw, "c": tcb}
                            kernel = group * tob * th * tw * tcb // (
                                extent[loops[0]] * extent[loops[1]])
                            if kernel > cfg.UOP_BUFF_DEPTH // 2:
                                continue
                            found.append((model.cycles(tob, th, tw, tcb, split, loops),
                                          -tob * th * tw, len(found),
                                          ConvPlan(*shape, tob, th, tw, tcb, split, loops)))
    if not found:
        raise ValueError(
            f"a {kh}x{kw} convolution does not fit this configuration's scratchpads even with "
            f"1-block tiles (INP half {regions.inp_half}, WGT half {regions.wgt_half}, ACC "
            f"half {regions.acc_half} entries, micro-op buffer {cfg.UOP_BUFF_DEPTH})")
    found.sort(key=lambda f: f[:3])
    limit = found[0][0] * (1 + _RTL_TOLERANCE)
    choice = min((f for f in found if f[0] <= limit), key=lambda f: _host_cost(cfg, f[3]))
    return (choice[3], *(f[3] for f in found if f is not choice))


def _layer(data_shape: Sequence[int], kernel_shape: Sequence[int], stride, padding,
           rows: bool | int, residual: bool = False) -> tuple:
    """The checked layer key of a packed convolution: (nb, cb, h, w, ob, kh, kw, sh, sw, ph,
    pw, rows, residual); ``rows`` as :attr:`Epilogue.rows` (a bias: 1)."""
    nb, cb, h, w = data_shape[:4]
    ob, cb2, kh, kw = kernel_shape[:4]
    if cb2 != cb:
        raise ValueError(f"kernel has {cb2} input-channel blocks, the data {cb}")
    sh, sw = _pair("stride", stride, 1, 15)
    ph, pw = _pair("padding", padding, 0, 15)
    if ph >= kh or pw >= kw:
        raise ValueError(f"padding must be smaller than the kernel ({kh}x{kw}), not "
                         f"{(ph, pw)}")
    oh, ow = conv2d_output_shape(h, w, kh, kw, (sh, sw), (ph, pw))
    if oh < 1 or ow < 1:
        raise ValueError(f"a {kh}x{kw} kernel with padding {(ph, pw)} does not fit a {h}x{w} "
                         "input")
    # LOAD and STORE strides are 16-bit fields: an input row, and a weight row of all its
    # input-channel blocks and kernel positions, must each fit one stride
    if w > _MAX_STRIDE:
        raise ValueError(f"the input is {w} entries wide: LOAD strides are 16-bit, so at most "
                         f"{_MAX_STRIDE}")
    if cb * kh * kw > _MAX_STRIDE:
        raise ValueError(f"{cb} input-channel blocks x {kh}x{kw} kernel positions = "
                         f"{cb * kh * kw} weight entries per output block: LOAD strides are "
                         f"16-bit, so at most {_MAX_STRIDE}")
    return (int(nb), int(cb), int(h), int(w), int(ob), int(kh), int(kw), sh, sw, ph, pw,
            int(rows), bool(residual))


def plan_conv2d(cfg: Config, data_shape: Sequence[int], kernel_shape: Sequence[int],
                stride: int | Sequence[int] = 1, padding: int | Sequence[int] = 0,
                bias: bool | int = False, tiling: dict[str, Any] | None = None,
                residual: bool = False) -> ConvPlan:
    """The tiling :func:`conv2d_packed` uses for packed shapes ``data_shape`` / ``kernel_shape``.

    ``bias``: the per-channel rows the epilogue keeps in the accumulator
    (:attr:`Epilogue.rows`; ``True`` is one, a bias).  ``tiling`` (the
    :attr:`ConvPlan.tiling` of another plan) asks for given
    choices; otherwise the active tuning log's entry for this layer is used
    when it has one (:mod:`vta.tune`), else the best plan of the cost model
    (:func:`predict_cycles`).  ``residual``: a folded add (:class:`Residual`)
    follows, so each tile keeps room for its other operand.
    """
    shape = _layer(data_shape, kernel_shape, stride, padding, bias, residual)
    if tiling is not None:
        return _tiled(cfg, shape, tiling)
    logged = tuning_log.lookup(cfg, "conv2d", shape)
    if logged is not None:
        try:
            return _tiled(cfg, shape, logged)
        except ValueError:
            pass  # a tiling from another version of the planner: this one's own plan
    return _plans(cfg, *shape)[0]


def conv2d_plans(cfg: Config, data_shape: Sequence[int], kernel_shape: Sequence[int],
                 stride: int | Sequence[int] = 1, padding: int | Sequence[int] = 0,
                 bias: bool | int = False, residual: bool = False) -> tuple[ConvPlan, ...]:
    """Every plan of the planner's search space for this layer, its choice first, then by
    predicted cycles."""
    return _plans(cfg, *_layer(data_shape, kernel_shape, stride, padding, bias, residual))


def _tiled(cfg: Config, shape: tuple, tiling: dict[str, Any]) -> ConvPlan:
    """The plan for ``shape`` with the given choices (ValueError when they do not fit)."""
    nb, cb, h, w, ob, kh, kw, sh, sw, ph, pw, rows, residual = shape
    oh, ow = conv2d_output_shape(h, w, kh, kw, (sh, sw), (ph, pw))
    try:
        plan = ConvPlan(nb, cb, h, w, ob, kh, kw, oh, ow, sh, sw, ph, pw,
                        int(tiling["tob"]), int(tiling["th"]), int(tiling["tw"]),
                        int(tiling["tcb"]), bool(tiling.get("split_kernel", True)),
                        str(tiling.get("loops", "yc")))
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"tiling {tiling!r} is not one of ConvPlan.tiling's form ({exc})") \
            from None
    if not (1 <= plan.tob <= ob and 1 <= plan.th <= oh and 1 <= plan.tw <= ow
            and 1 <= plan.tcb <= cb and _fits(cfg, _regions(cfg, ob, rows, residual), plan)):
        raise ValueError(f"tiling {tiling!r} does not fit this layer on {cfg.name} (tiles "
                         "beyond the scratchpad halves, loops beyond their fields, or a "
                         "micro-op kernel with a read-after-write hazard)")
    return plan


# --------------------------------------------------------------- engine
class _Pipeline:
    """Token bookkeeping for the two virtual threads (two halves of every scratchpad).

    ``preamble`` (optional) queues what every stream needs before its first
    tile (the compute engine's loads of resident data); it runs at the start
    of each stream, before the halves are granted.
    """

    def __init__(self, q: CommandQueue, preamble: Any = None, preamble_size: tuple = (0, 0)):
        self.q = q
        self.wgt_in_half: list[Any] = [None, None]
        self.preamble = preamble
        self.preamble_size = preamble_size

    def begin(self) -> None:
        q = self.q
        if self.preamble is not None:
            insns, uops = self.preamble_size
            insns_left, uops_left = q.headroom()
            if insns + 16 > insns_left or uops > uops_left:
                q.synchronize()  # no token in flight here
            self.preamble()
        for _ in range(2):  # two free INP/WGT halves, two free ACC/OUT halves
            q.dep_push(COMPUTE_STAGE, LOAD_STAGE)
            q.dep_push(STORE_STAGE, COMPUTE_STAGE)
        self.wgt_in_half = [None, None]

    def end(self) -> None:
        q = self.q
        for _ in range(2):  # take the halves back: every token is consumed
            q.dep_pop(COMPUTE_STAGE, LOAD_STAGE)
            q.dep_pop(STORE_STAGE, COMPUTE_STAGE)

    def checkpoint(self, insns: int, uops: int) -> None:
        """Synchronize now (tokens balanced) if the next tile might not fit the staging areas."""
        insns_left, uops_left = self.q.headroom()
        if insns + 16 > insns_left or uops > uops_left:
            self.end()
            self.q.synchronize()
            self.begin()


@dataclass(frozen=True)
class _Tile:
    """One output tile of a schedule and where it lives."""

    nb: int
    ob0: int
    tob: int
    oh0: int
    th: int
    ow0: int
    tw: int
    acc_base: int
    rows_base: int | None  # row r of output-channel block ob0 + o: rows_base + r * row_stride + o
    row_stride: int
    step0: int  # the global index of its first reduction step

    def window(self, p: ConvPlan) -> tuple[int, int]:
        """Input rows and columns of the tile's window."""
        return (self.th - 1) * p.sh + p.kh, (self.tw - 1) * p.sw + p.kw


def _schedule(p: ConvPlan, regions: _Regions, rows: int) -> list[_Tile]:
    """The output tiles in order: batch, output-channel tile, rows, columns.

    A folded add's other operand comes with the last step's input window.
    """
    tiles = []
    for nb in range(p.nb):
        for ob0 in range(0, p.ob, p.tob):
            tob = min(p.tob, p.ob - ob0)
            for oh0 in range(0, p.oh, p.th):
                for ow0 in range(0, p.ow, p.tw):
                    acc_base = (len(tiles) % 2) * regions.acc_half
                    if not rows:
                        rows_base, stride = None, 0
                    elif regions.rows_base is not None:
                        rows_base, stride = regions.rows_base + ob0, p.ob
                    else:
                        rows_base, stride = acc_base + regions.acc_half - tob * rows, tob
                    tiles.append(_Tile(nb, ob0, tob, oh0, min(p.th, p.oh - oh0), ow0,
                                       min(p.tw, p.ow - ow0), acc_base, rows_base, stride,
                                       len(tiles) * p.chunks))
    return tiles


#: A micro-op kernel to push or preload: (cache key, recording function, mode, micro-ops).
_Kernel = tuple


def _elementwise_kernel(q: CommandQueue, base: int, rows: int, cols: int, mode: int,
                        op: AluOp = AluOp.MIN, imm: int = 0) -> _Kernel:
    """GEMM reset (mode GEMM) or an ALU-immediate op over ``rows * cols`` consecutive entries."""

    def finit() -> None:
        q.uop_loop_begin(rows, cols, cols, 0)
        q.uop_loop_begin(cols, 1, 1, 0)
        if mode == MODE_GEMM:
            q.uop_push(MODE_GEMM, 1, base, 0, 0)
        else:
            q.uop_push(MODE_ALU, 0, base, base, 0, op, 1, imm)
        q.uop_loop_end()
        q.uop_loop_end()

    key = ("reset", base, rows, cols) if mode == MODE_GEMM else \
        ("alu", int(op), imm, base, rows, cols)
    return key, finit, mode, 1


def _identity_kernel(q: CommandQueue, dst: int, src: int, wgt: int, rows: int,
                     cols: int) -> _Kernel:
    """GEMM ``acc[dst + i] += inp[src + i] x wgt`` over ``rows * cols`` consecutive entries."""

    def finit() -> None:
        q.uop_loop_begin(rows, cols, cols, 0)
        q.uop_loop_begin(cols, 1, 1, 0)
        q.uop_push(MODE_GEMM, 0, dst, src, wgt)
        q.uop_loop_end()
        q.uop_loop_end()

    return ("identity", dst, src, wgt, rows, cols), finit, MODE_GEMM, 1


def _row_kernel(q: CommandQueue, op: AluOp, dst: int, src: int, blocks: int, block_size: int,
                rows: int, row_size: int, cols: int) -> _Kernel:
    """Tensor ALU op: ``rows`` x ``cols`` entries of each of ``blocks`` channel blocks (one
    every ``block_size`` entries, rows ``row_size`` apart) with source entry ``src + block``."""

    def finit() -> None:
        q.uop_loop_begin(rows, row_size, 0, 0)
        q.uop_loop_begin(cols, 1, 0, 0)
        for o in range(blocks):
            q.uop_push(MODE_ALU, 0, dst + o * block_size, src + o, 0, op, 0, 0)
        q.uop_loop_end()
        q.uop_loop_end()

    return (("row", int(op), dst, src, blocks, block_size, rows, row_size, cols), finit,
            MODE_ALU, blocks)


def _tile_regions(epi: Epilogue, oh0: int, th: int, ow0: int, tw: int
                  ) -> list[tuple[int, int, int, int, int]]:
    """The epilogue's regions that meet a tile, in tile coordinates."""
    out = []
    for row, a0, a1, b0, b1 in epi.regions:
        r0, r1 = max(a0 - oh0, 0), min(a1 - oh0, th)
        c0, c1 = max(b0 - ow0, 0), min(b1 - ow0, tw)
        if r0 < r1 and c0 < c1:
            out.append((row, r0, r1, c0, c1))
    return out


def _epilogue_kernels(q: CommandQueue, epi: Epilogue, t: _Tile,
                      regions: list[tuple[int, int, int, int, int]]) -> list[_Kernel]:
    """The epilogue of tile ``t``: its regions' row ADDs, then the steps."""
    size = t.th * t.tw
    out = [_row_kernel(q, AluOp.ADD, t.acc_base + r0 * t.tw + c0,
                       t.rows_base + row * t.row_stride, t.tob, size, r1 - r0, t.tw, c1 - c0)
           for row, r0, r1, c0, c1 in regions]
    for op, value, from_row in epi.steps:
        if from_row:
            out.append(_row_kernel(q, op, t.acc_base, t.rows_base + value * t.row_stride,
                                   t.tob, size, t.th, t.tw, t.tw))
        else:
            out.append(_elementwise_kernel(q, t.acc_base, t.tob * t.th, t.tw, MODE_ALU, op,
                                           value))
    return out


def _gemm_kernels(q: CommandQueue, p: ConvPlan, t: _Tile, inp_base: int,
                  wgt_base: int) -> list[_Kernel]:
    """The GEMMs accumulating one chunk into tile ``t``: one per kernel position, or one.

    The plan's loops run over two axes of the chunk's work; the kernel
    enumerates the others (see :class:`ConvPlan`).  An edge tile whose
    extents make the plan's choice impossible (a kernel hazard) takes the
    best choice that works for it.
    """
    tih, tiw = t.window(p)
    axes = _gemm_axes(p, t.tob, t.th, t.tw, tih, tiw)
    extent = {a: v[0] for a, v in axes.items()}
    khw = p.kh * p.kw
    split, loops = p.split_kernel, p.loops
    if not _kernel_ok(extent, loops, 1 if split else khw):
        choices = _loop_choices(p.tcb, t.tob, t.th, t.tw, 1 if split else khw)
        if not choices:
            split = True
            choices = _loop_choices(p.tcb, t.tob, t.th, t.tw, 1)
        loops = choices[0]
    inner = [a for a in "coyx" if a not in loops]
    idx = np.indices([extent[a] for a in inner]).reshape(len(inner), -1)
    dst, src, wgt = (sum((idx[i] * axes[a][k] for i, a in enumerate(inner)),
                         np.zeros(idx.shape[1], np.int64)) for k in (1, 2, 3))
    positions = [(r, s) for r in range(p.kh) for s in range(p.kw)]
    kernels = []
    for group in ([[pos] for pos in positions] if split else [positions]):
        offsets = tuple((r * tiw + s, r * p.kw + s) for r, s in group)

        def finit(offsets=offsets) -> None:
            for a in loops:
                q.uop_loop_begin(*axes[a])
            for src_off, wgt_off in offsets:
                q.uop_push_block(MODE_GEMM, 0, t.acc_base + dst, inp_base + src_off + src,
                                 wgt_base + wgt_off + wgt)
            for _ in loops:
                q.uop_loop_end()

        key = ("gemm", loops, tuple(axes[a] for a in "oyxc"), offsets, t.acc_base, inp_base,
               wgt_base)
        kernels.append((key, finit, MODE_GEMM, len(offsets) * idx.shape[1]))
    return kernels


def _push(q: CommandQueue, kernel: _Kernel) -> None:
    key, finit, mode, _ = kernel
    if mode == MODE_GEMM:
        q.push_gemm(key, finit)
    else:
        q.push_alu(key, finit)


def _emit_conv(q: CommandQueue, plan: ConvPlan, epi: Epilogue, data_buf: Buffer,
               wgt_buf: Buffer, rows_buf: Buffer | None, out_buf: Buffer,
               residual: Residual | None = None, res_buf: Buffer | None = None,
               id_buf: Buffer | None = None) -> None:
    cfg = q.cfg
    p = plan
    regions = _regions(cfg, p.ob, epi.rows, residual is not None)
    inp_half, wgt_half = regions.inp_half, regions.wgt_half
    khw = p.kh * p.kw
    tiles = _schedule(p, regions, epi.rows)
    memo: dict[tuple, tuple] = {}
    id_wgt = regions.wgt_half - 1  # a folded add's identity weights, atop each WGT half

    def kernels_of(t: _Tile) -> tuple[_Kernel, list[list[_Kernel]], list[_Kernel],
                                      list[_Kernel]]:
        """(reset, the GEMMs of each step, the epilogue, the folded add's) of tile ``t``."""
        tile_regions = _tile_regions(epi, t.oh0, t.th, t.ow0, t.tw)
        key = (t.tob, t.th, t.tw, t.acc_base, t.rows_base, t.step0 % 2, tuple(tile_regions))
        if key not in memo:
            memo[key] = _tile_kernels(t, tile_regions)
        return memo[key]

    def _tile_kernels(t: _Tile, tile_regions) -> tuple[_Kernel, list[list[_Kernel]],
                                                       list[_Kernel], list[_Kernel]]:
        entries = (t.tob * t.th, t.tw)
        reset = _elementwise_kernel(q, t.acc_base, *entries, MODE_GEMM)
        steps = [_gemm_kernels(q, p, t, (s % 2) * inp_half, (s % 2) * wgt_half)
                 for s in range(t.step0, t.step0 + p.chunks)]
        epilogue = _epilogue_kernels(q, epi, t, tile_regions)
        add: list[_Kernel] = []
        if residual is not None:  # y's steps, + r x (m I) from INP, then the add's steps
            h = (t.step0 + p.chunks - 1) % 2  # the last step's half: r after the window
            tih, tiw = t.window(p)
            add += [_elementwise_kernel(q, t.acc_base, *entries, MODE_ALU, op, imm)
                    for op, imm in residual.conv_steps]
            add.append(_identity_kernel(q, t.acc_base, h * inp_half + p.tcb * tih * tiw,
                                        h * regions.wgt_half + id_wgt, *entries))
            add += [_elementwise_kernel(q, t.acc_base, *entries, MODE_ALU, op, imm)
                    for op, imm in residual.steps]
        return reset, steps, epilogue, add

    # every kernel the stream uses, preloaded once per stream (in one UOP LOAD) when they fit
    used: dict[Any, _Kernel] = {}
    for t in tiles:
        reset, steps, epilogue, add = kernels_of(t)
        for k in (reset, *(k for step in steps for k in step), *epilogue, *add):
            used.setdefault(k[0], k)
    n_uops = sum(k[3] for k in used.values())
    preload = n_uops <= min(cfg.UOP_BUFF_DEPTH, q.max_uops // 2)
    resident_rows = epi.rows and regions.rows_base is not None
    n_conv = len(residual.conv_steps) if residual is not None else 0

    def preamble() -> None:
        if resident_rows:
            q.load_2d(rows_buf, 0, p.ob, epi.rows, p.ob, 0, 0, 0, 0, regions.rows_base,
                      MemId.ACC)
        if preload:
            for key, finit, mode, _ in used.values():
                q.preload(key, finit, mode)
        if residual is not None:  # the identity weights atop both WGT halves, for the stream
            for h in range(2):
                q.load_2d(id_buf, 0, 1, 1, 1, 0, 0, 0, 0, h * regions.wgt_half + id_wgt,
                          MemId.WGT)

    pipe = _Pipeline(q, preamble, (4, n_uops if preload else 0))
    pipe.begin()
    for t in tiles:
        reset, steps, epilogue, add = kernels_of(t)
        tih, tiw = t.window(p)
        gemm_uops = sum(k[3] for k in steps[0])
        epi_uops = sum(k[3] for k in epilogue) + len(add)
        pipe.checkpoint(p.chunks * (p.tcb + 4 + 2 * len(steps[0])) + 24 + 2 * t.tob
                        + len(epilogue) + len(add), 0 if preload else
                        p.chunks * gemm_uops + epi_uops + 24)
        # compute: wait until the store of tile - 2 has drained this ACC half
        q.dep_pop(STORE_STAGE, COMPUTE_STAGE)
        if epi.rows and not resident_rows:
            q.load_2d(rows_buf, t.ob0, t.tob, epi.rows, p.ob, 0, 0, 0, 0, t.rows_base,
                      MemId.ACC)
        _push(q, reset)
        for s, (c0, gemms) in enumerate(zip(range(0, p.cb, p.tcb), steps, strict=True)):
            h = (t.step0 + s) % 2
            inp_base, wgt_base = h * inp_half, h * wgt_half
            # load: wait until the GEMM of step - 2 has released this half
            q.dep_pop(COMPUTE_STAGE, LOAD_STAGE)
            if pipe.wgt_in_half[h] != (t.ob0, c0):
                q.load_2d(wgt_buf, (t.ob0 * p.cb + c0) * khw, p.tcb * khw, t.tob, p.cb * khw,
                          0, 0, 0, 0, wgt_base, MemId.WGT)
                pipe.wgt_in_half[h] = (t.ob0, c0)
            _load_window(q, p, data_buf, t.nb, c0, t.oh0, t.ow0, tih, tiw, inp_base)
            last = s == p.chunks - 1
            if residual is not None and last:  # the other operand's tile, after the window
                _load_residual(q, p, t, res_buf, inp_base + p.tcb * tih * tiw)
            q.dep_push(LOAD_STAGE, COMPUTE_STAGE)
            # compute: wait for the data, accumulate, release the half (with a folded add,
            # the last step's half after the add's GEMM)
            q.dep_pop(LOAD_STAGE, COMPUTE_STAGE)
            for k in gemms:
                _push(q, k)
            if residual is None or not last:
                q.dep_push(COMPUTE_STAGE, LOAD_STAGE)
        # epilogue
        for k in epilogue:
            _push(q, k)
        if residual is not None:  # y's steps, + r x (m I), release the half, the add's steps
            for k in add[:n_conv + 1]:
                _push(q, k)
            q.dep_push(COMPUTE_STAGE, LOAD_STAGE)
            for k in add[n_conv + 1:]:
                _push(q, k)
        q.dep_push(COMPUTE_STAGE, STORE_STAGE)
        # store
        q.dep_pop(COMPUTE_STAGE, STORE_STAGE)
        plane = p.oh * p.ow
        out_elem = ((t.nb * p.ob + t.ob0) * p.oh + t.oh0) * p.ow + t.ow0
        if t.tw == p.ow and plane <= _MAX_STRIDE:
            q.store_2d(t.acc_base, MemId.OUT, out_buf, out_elem, t.th * t.tw, t.tob, plane)
        else:
            for o in range(t.tob):
                q.store_2d(t.acc_base + o * t.th * t.tw, MemId.OUT, out_buf,
                           out_elem + o * plane, t.tw, t.th, p.ow)
        q.dep_push(STORE_STAGE, COMPUTE_STAGE)
    pipe.end()


def _load_residual(q: CommandQueue, p: ConvPlan, t: _Tile, res_buf: Buffer, base: int) -> None:
    """Load a folded add's other operand for tile ``t`` into INP (the output's layout)."""
    plane = p.oh * p.ow
    elem = ((t.nb * p.ob + t.ob0) * p.oh + t.oh0) * p.ow + t.ow0
    if t.tw == p.ow and plane <= _MAX_STRIDE:
        q.load_2d(res_buf, elem, t.th * t.tw, t.tob, plane, 0, 0, 0, 0, base, MemId.INP)
    else:
        for o in range(t.tob):
            q.load_2d(res_buf, elem + o * plane, t.tw, t.th, p.ow, 0, 0, 0, 0,
                      base + o * t.th * t.tw, MemId.INP)


def _load_window(q: CommandQueue, p: ConvPlan, data_buf: Buffer, nb: int, c0: int, oh0: int,
                 ow0: int, tih: int, tiw: int, inp_base: int) -> None:
    """Load the padded input window of a tile, one 2-D LOAD per channel block."""
    ih0, iw0 = oh0 * p.sh - p.ph, ow0 * p.sw - p.pw
    yp0, xp0 = max(0, -ih0), max(0, -iw0)
    yp1, xp1 = max(0, ih0 + tih - p.h), max(0, iw0 + tiw - p.w)
    rows, cols = tih - yp0 - yp1, tiw - xp0 - xp1
    for c in range(p.tcb):
        elem = ((nb * p.cb + c0 + c) * p.h + ih0 + yp0) * p.w + iw0 + xp0
        q.load_2d(data_buf, elem, cols, rows, p.w, xp0, yp0, xp1, yp1,
                  inp_base + c * tih * tiw, MemId.INP)


def _push_elementwise(q: CommandQueue, key: tuple, base: int, rows: int, cols: int, mode: int,
                      op: AluOp = AluOp.MIN, imm: int = 0) -> None:
    """Push :func:`_elementwise_kernel` under ``key``."""
    _push(q, (key, *_elementwise_kernel(q, base, rows, cols, mode, op, imm)[1:]))


# -------------------------------------------------------------- operators
def _run_packed_conv(dev, data: np.ndarray, kernel: np.ndarray, stride, padding,
                     bias: np.ndarray | None, epi: Epilogue, queue_options: dict | None,
                     tiling: dict | None = None, residual: Residual | None = None,
                     other: np.ndarray | None = None) -> tuple[np.ndarray, RunStats | None]:
    cfg = dev.cfg
    b, bi, bo = cfg.BATCH, cfg.BLOCK_IN, cfg.BLOCK_OUT
    if data.shape[4:] != (b, bi):
        raise ValueError(f"packed data must end in ({b}, {bi}) (BATCH, BLOCK_IN), not "
                         f"{data.shape[4:]}")
    if kernel.shape[4:] != (bo, bi):
        raise ValueError(f"packed kernel must end in ({bo}, {bi}) (BLOCK_OUT, BLOCK_IN), not "
                         f"{kernel.shape[4:]}")
    plan = plan_conv2d(cfg, data.shape, kernel.shape, stride, padding, epi.rows, tiling,
                       residual is not None)
    out_shape = (plan.nb, plan.ob, plan.oh, plan.ow, b, bo)
    if residual is not None:
        residual.check(epi)
        other = _as_int8("other", other, 6)
        if other.shape != out_shape:
            raise ValueError(f"other (the residual operand) must have the output's packed "
                             f"shape {out_shape}, not {other.shape}")
    buffers: list[Buffer] = []

    def alloc(nbytes: int, name: str) -> Buffer:
        buf = dev.alloc(max(nbytes, 1), name=name)
        buffers.append(buf)
        return buf

    try:
        data_buf = alloc(data.nbytes, "data")
        dev.write(data_buf, np.ascontiguousarray(data))
        wgt_buf = alloc(kernel.nbytes, "weights")
        dev.write(wgt_buf, np.ascontiguousarray(kernel))
        bias_buf = None
        if epi.rows:
            packed_bias = np.broadcast_to(bias.reshape(plan.ob, 1, bo), (plan.ob, b, bo))
            bias_buf = alloc(packed_bias.size * 4, "bias")
            dev.write(bias_buf, np.ascontiguousarray(packed_bias, dtype="<i4"))
        out_buf = alloc(int(np.prod(out_shape)), "out")
        res_buf = id_buf = None
        if residual is not None:
            res_buf = alloc(other.nbytes, "other")
            dev.write(res_buf, np.ascontiguousarray(other))
            id_buf = alloc(cfg.WGT_ELEM_BYTES, "identity")
            dev.write(id_buf, residual.weights(cfg))
        with CommandQueue(dev, **(queue_options or {})) as q:
            _emit_conv(q, plan, epi, data_buf, wgt_buf, bias_buf, out_buf, residual, res_buf,
                       id_buf)
            q.synchronize()
            stats = RunStats.total(q.history)
        out = dev.read(out_buf, int(np.prod(out_shape))).view(np.int8).reshape(out_shape)
    finally:
        for buf in buffers:
            dev.free(buf)
    return out, stats


def conv2d_packed(dev, data: np.ndarray, kernel: np.ndarray, *,
                  stride: int | Sequence[int] = 1, padding: int | Sequence[int] = 0,
                  bias: np.ndarray | None = None, shift: int = 0, relu: bool = False,
                  clip: tuple[int, int] | None = None, return_stats: bool = False,
                  queue_options: dict | None = None, tiling: dict | None = None,
                  residual: Residual | None = None, other: np.ndarray | None = None):
    """2-D convolution of packed int8 tensors on ``dev``.

    Parameters
    ----------
    dev : Device
        An open device.
    data : numpy.ndarray
        int8 activations, packed NCHW{b}n{bi}c: (N/b, C/bi, H, W, b, bi).
    kernel : numpy.ndarray
        int8 weights, packed OIHW{bo}o{bi}i: (O/bo, C/bi, KH, KW, bo, bi).
    stride, padding : int or (int, int)
        Stride (1..15) and zero padding (0..15, smaller than the kernel) per axis.
    bias : numpy.ndarray, optional
        int32, shape (O,) with O = O/bo * bo: added to the accumulator.
    shift : int
        Arithmetic right shift (0..31) after the bias.
    relu : bool
        Clamp negative values to 0 (after the shift).
    clip : (int, int), optional
        Clamp to [lo, hi] (16-bit bounds) after ReLU.
    return_stats : bool
        Also return the summed :class:`~vta.driver.host.RunStats` of the runs.
    queue_options : dict, optional
        Keyword options for :class:`~vta.runtime.CommandQueue` (``dump``,
        ``force_serial``, ``max_insns`` ...).
    tiling : dict, optional
        The tiling to use (a :attr:`ConvPlan.tiling`; default: :func:`plan_conv2d`'s).
    residual, other : Residual and numpy.ndarray, optional
        Fold an element-wise add of the result and ``other`` (int8, the
        output's packed shape) into the convolution (:class:`Residual`).

    Returns
    -------
    numpy.ndarray
        int8 (N/b, O/bo, OH, OW, b, bo): the low 8 bits of the epilogue result.
    """
    data = _as_int8("data", data, 6)
    kernel = _as_int8("kernel", kernel, 6)
    n_out = kernel.shape[0] * kernel.shape[4]
    epi, bias = _epilogue(bias, n_out, shift, relu, clip)
    out, stats = _run_packed_conv(dev, data, kernel, stride, padding, bias, epi, queue_options,
                                  tiling, residual, other)
    return (out, stats) if return_stats else out


def conv2d(dev, data: np.ndarray, kernel: np.ndarray, *, stride: int | Sequence[int] = 1,
           padding: int | Sequence[int] = 0, bias: np.ndarray | None = None, shift: int = 0,
           relu: bool = False, clip: tuple[int, int] | None = None, return_stats: bool = False,
           queue_options: dict | None = None, tiling: dict | None = None):
    """2-D convolution of NCHW int8 activations with OIHW int8 weights on ``dev``.

    Any N, C and O: they are padded to the block sizes for you (see
    :func:`pack_nchw`, :func:`pack_oihw`).  ``bias`` has shape (O,).  Other
    parameters as in :func:`conv2d_packed`; returns NCHW int8 (N, O, OH, OW).
    """
    data = _as_int8("data", data, 4)
    kernel = _as_int8("kernel", kernel, 4)
    n, c, _, _ = data.shape
    o, c2, _, _ = kernel.shape
    if c2 != c:
        raise ValueError(f"kernel expects {c2} input channels, data has {c}")
    cfg = dev.cfg
    o_pad = _ceil_to(o, cfg.BLOCK_OUT)
    epi, bias = _epilogue(bias, o, shift, relu, clip)
    if bias is not None:
        bias = np.concatenate([bias, np.zeros(o_pad - o, dtype=np.int32)])
    out, stats = _run_packed_conv(dev, pack_nchw(data, cfg), pack_oihw(kernel, cfg), stride,
                                  padding, bias, epi, queue_options, tiling)
    result = unpack_nchw(out, n, o)
    return (result, stats) if return_stats else result


def dense(dev, x: np.ndarray, w: np.ndarray, *, bias: np.ndarray | None = None, shift: int = 0,
          relu: bool = False, clip: tuple[int, int] | None = None, return_stats: bool = False,
          queue_options: dict | None = None, tiling: dict | None = None):
    """``x @ w.T`` (+ bias, epilogue) for int8 ``x`` (M, K) and ``w`` (N, K), int32 accumulation.

    Any M, K, N (padded to the block sizes for you); ``bias`` has shape (N,).
    Returns int8 (M, N): the low 8 bits of the epilogue result (use ``clip``
    or ``shift`` to keep values in range).
    """
    x = _as_int8("x", x, 2)
    w = _as_int8("w", w, 2)
    m, k = x.shape
    n, k2 = w.shape
    if k2 != k:
        raise ValueError(f"w has {k2} columns, x has {k} (both must be K)")
    cfg = dev.cfg
    b, bi, bo = cfg.BATCH, cfg.BLOCK_IN, cfg.BLOCK_OUT
    mp, kp, np_ = _ceil_to(m, b), _ceil_to(k, bi), _ceil_to(n, bo)
    if mp // b > _MAX_STRIDE:  # the rows of x are the columns of a one-row image
        raise ValueError(f"x has {m} rows: dense takes at most {_MAX_STRIDE * b} per call "
                         f"(a 16-bit LOAD stride, {_MAX_STRIDE} x BATCH); split x into chunks")
    epi, bias = _epilogue(bias, n, shift, relu, clip)
    if bias is not None:
        bias = np.concatenate([bias, np.zeros(np_ - n, dtype=np.int32)])
    xp = np.zeros((mp, kp), dtype=np.int8)
    xp[:m, :k] = x
    wp = np.zeros((np_, kp), dtype=np.int8)
    wp[:n, :k] = w
    # a one-row image whose columns are the rows of x: (1, K/bi, 1, M/b, b, bi)
    data = xp.reshape(mp // b, b, kp // bi, bi).transpose(2, 0, 1, 3)[None, :, None]
    kernel = wp.reshape(np_ // bo, bo, kp // bi, bi).transpose(0, 2, 1, 3)[:, :, None, None]
    out, stats = _run_packed_conv(dev, np.ascontiguousarray(data), np.ascontiguousarray(kernel),
                                  1, 0, bias, epi, queue_options, tiling)
    # (1, N/bo, 1, M/b, b, bo) -> (M, N)
    result = out[0, :, 0].transpose(1, 2, 0, 3).reshape(mp, np_)[:m, :n]
    result = np.ascontiguousarray(result)
    return (result, stats) if return_stats else result


def matmul(dev, a: np.ndarray, b: np.ndarray, **kwargs):
    """``a @ b`` for int8 ``a`` (M, K) and ``b`` (K, N); keywords as in :func:`dense`."""
    b = _as_int8("b", b, 2)
    return dense(dev, a, np.ascontiguousarray(b.T), **kwargs)


# --------------------------------------------------- pre-placed operands
@dataclass(frozen=True)
class Residual:
    """An element-wise add folded into the convolution before it (:func:`emit_conv2d`).

    The result is :func:`emit_add`'s with ``a`` the convolution's int8 output
    ``y``, ``a_steps`` = ``conv_steps``, ``b`` the other operand ``r`` times
    ``other_mult``, and ``steps`` after the sum -- computed in each tile while
    ``y`` is still in the accumulator: the other operand's tile comes into INP
    with the last reduction step's window (the load engine, overlapped with
    compute), and a GEMM with the int8 weight ``other_mult`` times the
    identity (:meth:`weights`) adds ``r * other_mult``; ``y`` is never
    stored.  Exact when the convolution's epilogue ends by clamping ``y``
    within int8 (then the accumulator holds what an ``ACC_8BIT`` load of the
    stored ``y`` would); :func:`emit_conv2d` refuses anything else.
    """

    conv_steps: tuple[tuple[AluOp, int], ...] = ()
    other_mult: int = 1
    steps: tuple[tuple[AluOp, int], ...] = ()

    @classmethod
    def of_shifts(cls, conv_lshift: int = 0, other_lshift: int = 0, offset: int = 0,
                  shift: int = 0, relu: bool = False,
                  clip: tuple[int, int] | None = None) -> Residual:
        """``(y << conv_lshift) + (r << other_lshift) + offset``, then :func:`emit_add`'s
        shift, ReLU and clip."""
        lc, lr, steps = _add_steps(conv_lshift, other_lshift, offset, shift, relu, clip)
        return cls(((AluOp.SHR, -lc),) if lc else (), 1 << lr, tuple(steps))

    @classmethod
    def of_steps(cls, conv_steps: Sequence[tuple[AluOp, int]],
                 other_steps: Sequence[tuple[AluOp, int]],
                 steps: Sequence[tuple[AluOp, int]]) -> Residual | None:
        """From :func:`emit_add`'s per-operand steps; None when the other operand's are not
        one multiplication an int8 weight can do (nothing, ``SHR -k`` with ``k <= 6``, or
        ``MUL m`` with ``|m| <= 127``)."""
        other = list(other_steps)
        if not other:
            mult = 1
        elif len(other) == 1 and other[0][0] == AluOp.SHR and -6 <= other[0][1] <= 0:
            mult = 1 << -other[0][1]
        elif len(other) == 1 and other[0][0] == AluOp.MUL and -128 <= other[0][1] <= 127:
            mult = int(other[0][1])
        else:
            return None
        return cls(tuple(conv_steps), mult, tuple(steps))

    def alu_uops(self) -> int:
        """ALU micro-op cycles per output entry: ``y``'s steps and the steps after the sum
        (a MUL's two)."""
        return sum(2 if op == AluOp.MUL else 1 for op, _ in (*self.conv_steps, *self.steps))

    def weights(self, cfg: Config) -> np.ndarray:
        """The WGT entry that adds ``r * other_mult``: ``other_mult`` times the identity."""
        return np.eye(cfg.BLOCK_OUT, cfg.BLOCK_IN, dtype=np.int8) * np.int8(self.other_mult)

    def check(self, epi: Epilogue) -> None:
        """ValueError unless this add can follow a convolution with epilogue ``epi``."""
        for op, imm in (*self.conv_steps, *self.steps):
            _check_imm(op, imm)
        if not -128 <= self.other_mult <= 127:
            raise ValueError(f"a folded add multiplies its other operand by an int8 weight, "
                             f"not {self.other_mult}")
        lo, hi = _final_clamp(epi)
        if lo < -128 or hi > 127:
            shown = "no clamp" if (lo, hi) == (_IMM_MIN - 1, _IMM_MAX + 1) else (lo, hi)
            raise ValueError(f"a folded add needs the convolution's output clamped within "
                             f"int8 (its epilogue ending in MAX lo, MIN hi within -128..127), "
                             f"not {shown}")


def _final_clamp(epi: Epilogue) -> tuple[int, int]:
    """The range the epilogue's trailing immediate MAX/MIN steps leave (unbounded sides:
    one beyond the 16-bit immediates)."""
    lo, hi = _IMM_MIN - 1, _IMM_MAX + 1
    for op, value, from_row in reversed(epi.steps):
        if from_row or op not in (AluOp.MAX, AluOp.MIN):
            break
        if op == AluOp.MAX:
            lo = max(lo, value) if hi > _IMM_MAX else max(lo, min(value, hi))
        else:
            hi = min(hi, value) if lo < _IMM_MIN else min(hi, max(value, lo))
    return lo, hi


def emit_conv2d(q: CommandQueue, data_shape: Sequence[int], kernel_shape: Sequence[int],
                data: Buffer, kernel: Buffer, out: Buffer, *,
                stride: int | Sequence[int] = 1, padding: int | Sequence[int] = 0,
                bias: Buffer | None = None, shift: int = 0, relu: bool = False,
                clip: tuple[int, int] | None = None,
                epilogue: Epilogue | None = None, tiling: dict | None = None,
                residual: Residual | None = None, other: Buffer | None = None,
                identity: Buffer | None = None) -> ConvPlan:
    """Queue a packed convolution whose operands are already in device buffers.

    For callers that keep tensors on the device across layers (the graph
    runtime).  ``data``, ``kernel`` and ``out`` hold the packed layouts of
    :func:`conv2d_packed` for the packed shapes ``data_shape`` and
    ``kernel_shape``; ``bias`` holds int32 (O/bo, BATCH, BLOCK_OUT), one value
    per output channel repeated over the batch lanes.  With ``epilogue`` (an
    :class:`Epilogue`), ``bias`` holds its rows instead and ``shift``,
    ``relu`` and ``clip`` are not used.  With ``residual``, ``out`` receives
    the folded add of the convolution and ``other`` (int8 in the output's
    packed layout; see :class:`Residual`), ``identity`` holding
    :meth:`Residual.weights`.  ``tiling`` as in :func:`conv2d_packed`.
    Nothing runs until ``q.synchronize()``.  Returns the tiling used
    (:func:`plan_conv2d`).
    """
    if epilogue is None:
        epilogue, _ = _epilogue(None, 0, shift, relu, clip)  # checks the arguments
        if bias is not None:
            epilogue = Epilogue(1, (), ((AluOp.ADD, 0, True),) + epilogue.steps)
    epilogue.check()
    if epilogue.rows and bias is None:
        raise ValueError(f"the epilogue has {epilogue.rows} rows: give their buffer as bias")
    if residual is not None:
        residual.check(epilogue)
        if other is None or identity is None:
            raise ValueError("a folded add (residual) needs its other operand's buffer (other) "
                             "and its weights' (identity)")
    plan = plan_conv2d(q.cfg, data_shape, kernel_shape, stride, padding, epilogue.rows, tiling,
                       residual is not None)
    _emit_conv(q, plan, epilogue, data, kernel, bias, out, residual, other, identity)
    return plan


def _add_steps(a_lshift: int, b_lshift: int, offset: int, shift: int, relu: bool,
               clip: tuple[int, int] | None) -> tuple[int, int, list[tuple[AluOp, int]]]:
    for name, value in (("a_lshift", a_lshift), ("b_lshift", b_lshift)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) \
                or not 0 <= value <= 24:
            raise ValueError(f"{name} must be an integer in 0..24, not {value!r}")
    if isinstance(offset, bool) or not isinstance(offset, (int, np.integer)) \
            or not _IMM_MIN <= offset <= _IMM_MAX:
        raise ValueError(f"offset must be an integer in {_IMM_MIN}..{_IMM_MAX} (a 16-bit ALU "
                         f"immediate), not {offset!r}")
    epi, _ = _epilogue(None, 0, shift, relu, clip)
    steps = [(AluOp.ADD, int(offset))] if offset else []
    return int(a_lshift), int(b_lshift), steps + epi.alu_steps


def emit_add(q: CommandQueue, a: Buffer, b: Buffer, out: Buffer, elems: int, *,
             a_lshift: int = 0, b_lshift: int = 0, offset: int = 0, shift: int = 0,
             relu: bool = False, clip: tuple[int, int] | None = None,
             a_steps: Sequence[tuple[AluOp, int]] | None = None,
             b_steps: Sequence[tuple[AluOp, int]] | None = None,
             steps: Sequence[tuple[AluOp, int]] | None = None) -> None:
    """Queue ``out = epilogue((a << a_lshift) + (b << b_lshift) + offset)`` on the ALU.

    ``a``, ``b`` and ``out`` hold ``elems`` elements of BATCH x BLOCK_OUT int8
    lanes each (any layout, the same for all three; ``out`` may be ``a`` or
    ``b``).  Arithmetic as in the module docstring.  Or, given ``a_steps``,
    ``b_steps`` and ``steps`` (lists of (ALU opcode, immediate)): those steps
    on each operand, their sum, then ``steps`` (the other arguments unused).
    Nothing runs until ``q.synchronize()``.
    """
    cfg = q.cfg
    if steps is None:
        la, lb, steps = _add_steps(a_lshift, b_lshift, offset, shift, relu, clip)
        a_steps = [(AluOp.SHR, -la)] if la else []
        b_steps = [(AluOp.SHR, -lb)] if lb else []
    a_steps, b_steps, steps = (list(x or []) for x in (a_steps, b_steps, steps))
    for op, imm in a_steps + b_steps + steps:
        _check_imm(op, imm)
    _check_elems(elems)
    acc_half = min(min(cfg.ACC_BUFF_DEPTH, cfg.OUT_BUFF_DEPTH) // 2, _LOOP_MAX)
    tile = acc_half // 2
    pipe = _Pipeline(q)
    pipe.begin()
    for t, e0 in enumerate(range(0, elems, tile)):
        n = min(tile, elems - e0)
        extra = len(a_steps) + len(b_steps) + len(steps)
        pipe.checkpoint(12 + extra, 8 + extra)
        base = (t % 2) * acc_half
        # compute: wait until the store of tile - 2 has drained this ACC half
        q.dep_pop(STORE_STAGE, COMPUTE_STAGE)
        q.load_2d(a, e0, n, 1, n, 0, 0, 0, 0, base, MemId.ACC_8BIT)
        q.load_2d(b, e0, n, 1, n, 0, 0, 0, 0, base + tile, MemId.ACC_8BIT)
        for src, operand_steps in ((base, a_steps), (base + tile, b_steps)):
            for op, imm in operand_steps:
                _push_elementwise(q, ("alu", int(op), imm, src, 1, n), src, 1, n, MODE_ALU, op,
                                  imm)

        def sum_kernel(base=base, n=n) -> None:
            q.uop_loop_begin(n, 1, 1, 0)
            q.uop_push(MODE_ALU, 0, base, base + tile, 0, AluOp.ADD, 0, 0)
            q.uop_loop_end()

        q.push_alu(("sum", base, base + tile, n), sum_kernel)
        for op, imm in steps:
            _push_elementwise(q, ("alu", int(op), imm, base, 1, n), base, 1, n, MODE_ALU, op,
                              imm)
        q.dep_push(COMPUTE_STAGE, STORE_STAGE)
        # store
        q.dep_pop(COMPUTE_STAGE, STORE_STAGE)
        q.store_2d(base, MemId.OUT, out, e0, n, 1, n)
        q.dep_push(STORE_STAGE, COMPUTE_STAGE)
    pipe.end()


def _check_imm(op: AluOp, imm: int) -> None:
    if isinstance(imm, bool) or not isinstance(imm, (int, np.integer)) \
            or not _IMM_MIN <= imm <= _IMM_MAX:
        raise ValueError(f"ALU step {AluOp(op).name} {imm!r}: immediates are 16-bit "
                         f"({_IMM_MIN}..{_IMM_MAX})")


def _check_elems(elems: int) -> None:
    if isinstance(elems, bool) or not isinstance(elems, (int, np.integer)) or elems < 1:
        raise ValueError(f"elems must be a positive integer, not {elems!r}")


def add(dev, a: np.ndarray, b: np.ndarray, *, a_lshift: int = 0, b_lshift: int = 0,
        offset: int = 0, shift: int = 0, relu: bool = False,
        clip: tuple[int, int] | None = None, return_stats: bool = False,
        queue_options: dict | None = None):
    """Element-wise ``epilogue((a << a_lshift) + (b << b_lshift) + offset)`` on the ALU.

    Parameters
    ----------
    dev : Device
        An open device.
    a, b : numpy.ndarray
        int8 arrays of the same shape (any shape: the add is element-wise).
    a_lshift, b_lshift : int
        Left shifts (0..24) applied to the sign-extended operands.
    offset : int
        Added after the sum (16-bit immediate), e.g. ``1 << (shift - 1)`` to
        round half up.
    shift, relu, clip
        Epilogue as in :func:`conv2d_packed`.
    return_stats, queue_options
        As in :func:`conv2d_packed`.

    Returns
    -------
    numpy.ndarray
        int8, the shape of ``a``: the low 8 bits of the result.
    """
    a, b = np.asarray(a), np.asarray(b)
    for name, arr in (("a", a), ("b", b)):
        if arr.dtype != np.int8:
            raise TypeError(f"{name} must be an int8 array, not {arr.dtype}")
    if a.shape != b.shape:
        raise ValueError(f"a and b must have the same shape, not {a.shape} and {b.shape}")
    _add_steps(a_lshift, b_lshift, offset, shift, relu, clip)
    lanes = dev.cfg.BATCH * dev.cfg.BLOCK_OUT
    elems = max(1, -(-a.size // lanes))
    bufs = [dev.alloc(elems * lanes) for _ in range(3)]
    try:
        for buf, arr in zip(bufs[:2], (a, b), strict=True):
            flat = np.zeros(elems * lanes, np.int8)
            flat[:arr.size] = arr.reshape(-1)
            dev.write(buf, flat)
        with CommandQueue(dev, **(queue_options or {})) as q:
            emit_add(q, bufs[0], bufs[1], bufs[2], elems, a_lshift=a_lshift, b_lshift=b_lshift,
                     offset=offset, shift=shift, relu=relu, clip=clip)
            q.synchronize()
            stats = RunStats.total(q.history)
        out = dev.read(bufs[2], elems * lanes).view(np.int8)[:a.size].reshape(a.shape)
    finally:
        for buf in bufs:
            dev.free(buf)
    out = np.ascontiguousarray(out)
    return (out, stats) if return_stats else out


# ---------------------------------------------------------------- pooling
@dataclass(frozen=True)
class PoolPlan:
    """How a packed pooling is tiled: ``tcb`` channel blocks x ``th`` output rows per tile."""

    nb: int
    cb: int
    h: int
    w: int
    oh: int
    ow: int
    kernel: tuple[int, int]
    stride: tuple[int, int]
    pads: tuple[int, int, int, int]
    tcb: int
    th: int


def plan_pool2d(cfg: Config, data_shape: Sequence[int], kernel: Sequence[int],
                stride: Sequence[int], pads: Sequence[int]) -> PoolPlan:
    """The tiling :func:`emit_pool2d` uses (ValueError when a tile of one row does not fit)."""
    nb, cb, h, w = (int(d) for d in data_shape[:4])
    if cfg.BLOCK_IN != cfg.BLOCK_OUT:
        raise ValueError("pooling on VTA needs BLOCK_IN == BLOCK_OUT (an INP element is an "
                         "accumulator element)")
    kh, kw = _pair("kernel", tuple(kernel), 1, _LOOP_MAX)
    sh, sw = _pair("stride", tuple(stride), 1, _LOOP_MAX)
    t, left, b, r = (int(p) for p in pads)
    if max(t, b) >= kh or max(left, r) >= kw or min(t, left, b, r) < 0:
        raise ValueError(f"pads {tuple(pads)} must be smaller than the {kh}x{kw} window")
    oh, ow = (h + t + b - kh) // sh + 1, (w + left + r - kw) // sw + 1
    if oh < 1 or ow < 1:
        raise ValueError(f"a {kh}x{kw} window does not fit a {h}x{w} input")
    if w > _MAX_STRIDE or oh * ow > _MAX_STRIDE:
        raise ValueError(f"a {h}x{w} input is too wide for 16-bit LOAD/STORE strides")
    acc_half = min(min(cfg.ACC_BUFF_DEPTH, cfg.OUT_BUFF_DEPTH) // 2, _LOOP_MAX)
    best = None
    for th in _candidates(oh):
        tih = min((th - 1) * sh + kh, h)
        per_block = th * ow + tih * w
        tcb = min(cb, acc_half // per_block, cfg.UOP_BUFF_DEPTH // 4)
        if tcb < 1:
            break
        best = (tcb, th)
    if best is None:
        raise ValueError(f"one output row of a {kh}x{kw} pool over a {h}x{w} input does not "
                         f"fit half the accumulator ({acc_half} entries)")
    return PoolPlan(nb, cb, h, w, oh, ow, (kh, kw), (sh, sw), (t, left, b, r), *best)


def emit_pool2d(q: CommandQueue, data_shape: Sequence[int], data: Buffer, out: Buffer, *,
                kind: str, kernel: Sequence[int], stride: Sequence[int] = (1, 1),
                pads: Sequence[int] = (0, 0, 0, 0),
                steps: Sequence[tuple[AluOp, int]] = ()) -> PoolPlan:
    """Queue a max or sum pooling of packed int8 activations on the ALU.

    ``data`` holds packed activations of ``data_shape`` (N/b, C/bi, H, W, b, bi),
    ``out`` receives (N/b, C/bi, OH, OW, b, bi).  Each tile loads its input rows
    into the accumulator (``ACC_8BIT``, sign-extended), starts the outputs at
    -128 (``kind="max"``) or 0 (``"sum"``), and for every window position
    applies ``MAX`` or ``ADD`` with the input entry under it over the outputs
    whose window has that position inside the input: padding is left out, so
    a max pools over the real entries only (ONNX's -inf padding) and a sum
    adds nothing for it.  Then ``steps`` (ALU opcode, immediate) and a STORE
    of the low 8 bits.  Returns the tiling (:func:`plan_pool2d`).
    """
    if kind not in ("max", "sum"):
        raise ValueError(f"kind must be 'max' or 'sum', not {kind!r}")
    steps = list(steps)
    for op, imm in steps:
        _check_imm(op, imm)
    p = plan_pool2d(q.cfg, data_shape, kernel, stride, pads)
    cfg = q.cfg
    acc_half = min(min(cfg.ACC_BUFF_DEPTH, cfg.OUT_BUFF_DEPTH) // 2, _LOOP_MAX)
    (kh, kw), (sh, sw) = p.kernel, p.stride
    pt, pl = p.pads[0], p.pads[1]
    op = AluOp.MAX if kind == "max" else AluOp.ADD
    pipe = _Pipeline(q)
    pipe.begin()
    tile = 0
    for nb in range(p.nb):
        for c0 in range(0, p.cb, p.tcb):
            tcb = min(p.tcb, p.cb - c0)
            for oh0 in range(0, p.oh, p.th):
                th = min(p.th, p.oh - oh0)
                i0 = max(oh0 * sh - pt, 0)
                i1 = min((oh0 + th - 1) * sh - pt + kh, p.h)
                tih = i1 - i0
                pipe.checkpoint(tcb + kh * kw + len(steps) + 12,
                                tcb * (kh * kw + 1) + len(steps) + 8)
                out_base = (tile % 2) * acc_half
                in_base = out_base + tcb * th * p.ow
                q.dep_pop(STORE_STAGE, COMPUTE_STAGE)
                for c in range(tcb):
                    elem = ((nb * p.cb + c0 + c) * p.h + i0) * p.w
                    q.load_2d(data, elem, p.w, tih, p.w, 0, 0, 0, 0, in_base + c * tih * p.w,
                              MemId.ACC_8BIT)
                _push_elementwise(q, ("reset", out_base, tcb * th, p.ow), out_base, tcb * th,
                                  p.ow, MODE_GEMM)
                if kind == "max":
                    _push_elementwise(q, ("alu", int(AluOp.ADD), -128, out_base, tcb * th, p.ow),
                                      out_base, tcb * th, p.ow, MODE_ALU, AluOp.ADD, -128)
                for r in range(kh):
                    # output rows whose input row oh*sh + r - pt lies in [i0, i1)
                    a0 = max(oh0, -(-(i0 + pt - r) // sh))
                    a1 = min(oh0 + th, (i1 - 1 + pt - r) // sh + 1)
                    for s in range(kw):
                        b0 = max(0, -(-(pl - s) // sw))
                        b1 = min(p.ow, (p.w - 1 + pl - s) // sw + 1)
                        if a0 >= a1 or b0 >= b1:
                            continue
                        dst = out_base + (a0 - oh0) * p.ow + b0
                        src = in_base + (a0 * sh + r - pt - i0) * p.w + b0 * sw + s - pl
                        _push_window_op(q, op, dst, src, tcb, th * p.ow, tih * p.w, a1 - a0,
                                        p.ow, sh * p.w, b1 - b0, sw)
                for alu_op, imm in steps:
                    _push_elementwise(q, ("alu", int(alu_op), imm, out_base, tcb * th, p.ow),
                                      out_base, tcb * th, p.ow, MODE_ALU, alu_op, imm)
                q.dep_push(COMPUTE_STAGE, STORE_STAGE)
                q.dep_pop(COMPUTE_STAGE, STORE_STAGE)
                plane = p.oh * p.ow
                q.store_2d(out_base, MemId.OUT, out, ((nb * p.cb + c0) * p.oh + oh0) * p.ow,
                           th * p.ow, tcb, plane)
                q.dep_push(STORE_STAGE, COMPUTE_STAGE)
                tile += 1
    pipe.end()
    return p


def _push_window_op(q: CommandQueue, op: AluOp, dst: int, src: int, blocks: int,
                    dst_block: int, src_block: int, rows: int, dst_row: int, src_row: int,
                    cols: int, src_col: int) -> None:
    """Tensor ALU op over a rows x cols rectangle of every channel block: entry (i, j)
    of block o is ``dst + o*dst_block + i*dst_row + j`` with source
    ``src + o*src_block + i*src_row + j*src_col``."""

    def finit() -> None:
        q.uop_loop_begin(rows, dst_row, src_row, 0)
        q.uop_loop_begin(cols, 1, src_col, 0)
        for o in range(blocks):
            q.uop_push(MODE_ALU, 0, dst + o * dst_block, src + o * src_block, 0, op, 0, 0)
        q.uop_loop_end()
        q.uop_loop_end()

    q.push_alu(("window", int(op), dst, src, blocks, dst_block, src_block, rows, dst_row,
                src_row, cols, src_col), finit)


# --------------------------------------------------------------- roofline
def _step_cycles(steps: Sequence[tuple], entries: int) -> int:
    """ALU cycles of steps over ``entries``: one per micro-op, a MUL instruction 2n - 1."""
    return sum(2 * entries - 1 if step[0] == AluOp.MUL else entries for step in steps)


def conv2d_bound(cfg: Config, data_shape: Sequence[int], kernel_shape: Sequence[int], *,
                 stride: int | Sequence[int] = 1, padding: int | Sequence[int] = 0,
                 bias: bool = False, shift: int = 0, relu: bool = False,
                 clip: tuple[int, int] | None = None, epilogue: Epilogue | None = None,
                 residual: Residual | None = None) -> roofline.Bound:
    """Lower bound in cycles of :func:`conv2d_packed` on ``cfg`` (:mod:`vta.roofline`).

    Packed shapes as :func:`conv2d_packed` takes them (``dense`` and
    ``matmul``: the one-row image of :func:`dense_bound`); the epilogue as
    :func:`emit_conv2d` takes it (``bias`` ... ``clip``, or ``epilogue``).  A
    folded add (``residual``) adds, per output entry, its other operand's INP
    entry, a GEMM micro-op and its ALU steps (:class:`Residual`).
    """
    if epilogue is None:
        epilogue, _ = _epilogue(None, 0, shift, relu, clip)
        if bias:
            epilogue = Epilogue(1, (), ((AluOp.ADD, 0, True),) + epilogue.steps)
    stride, padding = _pair("stride", stride, 1, 15), _pair("padding", padding, 0, 15)
    work = roofline.conv2d_work(cfg, data_shape, kernel_shape, stride, padding,
                                rows=epilogue.rows)
    entries = work.resets  # one per output entry
    nb, ob = data_shape[0], kernel_shape[0]
    alu = _step_cycles(epilogue.steps, entries) + sum(
        nb * ob * (a1 - a0) * (b1 - b0) for _, a0, a1, b0, b1 in epilogue.regions)
    work = work + roofline.Work(alu_uops=alu)
    if residual is not None:
        work = work + roofline.Work(
            gemm_uops=entries, alu_uops=_step_cycles((*residual.conv_steps, *residual.steps),
                                                     entries),
            inp_bytes=entries * cfg.INP_ELEM_BYTES, wgt_bytes=cfg.WGT_ELEM_BYTES)
    return roofline.bound(cfg, work)


def dense_bound(cfg: Config, m: int, k: int, n: int, **epilogue: Any) -> roofline.Bound:
    """Lower bound in cycles of :func:`dense` of ``x`` (M, K) and ``w`` (N, K) on ``cfg``.

    Keywords: ``bias`` (bool), ``shift``, ``relu``, ``clip`` (or ``epilogue``) as in
    :func:`conv2d_bound`.
    """
    b, bi, bo = cfg.BATCH, cfg.BLOCK_IN, cfg.BLOCK_OUT
    data = (1, -(-k // bi), 1, -(-m // b))
    kernel = (-(-n // bo), -(-k // bi), 1, 1)
    return conv2d_bound(cfg, data, kernel, **epilogue)


def add_bound(cfg: Config, elems: int, *, a_lshift: int = 0, b_lshift: int = 0,
              offset: int = 0, shift: int = 0, relu: bool = False,
              clip: tuple[int, int] | None = None,
              a_steps: Sequence[tuple[AluOp, int]] | None = None,
              b_steps: Sequence[tuple[AluOp, int]] | None = None,
              steps: Sequence[tuple[AluOp, int]] | None = None) -> roofline.Bound:
    """Lower bound in cycles of :func:`emit_add` over ``elems`` entries on ``cfg`` (the same
    arguments: shifts, offset, shift, ReLU and clip, or the three lists of steps)."""
    _check_elems(elems)
    if steps is None:
        la, lb, steps = _add_steps(a_lshift, b_lshift, offset, shift, relu, clip)
        a_steps = [(AluOp.SHR, -la)] if la else []
        b_steps = [(AluOp.SHR, -lb)] if lb else []
    alu = _step_cycles([*(a_steps or []), *(b_steps or []), (AluOp.ADD, 0), *steps], elems)
    return roofline.bound(cfg, roofline.add_work(cfg, elems, alu))


def pool2d_bound(cfg: Config, data_shape: Sequence[int], *, kind: str,
                 kernel: Sequence[int], stride: Sequence[int] = (1, 1),
                 pads: Sequence[int] = (0, 0, 0, 0),
                 steps: Sequence[tuple[AluOp, int]] = ()) -> roofline.Bound:
    """Lower bound in cycles of :func:`emit_pool2d` on ``cfg`` (the same arguments).

    Every input entry a window covers reaches the accumulator once
    (``ACC_8BIT``, on the compute engine); every output entry is reset (and,
    for a max, started at -128), takes one ``MAX`` or ``ADD`` per window
    position inside the input and the ALU steps, and is stored.
    """
    p = plan_pool2d(cfg, data_shape, kernel, stride, pads)
    (kh, kw), (sh, sw) = p.kernel, p.stride
    pt, pl = p.pads[0], p.pads[1]
    blocks = p.nb * p.cb
    out = blocks * p.oh * p.ow
    rows = roofline._used(p.oh, sh, pt, kh, p.h)
    window = 0
    for r in range(kh):
        a = sum(1 for o in range(p.oh) if 0 <= o * sh + r - pt < p.h)
        for s_ in range(kw):
            window += a * sum(1 for o in range(p.ow) if 0 <= o * sw + s_ - pl < p.w)
    alu = blocks * window + (out if kind == "max" else 0) + _step_cycles(steps, out)
    lanes = cfg.BATCH * cfg.BLOCK_OUT
    work = roofline.Work(resets=out, alu_uops=alu, acc8_bytes=blocks * rows * p.w * lanes,
                         out_bytes=out * cfg.OUT_ELEM_BYTES)
    return roofline.bound(cfg, work)

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
every synchronize.

A GEMM's micro-op kernel enumerates (kernel position, output-channel block,
column), the column fastest, so neighbouring micro-ops never write the same
destination (a read-after-write hazard); its two loops run over the tile rows
and the chunk's channel blocks (the reduction).  Each chunk runs either one
GEMM per kernel position or one GEMM for all of them, whichever the tiling
cost model prefers.  Matmul
and dense are the 1x1 convolution of a one-row image whose columns are the
rows of the left operand.

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
int32 rows loaded beside each tile (a bias, multipliers, shifts, corrections),
``ADD`` of a row over output rectangles, then ALU steps with immediates or
with a row as the tensor source (``MUL``, ``SHR`` per channel).

Pooling (:func:`emit_pool2d`) runs on the ALU too: input rows loaded into the
accumulator (``ACC_8BIT``), one ``MAX`` or ``ADD`` per window position over
the outputs whose window has that position inside the input, then ALU steps.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

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

__all__ = [
    "Epilogue",
    "PoolPlan",
    "add",
    "conv2d",
    "conv2d_output_shape",
    "conv2d_packed",
    "dense",
    "emit_add",
    "emit_conv2d",
    "emit_pool2d",
    "matmul",
    "pack_nchw",
    "pack_oihw",
    "plan_conv2d",
    "plan_pool2d",
    "unpack_nchw",
]

_LOOP_MAX = (1 << 14) - 1
# Tiling cost model (microseconds of the golden model, measured on a 2-core EPYC):
_INSN_COST = 40  # per instruction
_GEMM_COST = 90  # extra per GEMM instruction
_LANE_COST = 0.025  # per accumulated lane when one GEMM sums several kernel positions
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
@dataclass(frozen=True)
class ConvPlan:
    """How a packed convolution is tiled (see the module docstring).

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
        enumerates every position; possible when a tile has at least three
        output elements, so that neighbouring micro-ops never share a
        destination).
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

    @property
    def tiles(self) -> int:
        """Output tiles (each one ACC half's worth of work)."""
        return (self.nb * -(-self.ob // self.tob) * -(-self.oh // self.th)
                * -(-self.ow // self.tw))

    @property
    def chunks(self) -> int:
        """Reduction chunks per tile."""
        return self.cb // self.tcb


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


@functools.lru_cache(maxsize=256)
def _plan(cfg: Config, nb: int, cb: int, h: int, w: int, ob: int, kh: int, kw: int,
          sh: int, sw: int, ph: int, pw: int, rows: int) -> ConvPlan:
    oh, ow = conv2d_output_shape(h, w, kh, kw, (sh, sw), (ph, pw))
    inp_half = cfg.INP_BUFF_DEPTH // 2
    wgt_half = cfg.WGT_BUFF_DEPTH // 2
    acc_half = min(min(cfg.ACC_BUFF_DEPTH, cfg.OUT_BUFF_DEPTH) // 2, _LOOP_MAX)
    uop_budget = cfg.UOP_BUFF_DEPTH // 2
    best = None
    for tcb in reversed(_divisors(cb)):
        chunks = cb // tcb
        for tob in _candidates(ob):
            if tob * tcb * kh * kw > wgt_half:
                break
            for th in _candidates(oh):
                tih = (th - 1) * sh + kh
                if tcb * tih * kw > inp_half or tob * th > acc_half:
                    break
                for tw in _candidates(ow):
                    tiw = (tw - 1) * sw + kw
                    if tcb * tih * tiw > inp_half:
                        break
                    if tob * th * tw + tob * rows > acc_half:
                        break
                    if tob * tw + tob + 8 > uop_budget:
                        break
                    tiles = nb * -(-ob // tob) * -(-oh // th) * -(-ow // tw)
                    steps = tiles * chunks
                    inp_elems = steps * tcb * tih * tiw
                    wgt_elems = steps * tob * tcb * kh * kw
                    base = (steps * (tcb + 3) + tiles * (12 + tob)) * _INSN_COST \
                        + inp_elems * 0.02 + wgt_elems * 0.1
                    # split: one GEMM per kernel position, each destination once per GEMM
                    options = [(base + steps * kh * kw * (_INSN_COST + _GEMM_COST), True)]
                    combined_ok = kh * kw > 1 and tob * tw >= 3 and \
                        kh * kw * tob * tw + tob + 8 <= uop_budget
                    if combined_ok:  # one GEMM per chunk; kernel positions summed in place
                        lanes = steps * kh * kw * tob * th * tw * cfg.BATCH * cfg.BLOCK_OUT
                        options.append((base + steps * (_INSN_COST + _GEMM_COST)
                                        + lanes * _LANE_COST, False))
                    for cost, split in options:
                        key = (cost, -tob * th * tw)
                        if best is None or key < best[0]:
                            best = (key, (tob, th, tw, tcb, split))
    if best is None:
        raise ValueError(
            f"a {kh}x{kw} convolution does not fit this configuration's scratchpads even with "
            f"1-block tiles (INP half {inp_half}, WGT half {wgt_half}, ACC half {acc_half} "
            f"entries, micro-op buffer {cfg.UOP_BUFF_DEPTH})")
    tob, th, tw, tcb, split = best[1]
    return ConvPlan(nb, cb, h, w, ob, kh, kw, oh, ow, sh, sw, ph, pw, tob, th, tw, tcb, split)


def plan_conv2d(cfg: Config, data_shape: Sequence[int], kernel_shape: Sequence[int],
                stride: int | Sequence[int] = 1, padding: int | Sequence[int] = 0,
                bias: bool | int = False) -> ConvPlan:
    """The tiling :func:`conv2d_packed` uses for packed shapes ``data_shape`` / ``kernel_shape``.

    ``bias``: the per-channel rows the epilogue keeps beside each tile
    (:attr:`Epilogue.rows`; ``True`` is one, a bias).
    """
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
    return _plan(cfg, nb, cb, h, w, ob, kh, kw, sh, sw, ph, pw, int(bias))


# --------------------------------------------------------------- engine
class _Pipeline:
    """Token bookkeeping for the two virtual threads (two halves of every scratchpad)."""

    def __init__(self, q: CommandQueue):
        self.q = q
        self.wgt_in_half: list[Any] = [None, None]

    def begin(self) -> None:
        q = self.q
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


def _emit_conv(q: CommandQueue, plan: ConvPlan, epi: Epilogue, data_buf: Buffer,
               wgt_buf: Buffer, rows_buf: Buffer | None, out_buf: Buffer) -> None:
    cfg = q.cfg
    p = plan
    inp_half = cfg.INP_BUFF_DEPTH // 2
    wgt_half = cfg.WGT_BUFF_DEPTH // 2
    acc_half = min(min(cfg.ACC_BUFF_DEPTH, cfg.OUT_BUFF_DEPTH) // 2, _LOOP_MAX)
    khw = p.kh * p.kw
    pipe = _Pipeline(q)
    pipe.begin()
    step = tile = 0
    for nb in range(p.nb):
        for ob0 in range(0, p.ob, p.tob):
            tob = min(p.tob, p.ob - ob0)
            for oh0 in range(0, p.oh, p.th):
                th = min(p.th, p.oh - oh0)
                tih = (th - 1) * p.sh + p.kh
                for ow0 in range(0, p.ow, p.tw):
                    tw = min(p.tw, p.ow - ow0)
                    tiw = (tw - 1) * p.sw + p.kw
                    split = p.split_kernel or tob * tw < 3
                    gemm_uops = khw * tob * tw
                    regions = _tile_regions(epi, oh0, th, ow0, tw)
                    epi_insns = len(epi.steps) + len(regions) + 1
                    pipe.checkpoint(p.chunks * (p.tcb + 4 + 2 * khw) + 16 + tob + epi_insns,
                                    p.chunks * gemm_uops + (epi_insns + 1) * tob + 16)
                    ah = tile % 2
                    acc_base = ah * acc_half
                    rows_base = acc_base + acc_half - tob * epi.rows
                    # compute: wait until the store of tile - 2 has drained this ACC half
                    q.dep_pop(STORE_STAGE, COMPUTE_STAGE)
                    if epi.rows:
                        q.load_2d(rows_buf, ob0, tob, epi.rows, p.ob, 0, 0, 0, 0, rows_base,
                                  MemId.ACC)
                    _push_elementwise(q, ("reset", acc_base, tob * th, tw), acc_base,
                                      tob * th, tw, MODE_GEMM)
                    for c0 in range(0, p.cb, p.tcb):
                        h = step % 2
                        inp_base, wgt_base = h * inp_half, h * wgt_half
                        # load: wait until the GEMM of step - 2 has released this half
                        q.dep_pop(COMPUTE_STAGE, LOAD_STAGE)
                        if pipe.wgt_in_half[h] != (ob0, c0):
                            q.load_2d(wgt_buf, (ob0 * p.cb + c0) * khw, p.tcb * khw, tob,
                                      p.cb * khw, 0, 0, 0, 0, wgt_base, MemId.WGT)
                            pipe.wgt_in_half[h] = (ob0, c0)
                        _load_window(q, p, data_buf, nb, c0, oh0, ow0, tih, tiw, inp_base)
                        q.dep_push(LOAD_STAGE, COMPUTE_STAGE)
                        # compute: wait for the data, accumulate, release the half
                        q.dep_pop(LOAD_STAGE, COMPUTE_STAGE)
                        _push_conv_gemm(q, p, split, acc_base, inp_base, wgt_base, tob, th, tw,
                                        tih, tiw)
                        q.dep_push(COMPUTE_STAGE, LOAD_STAGE)
                        step += 1
                    _emit_epilogue(q, epi, regions, acc_base, rows_base, tob, th, tw)
                    q.dep_push(COMPUTE_STAGE, STORE_STAGE)
                    # store
                    q.dep_pop(COMPUTE_STAGE, STORE_STAGE)
                    plane = p.oh * p.ow
                    out_elem = ((nb * p.ob + ob0) * p.oh + oh0) * p.ow + ow0
                    if tw == p.ow and plane <= _MAX_STRIDE:
                        q.store_2d(acc_base, MemId.OUT, out_buf, out_elem, th * tw, tob, plane)
                    else:
                        for o in range(tob):
                            q.store_2d(acc_base + o * th * tw, MemId.OUT, out_buf,
                                       out_elem + o * plane, tw, th, p.ow)
                    q.dep_push(STORE_STAGE, COMPUTE_STAGE)
                    tile += 1
    pipe.end()


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


def _emit_epilogue(q: CommandQueue, epi: Epilogue, regions, acc_base: int, rows_base: int,
                   tob: int, th: int, tw: int) -> None:
    """The epilogue of one tile (``tob`` channel blocks of ``th`` x ``tw`` entries)."""
    for row, r0, r1, c0, c1 in regions:
        _push_row_op(q, AluOp.ADD, acc_base + r0 * tw + c0, rows_base + row * tob, tob,
                     th * tw, r1 - r0, tw, c1 - c0)
    for op, value, from_row in epi.steps:
        if from_row:
            _push_row_op(q, op, acc_base, rows_base + value * tob, tob, th * tw, th, tw, tw)
        else:
            _push_elementwise(q, ("alu", int(op), value, acc_base, tob * th, tw), acc_base,
                              tob * th, tw, MODE_ALU, op, value)


def _push_row_op(q: CommandQueue, op: AluOp, dst: int, src: int, blocks: int, block_size: int,
                 rows: int, row_size: int, cols: int) -> None:
    """Tensor ALU op: ``rows`` x ``cols`` entries of each of ``blocks`` channel blocks (one
    every ``block_size`` entries, rows ``row_size`` apart) with source entry ``src + block``."""

    def finit() -> None:
        q.uop_loop_begin(rows, row_size, 0, 0)
        q.uop_loop_begin(cols, 1, 0, 0)
        for o in range(blocks):
            q.uop_push(MODE_ALU, 0, dst + o * block_size, src + o, 0, op, 0, 0)
        q.uop_loop_end()
        q.uop_loop_end()

    q.push_alu(("row", int(op), dst, src, blocks, block_size, rows, row_size, cols), finit)


def _push_elementwise(q: CommandQueue, key: tuple, base: int, rows: int, cols: int, mode: int,
                      op: AluOp = AluOp.MIN, imm: int = 0) -> None:
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

    if mode == MODE_GEMM:
        q.push_gemm(key, finit)
    else:
        q.push_alu(key, finit)


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


def _push_conv_gemm(q: CommandQueue, p: ConvPlan, split: bool, acc_base: int, inp_base: int,
                    wgt_base: int, tob: int, th: int, tw: int, tih: int, tiw: int) -> None:
    """Accumulate one chunk into the tile: one GEMM per kernel position, or one for all.

    A kernel has a micro-op per (kernel position, output-channel block,
    column), the column fastest: neighbouring micro-ops have different
    destinations (all do when split; with every position in one kernel the
    tile needs at least three outputs per row).  Loops: tile rows (outer) and
    the chunk's channel blocks (inner, a reduction).
    """
    khw = p.kh * p.kw
    o, x = np.divmod(np.arange(tob * tw), tw)
    positions = [(r, s) for r in range(p.kh) for s in range(p.kw)]
    for group in ([[pos] for pos in positions] if split else [positions]):
        def finit(group=group) -> None:
            q.uop_loop_begin(th, tw, p.sh * tiw, 0)
            q.uop_loop_begin(p.tcb, 0, tih * tiw, khw)
            for r, s in group:
                q.uop_push_block(MODE_GEMM, 0, acc_base + o * th * tw + x,
                                 inp_base + r * tiw + s + x * p.sw,
                                 wgt_base + o * p.tcb * khw + r * p.kw + s)
            q.uop_loop_end()
            q.uop_loop_end()

        q.push_gemm(("gemm", acc_base, inp_base, wgt_base, tob, th, tw, tih, tiw, p.tcb,
                     tuple(group)), finit)


# -------------------------------------------------------------- operators
def _run_packed_conv(dev, data: np.ndarray, kernel: np.ndarray, stride, padding,
                     bias: np.ndarray | None, epi: Epilogue, queue_options: dict | None
                     ) -> tuple[np.ndarray, RunStats | None]:
    cfg = dev.cfg
    b, bi, bo = cfg.BATCH, cfg.BLOCK_IN, cfg.BLOCK_OUT
    if data.shape[4:] != (b, bi):
        raise ValueError(f"packed data must end in ({b}, {bi}) (BATCH, BLOCK_IN), not "
                         f"{data.shape[4:]}")
    if kernel.shape[4:] != (bo, bi):
        raise ValueError(f"packed kernel must end in ({bo}, {bi}) (BLOCK_OUT, BLOCK_IN), not "
                         f"{kernel.shape[4:]}")
    plan = plan_conv2d(cfg, data.shape, kernel.shape, stride, padding, epi.rows)
    out_shape = (plan.nb, plan.ob, plan.oh, plan.ow, b, bo)
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
        with CommandQueue(dev, **(queue_options or {})) as q:
            _emit_conv(q, plan, epi, data_buf, wgt_buf, bias_buf, out_buf)
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
                  queue_options: dict | None = None):
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

    Returns
    -------
    numpy.ndarray
        int8 (N/b, O/bo, OH, OW, b, bo): the low 8 bits of the epilogue result.
    """
    data = _as_int8("data", data, 6)
    kernel = _as_int8("kernel", kernel, 6)
    n_out = kernel.shape[0] * kernel.shape[4]
    epi, bias = _epilogue(bias, n_out, shift, relu, clip)
    out, stats = _run_packed_conv(dev, data, kernel, stride, padding, bias, epi, queue_options)
    return (out, stats) if return_stats else out


def conv2d(dev, data: np.ndarray, kernel: np.ndarray, *, stride: int | Sequence[int] = 1,
           padding: int | Sequence[int] = 0, bias: np.ndarray | None = None, shift: int = 0,
           relu: bool = False, clip: tuple[int, int] | None = None, return_stats: bool = False,
           queue_options: dict | None = None):
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
                                  padding, bias, epi, queue_options)
    result = unpack_nchw(out, n, o)
    return (result, stats) if return_stats else result


def dense(dev, x: np.ndarray, w: np.ndarray, *, bias: np.ndarray | None = None, shift: int = 0,
          relu: bool = False, clip: tuple[int, int] | None = None, return_stats: bool = False,
          queue_options: dict | None = None):
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
                                  1, 0, bias, epi, queue_options)
    # (1, N/bo, 1, M/b, b, bo) -> (M, N)
    result = out[0, :, 0].transpose(1, 2, 0, 3).reshape(mp, np_)[:m, :n]
    result = np.ascontiguousarray(result)
    return (result, stats) if return_stats else result


def matmul(dev, a: np.ndarray, b: np.ndarray, **kwargs):
    """``a @ b`` for int8 ``a`` (M, K) and ``b`` (K, N); keywords as in :func:`dense`."""
    b = _as_int8("b", b, 2)
    return dense(dev, a, np.ascontiguousarray(b.T), **kwargs)


# --------------------------------------------------- pre-placed operands
def emit_conv2d(q: CommandQueue, data_shape: Sequence[int], kernel_shape: Sequence[int],
                data: Buffer, kernel: Buffer, out: Buffer, *,
                stride: int | Sequence[int] = 1, padding: int | Sequence[int] = 0,
                bias: Buffer | None = None, shift: int = 0, relu: bool = False,
                clip: tuple[int, int] | None = None,
                epilogue: Epilogue | None = None) -> ConvPlan:
    """Queue a packed convolution whose operands are already in device buffers.

    For callers that keep tensors on the device across layers (the graph
    runtime).  ``data``, ``kernel`` and ``out`` hold the packed layouts of
    :func:`conv2d_packed` for the packed shapes ``data_shape`` and
    ``kernel_shape``; ``bias`` holds int32 (O/bo, BATCH, BLOCK_OUT), one value
    per output channel repeated over the batch lanes.  With ``epilogue`` (an
    :class:`Epilogue`), ``bias`` holds its rows instead and ``shift``,
    ``relu`` and ``clip`` are not used.  Nothing runs until
    ``q.synchronize()``.  Returns the tiling used (:func:`plan_conv2d`).
    """
    if epilogue is None:
        epilogue, _ = _epilogue(None, 0, shift, relu, clip)  # checks the arguments
        if bias is not None:
            epilogue = Epilogue(1, (), ((AluOp.ADD, 0, True),) + epilogue.steps)
    epilogue.check()
    if epilogue.rows and bias is None:
        raise ValueError(f"the epilogue has {epilogue.rows} rows: give their buffer as bias")
    plan = plan_conv2d(q.cfg, data_shape, kernel_shape, stride, padding, epilogue.rows)
    _emit_conv(q, plan, epilogue, data, kernel, bias, out)
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

"""Pooling on the ALU: max and average over windows of packed activations.

Input rows are loaded into the accumulator (``ACC_8BIT``), then one ``MAX`` or
``ADD`` per window position over the outputs whose window has that position
inside the input, then ALU steps (an average's fixed-point scale).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..config import Config
from ..driver.host import Buffer
from ..isa import AluOp, MemId
from ..runtime import _MAX_16 as _MAX_STRIDE  # LOAD/STORE strides: 16-bit fields
from ..runtime import (
    COMPUTE_STAGE,
    MODE_ALU,
    MODE_GEMM,
    STORE_STAGE,
    CommandQueue,
)
from .emit import _Pipeline, _push_elementwise
from .epilogue import _check_imm
from .layout import _pair
from .plan import _LOOP_MAX, _candidates


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

"""Roofline of each operator: its lower bound in cycles from the configuration alone.

GEMM micro-ops (with the accumulator resets the ISA forces), bytes over the
bus, ALU micro-ops; the bound is the largest (:mod:`vta.roofline`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .. import roofline
from ..config import Config
from ..isa import AluOp
from .elementwise import _check_elems
from .epilogue import Epilogue, Residual, _add_steps, _epilogue
from .layout import _pair
from .pool import plan_pool2d


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

"""How graph nodes become VTA operators: device values, epilogue steps, per-channel rows.

Device values.  VTA computes on int8.  An int8 tensor is stored as it is; a
uint8 tensor ``x`` as ``x - 128`` (so its zero point ``zx`` becomes ``zx -
128``): ``x - zx`` is unchanged, and so is every result below.

A convolution or dense layer (``acc = sum(x' * w)`` over the device values
``x'``, padding entries 0) finishes in its ALU epilogue:

* row 0, the bias: ``bias + 2**(p-1) - zx' * sum(w)`` per output channel (the
  input zero point folded in exactly: ``sum((x - zx) * w) = sum(x' * w) - zx' *
  sum(w)``; the pre-shift's rounding offset rides along);
* where a window overlaps the padding, whose entries are 0 rather than
  ``zx'``, a correction row ``zx' * (sum(w) - sum of w over the window's
  positions inside the input)`` added over that output rectangle (one row per
  distinct overlap: corners, edges);
* the fixed-point requantization (:mod:`vta.graph.fixed`): ``SHR p``, the
  optional clamp, ``MUL M``, then the rounding shift with the output zero
  point ``zy'`` folded in: ``SHR s-1; ADD 1 + 2*zy'; SHR 1`` (``2*zy'`` is even, so
  the last shift adds exactly ``zy'``).  Per-channel values are rows applied
  by tensor ALU ops.  A plain power-of-two ratio (``M = 1``, ``p = 0``) keeps
  the old form: ``2**(s-1)`` in the bias and one ``SHR s``;
* the output clamp ``MAX lo'; MIN hi'`` (saturation, fused ReLU or Clip).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .. import ops
from ..isa import AluOp
from . import fixed
from .fixed import FixedPoint
from .ir import Node, QType

__all__ = ["add_steps", "conv_epilogue", "dev_zero", "from_device", "pool_steps", "to_device"]

_IMM_MIN, _IMM_MAX = -(1 << 15), (1 << 15) - 1
Step = tuple[AluOp, int, bool]


def _shift(q: QType) -> int:
    return 128 if q.dtype == "uint8" else 0


def dev_zero(q: QType) -> int:
    """The zero point of ``q``'s device values."""
    return q.zero_point - _shift(q)


def to_device(array: np.ndarray, q: QType | None) -> np.ndarray:
    """Host int8/uint8 values -> device int8 values."""
    if q is not None and q.dtype == "uint8":
        return (array.astype(np.int16) - 128).astype(np.int8)
    return array


def from_device(array: np.ndarray, q: QType | None) -> np.ndarray:
    """Device int8 values -> host values of ``q``'s type."""
    if q is not None and q.dtype == "uint8":
        return (array.astype(np.int16) + 128).astype(np.uint8)
    return array


def _fits(v: int) -> bool:
    return _IMM_MIN <= v <= _IMM_MAX


def _mult_steps(m: int) -> list[Step]:
    """Multiply by ``m``: nothing, a left shift for a power of two, else MUL."""
    if m == 1:
        return []
    if m > 0 and m & (m - 1) == 0:
        return [(AluOp.SHR, -(m.bit_length() - 1), False)]
    return [(AluOp.MUL, m, False)]


def _round_steps(s: int, zy: int) -> list[Step]:
    """Rounding shift by ``s`` with the zero point ``zy`` added (module docstring)."""
    if s == 0:
        return [(AluOp.ADD, zy, False)] if zy else []
    steps = [(AluOp.SHR, s - 1, False)] if s > 1 else []
    return steps + [(AluOp.ADD, 1 + 2 * zy, False), (AluOp.SHR, 1, False)]


def requant_steps(fp: FixedPoint, zy: int, lo: int, hi: int,
                  new_row: Callable[[np.ndarray], int] | None = None) -> list[Step]:
    """ALU steps for ``fp`` after the accumulation (the offset already in the bias).

    ``new_row(values)`` registers a per-channel row and returns its index
    (needed when a value differs between channels).
    """
    steps: list[Step] = []

    def each(name: str, values: np.ndarray, op: AluOp, imm: Callable[[int], list[Step]]) -> None:
        u = fp.uniform(name)
        if u is not None and all(_fits(v) for _, v, _ in imm(u)):
            steps.extend(imm(u))
        elif new_row is None:
            raise ValueError(f"per-channel {name} values need rows")
        else:
            steps.append((op, new_row(values), True))

    each("pre", fp.pre, AluOp.SHR, lambda p: [(AluOp.SHR, p, False)] if p else [])
    if fp.clamp:
        steps += [(AluOp.MAX, -fp.clamp, False), (AluOp.MIN, fp.clamp, False)]
    each("mult", fp.mult, AluOp.MUL, _mult_steps)
    s = fp.uniform("shift")
    if s is not None:
        steps += _round_steps(s, zy)
    else:
        steps.append((AluOp.SHR, new_row(fp.shift - 1), True))
        steps += [(AluOp.ADD, 1 + 2 * zy, False), (AluOp.SHR, 1, False)]
    return steps + [(AluOp.MAX, lo, False), (AluOp.MIN, hi, False)]


def _folds(fp: FixedPoint) -> int | None:
    """``s`` when the requantization is one rounding shift whose offset fits the bias."""
    s = fp.uniform("shift")
    if s and fp.uniform("pre") == 0 and fp.uniform("mult") == 1 and not fp.clamp \
            and int(fp.bound.max()) + (1 << (s - 1)) <= fixed.INT32_MAX:
        return s
    return None


def _runs(ranges: list[tuple[int, int]]) -> list[tuple[int, int, tuple[int, int]]]:
    """Maximal runs of equal values: (start, stop, value)."""
    out = []
    for i, v in enumerate(ranges):
        if out and out[-1][2] == v:
            out[-1] = (out[-1][0], i + 1, v)
        else:
            out.append((i, i + 1, v))
    return out


def _valid(n_out: int, stride: int, pad: int, k: int, size: int) -> list[tuple[int, int]]:
    """Per output position, the window positions [lo, hi) that fall inside the input."""
    return [(max(0, pad - o * stride), min(k, size + pad - o * stride)) for o in range(n_out)]


def conv_epilogue(node: Node, xq: QType, yq: QType, x_shape: tuple[int, ...], cfg: Any
                  ) -> tuple[ops.Epilogue, np.ndarray]:
    """The :class:`vta.ops.Epilogue` of a conv/dense node and its rows (int32, packed
    (rows, O/bo, BATCH, BLOCK_OUT)), for input shape ``x_shape``."""
    a = node.attrs
    fp: FixedPoint = a["fixed"]
    w = a["weight"].astype(np.int64)
    o = w.shape[0]
    ob = -(-o // cfg.BLOCK_OUT)
    zx, zy = dev_zero(xq), dev_zero(yq)
    lo, hi = a["lo"] - _shift(yq), a["hi"] - _shift(yq)
    rows: list[np.ndarray] = []

    def new_row(values: np.ndarray) -> int:
        row = np.zeros(ob * cfg.BLOCK_OUT, np.int64)
        row[:o] = values
        rows.append(row)
        return len(rows) - 1

    full = w.reshape(o, -1).sum(axis=1)
    bias = fp.offset() - zx * full
    if a["bias"] is not None:
        bias = bias + a["bias"].astype(np.int64)
    s = _folds(fp)
    if s is not None:
        bias = bias + (1 << (s - 1))
    new_row(bias)
    steps: list[Step] = [(AluOp.ADD, 0, True)]
    regions = []
    if node.op == "conv" and zx and any(a["pads"]):
        kh, kw = w.shape[2:]
        (sh, sw), (pt, pl) = a["stride"], a["pads"][:2]
        h, wd = x_shape[2:]
        oh, ow = (h + 2 * pt - kh) // sh + 1, (wd + 2 * pl - kw) // sw + 1
        per_pos = w.sum(axis=1)  # (O, KH, KW)
        classes: dict[tuple, int] = {}
        for a0, a1, (r0, r1) in _runs(_valid(oh, sh, pt, kh, h)):
            for b0, b1, (c0, c1) in _runs(_valid(ow, sw, pl, kw, wd)):
                corr = zx * (full - per_pos[:, r0:r1, c0:c1].sum(axis=(1, 2)))
                if not corr.any():
                    continue
                key = (r0, r1, c0, c1)
                if key not in classes:
                    classes[key] = new_row(corr)
                regions.append((classes[key], a0, a1, b0, b1))
    if s is not None:
        steps += [(AluOp.SHR, s, False)] + ([(AluOp.ADD, zy, False)] if zy else []) \
            + [(AluOp.MAX, lo, False), (AluOp.MIN, hi, False)]
    else:
        steps += requant_steps(fp, zy, lo, hi, new_row)
    wrapped = ((np.stack(rows) + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)
    packed = np.broadcast_to(wrapped.reshape(len(rows), ob, 1, cfg.BLOCK_OUT),
                             (len(rows), ob, cfg.BATCH, cfg.BLOCK_OUT)).astype("<i4")
    return ops.Epilogue(len(rows), tuple(regions), tuple(steps)), np.ascontiguousarray(packed)


def add_steps(fp: fixed.AddFixed, aq: QType, bq: QType, yq: QType, lo: int, hi: int
              ) -> dict[str, list[tuple[AluOp, int]]]:
    """``a_steps``, ``b_steps`` and ``steps`` of :func:`vta.ops.emit_add` for a quantized add."""
    def operand(q: QType, m: int) -> list[tuple[AluOp, int]]:
        z = dev_zero(q)
        return ([(AluOp.ADD, -z)] if z else []) + [(op, v) for op, v, _ in _mult_steps(m)]

    ys = _shift(yq)
    steps = _round_steps(fp.shift, dev_zero(yq)) + [(AluOp.MAX, lo - ys, False),
                                                    (AluOp.MIN, hi - ys, False)]
    return {"a_steps": operand(aq, fp.mult_a), "b_steps": operand(bq, fp.mult_b),
            "steps": [(op, v) for op, v, _ in steps]}


def pool_steps(node: Node, xq: QType, yq: QType, count: int) -> list[tuple[AluOp, int]]:
    """Steps after a max (``count`` 0) or sum (``count`` values) pooling (ValueError if none)."""
    if node.op == "maxpool":
        fp = node.attrs.get("fixed")
        if xq == yq:
            return []
        if fp is None:
            raise ValueError(node.attrs.get("fixed_why", "no fixed-point requantization"))
        first = -dev_zero(xq) + int(fp.offset()[0])
    else:
        fp = fixed.pool_params(count, xq, yq)
        if isinstance(fp, str):
            raise ValueError(fp)
        first = -count * dev_zero(xq) + int(fp.offset()[0])
    if not _fits(first):
        raise ValueError(f"the input zero point's total {first} exceeds a 16-bit immediate")
    steps = ([(AluOp.ADD, first, False)] if first else []) + requant_steps(
        fp, dev_zero(yq), yq.qmin - _shift(yq), yq.qmax - _shift(yq))
    return [(op, v) for op, v, _ in steps]

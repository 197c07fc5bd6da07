"""Fixed-point requantization: any scale ratio as VTA's ALU computes it.

A requantization multiplies an int32 accumulator by a real ratio ``r`` (for a
convolution ``x_scale * w_scale / y_scale``) and rounds.  VTA has no floating
point, so the ratio becomes a multiplier ``M`` and shifts ``p`` and ``s``::

    a = (acc + 2**(p-1)) >> p          pre-shift (the offset rides in the bias)   p >= 0
    a = clip(a, -L, L)                 only when the parameters need it (below)
    v = a * M                          int32 MUL, proven not to overflow
    y = ((v >> (s-1)) + 1) >> 1        = floor(v / 2**s + 1/2), rounding half up  s >= 1
    y = v                                                                         s == 0

``y`` then gets the output zero point and is clamped.  The two-step rounding
shift equals ``floor((v + 2**(s-1)) / 2**s)`` exactly (a floor of a floor by
powers of two) without ever forming ``v + 2**(s-1)``, so the offset needs no
immediate wider than 16 bits and cannot overflow.

Choosing the parameters (:func:`choose`): for every pre-shift ``p`` the
largest accumulator magnitude ``A`` (proven from the value ranges: weights,
input range and bias, see :func:`acc_bound`) gives ``|a| <= (A + 2**(p-1)) >>
p``, which bounds ``M`` so that ``|a * M| <= 2**31 - 1``; the largest ``s``
with ``round(r * 2**(p+s))`` within that bound (and within a 16-bit immediate
for a per-tensor multiplier) gives the multiplier; the ``p`` with the smallest
error bound wins.  When that bound is above 1/8, the pre-shifted value is
clamped to ``L = 2**15 - 1`` first, with ``p`` large enough that only
accumulators whose result saturates anyway are clamped, and ``M`` is then
bounded by ``(2**31 - 1) / L`` instead.  With ``d = M / 2**(p+s) - r`` the computed value is
``acc * r + acc * d + e * M / 2**s`` with ``|e| <= 1/2`` (the pre-shift's rounding,
none when ``p == 0``), so::

    y = floor(acc * r + 1/2 + delta),   |delta| <= E = A' * |d| + (p > 0) * M / 2**(s+1)

where ``A'`` is ``A`` limited to the accumulators whose exact result lies in
the output range (beyond it both saturate).  With ``E < 1`` the result is
``floor(acc * r + 1/2)`` or one step away from it, and only when ``acc * r +
1/2`` lies within ``E`` of an integer.  :class:`FixedPoint` records ``E``.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

__all__ = ["AddFixed", "FixedPoint", "acc_bound", "apply", "choose", "choose_add",
           "round_shift"]

INT32_MAX = (1 << 31) - 1
IMM_MAX = (1 << 15) - 1  # ALU immediates are 16-bit signed
MAX_SHIFT = 32  # s - 1 must be a right shift of at most 31


@dataclass(frozen=True)
class FixedPoint:
    """One requantization ratio per output channel as VTA computes it (module docstring).

    Attributes
    ----------
    pre, mult, shift : numpy.ndarray
        ``p``, ``M`` and ``s`` per output channel (int64).
    rows : bool
        Per-channel values, held as rows in the accumulator and applied by
        tensor ALU ops; else one value each, as ALU immediates (``M`` fits 16 bits).
    clamp : int
        ``L``: the pre-shifted value is clamped to ``[-L, L]`` before the
        multiply (0: no clamp).
    error : float
        ``E``: the largest ``|delta|`` over the accumulators that matter.
    bound : numpy.ndarray
        ``A`` per channel: the largest ``|acc|`` the value ranges allow.
    """

    pre: np.ndarray
    mult: np.ndarray
    shift: np.ndarray
    rows: bool
    clamp: int
    error: float
    bound: np.ndarray

    def offset(self) -> np.ndarray:
        """The pre-shift's rounding offset ``2**(p-1)`` (0 where p == 0), added to the bias."""
        return np.where(self.pre > 0, np.left_shift(1, np.maximum(self.pre - 1, 0)), 0)

    def uniform(self, name: str) -> int | None:
        """The value of ``pre``/``mult``/``shift`` when every channel has the same one."""
        v = np.unique(getattr(self, name))
        return int(v[0]) if v.size == 1 else None

    def describe(self) -> str:
        def show(name: str) -> str:
            u = self.uniform(name)
            return str(u) if u is not None else "per channel"
        parts = []
        if np.any(self.pre):
            parts.append(f">>{show('pre')}")
        if self.clamp:
            parts.append(f"clamp +-{self.clamp}")
        if np.any(self.mult != 1):
            parts.append(f"*{show('mult')}")
        if np.any(self.shift):
            parts.append(f"round >>{show('shift')}")
        return ", ".join(parts) or "x1"


def round_shift(v: np.ndarray, s: np.ndarray | int) -> np.ndarray:
    """``floor(v / 2**s + 1/2)`` as ``((v >> (s-1)) + 1) >> 1`` (``v`` itself where s == 0)."""
    v = np.asarray(v, dtype=np.int64)
    s = np.asarray(s, dtype=np.int64)
    shifted = ((v >> np.maximum(s - 1, 0)) + 1) >> 1
    return np.where(s > 0, shifted, v)


def _wrap32(x: np.ndarray) -> np.ndarray:
    return ((np.asarray(x, dtype=np.int64) + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)


def apply(acc: np.ndarray, fp: FixedPoint, axis: int = 1) -> np.ndarray:
    """The rounded, not yet offset, requantized values of int64 accumulators ``acc``.

    ``acc`` already contains the pre-shift's offset (:meth:`FixedPoint.offset`,
    carried by the bias); channels lie along ``axis``.  Every step wraps to
    int32 as the ALU does (the parameters are chosen so that nothing wraps).
    """
    acc = np.asarray(acc, dtype=np.int64)
    shape = [1] * acc.ndim

    def col(values: np.ndarray) -> np.ndarray:
        if values.size == 1:
            return values.reshape(())
        shape[axis] = -1
        return values.reshape(shape)

    a = _wrap32(acc) >> col(fp.pre)
    if fp.clamp:
        a = np.clip(a, -fp.clamp, fp.clamp)
    v = _wrap32(a * col(fp.mult))
    return _wrap32(round_shift(v, col(fp.shift)))


def acc_bound(weight: np.ndarray, x_span: int, bias: np.ndarray | None) -> np.ndarray:
    """Largest ``|sum((x - zx) * w) + bias|`` per output channel (axis 0 of ``weight``).

    ``x_span`` bounds ``|x - zx|`` (for example ``max(zx - qmin, qmax - zx)``).
    """
    w = np.abs(weight.astype(np.int64)).reshape(weight.shape[0], -1).sum(axis=1)
    b = np.zeros(weight.shape[0], np.int64) if bias is None else \
        np.abs(np.asarray(bias, dtype=np.int64))
    return w * int(x_span) + b


def _one(r: float, bound: int, reach: int, span: int, mult_max: int, s_min: int,
         clamp: bool) -> tuple[float, int, int, int] | None:
    """(E, p, M, s) with the smallest error bound for one channel, or None.

    With ``clamp`` the pre-shifted value is clamped to +-IMM_MAX first (only
    accumulators whose result saturates anyway are changed), so the multiplier
    is bounded by IMM_MAX instead of by the accumulator bound.
    """
    best = None
    for p in range(0, 31):
        half = (1 << (p - 1)) if p else 0
        if bound + half > INT32_MAX:
            break
        if clamp:
            if reach + half >= IMM_MAX << p:
                continue
            a_max = IMM_MAX
        else:
            a_max = max((bound + half) >> p, 1)
        limit = min(mult_max, INT32_MAX // a_max)
        if r == 0:
            cand = (0.0, p, 0, s_min)
        else:
            s = min(MAX_SHIFT, math.floor(math.log2(limit / r)) - p)
            while s >= s_min and math.floor(r * 2.0 ** (p + s) + 0.5) > limit:
                s -= 1
            if s < s_min:
                continue
            m = math.floor(r * 2.0 ** (p + s) + 0.5)
            if clamp and int(round_shift(IMM_MAX * m, s)) <= span:
                continue  # a clamped value must still saturate
            d = abs(m / 2.0 ** (p + s) - r)
            err = reach * d + (m / 2.0 ** (s + 1) if p else 0.0)
            cand = (err, p, m, s)
        if best is None or cand[0] < best[0]:
            best = cand
        if p and best[1] < p - 4:  # the pre-shift's own error only grows from here
            break
    if best is None:
        return None
    err, p, m, s = best
    while s > s_min and m and m % 2 == 0:  # the same value with a smaller multiplier
        m, s = m // 2, s - 1
    return err, p, m, s


def choose(ratio: np.ndarray, bound: np.ndarray, out_span: int, per_channel: bool
           ) -> FixedPoint | str:
    """Fixed-point parameters for ``ratio`` (per channel) and accumulator bounds ``bound``.

    ``out_span`` bounds ``|y - zy|`` inside the output's clamp (beyond it the
    result saturates whatever the error).  A per-tensor ratio uses immediates
    (``M`` within 16 bits), per channel ratios rows.  Without a clamp when
    that is precise enough (error at most 1/8), else with the pre-shifted
    value clamped to +-(2**15 - 1).  Returns the reason as a string when no
    parameters keep int32 from overflowing with an error below 1/2.
    """
    ratio = np.asarray(ratio, dtype=np.float64).reshape(-1)
    bound = np.broadcast_to(np.asarray(bound, dtype=np.int64).reshape(-1), ratio.shape)
    if np.any(bound > INT32_MAX):
        c = int(np.argmax(bound))
        return (f"the accumulator of output channel {c} can reach {int(bound[c]):,}, "
                "beyond int32")
    rows = bool(per_channel and np.unique(ratio).size > 1)
    mult_max, s_min = (INT32_MAX, 1) if rows else (IMM_MAX, 0)
    result = None
    if not rows:  # one set of immediates: the largest bound for every channel
        bound_eff = np.full(ratio.shape, bound.max(), np.int64)
    else:
        bound_eff = bound
    for clamp in (False, True):
        chans = []
        for r, a in zip(ratio, bound_eff, strict=True):
            reach = int(min(int(a), math.floor((out_span + 1) / r) + 1)) if r > 0 else int(a)
            got = _one(float(r), int(a), reach, out_span, mult_max, s_min, clamp)
            if got is None:
                break
            chans.append(got)
        else:
            err = max(c[0] for c in chans)
            p, m, s = (np.array([c[i] for c in chans], np.int64) for i in (1, 2, 3))
            if result is None or err < result.error:
                result = FixedPoint(p, m, s, rows, IMM_MAX if clamp else 0, float(err),
                                    bound.astype(np.int64))
            if result.error <= 0.125:
                break
    if result is None:
        return (f"requantization ratio {ratio.max():.4g} is too large for a fixed-point "
                "multiplier")
    if result.error >= 0.5:
        return (f"the fixed-point requantization would be up to {result.error:.2f} steps off "
                f"(accumulators up to {int(bound.max()):,})")
    return result


@dataclass(frozen=True)
class AddFixed:
    """A quantized add ``y = round((a - za) * ra + (b - zb) * rb)``: ``Ma, Mb`` and ``s``.

    ``(a - za) * Ma + (b - zb) * Mb`` (``|a - za| <= 255``, ``M <= 2**15 - 1``: below
    ``2**24``), then :func:`round_shift` by ``s``.  ``error`` bounds the distance
    from the exact sum as in :class:`FixedPoint`.
    """

    mult_a: int
    mult_b: int
    shift: int
    error: float

    def apply(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Rounded sum of zero-point-free int64 operands."""
        v = _wrap32(np.asarray(a, np.int64) * self.mult_a + np.asarray(b, np.int64) * self.mult_b)
        return round_shift(v, self.shift)


def choose_add(ra: float, rb: float, span_a: int = 255, span_b: int = 255) -> AddFixed | str:
    """Multipliers and shift for a quantized add with scale ratios ``ra`` and ``rb``."""
    top = max(ra, rb)
    if not top > 0:
        return "scale ratios must be positive"
    s = min(MAX_SHIFT, math.floor(math.log2(IMM_MAX / top)))
    while s >= 0 and max(math.floor(r * 2.0 ** s + 0.5) for r in (ra, rb)) > IMM_MAX:
        s -= 1
    if s < 0:
        return f"scale ratio {top:.4g} is too large for a 16-bit fixed-point multiplier"
    ma, mb = (math.floor(r * 2.0 ** s + 0.5) for r in (ra, rb))
    while s > 0 and ma % 2 == 0 and mb % 2 == 0:
        ma, mb, s = ma // 2, mb // 2, s - 1
    err = span_a * abs(ma / 2.0 ** s - ra) + span_b * abs(mb / 2.0 ** s - rb)
    if err >= 1:
        return f"the fixed-point add would be up to {err:.2f} steps off"
    return AddFixed(ma, mb, s, float(err))


def _span(q) -> int:
    """Largest ``|x - zx|`` of a quantized tensor."""
    return max(q.zero_point - q.qmin, q.qmax - q.zero_point)


@functools.lru_cache(maxsize=256)
def pool_params(count: int, xq, yq) -> FixedPoint | str:
    """Average of ``count`` values: the sum of ``x - zx`` times ``x_scale / (y_scale * count)``."""
    return choose(np.array([xq.scale / (yq.scale * count)]), np.array([count * _span(xq)]),
                  _span(yq), False)


def annotate(graph) -> None:
    """Give the int ``conv``, ``dense``, ``add`` and ``maxpool`` nodes their parameters.

    ``attrs["fixed"]`` is a :class:`FixedPoint` / :class:`AddFixed` (``None``
    for a requantization that cannot be done in fixed point, which then runs
    in float64 on the CPU, ``attrs["fixed_why"]`` saying why); a max pool whose
    input and output quantization are the same needs none.  Average pools
    get theirs from :func:`pool_params` once the window size is known.
    """
    values = graph.values
    for node in graph.nodes:
        qin = [values[i].qtype for i in node.inputs]
        yq = values[node.output].qtype
        if node.op not in ("conv", "dense", "add", "maxpool") or yq is None \
                or any(q is None for q in qin):
            continue
        a = node.attrs
        xq = qin[0]
        if node.op in ("conv", "dense"):
            w = a["weight"].astype(np.int64) - a["w_zero"].reshape(
                (-1,) + (1,) * (a["weight"].ndim - 1))
            got = choose(xq.scale * np.asarray(a["w_scale"], np.float64) / yq.scale,
                         acc_bound(w, _span(xq), a["bias"]),
                         max(a["hi"] - yq.zero_point, yq.zero_point - a["lo"]), True)
        elif node.op == "add":
            bq = qin[1] if len(qin) > 1 else a["const_qtype"]
            got = choose_add(xq.scale / yq.scale, bq.scale / yq.scale, _span(xq), _span(bq))
        elif xq == yq:
            continue
        else:
            got = choose(np.array([xq.scale / yq.scale]), np.array([_span(xq)]), _span(yq),
                         False)
        a["fixed"] = None if isinstance(got, str) else got
        if isinstance(got, str):
            a["fixed_why"] = got

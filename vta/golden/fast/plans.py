"""The fast model's plans: a GEMM or ALU loop nest regrouped for vectorised NumPy.

A plan holds every index a nest touches relative to one base per buffer, grouped so that a
GEMM is a few large matrix products (:class:`GemmPlan`), an ALU nest a few hazard-free
segments (:class:`AluPlan`) and a reset one assignment (:class:`ResetPlan`); the model
caches plans and executes them at the bases of each nest (:mod:`.model`).
"""

from __future__ import annotations

import math

import numpy as np

from ...config import Config
from ...isa import (
    AluOp,
)
from ..spec import ALU_FUNCTIONS
from .pending import RESET, Scratchpads

_SHR = int(AluOp.SHR)
#: Bytes of float weight matrices a model keeps for reuse (beyond it they are dropped).
_WGT_FLOAT_BYTES = 4 << 20


def _offsets(loops, fields: int) -> np.ndarray:
    """(fields, iterations) offsets of each micro-op field over ``loops``, outer loop first.

    ``loops`` is a sequence of ``(count, factor of field 0, factor of field 1, ...)``; no
    loops at all is one iteration with offset 0.
    """
    off = None
    for n, *factors in loops:
        step = np.multiply.outer(factors, np.arange(n, dtype=np.int64))  # (fields, n)
        off = step if off is None else (off[:, :, None] + step[:, None, :]).reshape(fields, -1)
    return np.zeros((fields, 1), dtype=np.int64) if off is None else off


def _expand(base: np.ndarray, loops, col: int) -> np.ndarray:
    """Indices of one micro-op field over the whole nest, in execution order (o, i, u)."""
    return (_offsets(loops, len(loops[0]) - 1)[col][:, None] + base[None, :]).reshape(-1)


def _consecutive(rel: np.ndarray, loops, col: int) -> slice | None:
    """Field ``col`` of a one-micro-op nest as a slice, if the nest visits consecutive
    ascending entries (outer loop outside, inner inside), each once; else None."""
    if rel.shape[1] != 1:
        return None
    (n_out, *f_out), (n_in, *f_in) = loops
    if n_in > 1 and f_in[col] != 1 or n_out > 1 and f_out[col] != (n_in if n_in > 1 else 1):
        return None
    first = int(rel[col, 0])
    return slice(first, first + n_out * n_in)


def _index(values: np.ndarray, increasing: bool = False) -> slice | np.ndarray:
    """``values`` as a slice when they are consecutive ascending integers (a cheap view).

    ``increasing``: the caller knows the values strictly increase, so the ends decide.
    """
    n = values.size
    first = int(values[0]) if n else 0
    # n values from first to first + n - 1 are consecutive if they strictly increase
    if n and int(values[-1]) - first == n - 1 and (
            increasing or n == 1 or (values[1:] > values[:-1]).all()):
        return slice(first, first + n)
    return values


def _take(array: np.ndarray, rows: slice | np.ndarray) -> np.ndarray:
    """``array[rows]``: a view for a slice, ``take`` (much faster than fancy indexing) else."""
    return array[rows] if isinstance(rows, slice) else array.take(rows, axis=0)


def _shifted(rows: slice | np.ndarray, base: int) -> slice | np.ndarray:
    """Entries ``rows`` of a plan (relative to a base) at ``base``."""
    if isinstance(rows, slice):
        return slice(rows.start + base, rows.stop + base)
    return rows + base


def _wrap32(values: np.ndarray) -> np.ndarray:
    """Low 32 bits of int64 values, as int32 (two's complement)."""
    return (values & 0xFFFFFFFF).astype(np.uint32).view(np.int32)


# ------------------------------------------------------------------------ plans
class ResetPlan:
    """GEMM with reset_reg: the nest's ACC entries become 0 (OUT is left alone)."""

    def __init__(self, rel: np.ndarray, loops, cfg: Config):
        dst = _consecutive(rel, loops, 0) or _index(_expand(rel[0], loops, 0))
        self.dst = dst if isinstance(dst, slice) else _index(_index_set(dst)[0], True)

    def execute(self, sp: Scratchpads, bases, insn: list[int]) -> None:
        dst = _shifted(self.dst, bases[0])
        if isinstance(dst, slice):
            sp.defer_reset(dst)  # usually: the GEMM that follows writes instead of adding
        else:
            sp.settle()
            sp.acc2[dst] = 0


class AluPlan:
    """ALU nest split into segments that are each free of read-after-write hazards.

    Executed segment by segment, in order, which gives the serial semantics of a
    one-micro-op-at-a-time machine (see :func:`_hazard_free_prefix`).
    """

    def __init__(self, rel: np.ndarray, loops, cfg: Config):
        self.segments = []
        run = _consecutive(rel, loops, 0)
        # one slice of distinct destinations and no source: the operation can be deferred
        self.deferrable = bool(rel.shape[0] == 1 and run)
        if self.deferrable:  # no source, distinct destinations: no hazard
            self.segments.append((run, None))
            return
        dst = _expand(rel[0], loops, 0)
        src = _expand(rel[1], loops, 1) if rel.shape[0] > 1 else None
        if src is None and isinstance(_index(dst), slice):
            self.segments.append((_index(dst), None))
            return
        depth = int(dst.max() if src is None else max(dst.max(), src.max())) + 1
        start, n = 0, dst.size
        while start < n:
            stop = start + _hazard_free_prefix(
                dst[start:], None if src is None else src[start:], depth)
            self.segments.append((_index(dst[start:stop]),
                                  None if src is None else _index(src[start:stop])))
            start = stop

    def execute(self, sp: Scratchpads, bases, insn: list[int]) -> None:
        op, use_imm, imm = insn[14:17]  # AluInsn
        if op == _SHR and use_imm and 0 <= imm <= 31:
            func = np.right_shift  # the common case, without SHR's general selects
        else:
            func = ALU_FUNCTIONS[op]
        if self.deferrable and isinstance(func, np.ufunc):
            sp.defer(_shifted(self.segments[0][0], bases[0]), func, imm)  # imm: int32 arithmetic
            return
        sp.settle()
        acc, base = sp.acc2, bases[0]
        for d, s in self.segments:
            d = _shifted(d, base)
            # int32 arithmetic on arrays wraps modulo 2**32, as the hardware does
            y = np.int32(imm) if s is None else acc[_shifted(s, base)]
            if isinstance(d, slice) and isinstance(func, np.ufunc):
                func(acc[d], y, out=acc[d])  # NumPy copies y first if it overlaps
            else:
                acc[d] = func(acc[d], y)
            sp.write_out(d, acc[d])


def _hazard_free_prefix(dst: np.ndarray, src: np.ndarray | None, depth: int) -> int:
    """Length of the longest prefix executable at once with serial semantics.

    Element n conflicts with the prefix if its dst was already written in it,
    or its src reads a dst written earlier in it.
    """
    n = dst.size
    steps = np.arange(n, dtype=np.int64)
    first = np.full(depth, n, dtype=np.int64)
    first[dst[::-1]] = steps[::-1]  # repeated indices: the last assignment (smallest step) wins
    conflict = first[dst] < steps
    if src is not None:
        conflict |= first[src] < steps
    bad = np.flatnonzero(conflict)
    return int(bad[0]) if bad.size else n


class GemmPlan:
    """Exact GEMM of one loop nest, regrouped into a few large matrix products.

    GEMM only reads INP and WGT and adds into ACC, so its order does not matter
    (addition modulo 2**32 is associative).  Loop axes whose dst factor is 0
    (or that run once) are reductions: for every (micro-op, parallel position)
    pair the input rows along the reduction axes are concatenated into one
    K-long row, and so are the weight tiles, so each pair is one dot product of
    length K = reductions x BLOCK_IN.  The distinct input rows and weight tiles
    are gathered once.  When most of their combinations are needed, one
    batched BLAS product computes them all (the *table*, one matrix product
    per weight) and the pairs are taken from it, otherwise pairs are grouped
    by weight.  A conv tile's table is read from the grid of its micro-ops and
    loops (:func:`_grid_table`), without building its pairs.  Pairs are kept in
    destination order, so the sums of pairs sharing a destination are
    contiguous and a run of consecutive destinations updates ACC through a
    slice.  Products are exact: float32 while
    K * 2**14 < 2**24, float64 beyond; sums wrap to int32 like the hardware.
    """

    def __init__(self, rel: np.ndarray, loops, cfg: Config):
        red = [lp for lp in loops if lp[0] > 1 and lp[1] == 0]
        par = [lp for lp in loops if not (lp[0] > 1 and lp[1] == 0)]
        self.reductions = math.prod(lp[0] for lp in red)
        self.shape = cfg.BATCH, cfg.BLOCK_IN, cfg.BLOCK_OUT
        self.k = self.reductions * cfg.BLOCK_IN
        self.ftype = np.float32 if self.k * (1 << 14) < (1 << 24) else np.float64
        grid = _grid_table(rel, par)
        if grid is not None:  # a conv tile: its table read from its axes, no pairs built
            x_axes, w_axes, (x_base, w_base) = grid
            self.layout = "table"
            self.sum_starts = None
            self.nx, self.nw = math.prod(a[0] for a in x_axes), math.prod(a[0] for a in w_axes)
            self.dst = slice(0, self.nx * self.nw)
            # the reductions inside, as below
            self.x_rows = _grid_index(x_base, x_axes + [(n, src) for n, _, src, _ in red])
            self.w_rows = _grid_index(w_base, w_axes + [(n, wgt) for n, _, _, wgt in red])
            return
        # one pair per (micro-op, parallel position): dst, src, wgt
        pairs = (rel[:, :, None] + _offsets(par, 3)[:, None, :]).reshape(3, -1)
        r_offsets = _offsets(red, 3)
        r_src, r_wgt = r_offsets[1], r_offsets[2]
        table = _table_keys(pairs)
        if table is not None:
            # every (w, x) pair once, destination w * nx + x: the product table itself
            x_keys, w_keys = table
            self.layout = "table"
            self.sum_starts = None
            self.dst = slice(0, pairs.shape[1])
        else:
            x_keys, w_keys = self._regroup(pairs[:, np.argsort(pairs[0], kind="stable")])
        # INP / WGT entries read, (distinct rows x reductions) flattened: a slice if consecutive
        self.nx, self.nw = x_keys.size, w_keys.size
        self.x_rows = _index((x_keys[:, None] + r_src).reshape(-1))
        self.w_rows = _index((w_keys[:, None] + r_wgt).reshape(-1))

    def _regroup(self, pairs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Destinations and layout of pairs sorted by destination; their distinct inputs
        and weights."""
        d, xs, ws = pairs
        x_keys, self.x_of = _index_set(xs)
        w_keys, self.w_of = _index_set(ws)
        starts = np.concatenate(([0], np.flatnonzero(np.diff(d)) + 1))
        self.sum_starts = None if starts.size == d.size else starts  # repeated destinations
        self.dst = _index(d[starts], increasing=True)
        # How products become the per-pair contributions, in destination order:
        nx, nw = x_keys.size, w_keys.size
        in_table = self.w_of * nx + self.x_of  # each pair's row in the (w, x) product table
        if nx * nw <= 4 * d.size:
            self.layout = "picked"  # most combinations needed: the whole table, then pick
            self.pick = in_table
        else:
            self.layout = "grouped"  # few combinations: one product per group of a weight
            by_w = np.argsort(self.w_of, kind="stable")
            bounds = np.concatenate(([0], np.flatnonzero(np.diff(self.w_of[by_w])) + 1,
                                     [by_w.size]))
            self.groups = [by_w[bounds[g]:bounds[g + 1]] for g in range(bounds.size - 1)]
        return x_keys, w_keys

    def execute(self, sp: Scratchpads, bases, insn: list[int]) -> None:
        dst = _shifted(self.dst, bases[0])
        # ACC first, unless only the OUT of exactly these entries or their reset is pending
        pending, reset = sp.pending, False
        if pending is not None:
            if isinstance(dst, slice) and pending[0] == dst and pending[1] in ([], [RESET]):
                reset = bool(pending[1])  # then the sums are the new values
            else:
                sp.settle()
        b, bi, bo = self.shape
        k, ftype, nx, nw, red = self.k, self.ftype, self.nx, self.nw, self.reductions
        # inputs (nx*b, K), K ordered (reduction step, lane); weights (nw, K, bo)
        x = _take(sp.inp[bases[1]:], self.x_rows)
        if b > 1 and red > 1:
            x = x.reshape(nx, red, b, bi).transpose(0, 2, 1, 3)
        x_mat = x.astype(ftype, order="C").reshape(nx * b, k)
        w_mats = sp.wgt_float.get((self, bases[2]))
        if w_mats is None:
            # transposed as int8 (a quarter of the bytes a float transpose moves), then
            # converted in one contiguous pass
            w = _take(sp.wgt[bases[2]:], self.w_rows)
            w_mats = np.ascontiguousarray(w.reshape(nw, red, bo, bi).transpose(0, 1, 3, 2)
                                          ).astype(ftype).reshape(nw, k, bo)
            if w_mats.nbytes <= _WGT_FLOAT_BYTES:
                if sum(m.nbytes for m in sp.wgt_float.values()) + w_mats.nbytes > _WGT_FLOAT_BYTES:
                    sp.wgt_float.clear()
                sp.wgt_float[self, bases[2]] = w_mats
        if self.layout == "grouped":
            contrib = np.empty((self.x_of.size, b * bo), dtype=ftype)
            x3 = x_mat.reshape(nx, b, k)
            for rows in self.groups:
                contrib[rows] = (x3[self.x_of[rows]] @ w_mats[self.w_of[rows[0]]]).reshape(
                    rows.size, b * bo)
        else:
            contrib = np.matmul(x_mat, w_mats).reshape(nw * nx, b * bo)  # rows (w, x)
            if self.layout == "picked":
                contrib = contrib.take(self.pick, axis=0)
        if self.sum_starts is None and ftype is np.float32:
            sums = contrib  # integers, |value| < 2**24: converted to int32 exactly
        else:
            whole = contrib.astype(np.int64)
            if self.sum_starts is not None:
                whole = np.add.reduceat(whole, self.sum_starts, axis=0)
            sums = _wrap32(whole)
        acc = sp.acc2[dst]
        if isinstance(dst, slice):
            if reset:
                np.copyto(acc, sums, casting="unsafe")  # converted while written
            else:
                acc += sums.astype(np.int32, copy=False)  # int32 + int32 wraps like the hardware
            sp.defer_out(dst)  # OUT when settled: usually after the tile's epilogue
        else:
            acc = sp.acc2[dst] = acc + sums.astype(np.int32, copy=False)
            sp.write_out(dst, acc)


PLAN_CLASSES = {"GEMM": GemmPlan, "RESET": ResetPlan, "ALU": AluPlan, "ALU_SRC": AluPlan}


def _grid_axes(rel: np.ndarray) -> list[tuple[int, int, int, int]] | None:
    """GEMM micro-op fields ``rel`` (dst, src, wgt rows; n columns) as the axes of a grid,
    when they are one and every axis moves the destination: ``(count, dst step, src step,
    wgt step)``, outermost first, such that ``rel`` is ``rel[:, :1] + _offsets(axes, 3)``
    (micro-op ``u``'s digits in the mixed radix of the counts, times the steps); else None.

    Each axis is as long as all three fields keep its step; the grid found is then checked
    on every micro-op at once: the differences between consecutive ones must be those of
    the grid (:func:`_grid_steps`, made with list operations, which cost less than the
    NumPy calls that would build the grid).
    """
    fields = rel.tolist()
    d, s, w = fields
    n = len(d)
    axes, stride = [], 1  # stride: micro-ops per step of the axis being found
    while stride < n:
        sd, ss, sw = d[stride] - d[0], s[stride] - s[0], w[stride] - w[0]
        count, k = 2, 2 * stride  # the first two entries of the axis define its steps
        while k < n and (d[k], s[k], w[k]) == (d[0] + count * sd, s[0] + count * ss,
                                                w[0] + count * sw):
            count, k = count + 1, k + stride
        if n % k or not sd:
            return None
        axes.insert(0, (count, sd, ss, sw))
        stride = k
    steps = [_grid_steps([(a[0], a[col]) for a in axes]) for col in (1, 2, 3)]
    return axes if np.subtract(rel[:, 1:], rel[:, :-1], dtype=np.int64).tolist() == steps else None


def _grid_steps(axes: list[tuple[int, int]]) -> list[int]:
    """The differences between consecutive values of the grid of ``axes`` (``(count,
    step)``, outermost first), in order: one fewer than its values."""
    steps: list[int] = []
    span = 0  # from the first value of the grid inside to its last
    for count, step in reversed(axes):
        # the grid inside, then the jump to its next copy, count - 1 times; the last copy
        steps = (steps + [step - span]) * (count - 1) + steps
        span += (count - 1) * step
    return steps


def _grid_table(rel: np.ndarray, par) -> tuple[list, list, tuple[int, int]] | None:
    """The product table of GEMM micro-ops ``rel`` over the parallel loops ``par``, read
    from their axes: ``(x_axes, w_axes, (src base, wgt base))``, axes ``(count, step)``
    outermost first, whose grids are the ``x_keys`` and ``w_keys`` of :func:`_table_keys`
    (the same table, found without building and sorting its pairs).

    The micro-ops must be a grid (:func:`_grid_axes`) and every axis of more than one entry
    move the destination and either the input or the weight; sorted by destination step,
    the axes must count the destinations 0..n-1 each once (each step the product of the
    counts before it), the input axes before the weight axes.  Else None: the pairs are
    then built and checked one by one.
    """
    axes = _grid_axes(rel)
    if axes is None or rel[0, 0]:  # (destinations from 0)
        return None
    x_axes: list[tuple[int, int]] = []
    w_axes: list[tuple[int, int]] = []
    size = 1
    for count, d, s, w in sorted((a for a in axes + par if a[0] > 1), key=lambda a: a[1]):
        if d != size or (s != 0) == (w != 0) or s < 0 or w < 0 or (w == 0 and w_axes):
            return None
        if w == 0:
            x_axes.insert(0, (count, s))
        else:
            w_axes.insert(0, (count, w))
        size *= count
    return x_axes, w_axes, (int(rel[1, 0]), int(rel[2, 0]))


def _grid_index(first: int, axes: list[tuple[int, int]]) -> slice | np.ndarray:
    """:func:`_index` of the grid of ``axes`` (``(count, step)``, outermost first, steps not
    negative) from ``first``: a slice when its values are consecutive ascending (the
    innermost step 1, each other the product of the counts inside it), else its values --
    a strided view of the entry numbers it spans, copied."""
    size, span = 1, 0
    for count, step in reversed(axes):
        if count > 1 and step != size:
            size = 0  # not consecutive
        size *= count
        span += (count - 1) * step
    if size:
        return slice(first, first + size)
    entries = np.arange(first, first + span + 1)
    shape, steps = zip(*axes, strict=True)
    return np.ndarray(shape, entries.dtype, entries, 0,
                      [step * entries.itemsize for step in steps]).reshape(-1)


def _table_keys(pairs: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """Inputs and weights ``x_keys``, ``w_keys`` such that destination ``w * nx + x`` is
    the pair of weight ``w_keys[w]`` and input ``x_keys[x]``, when GEMM pairs (rows dst,
    src, wgt) are such a product table, destinations 0..n-1 each once (a conv tile); else
    None."""
    d = pairs[0]
    n = d.size
    if int(d.max()) != n - 1:
        return None
    steps = np.arange(n)
    order = np.zeros(n, dtype=np.intp)
    order[d] = steps  # where each destination's pair is (if each destination occurs once)
    if not (d.take(order) == steps).all():
        return None  # a repeated destination
    _, xs, ws = pairs.take(order, axis=1)
    nx = int((ws != ws[0]).argmax()) or n  # the pairs of the first weight
    if n % nx:
        return None
    x_table, w_table = xs.reshape(-1, nx), ws.reshape(-1, nx)
    if (x_table == x_table[0]).all() and (w_table == w_table[:, :1]).all():
        return x_table[0], w_table[:, 0]
    return None


def _index_set(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(values, return_inverse=True)`` for small non-negative ints, without sorting."""
    present = np.zeros(int(values.max()) + 1, dtype=bool)
    present[values] = True
    keys = np.flatnonzero(present)
    rank = np.cumsum(present) - 1
    return keys, rank[values]

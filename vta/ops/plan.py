"""The conv2d planner: tilings, their predicted RTL cycles and the choice.

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
the plan measured fastest on the RTL; :func:`conv2d_plans` lists the whole
search space (what `vta tune` measures), keyed by :func:`layer_key`.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..config import Config
from ..runtime import _MAX_16 as _MAX_STRIDE  # LOAD/STORE strides: 16-bit fields
from ..tune import log as tuning_log
from .layout import _pair

_LOOP_MAX = (1 << 14) - 1


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


def layer_key(data_shape: Sequence[int], kernel_shape: Sequence[int], stride, padding,
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
    shape = layer_key(data_shape, kernel_shape, stride, padding, bias, residual)
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
    return _plans(cfg, *layer_key(data_shape, kernel_shape, stride, padding, bias, residual))


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

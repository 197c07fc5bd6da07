"""The convolution engine: a plan's instruction stream on the command queue.

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
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..driver.host import Buffer
from ..isa import AluOp, MemId
from ..runtime import _MAX_16 as _MAX_STRIDE  # LOAD/STORE strides: 16-bit fields
from ..runtime import (
    COMPUTE_STAGE,
    LOAD_STAGE,
    MODE_ALU,
    MODE_GEMM,
    STORE_STAGE,
    CommandQueue,
)
from .epilogue import Epilogue, Residual
from .plan import ConvPlan, _gemm_axes, _kernel_ok, _loop_choices, _Regions, _regions


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

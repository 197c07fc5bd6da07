"""Element-wise add (a residual connection) on the ALU alone.

::

    acc = (a << a_lshift) + (b << b_lshift)   int8 lanes sign-extended (ACC_8BIT loads)
    acc = acc + offset                         16-bit immediate (e.g. a rounding offset)
    acc = acc >> shift, max(acc, 0) if relu, clip, low 8 bits, as in vta.ops

Both operands are cut into tiles of a quarter of the ACC buffer: the compute
engine loads the tile of ``a`` and of ``b`` into one ACC half (LOADs of ACC
belong to the compute stage), runs the ALU steps, and the store engine drains
the half while compute fills the other one.  ``emit_add`` also takes any ALU
steps per operand and after the sum (a fixed-point add with zero points).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..driver.host import Buffer, RunStats
from ..isa import AluOp, MemId
from ..runtime import (
    COMPUTE_STAGE,
    MODE_ALU,
    STORE_STAGE,
    CommandQueue,
)
from .emit import _Pipeline, _push_elementwise
from .epilogue import _add_steps, _check_imm
from .plan import _LOOP_MAX


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

"""The fast model's scratchpads, and the work it has retired but not done yet.

ALU epilogues, a GEMM's OUT writes and resets wait in :attr:`Scratchpads.pending` to be
applied together; plain STOREs, and plain LOADs of INP and WGT, wait in runs
(:class:`_CopyRun`) to be copied together.  The model makes them before anything could
tell the difference (docs/design.md, "Golden model").
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ...config import Config
from .. import spec

#: ALU operations on the same entries that may wait to be applied together.
_DEFERRED_OPS = 16
#: A reset waiting in ``Scratchpads.pending``: ACC entries multiplied by 0.
RESET = (np.multiply, np.int32(0))
#: The ufunc that np.clip calls after checking its arguments (checks that cost as much as
#: clipping a tile); numpy._core from NumPy 2, numpy.core before.
_CLIP = (np._core if hasattr(np, "_core") else np.core).umath.clip


class Scratchpads(spec.Scratchpads):
    """The on-chip buffers of :class:`vta.golden.spec.Scratchpads`, plus flat views of the
    same memory and the work the fast model has retired but not done yet.

    ``raw[name]`` views a buffer as (depth, element bytes) uint8; ``acc2``/``out2`` view
    ACC/OUT as (depth, BATCH x BLOCK_OUT).

    ``wgt_float`` holds weight tiles GEMM plans converted to float matrices,
    by (plan, WGT base); it is only valid while WGT is unchanged, and the model
    empties it whenever WGT may have changed (a LOAD of WGT, the start of a run).

    ``pending`` holds results not written yet: ``(rows, ops, out)``, a slice of
    ACC/OUT entries, the ALU operations ``(ufunc, immediate)`` retired on
    exactly those entries, in order, with nothing else reading or writing them
    since (see :meth:`defer`; a MAX followed by a MIN is kept as one
    ``(np.clip, (low, high))``, a MIN or MAX repeating the previous operation
    is dropped), and whether OUT is to be written from them.  ``ops`` is empty
    after a GEMM that accumulated into those entries (:meth:`defer_out`: their
    ACC is current, their OUT is not), and a reset of the entries is the
    operation ``RESET`` (multiply by 0) without OUT (:meth:`defer_reset`).
    :meth:`settle` applies the operations and writes OUT; the model settles
    before anything else reads or writes ACC or OUT entries, and at the end of
    every run, so that nothing but the cost can tell.

    ``stores`` holds plain STOREs retired but not copied to DRAM yet, and
    ``loads`` plain LOADs of INP or WGT retired but not copied from DRAM yet
    (see :meth:`store` and :meth:`load`).  :meth:`flush_stores` copies the
    STOREs (after the LOADs that read DRAM bytes they write), which the model
    does before anything writes OUT, before a LOAD reads DRAM bytes they
    write, before any STORE that does not continue their pattern, and at the
    end of every run; :meth:`flush_loads` copies the LOADs, before a GEMM
    reads INP and WGT, before any other LOAD of INP or WGT that does not
    continue their pattern, before a STORE writes DRAM at once, and at the
    end of every run.
    """

    def __init__(self, cfg: Config):
        super().__init__(cfg)
        b, bo = cfg.BATCH, cfg.BLOCK_OUT
        self.raw = {name: arr.view(np.uint8).reshape(arr.shape[0], -1)
                    for name, arr in self.buffers().items()}
        for raw in self.raw.values():
            # written now, not at first use (as upstream's fsim zero-fills its SRAMs when a
            # device is made): NumPy's zeros are untouched pages a run would fault in
            raw.fill(0)
        self.acc2 = self.acc.reshape(cfg.ACC_BUFF_DEPTH, b * bo)
        self.out2 = self.out.reshape(cfg.OUT_BUFF_DEPTH, b * bo)
        self.wgt_float: dict[tuple[object, int], np.ndarray] = {}
        self.pending: tuple[slice, list[tuple[Callable, object]], bool] | None = None
        self.stores: _CopyRun | None = None
        self.loads: _CopyRun | None = None

    def defer(self, rows: slice, func: np.ufunc, imm: int) -> None:
        """Retire the ALU operation ``acc[rows] = func(acc[rows], imm)``, ``out[rows] =
        acc[rows]`` later, together with the next ones on the same rows.

        The epilogue of a tile (shift, ReLU, clip: three or four instructions over the
        same entries) then costs one pass over ACC and one write of OUT.  At most
        :data:`_DEFERRED_OPS` operations wait (bounded memory, whatever the stream).
        """
        if self.pending is not None and (self.pending[0] != rows
                                         or len(self.pending[1]) >= _DEFERRED_OPS):
            self.settle()
        if self.pending is None:
            self.pending = (rows, [], True)
        elif not self.pending[2]:  # after a reset: the operation writes OUT
            self.pending = (rows, self.pending[1], True)
        ops = self.pending[1]
        last = ops[-1] if ops else None
        if (func, imm) == last and func in (np.minimum, np.maximum):
            return  # MIN and MAX are idempotent: the same one again changes nothing
        if func is np.minimum and last is not None and last[0] is np.maximum:
            ops[-1] = (np.clip, (last[1], imm))  # MAX a, then MIN b: clip to [a, b] at once
            return
        ops.append((func, imm))

    def defer_out(self, rows: slice) -> None:
        """Write ``out[rows] = acc[rows]`` when settled, together with the ALU operations
        that follow on the same rows (after a GEMM into ``rows``, which settled anything
        else pending before it read ACC)."""
        self.pending = (rows, [], True)

    def defer_reset(self, rows: slice) -> None:
        """Reset ``acc[rows]`` to 0 (OUT untouched) when settled, or for nothing when a GEMM
        into exactly ``rows`` comes next (it writes its sums instead of adding them)."""
        self.settle()
        self.pending = (rows, [RESET], False)

    def settle(self) -> None:
        """Apply the ``pending`` ALU operations and write their OUT entries (see
        :meth:`defer`)."""
        if self.pending is None:
            return
        rows, ops, out = self.pending
        self.pending = None
        acc = self.acc2[rows]
        for func, imm in ops:
            if func is np.clip:  # = minimum(maximum(acc, lo), hi), also if lo > hi (all hi)
                _CLIP(acc, *imm, out=acc)  # one pass: int32 MAX and MIN are slow in NumPy
            else:
                func(acc, imm, out=acc)  # int32 arithmetic wraps modulo 2**32, as the hardware
        if out:
            self.write_out(rows, acc)

    def write_out(self, rows: slice | np.ndarray, values: np.ndarray) -> None:
        """``out2[rows] = values``, after the STOREs waiting (they read OUT as it was): every
        write of OUT goes through here."""
        if self.stores is not None:
            self.flush_stores()
        self.out2[rows] = values

    def store(self, mem: np.ndarray, out: int, dram: int, rows: int, row_bytes: int,
              row_step: int) -> None:
        """Retire a plain STORE: ``rows`` x ``row_bytes`` OUT bytes from byte ``out`` (rows
        contiguous) to the rows of ``mem`` from byte ``dram``, ``row_step`` bytes apart.

        The copy waits, and STOREs that continue the same pattern (the rows of a tile, one
        STORE each) join it, so that a run of them is one strided copy (:class:`_CopyRun`).
        """
        run = self.stores
        if run is not None:
            if run.extend(out, dram, rows, row_bytes, row_step):
                return
            self.flush_stores()
        self.stores = _CopyRun(mem, self.raw["out"], True, out, dram, rows, row_bytes, row_step)

    def load(self, mem: np.ndarray, target: np.ndarray, sram: int, dram: int, rows: int,
             row_bytes: int, row_step: int) -> None:
        """Retire a plain LOAD of INP or WGT (``target``, its raw rows): the rows of ``mem``
        from byte ``dram``, ``row_step`` bytes apart, ``row_bytes`` each, to the buffer's
        bytes from byte ``sram`` (rows contiguous); copied later, together with the LOADs
        that continue the same pattern, as :meth:`store`."""
        run = self.loads
        if run is not None:
            if run.sram_bytes is target and run.extend(sram, dram, rows, row_bytes, row_step):
                return
            self.flush_loads()
        self.loads = _CopyRun(mem, target, False, sram, dram, rows, row_bytes, row_step)

    def flush_stores(self) -> None:
        """Make the copies of the ``stores`` waiting (see :meth:`store`), after the
        ``loads`` waiting if they read what the STOREs write."""
        run = self.stores
        if run is not None:
            self.stores = None
            loads = self.loads
            if loads is not None and loads.dram < run.end and run.dram < loads.end:
                self.flush_loads()
            run.copy()

    def flush_loads(self) -> None:
        """Make the copies of the ``loads`` waiting (see :meth:`load`)."""
        run = self.loads
        if run is not None:
            self.loads = None
            run.copy()

    def flush(self) -> None:
        """Make every copy waiting: LOADs first (STOREs that write what they read retired
        after them, or the LOAD would have had the STOREs copied first)."""
        self.flush_loads()
        self.flush_stores()


class _CopyRun:
    """Plain LOADs or STOREs retired but not copied yet, copied together
    (:meth:`Scratchpads.load`, :meth:`Scratchpads.store`).

    Copy ``k`` of the ``count`` moves ``rows`` x ``row_bytes`` bytes between DRAM rows
    ``row_step`` bytes apart from byte ``dram + k * dram_step`` of ``mem`` and the bytes of
    a buffer (``sram_bytes``, its raw rows) from byte ``sram + k * sram_step``, rows
    contiguous: to DRAM for STOREs (``to_dram``), from DRAM for LOADs.  On the side written,
    every copy's bytes end before the next one's begin, so no byte is written twice and one
    strided copy does what the copies do one by one.  DRAM bytes ``dram`` to ``end`` hold
    every row read or written.
    """

    __slots__ = ("mem", "sram_bytes", "to_dram", "sram", "dram", "rows", "row_bytes",
                 "row_step", "span", "count", "sram_step", "dram_step", "end")

    def __init__(self, mem: np.ndarray, sram_bytes: np.ndarray, to_dram: bool, sram: int,
                 dram: int, rows: int, row_bytes: int, row_step: int):
        self.mem, self.sram_bytes, self.to_dram = mem, sram_bytes, to_dram
        self.sram, self.dram = sram, dram
        self.rows, self.row_bytes, self.row_step = rows, row_bytes, row_step
        self.span = (rows - 1) * row_step + row_bytes  # DRAM bytes of one copy
        self.count, self.sram_step, self.dram_step = 1, 0, 0
        self.end = dram + self.span

    def extend(self, sram: int, dram: int, rows: int, row_bytes: int, row_step: int) -> bool:
        """Take one more copy if it continues the pattern (the second sets the steps);
        else False."""
        if rows != self.rows or row_bytes != self.row_bytes or row_step != self.row_step:
            return False
        count = self.count
        if count == 1:
            sram_step, dram_step = sram - self.sram, dram - self.dram
            if sram_step < 0 or dram_step < 0 or (
                    dram_step < self.span if self.to_dram else sram_step < rows * row_bytes):
                return False  # a step back, or bytes written twice
            self.sram_step, self.dram_step = sram_step, dram_step
        elif (sram != self.sram + count * self.sram_step
              or dram != self.dram + count * self.dram_step):
            return False
        self.count = count + 1
        self.end = dram + self.span
        return True

    def copy(self) -> None:
        """Make the copies."""
        shape = (self.count, self.rows, self.row_bytes)
        dram = np.ndarray(shape, np.uint8, self.mem, self.dram,
                          (self.dram_step, self.row_step, 1))
        sram = np.ndarray(shape, np.uint8, self.sram_bytes, self.sram,
                          (self.sram_step, self.row_bytes, 1))
        if self.to_dram:
            dram[...] = sram
        else:
            sram[...] = dram



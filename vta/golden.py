"""NumPy golden model of the whole VTA device: the living specification.

The model owns a byte-addressed device memory and the five scratchpads (UOP,
INP, WGT, ACC, OUT).  :meth:`GoldenModel.run` fetches ``insn_count``
instructions from a device address, dispatches them to the load, compute and
store engines (vta-reference section 3.8) and runs the three engines as
independent in-order machines that meet only through the four dependency-token
queues.  The scheduler interleaves the engines one instruction at a time, so a
stream that forgets a token misbehaves here as it would on hardware instead of
passing by the luck of a serial order; a stream whose tokens cannot all be
satisfied raises :class:`~vta.errors.DeadlockError` naming each stuck engine.

GEMM and ALU instructions execute whole loop nests with vectorised NumPy,
through *plans* (see "compute" below); nests larger than
:data:`CHUNK_UOPS` micro-ops run in pieces, so memory stays bounded whatever the
loop counts.  Every program fault of decision 7 raises
:class:`~vta.errors.ExecutionError` with the instruction index, the engine and
the field.  A run given a ``deadline`` stops with :class:`RunTimeoutError` once the
clock passes it (checked between instructions and between pieces of a nest).

No simulator or device import happens here: the model depends on NumPy and the
ISA tables only.
"""

from __future__ import annotations

import dataclasses
import math
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from .config import TOKEN_QUEUE_DEPTH, Config
from .errors import DeadlockError, DeviceTimeoutError, ErrorCode, ExecutionError
from .isa import (
    DEFINED_OPCODES,
    DEP_FLAGS,
    ENGINES,
    FORBIDDEN_FLAGS,
    INSN_BYTES,
    POP_QUEUE,
    PUSH_QUEUE,
    QUEUES,
    AluInsn,
    AluOp,
    GemmInsn,
    Insn,
    MemId,
    MemInsn,
    Opcode,
    dispatch_engine,
    insn_class,
    layout,
)

_ENGINE_ORDER = tuple(enumerate(ENGINES))  # (number, name): the order engines take turns in

#: Loadable memory types -> (scratchpad written, counter prefix).
_LOAD_TYPES = {MemId.INP: ("inp", "inp"), MemId.WGT: ("wgt", "wgt"), MemId.UOP: ("uop", "uop"),
               MemId.ACC: ("acc", "acc"), MemId.ACC_8BIT: ("acc", "acc8")}

_FINISH = int(Opcode.FINISH)
_WORD = np.dtype("<u8")  # instructions are two little-endian 64-bit words
#: Enum values the hot paths compare with (an enum member lookup is slow).
_OUT, _WGT, _ACC_8BIT = int(MemId.OUT), int(MemId.WGT), int(MemId.ACC_8BIT)
_SHR = int(AluOp.SHR)
#: Instructions decoded together, and decoded blocks a run keeps (older ones are dropped).
_BLOCK = 1024
_BLOCKS_KEPT = 64
#: Largest number of micro-ops one plan covers; bigger GEMM/ALU nests run in pieces.
CHUNK_UOPS = 1 << 16
#: Micro-ops the cached plans of one model may cover in all (beyond it the cache is emptied).
PLAN_CACHE_UOPS = 1 << 21
#: Bytes of float weight matrices a model keeps for reuse (beyond it they are dropped).
_WGT_FLOAT_BYTES = 4 << 20
#: ALU operations on the same entries that may wait to be applied together.
_DEFERRED_OPS = 16
#: A reset waiting in ``Scratchpads.pending``: ACC entries multiplied by 0.
_RESET = (np.multiply, np.int32(0))
#: The ufunc that np.clip calls after checking its arguments (checks that cost as much as
#: clipping a tile); numpy._core from NumPy 2, numpy.core before.
_CLIP = (np._core if hasattr(np, "_core") else np.core).umath.clip


@dataclass
class Counters:
    """Event counters of one run, like upstream fsim's plus per-engine counts."""

    uop_load_bytes: int = 0
    inp_load_bytes: int = 0
    wgt_load_bytes: int = 0
    acc_load_bytes: int = 0
    acc8_load_bytes: int = 0
    out_store_bytes: int = 0
    gemm_uops: int = 0
    alu_uops: int = 0
    load_insns: int = 0
    compute_insns: int = 0
    store_insns: int = 0
    tokens: dict[str, int] = field(default_factory=lambda: dict.fromkeys(QUEUES, 0))

    def as_dict(self) -> dict[str, int]:
        out = {k: v for k, v in self.__dict__.items() if k != "tokens"}
        out.update({f"{q}_tokens": n for q, n in self.tokens.items()})
        return out


@dataclass(frozen=True)
class TraceEvent:
    """One retired instruction: engine, stream index, instruction, token effects."""

    module: str
    index: int
    insn: Insn
    popped: tuple[str, ...]
    pushed: tuple[str, ...]


class RunTimeoutError(DeviceTimeoutError):
    """A run passed its deadline; it stopped in instruction ``index`` of engine ``module``."""

    def __init__(self, message: str, *, module: str, index: int):
        super().__init__(message)
        self.module = module
        self.index = index


class Scratchpads:
    """The on-chip buffers, each a typed element array plus flat views of the same memory.

    ``uop`` is (depth,) uint32; ``inp``/``wgt``/``acc``/``out`` are (depth,
    rows, lanes).  ``raw[name]`` views a buffer as (depth, element bytes)
    uint8; ``acc2``/``out2`` view ACC/OUT as (depth, BATCH x BLOCK_OUT).

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
    operation ``_RESET`` (multiply by 0) without OUT (:meth:`defer_reset`).
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
        b, bi, bo = cfg.BATCH, cfg.BLOCK_IN, cfg.BLOCK_OUT
        self.uop = np.zeros(cfg.UOP_BUFF_DEPTH, dtype=np.uint32)
        self.inp = np.zeros((cfg.INP_BUFF_DEPTH, b, bi), dtype=np.int8)
        self.wgt = np.zeros((cfg.WGT_BUFF_DEPTH, bo, bi), dtype=np.int8)
        self.acc = np.zeros((cfg.ACC_BUFF_DEPTH, b, bo), dtype=np.int32)
        self.out = np.zeros((cfg.OUT_BUFF_DEPTH, b, bo), dtype=np.int8)
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
        self.pending = (rows, [_RESET], False)

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

    def buffers(self) -> dict[str, np.ndarray]:
        """The five buffers by name."""
        return {"uop": self.uop, "inp": self.inp, "wgt": self.wgt, "acc": self.acc,
                "out": self.out}


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


class GoldenModel:
    """Functional model of one VTA device.

    Parameters
    ----------
    cfg : Config
        The configuration to model.
    memory : numpy.ndarray or int
        Device DRAM as a writable, contiguous 1-D ``uint8`` array (shared, not copied), or
        its size in bytes (default 256 MiB, zero-filled lazily by the OS).

    Attributes
    ----------
    counters : Counters
        Counters of the last run, as far as it got: an instruction counts once
        it retires (after a fault or a timeout, what retired before it).
    tokens : dict[str, int]
        Tokens in each queue now (after a run: what it left behind).
    bus_error : tuple[int, int] or None
        Fault injection: device bytes ``[lo, hi)`` (whole 4 KiB pages) whose
        memory answers every access with an error response.  An instruction
        (or the fetch) reaching them stops with ``BUS_ERROR``; its
        ``address`` is where the hardware's first failing AXI burst starts:
        the first bus word of the access inside the window, or the window's
        first byte when the access enters it from below (bursts never cross
        a 4 KiB boundary).  A failing STORE writes nothing here.
    """

    def __init__(self, cfg: Config, memory: np.ndarray | int = 1 << 28):
        self.cfg = cfg
        if isinstance(memory, (int, np.integer)):
            memory = np.zeros(int(memory), dtype=np.uint8)
        if memory.dtype != np.uint8 or memory.ndim != 1 or not memory.flags.c_contiguous:
            raise TypeError("memory must be a contiguous 1-D uint8 numpy array")
        self.mem = memory
        self.sp = Scratchpads(cfg)
        self.counters = Counters()
        self.tokens = dict.fromkeys(QUEUES, 0)
        self._plans: dict = {}
        self.bus_error: tuple[int, int] | None = None
        self._nests: dict = {}  # whole one-piece nests: loop fields + micro-ops -> pieces
        #: (kind, micro-ops) -> the first nest of that size met: its micro-op words, the
        #: fields' lowest and highest values, relative fields and their bytes
        self._nest_refs: dict = {}
        self._decoding = _decoding_tables(cfg)
        #: opcode -> executor(engine, index, insn, deadline), which returns the counter the
        #: instruction adds to once it retires and how much (or None)
        self._execute = {Opcode.LOAD: self._load, Opcode.STORE: self._store,
                         Opcode.GEMM: self._gemm, Opcode.ALU: self._alu,
                         Opcode.FINISH: lambda *_: None}  # FINISH: only its tokens
        self._plan_uops = 0
        self._depth = {name: arr.shape[0] for name, arr in self.sp.buffers().items()}
        #: loadable memory type -> (its buffer's entries as rows, the same flat, DRAM bytes per
        #: entry, counter, whether it writes ACC, the buffer's raw rows if its plain LOADs wait
        #: to be copied together: INP and WGT); OUT's entries as rows
        self._out_rows = self.sp.raw["out"]
        self._load_targets = {}
        #: each loadable buffer as a memoryview of its bytes; device memory's is made by each
        #: run and by explain (``mem`` may be given another array between runs)
        self._mem_bytes = memoryview(self.mem)
        self._bytes = {mem_type: memoryview(self.sp.raw[buf].reshape(-1))
                       for mem_type, (buf, _) in _LOAD_TYPES.items()}
        for mem_type, (buf, prefix) in _LOAD_TYPES.items():
            # ACC_8BIT: one int8 lane per byte, sign-extended into the int32 accumulator
            rows = self.sp.acc2 if mem_type == MemId.ACC_8BIT else self.sp.raw[buf]
            self._load_targets[mem_type] = (rows, rows.reshape(-1), rows.shape[1],
                                            f"{prefix}_load_bytes", buf == "acc",
                                            self.sp.raw[buf] if buf in ("inp", "wgt")
                                            else None)
        uop_fields = layout("uop", cfg)
        # kind -> (fields used, their (lo, mask), the lows and masks as (k, 1) arrays, buffer
        # depths, the relative fields of one micro-op (zeros) and their bytes)
        self._nest_fields = {}
        for kind, used in _NEST_FIELDS.items():
            lo_mask = [(uop_fields[f].lo, (1 << uop_fields[f].width) - 1) for f in used]
            shifts, masks = np.array(lo_mask, dtype=np.uint32).T[:, :, None]
            one = np.zeros((len(used), 1), dtype=np.uint32)
            one.flags.writeable = False  # shared by every one-micro-op nest's plan
            self._nest_fields[kind] = (
                used, lo_mask, shifts, masks,
                tuple(self._depth[buf.lower()] for buf in _FIELD_BUFFER[kind]), one,
                one.tobytes())

    # ------------------------------------------------------------------ run
    def run(self, insn_addr: int, insn_count: int, *,
            trace: Callable[[TraceEvent], None] | None = None,
            deadline: float | None = None) -> Counters:
        """Execute ``insn_count`` instructions fetched from byte address ``insn_addr``.

        ``deadline`` is a :func:`time.monotonic` time after which the run stops
        with :class:`RunTimeoutError`.  ``trace`` is called with a
        :class:`TraceEvent` for every retired instruction.  Returns the run's
        :class:`Counters`.  Raises :class:`ExecutionError` for a program fault
        and :class:`DeadlockError` for unsatisfiable tokens.
        """
        self.counters = counters = Counters()
        self.tokens = tokens = dict.fromkeys(QUEUES, 0)
        self.sp.wgt_float.clear()  # WGT may have been written from outside since the last run
        self._mem_bytes = memoryview(self.mem)
        words, codes, queues = self.fetch(insn_addr, insn_count)
        stream = _Stream(words, codes, self._decoding)
        execute = self._execute
        # what each engine runs: (index, decoded instruction, links), in order
        upcoming = [stream.queue(queues[engine]) for engine in ENGINES]
        heads: list[tuple[int, list[int], _Links] | None] = [None] * 3  # decoded, not retired
        retired = [0] * 3
        effects: dict[str, int] = {}  # counter -> amount added by retired instructions
        pushed = counters.tokens  # tokens pushed, per queue
        finished = False
        try:
            progress = True
            while progress:  # one pass: each engine retires at most one instruction, in turn
                progress = False
                for e, engine in _ENGINE_ORDER:
                    head = heads[e]
                    if head is None:
                        head = next(upcoming[e], None)
                        if head is None:
                            continue  # the engine ran all its instructions
                        index, insn, links = heads[e] = head
                        if links.forbidden:
                            raise _forbidden_flag(engine, index, links.forbidden)
                    else:
                        index, insn, links = head
                    pops = links.pops
                    # an engine pops at most two queues: pops[0] and pops[-1] are all of them
                    if pops and not (tokens[pops[0]] and tokens[pops[-1]]):
                        continue  # blocked on an empty queue
                    if deadline is not None and time.monotonic() >= deadline:
                        raise RunTimeoutError(
                            f"instruction {index} ({engine}): the run passed its deadline",
                            module=engine, index=index)
                    opcode = insn[0]
                    effect = execute[opcode](engine, index, insn, deadline)
                    pushes = links.pushes
                    if pushes:  # every queue checked before any is pushed
                        for q, flag in pushes:
                            if tokens[q] >= TOKEN_QUEUE_DEPTH:
                                raise self._overflow(engine, index, q, flag)
                        for q, _ in pushes:
                            tokens[q] += 1
                            pushed[q] += 1
                    for q in pops:
                        tokens[q] -= 1
                    if effect is not None:
                        counter, amount = effect
                        effects[counter] = effects.get(counter, 0) + amount
                    retired[e] += 1
                    finished |= opcode == _FINISH
                    heads[e] = None
                    progress = True
                    if trace is not None:
                        trace(TraceEvent(engine, index, insn_class(opcode)(*insn), pops,
                                         tuple(q for q, _ in pushes)))
        finally:
            self.sp.settle()  # what retired is written, even when the run stopped early
            self.sp.flush()
            for name, amount in effects.items():
                setattr(counters, name, amount)
            counters.load_insns, counters.compute_insns, counters.store_insns = retired
        stuck = {engine: (head[0], next(q for q in head[2].pops if tokens[q] == 0))
                 for engine, head in zip(ENGINES, heads, strict=True) if head is not None}
        if stuck:
            detail = "; ".join(
                f"{engine} at instruction {index} waits on {queue} (empty)"
                for engine, (index, queue) in stuck.items()
            )
            raise DeadlockError(f"deadlock: {detail}", stuck=stuck)
        if not finished:
            raise ExecutionError(
                f"the stream of {insn_count} instructions has no FINISH; the device would "
                "never report done", module="compute", index=None, field="opcode",
                code=ErrorCode.NO_FINISH)
        return counters

    def fetch(self, insn_addr: int, insn_count: int
              ) -> tuple[np.ndarray, list[int], dict[str, list[int]]]:
        """Read the instruction stream and dispatch it (the fetch engine).

        Returns the stream as (insn_count, 2) little-endian 64-bit words (a
        copy: a run that stores over its own stream still executes what was
        fetched), each instruction's links code (its engine << 4 | its flag
        bits, an index of ``_LINKS_BY_CODE``) and, per engine, the indices of
        its instructions in order.  An undefined opcode anywhere faults here,
        before anything executes; instructions are decoded when their engine
        reaches them (:class:`_Stream`).
        """
        if insn_count < 0:
            raise ExecutionError(f"insn_count must be >= 0, not {insn_count}",
                                 module="fetch", field="insn_count")
        end = insn_addr + insn_count * INSN_BYTES
        if insn_addr < 0 or end > self.mem.size:
            raise ExecutionError(
                f"fetch: instructions at 0x{insn_addr:x}..0x{end:x} lie outside device memory "
                f"(0x{self.mem.size:x} bytes)", module="fetch", field="insn_addr")
        self._bus_check("fetch", None, [(insn_addr, end)], "instructions")
        words = self.mem[insn_addr:end].copy().view(_WORD).reshape(insn_count, 2)
        # links code (engine << 4 | flag bits) of each instruction; -1: undefined opcode
        codes = self._decoding.codes[
            (words[:, 0] & self._decoding.key_mask).astype(np.intp)].tolist()
        queues: tuple[list[int], ...] = ([], [], [])  # by engine number
        for index, code in enumerate(codes):  # (plain Python: fewer NumPy kernels to warm up)
            if code < 0:
                raise ExecutionError(
                    f"instruction {index} (fetch): undefined opcode {int(words[index, 0]) & 0x7}",
                    module="fetch", index=index, field="opcode")
            queues[code >> 4].append(index)
        return words, codes, dict(zip(ENGINES, queues, strict=True))

    # -------------------------------------------------------------- tokens
    @staticmethod
    def _overflow(engine: str, index: int, queue: str, flag: str) -> ExecutionError:
        return ExecutionError(
            f"instruction {index} ({engine}): {flag} overflows token queue {queue} "
            f"(capacity {TOKEN_QUEUE_DEPTH})", module=engine, index=index, field=flag,
            code=ErrorCode.TOKEN_OVERFLOW)

    # ----------------------------------------------------------- execution
    def _fault(self, engine: str, index: int, field: str, text: str) -> ExecutionError:
        return ExecutionError(f"instruction {index} ({engine}): {text}",
                              module=engine, index=index, field=field)

    def _plain_step(self, dram_base: int, y_size: int, x_size: int, x_stride: int,
                    elem_bytes: int, sram_fits: bool) -> int | None:
        """Bytes from one DRAM row of a LOAD/STORE without padding to the next, if the access
        is plain: its SRAM entries fit the buffer (``sram_fits``), its rows do not overlap and
        lie inside memory with their whole strides, and no bus-error window is set.  Else
        None: :meth:`_dram_rows` and the general paths check and copy it."""
        row_bytes = x_size * elem_bytes
        step = x_stride * elem_bytes if y_size > 1 else row_bytes
        if (sram_fits and step >= row_bytes
                and dram_base * elem_bytes + y_size * step <= self.mem.size
                and self.bus_error is None):
            return step
        return None

    def _dram_rows(self, engine: str, index: int, dram_base: int, y_size: int, x_size: int,
                   x_stride: int, elem_bytes: int) -> np.ndarray:
        """View (y_size, x_size * elem_bytes) of the DRAM rows of a LOAD/STORE."""
        mem = self.mem
        rows, row_bytes = y_size, x_size * elem_bytes
        start = dram_base * elem_bytes
        step = x_stride * elem_bytes if rows > 1 else row_bytes  # from a row to the next
        plain = step >= row_bytes and start + rows * step <= mem.size  # the usual case
        if not plain:
            end = start + (rows - 1) * step + row_bytes if rows else start
            if end > mem.size:
                raise self._fault(
                    engine, index, "dram_base",
                    f"DRAM access 0x{start:x}..0x{end:x} (dram_base {dram_base}, y_size "
                    f"{rows}, x_stride {x_stride}) lies outside device memory "
                    f"(0x{mem.size:x} bytes)")
        if self.bus_error is not None:
            self._bus_check(engine, index, [(start + y * step, start + y * step + row_bytes)
                                            for y in range(rows)], f"dram_base {dram_base}")
        if plain:
            return mem[start:start + rows * step].reshape(rows, step)[:, :row_bytes]
        if step < row_bytes:
            # Overlapping rows are legal for loads; build the view explicitly.
            idx = start + np.arange(rows)[:, None] * step + np.arange(row_bytes)
            return mem[idx]
        # the last row ends at the end of memory, before a whole step
        return np.lib.stride_tricks.as_strided(
            mem[start:], shape=(rows, row_bytes), strides=(step, 1))

    def explain(self, index: int, insn: Insn) -> ExecutionError | None:
        """The fault instruction ``index`` raises when executed on its own, or None.

        Checks its dependency flags and executes it on the current scratchpads
        and memory (tokens aside).  The host driver uses this to give the RTL's
        fault codes the model's own message.
        """
        if insn.opcode not in DEFINED_OPCODES:
            return ExecutionError(f"instruction {index} (fetch): undefined opcode {insn.opcode}",
                                  module="fetch", index=index, field="opcode")
        engine = dispatch_engine(insn)
        flags = sum(int(getattr(insn, f)) << i for i, f in enumerate(DEP_FLAGS))
        forbidden = _LINKS[engine][flags].forbidden
        if forbidden:
            return _forbidden_flag(engine, index, forbidden)
        self._mem_bytes = memoryview(self.mem)
        try:
            self._execute[insn.opcode](engine, index, list(insn.fields().values()), None)
        except ExecutionError as exc:
            return exc
        finally:
            self.sp.settle()
            self.sp.flush()
        return None

    def _bus_check(self, engine: str, index: int | None, ranges, what: str) -> None:
        """BUS_ERROR if a byte range (in access order) reaches the ``bus_error`` window."""
        if self.bus_error is None:
            return
        lo, hi = self.bus_error
        for start, end in ranges:
            if start < hi and end > lo:
                addr = max(start - start % self.cfg.BUS_BYTES, lo)
                if index is None:  # fetch: the first instruction of the failing burst
                    index = max(0, addr - start) // INSN_BYTES
                raise ExecutionError(
                    f"instruction {index} ({engine}): bus error: the memory answered the DRAM "
                    f"burst at 0x{addr:x} with an error response ({what}: bytes "
                    f"0x{start:x}..0x{end:x}; error window 0x{lo:x}..0x{hi:x})",
                    module=engine, index=index, field="dram_base", code=ErrorCode.BUS_ERROR,
                    address=addr)

    # The executors take a decoded instruction: the list of its field values in the order of
    # its vta.isa class (see _decode_block), unpacked into names first.

    def _load(self, engine: str, index: int, insn: list[int],
              deadline: float | None = None) -> tuple[str, int] | None:
        (_, _, _, _, _, mem_type, base, dram_base, y_size, x_size, x_stride,
         y_pad_0, y_pad_1, x_pad_0, x_pad_1) = insn  # MemInsn
        target = self._load_targets.get(mem_type)
        if target is None:
            what = "OUT cannot be loaded" if mem_type == MemId.OUT else "undefined"
            raise self._fault(engine, index, "memory_type",
                              f"LOAD memory_type {mem_type} ({what})")
        if x_size == 0:
            return None  # sync no-op: only its flags matter
        sram, flat, elem_bytes, counter, writes_acc, joins = target  # bytes per entry: DRAM
        if writes_acc:
            self.sp.settle()  # deferred ALU results first
        stores = self.sp.stores
        if stores is not None:  # STOREs waiting: copied first if they write what this reads
            start = dram_base * elem_bytes
            if start < stores.end and stores.dram < start + y_size * max(
                    x_size, x_stride) * elem_bytes:
                self.sp.flush_stores()
        if mem_type == _WGT:
            self.sp.wgt_float.clear()
        if not (x_pad_0 or x_pad_1 or y_pad_0 or y_pad_1):
            # the common case, one slice assignment; _plain_step says when it applies
            step = self._plain_step(dram_base, y_size, x_size, x_stride, elem_bytes,
                                    base + x_size * y_size <= len(sram))
            if step is not None and joins is not None and y_size:  # copied with the next ones
                self.sp.load(self.mem, joins, base * elem_bytes, dram_base * elem_bytes, y_size,
                             x_size * elem_bytes, step)
                return counter, y_size * x_size * elem_bytes
            if step is not None and mem_type != _ACC_8BIT and (
                    y_size == 1 or step == x_size * elem_bytes):
                # contiguous bytes (UOP, mostly): memoryview slices cost less than arrays
                size = y_size * x_size * elem_bytes
                start = dram_base * elem_bytes
                self._bytes[mem_type][base * elem_bytes:base * elem_bytes + size] = (
                    self._mem_bytes[start:start + size])
                return counter, size
            if step is not None:
                # the view made directly (cheaper than slicing, reshaping and slicing again)
                rows = _rows_of(self.mem, dram_base * elem_bytes, y_size, x_size * elem_bytes,
                                step)
                if mem_type == _ACC_8BIT:
                    rows = rows.view(np.int8)
                _rows_of(flat, base * elem_bytes, *rows.shape)[...] = rows
                return counter, y_size * x_size * elem_bytes
        if joins is not None:
            self.sp.flush_loads()  # the LOADs before it write first
        x_total = x_pad_0 + x_size + x_pad_1
        y_total = y_pad_0 + y_size + y_pad_1
        if base + x_total * y_total > sram.shape[0]:
            name = MemId(mem_type).name
            raise self._fault(
                engine, index, "sram_base",
                f"LOAD {name} writes SRAM entries {base}..{base + x_total * y_total - 1}, "
                f"beyond the {sram.shape[0]}-entry {_LOAD_TYPES[mem_type][0].upper()} buffer")
        rows = self._dram_rows(engine, index, dram_base, y_size, x_size, x_stride, elem_bytes)
        if mem_type == _ACC_8BIT:
            rows = rows.view(np.int8)
        block = sram[base:base + x_total * y_total]
        if x_total == x_size and y_total == y_size:
            block.reshape(rows.shape)[...] = rows
        else:  # zeros around the rows
            lanes = sram.shape[1]  # explicit: a LOAD of padding only (y_size 0) has no rows
            block = block.reshape(y_total, x_total, lanes)
            block[...] = 0
            block[y_pad_0:y_pad_0 + y_size,
                  x_pad_0:x_pad_0 + x_size] = rows.reshape(y_size, x_size, lanes)
        return counter, y_size * x_size * elem_bytes

    def _store(self, engine: str, index: int, insn: list[int],
               deadline: float | None = None) -> tuple[str, int] | None:
        (_, _, _, _, _, mem_type, base, dram_base, y_size, x_size, x_stride,
         y_pad_0, y_pad_1, x_pad_0, x_pad_1) = insn  # MemInsn
        if x_size == 0:
            return None  # sync no-op; memory_type is not checked (the runtime uses 0)
        if mem_type != _OUT:
            raise self._fault("store", index, "memory_type",
                              f"STORE memory_type must be OUT (4), not {mem_type}")
        if y_pad_0 or y_pad_1 or x_pad_0 or x_pad_1:
            pad, value = next((p, v) for p, v in (("y_pad_0", y_pad_0), ("y_pad_1", y_pad_1),
                                                  ("x_pad_0", x_pad_0), ("x_pad_1", x_pad_1))
                              if v)
            raise self._fault("store", index, pad, f"STORE {pad} must be 0, not {value}")
        out = self._out_rows
        count = x_size * y_size
        elem_bytes = out.shape[1]
        pending = self.sp.pending
        if pending is not None and pending[0].start < base + count and base < pending[0].stop:
            self.sp.settle()  # the store reads entries of deferred ALU results
        step = self._plain_step(dram_base, y_size, x_size, x_stride, elem_bytes,
                                base + count <= len(out))
        if step is not None and y_size:  # the common case: copied later, with the next ones
            self.sp.store(self.mem, base * elem_bytes, dram_base * elem_bytes, y_size,
                          x_size * elem_bytes, step)
            return "out_store_bytes", count * elem_bytes
        self.sp.flush()  # the LOADs before it read first, the STOREs write first
        if base + count > len(out):
            raise self._fault(
                "store", index, "sram_base",
                f"STORE reads SRAM entries {base}..{base + count - 1}, "
                f"beyond the {len(out)}-entry OUT buffer")
        src = out[base:base + count]
        dram = self._dram_rows("store", index, dram_base, y_size, x_size, x_stride, elem_bytes)
        if y_size > 1 and x_stride < x_size:
            # Overlapping destination rows (checked above): later rows win, as in a serial store.
            for y in range(y_size):
                start = (dram_base + y * x_stride) * elem_bytes
                self.mem[start:start + x_size * elem_bytes] = (
                    src[y * x_size:(y + 1) * x_size].reshape(-1))
        else:
            dram[...] = src.reshape(y_size, x_size * elem_bytes)  # explicit: y_size may be 0
        return "out_store_bytes", count * elem_bytes

    # ------------------------------------------------------------- compute
    # A GEMM/ALU instruction is a loop nest (iter_out x iter_in x micro-ops).
    # Its *plan* holds every index the nest touches, grouped for vectorised
    # execution, relative to a base per buffer: it depends only on the loop
    # counts and factors and on the micro-ops' fields minus their smallest
    # value.  Plans are cached under exactly that, so the repeated and shifted
    # nests of a tiled layer (the same kernel at another tile or kernel
    # position) share one plan and skip the index work; executing a plan adds
    # the bases.  A nest of more than CHUNK_UOPS micro-ops runs as pieces of
    # whole outer (or inner) iterations, in execution order, each its own
    # nest; pieces of equal size share a plan.  A nest that fits one piece is
    # also remembered whole (loop fields and micro-op words -> plan and
    # bases), so a repeated instruction goes straight to execution.

    def _gemm(self, engine: str, index: int, insn: list[int],
              deadline: float | None) -> tuple[str, int] | None:
        reset = insn[5]  # GemmInsn.reset_reg
        if not reset and self.sp.loads is not None:
            self.sp.flush_loads()  # it reads INP and WGT
        count = self._run_nest(index, insn, "RESET" if reset else "GEMM", deadline)
        return None if reset else ("gemm_uops", count)

    def _alu(self, engine: str, index: int, insn: list[int],
             deadline: float | None) -> tuple[str, int]:
        alu_opcode, use_imm = insn[14], insn[15]  # AluInsn
        if alu_opcode not in _ALU_FUNCS:
            raise self._fault("compute", index, "alu_opcode",
                              f"undefined ALU opcode {alu_opcode}")
        count = self._run_nest(index, insn, "ALU" if use_imm else "ALU_SRC", deadline)
        return "alu_uops", count

    def _run_nest(self, index: int, insn: list[int], kind: str,
                  deadline: float | None) -> int:
        """Check and execute one GEMM/ALU nest; return its micro-op count."""
        # the fields GemmInsn and AluInsn share, then GEMM's weight factors
        (bgn, end, iter_out, iter_in, dst_factor_out, dst_factor_in, src_factor_out,
         src_factor_in) = insn[6:14]
        if end > len(self.sp.uop):
            raise self._fault("compute", index, "uop_end",
                              f"{_KIND_NAME[kind]} uop_end {end} is beyond the "
                              f"{len(self.sp.uop)}-entry micro-op buffer")
        n_uops = end - bgn
        if n_uops <= 0 or iter_out == 0 or iter_in == 0:
            return 0  # an empty nest does nothing
        raw = self.sp.uop[bgn:end]
        gemm = kind in ("GEMM", "RESET")
        wgt_factor_out, wgt_factor_in = insn[14:16] if gemm else (0, 0)
        factors = ((dst_factor_out, src_factor_out, wgt_factor_out),
                   (dst_factor_in, src_factor_in, wgt_factor_in))
        key = (kind, iter_out, iter_in, factors, raw.tobytes())
        pieces = self._nests.get(key)
        if pieces is None:
            pieces = self._pieces(index, kind, raw, iter_out, iter_in, factors)
            if iter_out * iter_in * n_uops <= CHUNK_UOPS:  # one piece (the run checked the
                self._nests[key] = pieces                  # deadline before the instruction)
            elif deadline is not None:  # several: the deadline is checked before each
                pieces = _until(deadline, index, pieces)
        for plan, bases in pieces:
            plan.execute(self.sp, bases, insn)
        return n_uops * iter_out * iter_in

    def _pieces(self, index: int, kind: str, raw: np.ndarray, iter_out: int, iter_in: int,
                factors) -> Iterable[tuple[object, list[int]]]:
        """Check a nest's indices, then give (plan, bases) for each piece in order: a list for
        a nest of one piece, an iterator of the pieces of a bigger one."""
        used, lo_mask, shifts, masks, depths, one, one_bytes = self._nest_fields[kind]
        if raw.size == 1:  # one micro-op (an epilogue's ALU op or a reset): plain integers
            word = int(raw[0])
            low = high = [(word >> lo) & mask for lo, mask in lo_mask]
            rel, shape = one, one_bytes
        else:
            ref = self._nest_refs.get((kind, raw.size))
            shift = _field_shift(raw, ref[0], lo_mask, ref[2]) if ref is not None else None
            if shift is not None:  # a shifted copy of the reference nest
                rel, shape = ref[3], ref[4]
                low = [lo + d for lo, d in zip(ref[1], shift, strict=True)]
                high = [hi + d for hi, d in zip(ref[2], shift, strict=True)]
            else:
                fields = (raw >> shifts) & masks  # (fields used, n_uops)
                lows = np.minimum.reduce(fields, axis=1)
                rel = fields - lows[:, None]  # (never negative)
                shape = rel.tobytes()
                low, high = lows.tolist(), np.maximum.reduce(fields, axis=1).tolist()
                if ref is None:
                    self._nest_refs[kind, raw.size] = (raw.copy(), low, high, rel, shape)
        f_out = [factors[0][f] for f in used]
        f_in = [factors[1][f] for f in used]
        for k, f in enumerate(used):
            # factors are unsigned, so the largest index is at the last iteration
            top = high[k] + (iter_out - 1) * f_out[k] + (iter_in - 1) * f_in[k]
            if top >= depths[k]:
                name, buf = _FIELD_NAMES[f], _FIELD_BUFFER[kind][k]
                raise self._fault("compute", index, name,
                                  f"{_KIND_NAME[kind]} {name} reaches {top} (micro-op field "
                                  f"plus loop offsets), beyond the {depths[k]}-entry {buf} buffer")
        if iter_out * iter_in * raw.size <= CHUNK_UOPS:
            return [self._piece(kind, rel, shape, low, f_out, f_in, 0, iter_out, 0, iter_in)]
        return (self._piece(kind, rel, shape, low, f_out, f_in, *piece)
                for piece in _split(raw.size, iter_out, iter_in))

    def _piece(self, kind: str, rel: np.ndarray, shape: bytes, low: list[int], f_out, f_in,
               o0: int, n_out: int, i0: int, n_in: int) -> tuple[object, list[int]]:
        """(plan, bases) of the piece of a nest from outer iteration ``o0`` (``n_out`` of
        them) and inner iteration ``i0`` (``n_in``)."""
        first = [lo + o0 * fo + i0 * fi for lo, fo, fi in zip(low, f_out, f_in, strict=True)]
        if kind == "ALU_SRC":  # dst and src both index ACC: one base keeps their distance
            bases = [min(first)] * 2
            offsets = (first[0] - bases[0], first[1] - bases[1])
        else:
            bases, offsets = first, None
        loops = ((n_out, *f_out), (n_in, *f_in))
        return self._plan(kind, loops, shape, offsets, rel), bases

    def _plan(self, kind: str, loops, shape: bytes, offsets: tuple[int, int] | None,
              rel: np.ndarray):
        """The cached plan of a nest; built from the relative micro-op fields on a miss.

        ``offsets`` (ALU with a source) place dst and src relative to their common base.
        """
        key = (kind, loops, shape, offsets)
        plan = self._plans.get(key)
        if plan is None:
            if offsets is not None:
                rel = rel + np.array(offsets)[:, None]
            plan = _PLAN_CLASSES[kind](rel, loops, self.cfg)
            count = rel.shape[1] * loops[0][0] * loops[1][0]
            if self._plan_uops + count > PLAN_CACHE_UOPS or len(self._plans) >= 4096:
                self._plans.clear()
                self._nests.clear()
                self._nest_refs.clear()
                self._plan_uops = 0
            self._plans[key] = plan
            self._plan_uops += count
        return plan


# ----------------------------------------------------------------- nest helpers
#: Micro-op fields (0 dst, 1 src, 2 wgt) each kind of nest reads.
_NEST_FIELDS = {"GEMM": (0, 1, 2), "RESET": (0,), "ALU": (0,), "ALU_SRC": (0, 1)}
_FIELD_NAMES = ("dst_idx", "src_idx", "wgt_idx")
_KIND_NAME = {"GEMM": "GEMM", "RESET": "GEMM", "ALU": "ALU", "ALU_SRC": "ALU"}
_FIELD_BUFFER = {"GEMM": ("ACC", "INP", "WGT"), "RESET": ("ACC",), "ALU": ("ACC",),
                 "ALU_SRC": ("ACC", "ACC")}


class _Stream:
    """A fetched stream, decoded a block of :data:`_BLOCK` instructions at a time.

    An engine asks for an instruction when it reaches it; its block is decoded
    then, with NumPy, all fields of all its instructions at once.  At most
    :data:`_BLOCKS_KEPT` blocks stay decoded, so a stream of any length needs
    bounded memory.
    """

    def __init__(self, words: np.ndarray, codes: list[int], decoding: _Decoding):
        self.words = words
        self.codes = codes
        self.decoding = decoding
        self.blocks: dict[int, tuple[list[list[int]], list[_Links]]] = {}

    def block(self, number: int) -> tuple[list[list[int]], list[_Links]]:
        """Block ``number`` decoded: its instructions and what their engines do with their
        flags."""
        block = self.blocks.get(number)
        if block is None:
            if len(self.blocks) >= _BLOCKS_KEPT:
                self.blocks.clear()
            rows = slice(number * _BLOCK, (number + 1) * _BLOCK)
            block = self.blocks[number] = _decode_block(self.words[rows], self.codes[rows],
                                                        self.decoding)
        return block

    def queue(self, indices: list[int]) -> Iterator[tuple[int, list[int], _Links]]:
        """The instructions at ``indices`` (ascending), in order: (index, decoded
        instruction, links)."""
        if len(self.words) <= _BLOCK and indices:  # one block: a list is cheaper to go through
            insns, links = self.block(0)
            return iter([(index, insns[index], links[index]) for index in indices])
        return self._queue(indices)

    def _queue(self, indices: list[int]) -> Iterator[tuple[int, list[int], _Links]]:
        number, insns, links = -1, [], []
        for index in indices:
            if index // _BLOCK != number:
                number = index // _BLOCK
                insns, links = self.block(number)
            yield index, insns[index - number * _BLOCK], links[index - number * _BLOCK]


class _Decoding(NamedTuple):
    """How instruction words of one configuration decode (see :func:`_decoding_tables`)."""

    key_mask: np.uint64  # the low bits holding the opcode, the flags and the memory type
    codes: np.ndarray  # (2**key bits,) links code of each key, -1 for an undefined opcode
    formats: np.ndarray  # (8,) format number of each opcode (its class's), -1 if undefined
    #: per format: each field's 64-bit half, shift and mask, and (position, sign bit) of
    #: each signed field
    places: list[tuple[np.ndarray, np.ndarray, np.ndarray, list[tuple[int, int]]]]


#: The classes defined opcodes decode to, in format-number order.
_CLASSES = sorted({insn_class(op) for op in DEFINED_OPCODES}, key=lambda cls: cls.__name__)


def _field_names(cls: type) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(cls))


# A decoded instruction is the list of its field values in its class's order; the executors
# unpack it by position, so the order they assume is checked here, once.
if (_field_names(MemInsn)[:5] != ("opcode", *DEP_FLAGS)
        or _field_names(MemInsn)[5:] != ("memory_type", "sram_base", "dram_base", "y_size",
                                         "x_size", "x_stride", "y_pad_0", "y_pad_1", "x_pad_0",
                                         "x_pad_1")
        or _field_names(GemmInsn)[5:16] != _field_names(AluInsn)[5:14] + ("wgt_factor_out",
                                                                          "wgt_factor_in")
        or _field_names(AluInsn)[5:] != ("reset_reg", "uop_bgn", "uop_end", "iter_out",
                                         "iter_in", "dst_factor_out", "dst_factor_in",
                                         "src_factor_out", "src_factor_in", "alu_opcode",
                                         "use_imm", "imm")):
    raise ImportError("vta.golden: the instruction classes of vta.isa changed their field order")


def _decoding_tables(cfg: Config) -> _Decoding:
    """What :meth:`GoldenModel.fetch` and :func:`_decode_block` need, per configuration.

    For each instruction class, its fields in constructor order, each with its
    place in the 128-bit word and, if signed, its sign bit.  The dispatch
    table maps the low bits of a word (opcode, flags and memory type) to the
    instruction's engine and flag bits.
    """
    places = []
    for cls in _CLASSES:
        placed = {f.name: f for f in layout(cls.FORMAT, cfg)}
        order = [placed[name] for name in _field_names(cls)]
        half, shift, mask = (np.array(column, dtype=dtype) for column, dtype in zip(
            zip(*[(f.lo // 64, f.lo % 64, (1 << f.width) - 1) for f in order], strict=True),
            (np.intp, np.uint64, np.uint64), strict=True))
        places.append((half, shift, mask,
                       [(k, 1 << (f.width - 1)) for k, f in enumerate(order) if f.signed]))
    formats = np.array([_CLASSES.index(insn_class(op)) if op in DEFINED_OPCODES else -1
                        for op in range(8)], dtype=np.intp)
    placed = {f.name: f for f in layout("mem", cfg)}  # generic fields plus the memory type
    key_bits = max(placed[name].lo + placed[name].width
                   for name in ("opcode", *DEP_FLAGS, "memory_type"))
    keys = np.arange(1 << key_bits)
    value = {name: keys >> placed[name].lo & (1 << placed[name].width) - 1
             for name in ("opcode", *DEP_FLAGS, "memory_type")}
    engine = np.array([[ENGINES.index(dispatch_engine(MemInsn(opcode=op, memory_type=mem_type)))
                        for mem_type in range(8)] for op in range(8)])  # by opcode, memory type
    codes = engine[value["opcode"], value["memory_type"]] << 4
    for i, name in enumerate(DEP_FLAGS):
        codes |= value[name] << i
    codes[~np.isin(value["opcode"], list(DEFINED_OPCODES))] = -1
    return _Decoding(np.uint64((1 << key_bits) - 1), codes, formats, places)


def _decode_block(words: np.ndarray, codes: list[int],
                  decoding: _Decoding) -> tuple[list[list[int]], list[_Links]]:
    """Decode (n, 2) instruction words of defined opcodes with links codes ``codes`` (from
    the fetch): the instructions, and what their engines do with their flags.

    An instruction decodes to the list of its field values in the order of its class's
    fields (``insn_class(opcode)(*fields)`` is the :mod:`vta.isa` object); the
    instructions of each class are decoded together, all fields at once.
    """
    insns: list = [None] * len(words)
    formats = decoding.formats[(words[:, 0] & 0x7).astype(np.intp)]
    for number, (half, shift, mask, signed) in enumerate(decoding.places):
        rows = (formats == number).nonzero()[0]
        if rows.size:
            values = ((words[rows[:, None], half] >> shift) & mask).tolist()
            for k, bit in signed:  # signed fields (ALU's imm): two's complement, in Python
                for insn in values:  # (cheaper than the NumPy passes for a few instructions)
                    if insn[k] & bit:
                        insn[k] -= bit << 1
            for row, insn in zip(rows.tolist(), values, strict=True):
                insns[row] = insn
    return insns, [_LINKS_BY_CODE[code] for code in codes]


@dataclass(frozen=True)
class _Links:
    """What an engine does with an instruction's four dependency flags."""

    pops: tuple[str, ...]  # queues popped, in flag order
    pushes: tuple[tuple[str, str], ...]  # (queue, flag) pushed, in flag order
    forbidden: str | None  # the first flag set that the engine does not have


def _links(engine: str, flags: int) -> _Links:
    """The links of an instruction of ``engine`` whose flag bits (DEP_FLAGS order) are ``flags``."""
    names = [f for i, f in enumerate(DEP_FLAGS) if flags >> i & 1]
    forbidden = next((f for f in names if f in FORBIDDEN_FLAGS[engine]), None)
    return _Links(tuple(POP_QUEUE[(engine, f)] for f in names if (engine, f) in POP_QUEUE),
                  tuple((PUSH_QUEUE[(engine, f)], f) for f in names if (engine, f) in PUSH_QUEUE),
                  forbidden)


#: _LINKS[engine][flag bits]: every combination, worked out once.
_LINKS = {engine: [_links(engine, flags) for flags in range(16)] for engine in ENGINES}
#: The same by engine number << 4 | flag bits.
_LINKS_BY_CODE = [links for engine in ENGINES for links in _LINKS[engine]]


def _forbidden_flag(engine: str, index: int, flag: str) -> ExecutionError:
    return ExecutionError(
        f"instruction {index} ({engine}): {flag} is set, but the {engine} engine has no "
        f"{'previous' if 'prev' in flag else 'next'} stage", module=engine, index=index,
        field=flag)


def _field_shift(raw: np.ndarray, ref: np.ndarray, lo_mask, ref_high: list[int]
                 ) -> list[int] | None:
    """How much each micro-op field of ``raw`` exceeds the same field of ``ref``, if ``raw``
    is ``ref`` with every field shifted by a constant (the same nest at another buffer
    half, tile or channel chunk); else None.

    ``raw - ref`` is then one word ``d`` made of the shifts, each small enough that no field
    of ``ref`` (at most ``ref_high``) carries into the next: field by field, every word of
    ``raw`` is the word of ``ref`` plus its shift.  The fields a nest uses are the lowest
    bits of a micro-op (dst, then src, then wgt), so what ``d`` holds above them changes
    nothing.
    """
    delta = (raw - ref).tobytes()  # uint32 words, modulo 2**32
    if delta != delta[:4] * raw.size:  # (compared as bytes: no more NumPy calls)
        return None
    d = int.from_bytes(delta[:4], sys.byteorder)
    shift = []
    for hi, (lo, mask) in zip(ref_high, lo_mask, strict=True):
        s = (d >> lo) & mask
        if hi + s > mask:
            return None  # the field would carry into the next
        shift.append(s)
    return shift


def _until(deadline: float, index: int, pieces: Iterable) -> Iterator:
    """The pieces of nest ``index``; :class:`RunTimeoutError` before one once the clock passes
    ``deadline``."""
    for piece in pieces:
        if time.monotonic() >= deadline:
            raise RunTimeoutError(f"instruction {index} (compute): the run passed its deadline "
                                  "inside its loop nest", module="compute", index=index)
        yield piece


def _split(n_uops: int, iter_out: int, iter_in: int) -> Iterator[tuple[int, int, int, int]]:
    """``(first outer, outer count, first inner, inner count)`` of each piece of a nest.

    Pieces follow the execution order and hold at most :data:`CHUNK_UOPS`
    micro-ops (at least one iteration of both loops).
    """
    if n_uops * iter_out * iter_in <= CHUNK_UOPS:
        yield 0, iter_out, 0, iter_in
    elif n_uops * iter_in <= CHUNK_UOPS:
        step = CHUNK_UOPS // (n_uops * iter_in)
        for o0 in range(0, iter_out, step):
            yield o0, min(step, iter_out - o0), 0, iter_in
    else:
        step = max(1, CHUNK_UOPS // n_uops)
        for o in range(iter_out):
            for i0 in range(0, iter_in, step):
                yield o, 1, i0, min(step, iter_in - i0)


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


def _rows_of(flat: np.ndarray, start: int, rows: int, row_len: int,
             step: int | None = None) -> np.ndarray:
    """``rows`` rows of ``row_len`` elements of a contiguous 1-D array, from element
    ``start``, each ``step`` elements after the one before (default ``row_len``: then
    ``flat[start:start + rows * row_len].reshape(rows, row_len)``), as a view made directly
    (one call instead of three: a LOAD or STORE copies only a few rows)."""
    size = flat.itemsize
    step = row_len if step is None else step
    return np.ndarray((rows, row_len), flat.dtype, flat, start * size, (step * size, size))


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
class _ResetPlan:
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


class _AluPlan:
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
            func = _ALU_FUNCS[op]
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


def _shr(x: np.ndarray, y) -> np.ndarray:
    """SHR as decided (decision 3): a total function of the signed shift amount."""
    y = np.asarray(y, dtype=np.int32)
    right = x >> np.clip(y, 0, 31)
    left = (x.view(np.uint32) << np.clip(-y, 0, 31).astype(np.uint32)).view(np.int32)
    return np.where(y >= 0, right, np.where(y <= -32, np.int32(0), left))


_ALU_FUNCS: dict[int, Callable] = {
    AluOp.MIN: np.minimum,
    AluOp.MAX: np.maximum,
    AluOp.ADD: np.add,
    AluOp.SHR: _shr,
    AluOp.MUL: np.multiply,
}


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


class _GemmPlan:
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
            if isinstance(dst, slice) and pending[0] == dst and pending[1] in ([], [_RESET]):
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


_PLAN_CLASSES = {"GEMM": _GemmPlan, "RESET": _ResetPlan, "ALU": _AluPlan, "ALU_SRC": _AluPlan}


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

"""The fast model itself: :class:`GoldenModel`, its run loop, LOAD and STORE, and the
loop nests of GEMM and ALU run through cached plans in pieces of at most
:data:`CHUNK_UOPS` micro-ops."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterable, Iterator

import numpy as np

from ...config import TOKEN_QUEUE_DEPTH, Config
from ...errors import ExecutionError
from ...isa import (
    ENGINES,
    QUEUES,
    Insn,
    MemId,
    Opcode,
    dispatch_engine,
    insn_class,
    layout,
)
from ..common import (
    Counters,
    TraceEvent,
    alu_opcode,
    bus_check,
    deadlock,
    device_memory,
    dram_outside,
    forbidden_flag,
    index_beyond,
    load_beyond_sram,
    load_memory_type,
    no_finish,
    static_fault,
    store_beyond_sram,
    store_memory_type,
    store_pad,
    timeout,
    token_overflow,
    undefined_opcode,
    uop_end_beyond,
)
from ..spec import ALU_FUNCTIONS, LOADS, stream_end
from .decode import Links, Stream, decoding_tables
from .pending import Scratchpads
from .plans import PLAN_CLASSES

_ENGINE_ORDER = tuple(enumerate(ENGINES))  # (number, name): the order engines take turns in

_FINISH = int(Opcode.FINISH)
_WORD = np.dtype("<u8")  # instructions are two little-endian 64-bit words
#: Enum values the hot paths compare with (an enum member lookup is slow).
_OUT, _WGT, _ACC_8BIT = int(MemId.OUT), int(MemId.WGT), int(MemId.ACC_8BIT)
#: Largest number of micro-ops one plan covers; bigger GEMM/ALU nests run in pieces.
CHUNK_UOPS = 1 << 16
#: Micro-ops the cached plans of one model may cover in all (beyond it the cache is emptied).
PLAN_CACHE_UOPS = 1 << 21


class GoldenModel:
    """Functional model of one VTA device, fast (the specification: :class:`SpecModel
    <vta.golden.spec.SpecModel>`).

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
        self.mem = device_memory(memory)
        self.sp = Scratchpads(cfg)
        self.counters = Counters()
        self.tokens = dict.fromkeys(QUEUES, 0)
        self._plans: dict = {}
        self.bus_error: tuple[int, int] | None = None
        self._nests: dict = {}  # whole one-piece nests: loop fields + micro-ops -> pieces
        #: (kind, micro-ops) -> the first nest of that size met: its micro-op words, the
        #: fields' lowest and highest values, relative fields and their bytes
        self._nest_refs: dict = {}
        self._decoding = decoding_tables(cfg)
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
                       for mem_type, (buf, _, _) in LOADS.items()}
        for mem_type, (buf, _, counter) in LOADS.items():
            # ACC_8BIT: one int8 lane per byte, sign-extended into the int32 accumulator
            rows = self.sp.acc2 if mem_type == MemId.ACC_8BIT else self.sp.raw[buf]
            self._load_targets[mem_type] = (rows, rows.reshape(-1), rows.shape[1], counter,
                                            buf == "acc",
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
        stream = Stream(words, codes, self._decoding)
        execute = self._execute
        # what each engine runs: (index, decoded instruction, links), in order
        upcoming = [stream.queue(queues[engine]) for engine in ENGINES]
        heads: list[tuple[int, list[int], Links] | None] = [None] * 3  # decoded, not retired
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
                            raise forbidden_flag(engine, index, links.forbidden)
                    else:
                        index, insn, links = head
                    pops = links.pops
                    # an engine pops at most two queues: pops[0] and pops[-1] are all of them
                    if pops and not (tokens[pops[0]] and tokens[pops[-1]]):
                        continue  # blocked on an empty queue
                    if deadline is not None and time.monotonic() >= deadline:
                        raise timeout(engine, index)
                    opcode = insn[0]
                    effect = execute[opcode](engine, index, insn, deadline)
                    pushes = links.pushes
                    if pushes:  # every queue checked before any is pushed
                        for q, flag in pushes:
                            if tokens[q] >= TOKEN_QUEUE_DEPTH:
                                raise token_overflow(engine, index, q, flag)
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
            raise deadlock(stuck)
        if not finished:
            raise no_finish(insn_count)
        return counters

    def fetch(self, insn_addr: int, insn_count: int
              ) -> tuple[np.ndarray, list[int], dict[str, list[int]]]:
        """Read the instruction stream and dispatch it (the fetch engine).

        Returns the stream as (insn_count, 2) little-endian 64-bit words (a
        copy: a run that stores over its own stream still executes what was
        fetched), each instruction's links code (its engine << 4 | its flag
        bits, an index of ``LINKS_BY_CODE``) and, per engine, the indices of
        its instructions in order.  An undefined opcode anywhere faults here,
        before anything executes; instructions are decoded when their engine
        reaches them (:class:`Stream`).
        """
        end = stream_end(self, insn_addr, insn_count)
        words = self.mem[insn_addr:end].copy().view(_WORD).reshape(insn_count, 2)
        # links code (engine << 4 | flag bits) of each instruction; -1: undefined opcode
        codes = self._decoding.codes[
            (words[:, 0] & self._decoding.key_mask).astype(np.intp)].tolist()
        queues: tuple[list[int], ...] = ([], [], [])  # by engine number
        for index, code in enumerate(codes):  # (plain Python: fewer NumPy kernels to warm up)
            if code < 0:
                raise undefined_opcode(index, int(words[index, 0]) & 0x7)
            queues[code >> 4].append(index)
        return words, codes, dict(zip(ENGINES, queues, strict=True))

    # ----------------------------------------------------------- execution
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
                raise dram_outside(engine, index, start, end, dram_base, rows, x_stride,
                                   mem.size)
        if self.bus_error is not None:
            bus_check(self.bus_error, self.cfg.BUS_BYTES, engine, index,
                      [(start + y * step, start + y * step + row_bytes) for y in range(rows)],
                      f"dram_base {dram_base}")
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
        error = static_fault(index, insn)
        if error is not None:
            return error
        engine = dispatch_engine(insn)
        self._mem_bytes = memoryview(self.mem)
        try:
            self._execute[insn.opcode](engine, index, list(insn.fields().values()), None)
        except ExecutionError as exc:
            return exc
        finally:
            self.sp.settle()
            self.sp.flush()
        return None

    # The executors take a decoded instruction: the list of its field values in the order of
    # its vta.isa class (see decode_block), unpacked into names first.

    def _load(self, engine: str, index: int, insn: list[int],
              deadline: float | None = None) -> tuple[str, int] | None:
        (_, _, _, _, _, mem_type, base, dram_base, y_size, x_size, x_stride,
         y_pad_0, y_pad_1, x_pad_0, x_pad_1) = insn  # MemInsn
        target = self._load_targets.get(mem_type)
        if target is None:
            raise load_memory_type(engine, index, mem_type)
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
            raise load_beyond_sram(engine, index, MemId(mem_type).name, base,
                                   base + x_total * y_total, sram.shape[0],
                                   LOADS[mem_type][0].upper())
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
            raise store_memory_type(index, mem_type)
        if y_pad_0 or y_pad_1 or x_pad_0 or x_pad_1:
            raise store_pad(index, *next((p, v) for p, v in (
                ("y_pad_0", y_pad_0), ("y_pad_1", y_pad_1), ("x_pad_0", x_pad_0),
                ("x_pad_1", x_pad_1)) if v))
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
            raise store_beyond_sram(index, base, base + count, len(out))
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
        opcode, use_imm = insn[14], insn[15]  # AluInsn
        if opcode not in ALU_FUNCTIONS:
            raise alu_opcode(index, opcode)
        count = self._run_nest(index, insn, "ALU" if use_imm else "ALU_SRC", deadline)
        return "alu_uops", count

    def _run_nest(self, index: int, insn: list[int], kind: str,
                  deadline: float | None) -> int:
        """Check and execute one GEMM/ALU nest; return its micro-op count."""
        # the fields GemmInsn and AluInsn share, then GEMM's weight factors
        (bgn, end, iter_out, iter_in, dst_factor_out, dst_factor_in, src_factor_out,
         src_factor_in) = insn[6:14]
        if end > len(self.sp.uop):
            raise uop_end_beyond(index, _KIND_NAME[kind], end, len(self.sp.uop))
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
                raise index_beyond(index, _KIND_NAME[kind], _FIELD_NAMES[f], top, depths[k],
                                   _FIELD_BUFFER[kind][k])
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
            plan = PLAN_CLASSES[kind](rel, loops, self.cfg)
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
            raise timeout("compute", index, in_nest=True)
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


def _rows_of(flat: np.ndarray, start: int, rows: int, row_len: int,
             step: int | None = None) -> np.ndarray:
    """``rows`` rows of ``row_len`` elements of a contiguous 1-D array, from element
    ``start``, each ``step`` elements after the one before (default ``row_len``: then
    ``flat[start:start + rows * row_len].reshape(rows, row_len)``), as a view made directly
    (one call instead of three: a LOAD or STORE copies only a few rows)."""
    size = flat.itemsize
    step = row_len if step is None else step
    return np.ndarray((rows, row_len), flat.dtype, flat, start * size, (step * size, size))



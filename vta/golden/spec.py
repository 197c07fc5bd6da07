"""The specification model of a VTA device: what every instruction does, one at a time.

This is the readable definition the rest of the project is checked against: the
fast model (:mod:`vta.golden.fast`, :class:`~vta.golden.GoldenModel`) must give
exactly what this model gives on every program, and the RTL is compared with
the fast one.  Read it next to ``vta-reference.md`` (section 2 for the fields,
section 3 for the semantics, "Decisions for this project" where upstream
disagrees) and docs/design.md, "Golden model":

* :meth:`SpecModel.fetch` -- the fetch engine (3.8): the stream is read once,
  every opcode checked, and each instruction dispatched to its engine;
* :meth:`SpecModel.run` -- the scheduler: the load, compute and store engines
  take turns one instruction at a time, each only when the token queues it
  pops are not empty (3.9, decision 6); end of a run, deadlock, timeouts;
* :meth:`SpecModel.load` (3.2, decision 4), :meth:`SpecModel.store` (3.5,
  decision 2), :meth:`SpecModel.gemm` (3.3), :meth:`SpecModel.alu` (3.4,
  decision 3) -- the instructions, micro-op by micro-op; every fault of
  decision 7 is raised before the instruction changes anything.

Instructions are the dataclasses of :mod:`vta.isa`, decoded with its field
tables; nothing is planned, cached or deferred, so this model is slow (tens of
microseconds per micro-op) and only as fast as a reader needs.  How a run is
reported (counters, trace events, the faults' messages) is shared with the fast
model: :mod:`vta.golden.common`.
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable, Iterator

import numpy as np

from ..config import TOKEN_QUEUE_DEPTH, Config
from ..errors import ExecutionError
from ..isa import (
    DEFINED_OPCODES,
    DEP_FLAGS,
    ENGINES,
    INSN_BYTES,
    POP_QUEUE,
    PUSH_QUEUE,
    QUEUES,
    UOP_BYTES,
    AluInsn,
    AluOp,
    GemmInsn,
    Insn,
    MemId,
    MemInsn,
    Opcode,
    Uop,
    decode,
    decode_uop,
    dispatch_engine,
)
from .common import (
    Counters,
    TraceEvent,
    alu_opcode,
    bad_insn_count,
    bus_check,
    deadlock,
    device_memory,
    dram_outside,
    index_beyond,
    load_beyond_sram,
    load_memory_type,
    no_finish,
    static_fault,
    store_beyond_sram,
    store_memory_type,
    store_pad,
    stream_outside,
    timeout,
    token_overflow,
    undefined_opcode,
    uop_end_beyond,
)

#: What a LOAD of each memory type writes: (scratchpad, the type of one lane in DRAM,
#: counter).  One DRAM element is one scratchpad entry; ACC_8BIT has int8 lanes in DRAM,
#: sign-extended into the int32 accumulator.  OUT cannot be loaded; 6 and 7 are undefined.
LOADS = {
    MemId.UOP: ("uop", "<u4", "uop_load_bytes"),
    MemId.INP: ("inp", "i1", "inp_load_bytes"),
    MemId.WGT: ("wgt", "i1", "wgt_load_bytes"),
    MemId.ACC: ("acc", "<i4", "acc_load_bytes"),
    MemId.ACC_8BIT: ("acc", "i1", "acc8_load_bytes"),
}


def shr(x: np.ndarray, y) -> np.ndarray:
    """SHR as decided (decision 3), a total function of the signed shift amount ``y``:
    0..31 shift right (arithmetic), 32 or more shift right by 31, -31..-1 shift left by
    ``-y`` keeping the low 32 bits, -32 or less give 0."""
    y = np.asarray(y, dtype=np.int32)
    right = x >> np.clip(y, 0, 31)
    left = (x.view(np.uint32) << np.clip(-y, 0, 31).astype(np.uint32)).view(np.int32)
    return np.where(y >= 0, right, np.where(y <= -32, np.int32(0), left))


#: The ALU operations (vta-reference 3.4) on int32 lanes; ADD and MUL wrap modulo 2**32.
ALU_FUNCTIONS: dict[int, Callable] = {
    AluOp.MIN: np.minimum,
    AluOp.MAX: np.maximum,
    AluOp.ADD: np.add,
    AluOp.SHR: shr,
    AluOp.MUL: np.multiply,
}


def stream_end(model, insn_addr: int, insn_count: int) -> int:
    """Where the stream of ``insn_count`` instructions from byte ``insn_addr`` ends, once it
    is known to lie in ``model``'s device memory and outside its ``bus_error`` window (the
    fetch's checks, before it reads anything)."""
    if insn_count < 0:
        raise bad_insn_count(insn_count)
    end = insn_addr + insn_count * INSN_BYTES
    if insn_addr < 0 or end > model.mem.size:
        raise stream_outside(insn_addr, end, model.mem.size)
    bus_check(model.bus_error, model.cfg.BUS_BYTES, "fetch", None, [(insn_addr, end)],
              "instructions")
    return end


class Scratchpads:
    """The on-chip buffers, zero when a device is made and kept across runs.

    ``uop`` is (depth,) uint32 micro-op words; ``inp`` (depth, BATCH, BLOCK_IN) int8;
    ``wgt`` (depth, BLOCK_OUT, BLOCK_IN) int8, row j the weights of output channel j;
    ``acc`` (depth, BATCH, BLOCK_OUT) int32; ``out`` (depth, BATCH, BLOCK_OUT) int8,
    the low 8 bits of what GEMM and ALU last wrote into ACC at the same index.
    """

    def __init__(self, cfg: Config):
        b, bi, bo = cfg.BATCH, cfg.BLOCK_IN, cfg.BLOCK_OUT
        self.uop = np.zeros(cfg.UOP_BUFF_DEPTH, dtype=np.uint32)
        self.inp = np.zeros((cfg.INP_BUFF_DEPTH, b, bi), dtype=np.int8)
        self.wgt = np.zeros((cfg.WGT_BUFF_DEPTH, bo, bi), dtype=np.int8)
        self.acc = np.zeros((cfg.ACC_BUFF_DEPTH, b, bo), dtype=np.int32)
        self.out = np.zeros((cfg.OUT_BUFF_DEPTH, b, bo), dtype=np.int8)

    def buffers(self) -> dict[str, np.ndarray]:
        """The five buffers by name."""
        return {"uop": self.uop, "inp": self.inp, "wgt": self.wgt, "acc": self.acc,
                "out": self.out}


class SpecModel:
    """The specification model of one VTA device.

    Parameters and attributes are those of :class:`~vta.golden.GoldenModel`: ``cfg``,
    ``mem`` (device memory, shared, or its size), ``sp`` (:class:`Scratchpads`),
    ``counters`` and ``tokens`` of the last run, and ``bus_error``, a window of
    device bytes ``[lo, hi)`` (whole pages) that answers every access with an error
    response (see :func:`vta.golden.common.bus_check`).
    """

    def __init__(self, cfg: Config, memory: np.ndarray | int = 1 << 28):
        self.cfg = cfg
        self.mem = device_memory(memory)
        self.sp = Scratchpads(cfg)
        self.counters = Counters()
        self.tokens = dict.fromkeys(QUEUES, 0)
        self.bus_error: tuple[int, int] | None = None

    # ------------------------------------------------------------------ the run
    def run(self, insn_addr: int, insn_count: int, *,
            trace: Callable[[TraceEvent], None] | None = None,
            deadline: float | None = None) -> Counters:
        """Execute ``insn_count`` instructions fetched from byte address ``insn_addr``.

        The engines take turns in rounds -- load, compute, store -- and in its turn an
        engine retires its next instruction if every queue it pops holds a token, so the
        tokens, not the stream's order, decide what runs first.  The run ends when no
        engine can go on: it must have retired FINISH with every engine drained, else it
        is a deadlock (engines left waiting) or ``NO_FINISH``.  Queues start empty; tokens
        left at the end are allowed.  ``trace`` gets a :class:`TraceEvent` per retired
        instruction; past ``deadline`` (:func:`time.monotonic`) the run stops with
        :class:`~vta.golden.RunTimeoutError`.  Returns the run's :class:`Counters`, as
        :attr:`counters` also holds them (after a fault: what retired before it).
        """
        self.counters = Counters()
        self.tokens = dict.fromkeys(QUEUES, 0)
        stream, queues = self.fetch(insn_addr, insn_count)
        heads: dict[str, tuple[int, Insn]] = {}  # the instruction each engine is at
        finished, progress = False, True
        while progress:  # a round: each engine retires at most one instruction, in turn
            progress = False
            for engine in ENGINES:
                if engine not in heads:
                    if not queues[engine]:
                        continue  # the engine ran all its instructions
                    index = queues[engine].popleft()
                    insn = decode(stream[index * INSN_BYTES:(index + 1) * INSN_BYTES], self.cfg)
                    error = static_fault(index, insn)  # a flag the engine does not have
                    if error is not None:
                        raise error
                    heads[engine] = index, insn
                index, insn = heads[engine]
                if self.retire(engine, index, insn, trace, deadline):
                    del heads[engine]
                    finished |= insn.opcode == Opcode.FINISH
                    progress = True
        if heads:
            raise deadlock({engine: (heads[engine][0], self.waits_on(engine, heads[engine][1]))
                            for engine in ENGINES if engine in heads})
        if not finished:
            raise no_finish(insn_count)
        return self.counters

    def fetch(self, insn_addr: int, insn_count: int) -> tuple[bytes, dict[str, deque[int]]]:
        """The fetch engine: the stream's bytes (a copy: a run that stores over its own
        stream executes what was fetched) and, per engine, the indices of its instructions
        in stream order.  An undefined opcode anywhere faults here, before anything runs."""
        stream = self.mem[insn_addr:stream_end(self, insn_addr, insn_count)].tobytes()
        queues: dict[str, deque[int]] = {engine: deque() for engine in ENGINES}
        for index in range(insn_count):
            insn = decode(stream[index * INSN_BYTES:(index + 1) * INSN_BYTES], self.cfg)
            if insn.opcode not in DEFINED_OPCODES:
                raise undefined_opcode(index, insn.opcode)
            queues[dispatch_engine(insn)].append(index)
        return stream, queues

    @staticmethod
    def links(engine: str, insn: Insn) -> tuple[list[str], list[tuple[str, str]]]:
        """The queues an instruction of ``engine`` pops, and the (queue, flag) it pushes,
        in flag order (vta-reference 3.9)."""
        flags = [f for f in DEP_FLAGS if getattr(insn, f)]
        return ([POP_QUEUE[engine, f] for f in flags if (engine, f) in POP_QUEUE],
                [(PUSH_QUEUE[engine, f], f) for f in flags if (engine, f) in PUSH_QUEUE])

    def waits_on(self, engine: str, insn: Insn) -> str | None:
        """The first queue ``insn`` pops that is empty (None: it can run)."""
        return next((q for q in self.links(engine, insn)[0] if not self.tokens[q]), None)

    def retire(self, engine: str, index: int, insn: Insn, trace, deadline) -> bool:
        """Run and retire instruction ``index`` if its pops are satisfiable; else False.

        Its token effects and counts happen when it retires: after a fault or a timeout
        the queues and counters show what retired before it.
        """
        if self.waits_on(engine, insn) is not None:
            return False
        if deadline is not None and time.monotonic() >= deadline:
            raise timeout(engine, index)
        counts = self.execute(engine, index, insn, deadline)
        pops, pushes = self.links(engine, insn)
        for queue, flag in pushes:  # every queue checked before any is pushed
            if self.tokens[queue] >= TOKEN_QUEUE_DEPTH:
                raise token_overflow(engine, index, queue, flag)
        for queue in pops:
            self.tokens[queue] -= 1
        for queue, _ in pushes:
            self.tokens[queue] += 1
            self.counters.tokens[queue] += 1
        counts[f"{engine}_insns"] = 1
        for name, amount in counts.items():
            setattr(self.counters, name, getattr(self.counters, name) + amount)
        if trace is not None:
            trace(TraceEvent(engine, index, insn, tuple(pops), tuple(q for q, _ in pushes)))
        return True

    # --------------------------------------------------------------- instructions
    def execute(self, engine: str, index: int, insn: Insn,
                deadline: float | None = None) -> dict[str, int]:
        """Do what instruction ``index`` does on ``engine``; returns what it adds to the
        counters (apart from the engine's instruction count)."""
        if insn.opcode == Opcode.LOAD:
            return self.load(engine, index, insn)
        if insn.opcode == Opcode.STORE:
            return self.store(index, insn)
        if insn.opcode == Opcode.GEMM:
            return self.gemm(index, insn, deadline)
        if insn.opcode == Opcode.ALU:
            return self.alu(index, insn, deadline)
        return {}  # FINISH: only its tokens

    def explain(self, index: int, insn: Insn) -> ExecutionError | None:
        """The fault instruction ``index`` raises when executed on its own (tokens aside),
        or None; it is executed on the current scratchpads and memory."""
        error = static_fault(index, insn)
        if error is not None:
            return error
        try:
            self.execute(dispatch_engine(insn), index, insn)
        except ExecutionError as exc:
            return exc
        return None

    def load(self, engine: str, index: int, insn: MemInsn) -> dict[str, int]:
        """LOAD: ``y_size`` DRAM rows of ``x_size`` elements, ``x_stride`` elements apart,
        into consecutive scratchpad entries from ``sram_base``, surrounded by zeros: the
        block written is ``y_pad_0 + y_size + y_pad_1`` rows of ``x_pad_0 + x_size +
        x_pad_1`` entries (vta-reference 3.2, decision 4).  ``x_size`` 0 is a no-op."""
        if insn.memory_type not in LOADS:
            raise load_memory_type(engine, index, insn.memory_type)
        if insn.x_size == 0:
            return {}
        name, lane, counter = LOADS[insn.memory_type]
        buf = getattr(self.sp, name)
        shape = buf.shape[1:]  # of one entry
        elem_bytes = math.prod(shape) * np.dtype(lane).itemsize
        y_total = insn.y_pad_0 + insn.y_size + insn.y_pad_1
        x_total = insn.x_pad_0 + insn.x_size + insn.x_pad_1
        first, end = insn.sram_base, insn.sram_base + y_total * x_total
        if end > len(buf):
            raise load_beyond_sram(engine, index, MemId(insn.memory_type).name, first, end,
                                   len(buf), name.upper())
        block = np.zeros((y_total, x_total, *shape), dtype=buf.dtype)
        for y, (lo, hi) in enumerate(self.dram_rows(engine, index, insn, elem_bytes)):
            row = np.frombuffer(self.mem[lo:hi], dtype=lane).reshape(insn.x_size, *shape)
            block[insn.y_pad_0 + y, insn.x_pad_0:insn.x_pad_0 + insn.x_size] = row
        buf[first:end] = block.reshape(-1, *shape)
        return {counter: insn.y_size * insn.x_size * elem_bytes}

    def store(self, index: int, insn: MemInsn) -> dict[str, int]:
        """STORE: OUT entries from ``sram_base`` (``x_size`` per row, consecutive) to
        ``y_size`` DRAM rows ``x_stride`` elements apart, row after row, so where rows
        overlap the later one wins (vta-reference 3.5).  ``x_size`` 0 is a no-op, whatever
        its memory type; otherwise it must be OUT and every pad 0."""
        if insn.x_size == 0:
            return {}
        if insn.memory_type != MemId.OUT:
            raise store_memory_type(index, insn.memory_type)
        for pad in ("y_pad_0", "y_pad_1", "x_pad_0", "x_pad_1"):
            if getattr(insn, pad):
                raise store_pad(index, pad, getattr(insn, pad))
        out = self.sp.out
        first, end = insn.sram_base, insn.sram_base + insn.y_size * insn.x_size
        if end > len(out):
            raise store_beyond_sram(index, first, end, len(out))
        elem_bytes = out[0].nbytes
        for y, (lo, hi) in enumerate(self.dram_rows("store", index, insn, elem_bytes)):
            entries = out[first + y * insn.x_size:first + (y + 1) * insn.x_size]
            self.mem[lo:hi] = entries.reshape(-1).view(np.uint8)
        return {"out_store_bytes": (end - first) * elem_bytes}

    def dram_rows(self, engine: str, index: int, insn: MemInsn,
                  elem_bytes: int) -> list[tuple[int, int]]:
        """The byte ranges ``[lo, hi)`` of a LOAD's or STORE's DRAM rows, in order, once
        they are known to lie inside device memory and outside the ``bus_error`` window.
        ``dram_base`` and ``x_stride`` count elements of the memory type (3.1)."""
        start, row_bytes = insn.dram_base * elem_bytes, insn.x_size * elem_bytes
        rows = [(start + y * insn.x_stride * elem_bytes,
                 start + y * insn.x_stride * elem_bytes + row_bytes) for y in range(insn.y_size)]
        end = rows[-1][1] if rows else start  # strides are unsigned: the last row ends last
        if end > self.mem.size:
            raise dram_outside(engine, index, start, end, insn.dram_base, insn.y_size,
                               insn.x_stride, self.mem.size)
        bus_check(self.bus_error, self.cfg.BUS_BYTES, engine, index, rows,
                  f"dram_base {insn.dram_base}")
        return rows

    def gemm(self, index: int, insn: GemmInsn, deadline: float | None) -> dict[str, int]:
        """GEMM (vta-reference 3.3), micro-op by micro-op: ``ACC[dst] += INP[src] @
        WGT[wgt].T`` (int8 products summed exactly, int32 wrapping), and OUT[dst] gets the
        low 8 bits; with ``reset_reg`` ``ACC[dst] = 0`` instead, OUT left alone (decision
        2).  A reset reads only ``dst_idx``, and counts no micro-ops."""
        sp = self.sp
        reads = [("dst_idx", "acc")] if insn.reset_reg else [
            ("dst_idx", "acc"), ("src_idx", "inp"), ("wgt_idx", "wgt")]
        uops = self.micro_ops(index, insn, "GEMM", reads)
        count = 0
        for dst, src, wgt in self.nest(index, insn, uops, deadline):
            if insn.reset_reg:
                sp.acc[dst] = 0
            else:
                product = sp.inp[src].astype(np.int64) @ sp.wgt[wgt].astype(np.int64).T
                sp.acc[dst] = (sp.acc[dst] + product).astype(np.int32)  # modulo 2**32
                sp.out[dst] = sp.acc[dst].astype(np.int8)
            count += 1
        return {} if insn.reset_reg else {"gemm_uops": count}

    def alu(self, index: int, insn: AluInsn, deadline: float | None) -> dict[str, int]:
        """ALU (vta-reference 3.4), micro-op by micro-op: ``ACC[dst] = f(ACC[dst], y)`` lane
        by lane, ``y`` the sign-extended ``imm`` (``use_imm``) or ``ACC[src]``, and OUT[dst]
        gets the low 8 bits.  Micro-ops run in order, so one reads what an earlier one of
        the same instruction wrote.  ``reset_reg`` is ignored."""
        func = ALU_FUNCTIONS.get(insn.alu_opcode)
        if func is None:
            raise alu_opcode(index, insn.alu_opcode)
        sp = self.sp
        reads = [("dst_idx", "acc")] if insn.use_imm else [("dst_idx", "acc"), ("src_idx", "acc")]
        uops = self.micro_ops(index, insn, "ALU", reads)
        count = 0
        for dst, src, _ in self.nest(index, insn, uops, deadline):
            y = np.int32(insn.imm) if insn.use_imm else sp.acc[src]
            sp.acc[dst] = func(sp.acc[dst], y)
            sp.out[dst] = sp.acc[dst].astype(np.int8)
            count += 1
        return {"alu_uops": count}

    def micro_ops(self, index: int, insn: GemmInsn | AluInsn, what: str,
                  reads: list[tuple[str, str]]) -> list[Uop]:
        """The micro-ops ``uop_bgn..uop_end-1`` of a nest, once every index the nest will
        use is known to be inside its scratchpad (``reads``: micro-op field, scratchpad);
        none if the nest is empty (``uop_end <= uop_bgn`` or an iteration count of 0)."""
        depth = len(self.sp.uop)
        if insn.uop_end > depth:
            raise uop_end_beyond(index, what, insn.uop_end, depth)
        words = self.sp.uop[insn.uop_bgn:insn.uop_end].tolist()
        uops = [decode_uop(word.to_bytes(UOP_BYTES, "little"), self.cfg) for word in words]
        if not uops or insn.iter_out == 0 or insn.iter_in == 0:
            return []
        for name, buffer in reads:
            # factors are unsigned, so a field's largest index is at the last iteration
            f_out, f_in = self.factors(insn)[name]
            top = max(getattr(u, name) for u in uops) + (insn.iter_out - 1) * f_out + (
                insn.iter_in - 1) * f_in
            size = len(getattr(self.sp, buffer))
            if top >= size:
                raise index_beyond(index, what, name, top, size, buffer.upper())
        return uops

    @staticmethod
    def factors(insn: GemmInsn | AluInsn) -> dict[str, tuple[int, int]]:
        """Each micro-op field's (outer, inner) loop factor (ALU has no weights)."""
        wgt = (insn.wgt_factor_out, insn.wgt_factor_in) if insn.opcode == Opcode.GEMM else (0, 0)
        return {"dst_idx": (insn.dst_factor_out, insn.dst_factor_in),
                "src_idx": (insn.src_factor_out, insn.src_factor_in), "wgt_idx": wgt}

    def nest(self, index: int, insn: GemmInsn | AluInsn, uops: list[Uop],
             deadline: float | None) -> Iterator[tuple[int, int, int]]:
        """``(dst, src, wgt)`` of each micro-op of the nest in execution order: for each
        outer iteration ``o``, each inner ``i``, each micro-op, the field plus ``o`` times
        its outer factor plus ``i`` times its inner one.  Past ``deadline`` it stops
        between iterations."""
        (do, di), (so, si), (wo, wi) = self.factors(insn).values()
        for o in range(insn.iter_out if uops else 0):
            for i in range(insn.iter_in):
                if deadline is not None and time.monotonic() >= deadline:
                    raise timeout("compute", index, in_nest=True)
                for u in uops:
                    yield (u.dst_idx + o * do + i * di, u.src_idx + o * so + i * si,
                           u.wgt_idx + o * wo + i * wi)

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

GEMM and ALU instructions execute whole loop nests with vectorised NumPy.
Every program fault of decision 7 raises :class:`~vta.errors.ExecutionError`
with the instruction index, the engine and the field.

No simulator or device import happens here: the model depends on NumPy and the
ISA tables only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from .config import TOKEN_QUEUE_DEPTH, Config
from .errors import DeadlockError, ErrorCode, ExecutionError
from .isa import (
    DEFINED_OPCODES,
    INSN_BYTES,
    AluInsn,
    AluOp,
    GemmInsn,
    Insn,
    MemId,
    MemInsn,
    Opcode,
    decode_word,
    layout,
)

#: Queue names by (engine, flag).  "prev"/"next" follow load -> compute -> store.
POP_QUEUE = {
    ("load", "pop_next_dep"): "g2l",
    ("compute", "pop_prev_dep"): "l2g",
    ("compute", "pop_next_dep"): "s2g",
    ("store", "pop_prev_dep"): "g2s",
}
PUSH_QUEUE = {
    ("load", "push_next_dep"): "l2g",
    ("compute", "push_prev_dep"): "g2l",
    ("compute", "push_next_dep"): "g2s",
    ("store", "push_prev_dep"): "s2g",
}
#: Flags an engine must never set (vta-reference 3.9 and decision 6).
FORBIDDEN_FLAGS = {
    "load": ("pop_prev_dep", "push_prev_dep"),
    "store": ("pop_next_dep", "push_next_dep"),
    "compute": (),
}
ENGINES = ("load", "compute", "store")
QUEUES = ("l2g", "g2l", "g2s", "s2g")

#: Loadable memory types -> (scratchpad written, counter prefix).
_LOAD_TYPES = {MemId.INP: ("inp", "inp"), MemId.WGT: ("wgt", "wgt"), MemId.UOP: ("uop", "uop"),
               MemId.ACC: ("acc", "acc"), MemId.ACC_8BIT: ("acc", "acc8")}


def dispatch_engine(insn: Insn) -> str:
    """The engine an instruction goes to (vta-reference 3.8)."""
    if insn.opcode == Opcode.STORE:
        return "store"
    if insn.opcode == Opcode.LOAD and insn.memory_type in (MemId.INP, MemId.WGT):
        return "load"
    return "compute"


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


class Scratchpads:
    """The on-chip buffers, each a byte array with a typed element view."""

    def __init__(self, cfg: Config):
        b, bi, bo = cfg.BATCH, cfg.BLOCK_IN, cfg.BLOCK_OUT
        self.uop = np.zeros(cfg.UOP_BUFF_DEPTH, dtype=np.uint32)
        self.inp = np.zeros((cfg.INP_BUFF_DEPTH, b, bi), dtype=np.int8)
        self.wgt = np.zeros((cfg.WGT_BUFF_DEPTH, bo, bi), dtype=np.int8)
        self.acc = np.zeros((cfg.ACC_BUFF_DEPTH, b, bo), dtype=np.int32)
        self.out = np.zeros((cfg.OUT_BUFF_DEPTH, b, bo), dtype=np.int8)

    def raw(self, name: str) -> np.ndarray:
        """Buffer ``name`` viewed as (depth, element bytes) uint8."""
        arr = getattr(self, name)
        return arr.view(np.uint8).reshape(arr.shape[0], -1)


class GoldenModel:
    """Functional model of one VTA device.

    Parameters
    ----------
    cfg : Config
        The configuration to model.
    memory : numpy.ndarray or int
        Device DRAM as a writable 1-D ``uint8`` array (shared, not copied), or
        its size in bytes (default 256 MiB, zero-filled lazily by the OS).
    """

    def __init__(self, cfg: Config, memory: np.ndarray | int = 1 << 28):
        self.cfg = cfg
        if isinstance(memory, (int, np.integer)):
            memory = np.zeros(int(memory), dtype=np.uint8)
        if memory.dtype != np.uint8 or memory.ndim != 1:
            raise TypeError("memory must be a 1-D uint8 numpy array")
        self.mem = memory
        self.sp = Scratchpads(cfg)
        self._uop_fields = _uop_field_masks(cfg)
        self._plans: dict = {}

    # ------------------------------------------------------------------ run
    def run(self, insn_addr: int, insn_count: int, *,
            trace: Callable[[TraceEvent], None] | None = None) -> Counters:
        """Execute ``insn_count`` instructions fetched from byte address ``insn_addr``.

        Returns the run's :class:`Counters`.  Raises :class:`ExecutionError`
        for a program fault and :class:`DeadlockError` for unsatisfiable tokens.
        """
        insns = self.fetch(insn_addr, insn_count)
        queues: dict[str, list[int]] = {e: [] for e in ENGINES}
        for index, insn in enumerate(insns):
            queues[dispatch_engine(insn)].append(index)
        tokens = dict.fromkeys(QUEUES, 0)
        counters = Counters()
        heads = dict.fromkeys(ENGINES, 0)
        finished = False
        while True:
            progress = False
            for engine in ENGINES:
                if heads[engine] >= len(queues[engine]):
                    continue
                index = queues[engine][heads[engine]]
                insn = insns[index]
                popped = self._try_pop(engine, index, insn, tokens)
                if popped is None:
                    continue
                self._execute(engine, index, insn, counters)
                pushed = self._push(engine, index, insn, tokens, counters)
                setattr(counters, f"{engine}_insns", getattr(counters, f"{engine}_insns") + 1)
                finished |= insn.opcode == Opcode.FINISH
                heads[engine] += 1
                progress = True
                if trace is not None:
                    trace(TraceEvent(engine, index, insn, popped, pushed))
            if not progress:
                break
        stuck = {}
        for engine in ENGINES:
            if heads[engine] < len(queues[engine]):
                index = queues[engine][heads[engine]]
                stuck[engine] = (index, self._blocking_queue(engine, insns[index], tokens))
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

    def fetch(self, insn_addr: int, insn_count: int) -> list[Insn]:
        """Read and decode the instruction stream (the fetch engine)."""
        if insn_count < 0:
            raise ExecutionError(f"insn_count must be >= 0, not {insn_count}",
                                 module="fetch", field="insn_count")
        end = insn_addr + insn_count * INSN_BYTES
        if insn_addr < 0 or end > self.mem.size:
            raise ExecutionError(
                f"fetch: instructions at 0x{insn_addr:x}..0x{end:x} lie outside device memory "
                f"(0x{self.mem.size:x} bytes)", module="fetch", field="insn_addr")
        raw = self.mem[insn_addr:end].tobytes()
        insns = []
        for index in range(insn_count):
            word = int.from_bytes(raw[index * INSN_BYTES:(index + 1) * INSN_BYTES], "little")
            insn = decode_word(word, self.cfg)
            if insn.opcode not in DEFINED_OPCODES:
                raise ExecutionError(
                    f"instruction {index} (fetch): undefined opcode {insn.opcode}",
                    module="fetch", index=index, field="opcode")
            insns.append(insn)
        return insns

    # -------------------------------------------------------------- tokens
    @staticmethod
    def _check_flags(engine: str, index: int, insn: Insn) -> None:
        for flag in FORBIDDEN_FLAGS[engine]:
            if getattr(insn, flag):
                raise ExecutionError(
                    f"instruction {index} ({engine}): {flag} is set, but the {engine} engine "
                    f"has no {'previous' if 'prev' in flag else 'next'} stage",
                    module=engine, index=index, field=flag)

    def _try_pop(self, engine: str, index: int, insn: Insn,
                 tokens: dict[str, int]) -> tuple[str, ...] | None:
        self._check_flags(engine, index, insn)
        wanted = [POP_QUEUE[(engine, f)] for f in ("pop_prev_dep", "pop_next_dep")
                  if getattr(insn, f)]
        if any(tokens[q] == 0 for q in wanted):
            return None
        for q in wanted:
            tokens[q] -= 1
        return tuple(wanted)

    @staticmethod
    def _blocking_queue(engine: str, insn: Insn, tokens: dict[str, int]) -> str:
        for f in ("pop_prev_dep", "pop_next_dep"):
            if getattr(insn, f) and tokens[POP_QUEUE[(engine, f)]] == 0:
                return POP_QUEUE[(engine, f)]
        return "?"

    @staticmethod
    def _push(engine: str, index: int, insn: Insn, tokens: dict[str, int],
              counters: Counters) -> tuple[str, ...]:
        pushed = []
        for f in ("push_prev_dep", "push_next_dep"):
            if getattr(insn, f):
                q = PUSH_QUEUE[(engine, f)]
                if tokens[q] >= TOKEN_QUEUE_DEPTH:
                    raise ExecutionError(
                        f"instruction {index} ({engine}): {f} overflows token queue {q} "
                        f"(capacity {TOKEN_QUEUE_DEPTH})", module=engine, index=index, field=f,
                        code=ErrorCode.TOKEN_OVERFLOW)
                tokens[q] += 1
                counters.tokens[q] += 1
                pushed.append(q)
        return tuple(pushed)

    # ----------------------------------------------------------- execution
    def _execute(self, engine: str, index: int, insn: Insn, counters: Counters) -> None:
        op = insn.opcode
        if op == Opcode.LOAD:
            self._load(engine, index, insn, counters)
        elif op == Opcode.STORE:
            self._store(index, insn, counters)
        elif op == Opcode.GEMM:
            self._gemm(index, insn, counters)
        elif op == Opcode.ALU:
            self._alu(index, insn, counters)
        # FINISH has no effect besides its tokens.

    def _fault(self, engine: str, index: int, field: str, text: str) -> ExecutionError:
        return ExecutionError(f"instruction {index} ({engine}): {text}",
                              module=engine, index=index, field=field)

    def _dram_rows(self, engine: str, index: int, insn: MemInsn, elem_bytes: int) -> np.ndarray:
        """Strided view (y_size, x_size * elem_bytes) of the DRAM rows of a LOAD/STORE."""
        start = insn.dram_base * elem_bytes
        row_bytes = insn.x_size * elem_bytes
        stride = insn.x_stride * elem_bytes
        end = start + (insn.y_size - 1) * stride + row_bytes if insn.y_size else start
        if end > self.mem.size:
            raise self._fault(
                engine, index, "dram_base",
                f"DRAM access 0x{start:x}..0x{end:x} (dram_base {insn.dram_base}, y_size "
                f"{insn.y_size}, x_stride {insn.x_stride}) lies outside device memory "
                f"(0x{self.mem.size:x} bytes)")
        if insn.y_size > 1 and insn.x_stride < insn.x_size:
            # Overlapping rows are legal for loads; build the view explicitly.
            idx = start + np.arange(insn.y_size)[:, None] * stride + np.arange(row_bytes)
            return self.mem[idx]
        return np.lib.stride_tricks.as_strided(
            self.mem[start:], shape=(insn.y_size, row_bytes), strides=(stride, 1))

    def _load(self, engine: str, index: int, insn: MemInsn, counters: Counters) -> None:
        mem_type = insn.memory_type
        if mem_type not in _LOAD_TYPES:
            what = "OUT cannot be loaded" if mem_type == MemId.OUT else "undefined"
            raise self._fault(engine, index, "memory_type",
                              f"LOAD memory_type {mem_type} ({what})")
        if insn.x_size == 0:
            return  # sync no-op: only its flags matter
        cfg = self.cfg
        buf, counter = _LOAD_TYPES[mem_type]
        depth = getattr(self.sp, buf).shape[0]
        x_total = insn.x_pad_0 + insn.x_size + insn.x_pad_1
        y_total = insn.y_pad_0 + insn.y_size + insn.y_pad_1
        if insn.sram_base + x_total * y_total > depth:
            raise self._fault(
                engine, index, "sram_base",
                f"LOAD {MemId(mem_type).name} writes SRAM entries {insn.sram_base}.."
                f"{insn.sram_base + x_total * y_total - 1}, beyond the {depth}-entry "
                f"{buf.upper()} buffer")
        if mem_type == MemId.ACC_8BIT:
            elem_bytes = cfg.BATCH * cfg.BLOCK_OUT  # int8 lanes, widened on the way in
        else:
            elem_bytes = cfg.elem_bytes_of(buf.upper())
        rows = self._dram_rows(engine, index, insn, elem_bytes)
        block = np.zeros((y_total, x_total, elem_bytes), dtype=np.uint8)
        block[insn.y_pad_0:insn.y_pad_0 + insn.y_size, insn.x_pad_0:insn.x_pad_0 + insn.x_size] = (
            rows.reshape(insn.y_size, insn.x_size, elem_bytes))
        sram = slice(insn.sram_base, insn.sram_base + x_total * y_total)
        if mem_type == MemId.ACC_8BIT:
            self.sp.acc[sram] = block.view(np.int8).reshape(-1, cfg.BATCH, cfg.BLOCK_OUT)
        else:
            self.sp.raw(buf)[sram] = block.reshape(-1, elem_bytes)
        nbytes = insn.y_size * insn.x_size * elem_bytes
        field = f"{counter}_load_bytes"
        setattr(counters, field, getattr(counters, field) + nbytes)

    def _store(self, index: int, insn: MemInsn, counters: Counters) -> None:
        if insn.x_size == 0:
            return  # sync no-op; memory_type is not checked (the runtime uses 0)
        if insn.memory_type != MemId.OUT:
            raise self._fault("store", index, "memory_type",
                              f"STORE memory_type must be OUT (4), not {insn.memory_type}")
        for pad in ("y_pad_0", "y_pad_1", "x_pad_0", "x_pad_1"):
            if getattr(insn, pad):
                raise self._fault("store", index, pad,
                                  f"STORE {pad} must be 0, not {getattr(insn, pad)}")
        depth = self.cfg.OUT_BUFF_DEPTH
        count = insn.x_size * insn.y_size
        if insn.sram_base + count > depth:
            raise self._fault(
                "store", index, "sram_base",
                f"STORE reads SRAM entries {insn.sram_base}..{insn.sram_base + count - 1}, "
                f"beyond the {depth}-entry OUT buffer")
        elem_bytes = self.cfg.OUT_ELEM_BYTES
        src = self.sp.raw("out")[insn.sram_base:insn.sram_base + count]
        if insn.y_size > 1 and insn.x_stride < insn.x_size:
            # Overlapping destination rows: later rows win, as in a serial store.
            for y in range(insn.y_size):
                start = (insn.dram_base + y * insn.x_stride) * elem_bytes
                self._dram_rows("store", index, insn, elem_bytes)  # bounds check
                self.mem[start:start + insn.x_size * elem_bytes] = (
                    src[y * insn.x_size:(y + 1) * insn.x_size].reshape(-1))
        else:
            view = self._dram_rows("store", index, insn, elem_bytes)
            view[...] = src.reshape(insn.y_size, insn.x_size * elem_bytes)
        counters.out_store_bytes += count * elem_bytes

    # ------------------------------------------------------------- compute
    # A GEMM/ALU instruction is turned into a *plan* (every index it touches,
    # checked and grouped for vectorised execution) that depends only on the
    # instruction's fields and the micro-ops it reads.  Plans are cached under
    # exactly that key, so repeated instructions -- the norm in tiled layers --
    # skip the index work; any change of fields or micro-ops makes a new plan.

    def _plan(self, index: int, insn: GemmInsn | AluInsn, kind: str):
        cfg = self.cfg
        if insn.uop_end > cfg.UOP_BUFF_DEPTH:
            raise self._fault("compute", index, "uop_end",
                              f"{kind} uop_end {insn.uop_end} is beyond the "
                              f"{cfg.UOP_BUFF_DEPTH}-entry micro-op buffer")
        raw = self.sp.uop[insn.uop_bgn:insn.uop_end]
        key = (tuple(insn.__dict__.values()), raw.tobytes())
        try:
            return self._plans[key]
        except KeyError:
            pass
        plan = self._make_plan(index, insn, kind, raw)
        if len(self._plans) >= _PLAN_CACHE_SIZE:
            self._plans.clear()
        self._plans[key] = plan
        return plan

    def _make_plan(self, index: int, insn: GemmInsn | AluInsn, kind: str, raw: np.ndarray):
        if insn.uop_end <= insn.uop_bgn or insn.iter_out == 0 or insn.iter_in == 0:
            return None
        cfg = self.cfg
        fields = [((raw >> lo) & mask).astype(np.int64) for lo, mask in self._uop_fields]
        loops = [(insn.iter_out, insn.dst_factor_out, insn.src_factor_out,
                  getattr(insn, "wgt_factor_out", 0)),
                 (insn.iter_in, insn.dst_factor_in, insn.src_factor_in,
                  getattr(insn, "wgt_factor_in", 0))]
        checks = [(1, cfg.ACC_BUFF_DEPTH, "dst_idx", "ACC")]
        if kind == "GEMM" and not insn.reset_reg:
            checks += [(2, cfg.INP_BUFF_DEPTH, "src_idx", "INP"),
                       (3, cfg.WGT_BUFF_DEPTH, "wgt_idx", "WGT")]
        elif kind == "ALU" and not insn.use_imm:
            checks.append((2, cfg.ACC_BUFF_DEPTH, "src_idx", "ACC"))
        for col, depth, name, buf in checks:
            # factors are unsigned, so the largest index is at the last iteration
            top = int(fields[col - 1].max()) + sum((lp[0] - 1) * lp[col] for lp in loops)
            if top >= depth:
                raise self._fault("compute", index, name,
                                  f"{kind} {name} reaches {top} (micro-op field plus loop "
                                  f"offsets), beyond the {depth}-entry {buf} buffer")
        dst, src, wgt = fields
        count = dst.size * insn.iter_out * insn.iter_in
        if kind == "ALU":
            return _AluPlan(_expand(dst, loops, 1),
                            None if insn.use_imm else _expand(src, loops, 2),
                            cfg.ACC_BUFF_DEPTH, count)
        if insn.reset_reg:
            return _ResetPlan(_expand(dst, loops, 1))
        return _GemmPlan(dst, src, wgt, loops, cfg, count)

    def _gemm(self, index: int, insn: GemmInsn, counters: Counters) -> None:
        plan = self._plan(index, insn, "GEMM")
        if plan is None:
            return
        if isinstance(plan, _ResetPlan):
            self.sp.acc[plan.dst] = 0
            return
        plan.execute(self.sp)
        counters.gemm_uops += plan.count

    def _alu(self, index: int, insn: AluInsn, counters: Counters) -> None:
        if insn.alu_opcode not in _ALU_FUNCS:
            raise self._fault("compute", index, "alu_opcode",
                              f"undefined ALU opcode {insn.alu_opcode}")
        plan = self._plan(index, insn, "ALU")
        if plan is None:
            return
        if insn.use_imm and insn.alu_opcode == AluOp.SHR and 0 <= insn.imm <= 31:
            func = np.right_shift  # the common case, without SHR's general selects
        else:
            func = _ALU_FUNCS[insn.alu_opcode]
        acc, out = self.sp.acc, self.sp.out
        imm = np.int32(insn.imm)
        for d, s in plan.segments:
            y = imm if s is None else acc[s]
            with np.errstate(over="ignore"):
                result = func(acc[d], y).astype(np.int32, copy=False)
            acc[d] = result
            out[d] = result.astype(np.int8)
        counters.alu_uops += plan.count


_PLAN_CACHE_SIZE = 4096


def _expand(base: np.ndarray, loops, col: int) -> np.ndarray:
    """Indices of one micro-op field over the whole nest, in execution order (o, i, u)."""
    (n_out, *f_out), (n_in, *f_in) = loops
    o = np.arange(n_out, dtype=np.int64)[:, None, None] * f_out[col - 1]
    i = np.arange(n_in, dtype=np.int64)[None, :, None] * f_in[col - 1]
    return (base[None, None, :] + o + i).reshape(-1)


@dataclass
class _ResetPlan:
    dst: np.ndarray


class _AluPlan:
    """ALU nest split into segments that are each free of read-after-write hazards."""

    def __init__(self, dst: np.ndarray, src: np.ndarray | None, depth: int, count: int):
        self.count = count
        self.segments = []
        start, n = 0, dst.size
        while start < n:
            stop = start + _hazard_free_prefix(
                dst[start:], None if src is None else src[start:], depth)
            self.segments.append((dst[start:stop], None if src is None else src[start:stop]))
            start = stop


def _uop_field_masks(cfg: Config) -> tuple[tuple[int, int], ...]:
    return tuple((f.lo, (1 << f.width) - 1) for f in layout("uop", cfg))


def _wrap32(values: np.ndarray) -> np.ndarray:
    """Low 32 bits of int64 values, as int32 (two's complement)."""
    return (values & 0xFFFFFFFF).astype(np.uint32).view(np.int32)


def _shr(x: np.ndarray, y) -> np.ndarray:
    """SHR as decided (decision 3): a total function of the signed shift amount."""
    y = np.asarray(y, dtype=np.int32)
    right = x >> np.clip(y, 0, 31)
    left = (x.view(np.uint32) << np.clip(-y, 0, 31).astype(np.uint32)).view(np.int32)
    return np.where(y >= 0, right, np.where(y <= -32, np.int32(0), left))


# int32 arithmetic on arrays wraps modulo 2**32, which is the hardware's behaviour.
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

    GEMM only reads INP and WGT, so its order does not matter.  Loop axes whose
    dst factor is 0 (or that run once) are reductions: for every (micro-op,
    parallel position) pair the input rows along the reduction axes are
    concatenated into one K-long row, and so are the weight tiles, so each pair
    is one dot product of length K = reductions x BLOCK_IN.  The distinct input
    rows and weight columns are gathered once; when most of their combinations
    are needed a single BLAS product computes them all, otherwise pairs are
    grouped by weight.  Products are exact: float32 while K * 2**14 < 2**24,
    float64 beyond; sums wrap to int32 like the hardware.
    """

    def __init__(self, dst, src, wgt, loops, cfg: Config, count: int):
        self.count = count
        red = [lp for lp in loops if lp[0] > 1 and lp[1] == 0]
        par = [lp for lp in loops if not (lp[0] > 1 and lp[1] == 0)]

        def grid(lps, col):
            off = np.zeros(1, dtype=np.int64)
            for n, *factors in lps:
                off = (off[:, None] + np.arange(n, dtype=np.int64) * factors[col - 1]).reshape(-1)
            return off

        # one pair per (micro-op, parallel position)
        p_dst, p_src, p_wgt = (grid(par, c) for c in (1, 2, 3))
        d = (dst[:, None] + p_dst).reshape(-1)
        xs = (src[:, None] + p_src).reshape(-1)
        ws = (wgt[:, None] + p_wgt).reshape(-1)
        r_src, r_wgt = grid(red, 2), grid(red, 3)
        self.k = r_src.size * cfg.BLOCK_IN
        self.ftype = np.float32 if self.k * (1 << 14) < (1 << 24) else np.float64
        x_keys, self.x_of = _index_set(xs, cfg.INP_BUFF_DEPTH)
        w_keys, self.w_of = _index_set(ws, cfg.WGT_BUFF_DEPTH)
        self.x_gather = x_keys[:, None] + r_src  # (nx, reductions)
        self.w_gather = w_keys[:, None] + r_wgt  # (nw, reductions)
        pairs = d.size
        self.dense = x_keys.size * w_keys.size <= 4 * pairs
        if not self.dense:
            order = np.argsort(self.w_of, kind="stable")
            bounds = np.flatnonzero(np.r_[True, np.diff(self.w_of[order]) != 0, True])
            self.groups = [order[bounds[g]:bounds[g + 1]] for g in range(bounds.size - 1)]
        present = np.bincount(d)
        self.direct = present.max() == 1 and self.ftype is np.float32
        if self.direct:
            self.touched = d  # every destination once: no reduction needed
        else:
            self.touched = np.flatnonzero(present)
            self.rank = (np.cumsum(present > 0) - 1)[d]

    def execute(self, sp: Scratchpads) -> None:
        b, bi = sp.inp.shape[1:]
        bo = sp.wgt.shape[1]
        k, ftype = self.k, self.ftype
        nx, nw = self.x_gather.shape[0], self.w_gather.shape[0]
        # (nx*b, K) inputs and (nw*bo, K) weights, K ordered (reduction step, lane)
        x_mat = sp.inp[self.x_gather].transpose(0, 2, 1, 3).reshape(nx * b, k).astype(ftype)
        w_mat = sp.wgt[self.w_gather].transpose(0, 2, 1, 3).reshape(nw * bo, k).astype(ftype)
        if self.dense:
            full = (x_mat @ w_mat.T).reshape(nx, b, nw, bo)
            contrib = full[self.x_of, :, self.w_of, :]
        else:
            contrib = np.empty((self.x_of.size, b, bo), dtype=ftype)
            x3 = x_mat.reshape(nx, b, k)
            for rows in self.groups:
                w = w_mat[self.w_of[rows[0]] * bo:(self.w_of[rows[0]] + 1) * bo]
                contrib[rows] = x3[self.x_of[rows]] @ w.T
        if self.direct:
            sums = contrib.astype(np.int32)  # |value| < 2**24: exact
        else:
            total = np.zeros((self.touched.size, b, bo), dtype=np.int64)
            np.add.at(total, self.rank, contrib.astype(np.int64))
            sums = _wrap32(total)
        acc = sp.acc
        with np.errstate(over="ignore"):
            result = acc[self.touched] + sums  # int32 + int32 wraps like the hardware
        acc[self.touched] = result
        sp.out[self.touched] = result.astype(np.int8)


def _index_set(values: np.ndarray, bound: int) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(values, return_inverse=True)`` for small non-negative ints, without sorting."""
    present = np.zeros(bound, dtype=bool)
    present[values] = True
    keys = np.flatnonzero(present)
    rank = np.cumsum(present) - 1
    return keys, rank[values]

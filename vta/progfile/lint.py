"""Static checks of a VTA program, without running it.

:func:`lint` reads a :class:`~vta.progfile.Program` (instructions, micro-ops and
memory image) and returns :class:`Finding` objects, each naming the
instruction, its engine and the field at fault:

========================== ======== ==================================================
check                      severity what it finds
========================== ======== ==================================================
``opcode`` ...             error    undefined opcodes, memory types, ALU opcodes; STORE
                                    with padding; dependency flags the engine does not
                                    have (load ``*_prev``, store ``*_next``); no FINISH
``deadlock``               error    the token protocol played out without executing:
                                    each engine that waits forever, on which queue, and
                                    the chain of engines it waits for
``token-overflow``         error    more than 512 tokens in a queue
``tokens-left``            warning  tokens pushed and never popped
``sram``                   error    LOAD/STORE/GEMM/ALU indices beyond a scratchpad
                                    (loop nests expanded with the program's micro-ops)
``dram``                   error    LOAD/STORE beyond device memory; warning: outside
                                    every region of the program file
``race``                   error    a LOAD overwriting scratchpad entries another engine
                                    may still read, or an engine reading entries another
                                    may not have written yet, because no chain of tokens
                                    orders the two instructions (INP/WGT between load and
                                    compute, OUT between compute and store)
``uop-hazard``             warning  a micro-op writing the dst_idx of one of the two
                                    micro-ops before it (upstream's runtime forbids it:
                                    pipelined hardware may read the stale value)
``store-unwritten``        warning  a STORE of OUT entries no GEMM or ALU wrote before
                                    it in token order (happens-before, not stream order):
                                    upstream's fsim stores ACC there, the hardware OUT
``shift``                  warning  SHR by an immediate outside -31..31
========================== ======== ==================================================
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

import numpy as np

from ..config import TOKEN_QUEUE_DEPTH
from ..isa import (
    DEFINED_OPCODES,
    FORBIDDEN_FLAGS,
    POP_QUEUE,
    PUSH_QUEUE,
    AluOp,
    Insn,
    MemId,
    Opcode,
    disassemble,
    dispatch_engine,
)
from . import tokenorder
from .analysis import accesses, compute_uops
from .program import Program
from .tokenorder import TokenPlay

_MEM_IDS = frozenset(int(m) for m in MemId)
_ALU_OPS = frozenset(int(a) for a in AluOp)


@dataclass(frozen=True)
class Finding:
    """One problem: where it is and what is wrong.

    Attributes
    ----------
    severity : str
        ``"error"`` (the program faults, hangs or races) or ``"warning"``.
    check : str
        The check's name (``deadlock``, ``sram``, ``race`` ...).
    index : int or None
        Instruction index (``None`` for the stream as a whole).
    engine : str or None
        ``load``, ``compute`` or ``store``.
    field : str or None
        The instruction field at fault.
    message : str
        What is wrong, with values.
    """

    severity: str
    check: str
    index: int | None
    engine: str | None
    field: str | None
    message: str

    def line(self, insns: list[Insn] | None = None) -> str:
        where = "stream" if self.index is None else f"#{self.index}"
        if self.engine:
            where += f" ({self.engine})"
        field = f" {self.field}:" if self.field else ""
        text = f"{self.severity}: {where} [{self.check}]{field} {self.message}"
        if insns is not None and self.index is not None and self.index < len(insns):
            text += f"\n    {self.index}: {disassemble(insns[self.index])}"
        return text


def lint(prog: Program, *, mem_size: int | None = None) -> list[Finding]:
    """Every finding for ``prog``, errors first, then by instruction index.

    ``mem_size`` is the device memory DRAM accesses are checked against
    (default: the program's ``.mem_size``, else 64 MiB, the Verilator default).
    """
    cfg = prog.cfg
    insns = prog.insns()
    engines = [dispatch_engine(i) for i in insns]
    out: list[Finding] = []
    out += _fields(insns, engines)
    played = _tokens(insns, engines, out)
    kernels = compute_uops(prog)
    out += _bounds(prog, insns, kernels, mem_size or prog.mem_size or (1 << 26))
    out += _uop_hazards(insns, kernels)
    out += _races(insns, engines, kernels, played, cfg)
    out.sort(key=lambda f: (f.severity != "error", -1 if f.index is None else f.index))
    return out


# ------------------------------------------------------------------ fields
def _fields(insns: list[Insn], engines: list[str]) -> list[Finding]:
    out = []
    if not any(i.opcode == Opcode.FINISH for i in insns):
        out.append(Finding("error", "opcode", None, None, "opcode",
                           "the stream has no FINISH: the device never reports done"))
    for index, (insn, engine) in enumerate(zip(insns, engines, strict=True)):
        def err(field: str, message: str, check: str = "opcode", index=index, engine=engine):
            out.append(Finding("error", check, index, engine, field, message))

        if insn.opcode not in DEFINED_OPCODES:
            err("opcode", f"undefined opcode {insn.opcode} (defined: 0..4)")
            continue
        for flag in FORBIDDEN_FLAGS[engine]:
            if getattr(insn, flag):
                err(flag, f"{flag} is set, but the {engine} engine has no "
                          f"{'previous' if 'prev' in flag else 'next'} stage", "deps")
        if insn.opcode in (Opcode.LOAD, Opcode.STORE):
            if insn.memory_type not in _MEM_IDS:
                err("memory_type", f"undefined memory type {insn.memory_type}")
            elif insn.opcode == Opcode.LOAD and insn.memory_type == MemId.OUT:
                err("memory_type", "OUT cannot be loaded")
            elif insn.opcode == Opcode.STORE and insn.x_size and insn.memory_type != MemId.OUT:
                err("memory_type", f"STORE memory_type must be OUT (4), not {insn.memory_type}")
            if insn.opcode == Opcode.STORE and insn.x_size:
                for pad in ("y_pad_0", "y_pad_1", "x_pad_0", "x_pad_1"):
                    if getattr(insn, pad):
                        err(pad, f"STORE {pad} must be 0, not {getattr(insn, pad)}")
        if insn.opcode == Opcode.ALU:
            if insn.alu_opcode not in _ALU_OPS:
                err("alu_opcode", f"undefined ALU opcode {insn.alu_opcode}")
            elif insn.alu_opcode == AluOp.SHR and insn.use_imm and not -31 <= insn.imm <= 31:
                out.append(Finding(
                    "warning", "shift", index, engine, "imm",
                    f"SHR by {insn.imm}: outside -31..31 implementations disagree (decision "
                    "3: this toolkit shifts right by 31 for >= 32 and gives 0 for <= -32)"))
    return out


# ------------------------------------------------------------------ tokens
def _tokens(insns: list[Insn], engines: list[str], out: list[Finding]) -> TokenPlay:
    """Play the token protocol (:func:`.tokenorder.play`); its faults become findings."""
    played = tokenorder.play(insns, engines)
    for q, (index, flag) in played.overflow.items():
        out.append(Finding("error", "token-overflow", index, engines[index], flag,
                           f"pushes a {TOKEN_QUEUE_DEPTH + 1}th token onto {q} "
                           f"(capacity {TOKEN_QUEUE_DEPTH})"))
    for engine, index in played.stuck.items():
        for q in tokenorder.pops(engine, insns[index]):
            if q in played.left:
                continue  # a token is there: it waits on its other queue
            out.append(Finding("error", "deadlock", index, engine,
                               next(f for f in ("pop_prev_dep", "pop_next_dep")
                                    if POP_QUEUE.get((engine, f)) == q),
                               _deadlock_reason(q, index, insns, engines, played)))
    if not played.stuck:
        for q, left in played.left.items():
            pusher = next(e for (e, _), qq in PUSH_QUEUE.items() if qq == q)
            out.append(Finding("warning", "tokens-left", left[0], pusher, None,
                               f"{len(left)} token(s) pushed onto {q} are never popped "
                               f"(the first by #{left[0]}); a later run starts with empty "
                               "queues, so they are lost"))
    return played


def _deadlock_reason(q: str, index: int, insns: list[Insn], engines: list[str],
                     played: TokenPlay) -> str:
    pusher_engine = next(e for (e, _), qq in PUSH_QUEUE.items() if qq == q)
    flag = next(f for (e, f), qq in PUSH_QUEUE.items() if qq == q)
    engine_insns = played.queues[pusher_engine]
    remaining = [i for i in engine_insns[played.heads[pusher_engine]:] if getattr(insns[i], flag)]
    pops_before = sum(1 for i, e in enumerate(engines)
                      if i < index and q in tokenorder.pops(e, insns[i]))
    text = f"waits forever on {q}: "
    if not remaining:
        return text + (f"all {played.pushed[q]} token(s) the stream pushes onto {q} are taken "
                       f"by the {pops_before} pop(s) before it, and no instruction left pushes {q}")
    nxt = remaining[0]
    if pusher_engine in played.stuck:
        blocker = played.stuck[pusher_engine]
        return text + (f"the next push of {q} is #{nxt} ({pusher_engine}), behind #{blocker}, "
                       f"where the {pusher_engine} engine is itself stuck")
    return text + f"the next push of {q} is #{nxt} ({pusher_engine}), which never runs"


# ------------------------------------------------------------------ bounds
def _nest(insn: Insn, base: np.ndarray, col: str) -> np.ndarray:
    """Every index of a micro-op field over an instruction's loop nest."""
    fo = getattr(insn, f"{col}_factor_out", 0)
    fi = getattr(insn, f"{col}_factor_in", 0)
    o = np.arange(insn.iter_out, dtype=np.int64)[:, None, None] * fo
    i = np.arange(insn.iter_in, dtype=np.int64)[None, :, None] * fi
    return (base[None, None, :] + o + i).reshape(-1)


def _uop_columns(kernel) -> dict[str, np.ndarray]:
    return {"dst": np.array([u.dst_idx for _, u in kernel], dtype=np.int64),
            "src": np.array([u.src_idx for _, u in kernel], dtype=np.int64),
            "wgt": np.array([u.wgt_idx for _, u in kernel], dtype=np.int64)}


def touches(insn: Insn, kernel, cfg) -> dict[str, np.ndarray]:
    """Scratchpad entries a GEMM/ALU reads and writes: {"reads INP": ..., "writes OUT": ...}."""
    if not kernel or not insn.iter_out or not insn.iter_in:
        return {}
    cols = _uop_columns(kernel)
    dst = _nest(insn, cols["dst"], "dst")
    if insn.opcode == Opcode.GEMM:
        if insn.reset_reg:
            return {"writes ACC": dst}
        return {"reads INP": _nest(insn, cols["src"], "src"),
                "reads WGT": _nest(insn, cols["wgt"], "wgt"),
                "writes ACC": dst, "writes OUT": dst}
    reads = {} if insn.use_imm else {"reads ACC": _nest(insn, cols["src"], "src")}
    return {**reads, "writes ACC": dst, "writes OUT": dst}


def _mem_span(insn: Insn) -> tuple[int, int]:
    total = ((insn.x_pad_0 + insn.x_size + insn.x_pad_1) * (insn.y_pad_0 + insn.y_size +
             insn.y_pad_1) if insn.opcode == Opcode.LOAD else insn.x_size * insn.y_size)
    return insn.sram_base, insn.sram_base + total


def _buffer_of(insn: Insn) -> str | None:
    if insn.opcode == Opcode.STORE:
        return "OUT"
    return {MemId.INP: "INP", MemId.WGT: "WGT", MemId.ACC: "ACC", MemId.ACC_8BIT: "ACC",
            MemId.UOP: "UOP"}.get(insn.memory_type)


def _bounds(prog: Program, insns, kernels, mem_size: int) -> list[Finding]:
    cfg = prog.cfg
    out = []
    depth = {"INP": cfg.INP_BUFF_DEPTH, "WGT": cfg.WGT_BUFF_DEPTH, "ACC": cfg.ACC_BUFF_DEPTH,
             "OUT": cfg.OUT_BUFF_DEPTH, "UOP": cfg.UOP_BUFF_DEPTH}
    for index, insn in enumerate(insns):
        engine = dispatch_engine(insn)
        if insn.opcode in (Opcode.LOAD, Opcode.STORE) and insn.x_size:
            buf = _buffer_of(insn)
            if buf is None:
                continue
            lo, hi = _mem_span(insn)
            if hi > depth[buf]:
                out.append(Finding("error", "sram", index, engine, "sram_base",
                                   f"{'LOAD' if insn.opcode == Opcode.LOAD else 'STORE'} "
                                   f"{buf} entries {lo}..{hi - 1} reach beyond the "
                                   f"{depth[buf]}-entry {buf} buffer"))
        elif insn.opcode in (Opcode.GEMM, Opcode.ALU):
            if insn.uop_end > cfg.UOP_BUFF_DEPTH:
                out.append(Finding("error", "sram", index, engine, "uop_end",
                                   f"uop_end {insn.uop_end} is beyond the "
                                   f"{cfg.UOP_BUFF_DEPTH}-entry micro-op buffer"))
                continue
            for what, idx in touches(insn, kernels.get(index), cfg).items():
                if what == "writes OUT":
                    continue  # the same indices as ACC, checked once
                buf = what.split()[1]
                field = {"INP": "src_idx", "WGT": "wgt_idx"}.get(buf, "dst_idx")
                if what == "reads ACC":
                    field = "src_idx"
                if idx.size and int(idx.max()) >= depth[buf]:
                    out.append(Finding("error", "sram", index, engine, field,
                                       f"{field} reaches {buf} entry {int(idx.max())} (micro-op "
                                       f"field plus loop offsets), beyond the {depth[buf]}-entry "
                                       f"{buf} buffer"))
    for a in accesses(insns, cfg):
        engine = dispatch_engine(insns[a.index])
        if a.end > mem_size:
            out.append(Finding("error", "dram", a.index, engine, "dram_base",
                               f"DRAM bytes 0x{a.start:x}..0x{a.end:x} reach beyond the "
                               f"{mem_size}-byte device memory"))
        elif not _covered(prog, a.start, a.end):
            verb = "writes" if a.kind == "out" else "reads"
            out.append(Finding("warning", "dram", a.index, engine, "dram_base",
                               f"{verb} DRAM bytes 0x{a.start:x}..0x{a.end:x}, not all inside "
                               "the program's regions (reads see zeros; writes are not outputs)"))
    return out


def _covered(prog: Program, lo: int, hi: int) -> bool:
    for r in sorted(prog.regions, key=lambda r: r.addr):
        if r.addr <= lo < r.end:
            lo = r.end
        if lo >= hi:
            return True
    return lo >= hi


# --------------------------------------------------------------- hazards
def _uop_hazards(insns, kernels) -> list[Finding]:
    out = []
    for index, kernel in kernels.items():
        insn = insns[index]
        if insn.opcode == Opcode.GEMM and insn.reset_reg:
            continue
        for k in range(1, len(kernel)):
            entry, uop = kernel[k]
            for back in (1, 2):
                if k - back < 0:
                    continue
                prev_entry, prev = kernel[k - back]
                if uop.dst_idx == prev.dst_idx:
                    out.append(Finding(
                        "warning", "uop-hazard", index, "compute", "dst_idx",
                        f"micro-op {entry} writes dst_idx {uop.dst_idx} like micro-op "
                        f"{prev_entry} {back} before it (read-after-write hazard: upstream's "
                        "runtime forbids it, pipelined hardware may read the stale value)"))
                    break
    return out


def _is_out_store(insn: Insn) -> bool:
    return insn.opcode == Opcode.STORE and bool(insn.x_size) and insn.memory_type == MemId.OUT


def store_sources(insns: list[Insn], kernels, played: TokenPlay, cfg) -> dict[int, np.ndarray]:
    """The GEMM/ALU whose result each STORE of OUT reads, entry by entry, by happens-before.

    For every STORE of OUT that runs in ``played``: an array over the OUT entries it
    stores (from its ``sram_base`` on, within the buffer) holding the index of the
    last GEMM/ALU writing that entry that happens before the STORE, or -1 where none
    does.  Stream order does not decide it: a STORE may come before its writer in
    the stream and wait for it on a token.  The compute engine runs its instructions
    in order, so the writes a STORE sees are those of its engine's first
    ``played.known(store, "compute")`` instructions.
    """
    compute = played.queues["compute"]
    last = np.full(cfg.OUT_BUFF_DEPTH, -1, dtype=np.int64)
    seen = 0
    out = {}
    for known, store in sorted((played.known(i, "compute"), i) for i in played.order
                               if _is_out_store(insns[i])):
        for c in compute[seen:known]:
            if insns[c].opcode in (Opcode.GEMM, Opcode.ALU):
                dst = touches(insns[c], kernels.get(c), cfg).get("writes OUT")
                if dst is not None:
                    last[dst[(dst >= 0) & (dst < last.size)]] = c
        seen = max(seen, known)
        lo, hi = _mem_span(insns[store])
        out[store] = last[lo:min(hi, last.size)].copy()
    return out


# ------------------------------------------------------------------ races
def _races(insns, engines, kernels, played: TokenPlay, cfg) -> list[Finding]:
    """Cross-engine scratchpad accesses no token chain orders (vector clocks), and STOREs
    of OUT entries no GEMM/ALU ordered before them wrote."""
    order = played.order

    # who touches which scratchpad entries, per engine pair that shares a buffer
    loads, computes, stores = [], [], []
    for index in order:
        insn = insns[index]
        if insn.opcode == Opcode.LOAD and insn.x_size and engines[index] == "load" and \
                insn.memory_type in (MemId.INP, MemId.WGT):
            lo, hi = _mem_span(insn)
            loads.append((index, _buffer_of(insn), np.arange(lo, hi)))
        elif insn.opcode in (Opcode.GEMM, Opcode.ALU):
            computes.append((index, touches(insn, kernels.get(index), cfg)))
        elif _is_out_store(insn):
            lo, hi = _mem_span(insn)
            stores.append((index, np.arange(lo, hi)))
    out = []
    compute_order = [i for i, _ in computes]
    compute_pos = [played.rank(i) for i in compute_order]

    def unordered(a: int) -> list[int]:
        """Compute instructions neither before nor after ``a`` (a window in compute order)."""
        lo = bisect.bisect_right(compute_pos, played.known(a, "compute"))
        hi = lo
        while hi < len(compute_order) and not played.before(a, compute_order[hi]):
            hi += 1
        return compute_order[lo:hi]

    touched_by = dict(computes)

    def racing(index: int, entries: np.ndarray, key: str) -> list[tuple[int, np.ndarray]]:
        """The compute instructions unordered with ``index`` that ``key`` ``entries``."""
        found = []
        for c in unordered(index):
            other = touched_by[c].get(key)
            common = np.intersect1d(other, entries) if other is not None else ()
            if len(common):
                found.append((c, common))
        return found

    def report_race(index: int, engine: str, found: list[tuple[int, np.ndarray]],
                    earlier: str, later: str) -> None:
        """Report the racing compute instruction (``found``: :func:`racing`) a token must
        order: of those before ``index`` in the stream the last (a token after it orders
        them all: one engine runs them in order), else the first after it."""
        if not found:
            return
        before = [(c, common) for c, common in found if c < index]
        c, common = before[-1] if before else found[0]
        text = (earlier if before else later).format(entry=int(common[0]), c=c)
        out.append(Finding("error", "race", index, engine, "sram_base",
                           f"{text}: no token orders the two\n    {c}: "
                           f"{disassemble(insns[c])}"))

    for index, buf, entries in loads:
        report_race(index, "load", racing(index, entries, f"reads {buf}"),
                    f"overwrites {buf} entry {{entry}} (of {entries[0]}..{entries[-1]}) that "
                    "#{c} (compute) may still be reading",
                    f"loads {buf} entry {{entry}} that #{{c}} (compute) may read before the "
                    "load writes it")
    sources = store_sources(insns, kernels, played, cfg)
    for index, entries in stores:
        found = racing(index, entries, "writes OUT")
        report_race(index, "store", found,
                    "stores OUT entry {entry} that #{c} (compute) may not have written yet",
                    "stores OUT entry {entry} that #{c} (compute) may overwrite before the "
                    "store reads it")
        unwritten = entries[:len(sources[index])][sources[index] < 0]
        for _, common in found:  # a race, reported above
            unwritten = np.setdiff1d(unwritten, common)
        if unwritten.size:
            out.append(Finding(
                "warning", "store-unwritten", index, "store", "sram_base",
                f"stores OUT entries no GEMM or ALU wrote before it (in token order; "
                f"{unwritten.size} of {entries.size}, first {int(unwritten[0])}): the hardware "
                "stores OUT there, upstream's fsim stores ACC"))
    return out

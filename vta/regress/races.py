"""Static race check: accesses of two engines that no chain of tokens orders.

The engines run concurrently and meet only through the dependency-token
queues, so a program's result is defined by the ISA alone only when every two
conflicting accesses (same scratchpad entry or DRAM byte, at least one write)
made by different engines are ordered by tokens.  Token order is
*happens-before*: program order within an engine, and the k-th push onto a
queue before the k-th pop from it (a pop needs a token, and tokens are
counted).  :func:`races` computes it with vector clocks and lists the
unordered conflicting pairs.

The shrinker keeps only race-free candidates: a racy candidate may fail on one
backend's timing and pass on another's, which is no reproducer.  Accesses
checked: INP and WGT entries (load engine LOADs against compute GEMMs), OUT
entries (compute GEMM/ALU writes against store STOREs) and DRAM bytes (STOREs
against every LOAD).  ACC and the micro-op buffer belong to the compute engine
alone.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from ..golden import ENGINES, POP_QUEUE, PUSH_QUEUE, dispatch_engine
from ..isa import UOP_BYTES, MemId, Opcode, Uop
from .generator import Case


@dataclass(frozen=True)
class Race:
    """Instructions ``first`` and ``second`` (stream indices) touch ``what`` unordered."""

    first: int
    second: int
    what: str

    def __str__(self) -> str:
        return f"instructions {self.first} and {self.second} race on {self.what}"


def races(case: Case, limit: int = 10) -> list[Race]:
    """Up to ``limit`` races of ``case``; none for a stream whose tokens deadlock."""
    insns = case.placed()
    engines = [dispatch_engine(i) for i in insns]
    clocks = _vector_clocks(insns, engines)
    if clocks is None:
        return []
    access = list(_accesses(case, insns))
    found: list[Race] = []
    eidx = {e: k for k, e in enumerate(ENGINES)}
    for a in range(len(access)):
        i, res_i, write_i, set_i = access[a]
        for b in range(a + 1, len(access)):
            j, res_j, write_j, set_j = access[b]
            if res_i != res_j or engines[i] == engines[j] or not (write_i or write_j):
                continue
            ei, ej = eidx[engines[i]], eidx[engines[j]]
            if clocks[i][ei] <= clocks[j][ei] or clocks[j][ej] <= clocks[i][ej]:
                continue  # ordered one way or the other
            overlap = _overlap(set_i, set_j)
            if overlap is not None:
                found.append(Race(min(i, j), max(i, j), f"{res_i} {overlap}"))
                if len(found) >= limit:
                    return found
    return found


def _vector_clocks(insns, engines) -> list[tuple[int, ...]] | None:
    """Each instruction's vector clock (load, compute, store), or None on a deadlock."""
    queues: dict[str, list[int]] = {e: [] for e in ENGINES}
    for index, engine in enumerate(engines):
        queues[engine].append(index)
    heads = dict.fromkeys(ENGINES, 0)
    pushed: dict[str, list[tuple[int, ...]]] = {q: [] for q in PUSH_QUEUE.values()}
    popped = dict.fromkeys(pushed, 0)
    last = {e: (0, 0, 0) for e in ENGINES}
    clocks: list[tuple[int, ...] | None] = [None] * len(insns)
    progress = True
    while progress:
        progress = False
        for k, engine in enumerate(ENGINES):
            if heads[engine] >= len(queues[engine]):
                continue
            index = queues[engine][heads[engine]]
            insn = insns[index]
            pops = [q for (e, f), q in POP_QUEUE.items() if e == engine and getattr(insn, f, 0)]
            if any(popped[q] >= len(pushed[q]) for q in pops):
                continue
            clock = list(last[engine])
            for q in pops:
                clock = [max(a, b) for a, b in zip(clock, pushed[q][popped[q]], strict=True)]
                popped[q] += 1
            clock[k] += 1
            clocks[index] = last[engine] = tuple(clock)
            for (e, f), q in PUSH_QUEUE.items():
                if e == engine and getattr(insn, f, 0):
                    pushed[q].append(last[engine])
            heads[engine] += 1
            progress = True
    if any(c is None for c in clocks):
        return None
    return clocks


def _overlap(a, b) -> str | None:
    if isinstance(a, set):
        common = a & b
        return f"entry {min(common)}" if common else None
    for lo, hi in a:
        for lo2, hi2 in b:
            if lo < hi2 and lo2 < hi:
                return f"bytes 0x{max(lo, lo2):x}..0x{min(hi, hi2):x}"
    return None


def _accesses(case: Case, insns) -> Iterator[tuple[int, str, bool, object]]:
    """(index, resource, is_write, entries set or DRAM byte intervals) per access."""
    cfg = case.cfg
    uop_sram = np.zeros(cfg.UOP_BUFF_DEPTH, dtype=np.int64)  # micro-op buffer, followed
    uops_at: dict[int, Uop] = {}
    image = case.image()
    elem = {MemId.INP: cfg.INP_ELEM_BYTES, MemId.WGT: cfg.WGT_ELEM_BYTES,
            MemId.ACC: cfg.ACC_ELEM_BYTES, MemId.ACC_8BIT: cfg.BATCH * cfg.BLOCK_OUT,
            MemId.UOP: UOP_BYTES, MemId.OUT: cfg.OUT_ELEM_BYTES}
    for index, insn in enumerate(insns):
        op = insn.opcode
        if op in (Opcode.LOAD, Opcode.STORE) and insn.x_size and insn.memory_type in elem:
            e = elem[insn.memory_type]
            rows = [((insn.dram_base + y * insn.x_stride) * e,
                     (insn.dram_base + y * insn.x_stride + insn.x_size) * e)
                    for y in range(insn.y_size)]
            if op == Opcode.STORE:
                yield index, "DRAM", True, rows
                count = insn.y_size * insn.x_size
                yield index, "OUT", False, set(range(insn.sram_base, insn.sram_base + count))
                continue
            yield index, "DRAM", False, rows
            total = (insn.y_pad_0 + insn.y_size + insn.y_pad_1) * \
                (insn.x_pad_0 + insn.x_size + insn.x_pad_1)
            entries = set(range(insn.sram_base, insn.sram_base + total))
            if insn.memory_type in (MemId.INP, MemId.WGT):
                yield index, MemId(insn.memory_type).name, True, entries
            elif insn.memory_type == MemId.UOP:
                _follow_uops(case, insn, image, uop_sram, uops_at)
        elif op in (Opcode.GEMM, Opcode.ALU):
            yield from _compute_access(index, insn, uops_at, cfg)


def _follow_uops(case: Case, insn, image, uop_sram, uops_at) -> None:
    """Record what a UOP LOAD puts in the micro-op buffer (padding included)."""
    from ..isa import decode_uop

    cfg = case.cfg
    row = insn.x_pad_0 + insn.x_size + insn.x_pad_1
    rows = insn.y_pad_0 + insn.y_size + insn.y_pad_1
    for r in range(rows):
        for x in range(row):
            pos = insn.sram_base + r * row + x
            if pos >= cfg.UOP_BUFF_DEPTH:
                continue
            y, xx = r - insn.y_pad_0, x - insn.x_pad_0
            uop = Uop()
            if 0 <= y < insn.y_size and 0 <= xx < insn.x_size:
                addr = (insn.dram_base + y * insn.x_stride + xx) * UOP_BYTES - case.base
                if 0 <= addr and addr + UOP_BYTES <= len(image):
                    uop = decode_uop(image[addr:addr + UOP_BYTES], cfg)
            uops_at[pos] = uop


def _compute_access(index: int, insn, uops_at, cfg) -> Iterator[tuple[int, str, bool, object]]:
    if insn.iter_out == 0 or insn.iter_in == 0 or insn.uop_end <= insn.uop_bgn:
        return
    gemm = insn.opcode == Opcode.GEMM
    dst, src, wgt = set(), set(), set()
    for u in range(insn.uop_bgn, min(insn.uop_end, cfg.UOP_BUFF_DEPTH)):
        uop = uops_at.get(u, Uop())
        for o in range(insn.iter_out):
            for i in range(insn.iter_in):
                dst.add(uop.dst_idx + o * insn.dst_factor_out + i * insn.dst_factor_in)
                src.add(uop.src_idx + o * insn.src_factor_out + i * insn.src_factor_in)
                if gemm:
                    wgt.add(uop.wgt_idx + o * insn.wgt_factor_out + i * insn.wgt_factor_in)
    if gemm and insn.reset_reg:
        return  # a reset writes ACC only
    yield index, "OUT", True, dst
    if gemm:
        yield index, "INP", False, src
        yield index, "WGT", False, wgt

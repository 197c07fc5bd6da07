"""Static checks of a case: races between engines, reads of entries nothing wrote.

The engines run concurrently and meet only through the dependency-token
queues, so a program's result is defined by the ISA alone only when every two
conflicting accesses (same scratchpad entry or DRAM byte, at least one write)
made by different engines are ordered by tokens.  Token order is
*happens-before*: program order within an engine, and the k-th push onto a
queue before the k-th pop from it (a pop needs a token, and tokens are
counted).  :func:`races` computes it with :mod:`vta.tokenorder` (vector
clocks, shared with ``vta lint``) and lists the unordered conflicting pairs.

:func:`undefined_reads` lists reads of scratchpad entries (INP, WGT, ACC, OUT,
micro-ops) that no earlier-ordered instruction of the program wrote: their
value is whatever the device held before, which a replay on a fresh device
does not reproduce (an RTL scratchpad has no reset value).

The shrinker keeps only candidates free of both: a racy candidate may fail on
one backend's timing and pass on another's, which is no reproducer.  Races are
checked on INP and WGT entries (load engine LOADs against compute GEMMs), OUT
entries (compute GEMM/ALU writes against store STOREs) and DRAM bytes (STOREs
against every LOAD); ACC and the micro-op buffer belong to the compute engine
alone.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from .. import tokenorder
from ..golden import dispatch_engine
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
    analysis = _analyse(case)
    if analysis is None:
        return []
    played, access = analysis
    engines = played.engines
    found: list[Race] = []
    for a in range(len(access)):
        i, res_i, write_i, set_i = access[a]
        for b in range(a + 1, len(access)):
            j, res_j, write_j, set_j = access[b]
            if res_i != res_j or engines[i] == engines[j] or not (write_i or write_j):
                continue
            if played.before(i, j) or played.before(j, i):
                continue
            overlap = _overlap(set_i, set_j)
            if overlap is not None:
                found.append(Race(min(i, j), max(i, j), f"{res_i} {overlap}"))
                if len(found) >= limit:
                    return found
    return found


def undefined_reads(case: Case, limit: int = 10) -> list[tuple[int, str]]:
    """Up to ``limit`` (instruction, "RESOURCE entry N") reads of entries nothing wrote before."""
    analysis = _analyse(case)
    if analysis is None:
        return []
    played, access = analysis
    found = []
    for i, res, write, entries in access:
        if write or res == "DRAM":
            continue
        missing = set(entries)
        for j, res_j, write_j, set_j in access:
            if not missing:
                break
            if write_j and res_j == res and played.before(j, i):
                missing -= set_j
        if missing:
            found.append((i, f"{res} entry {min(missing)}"))
            if len(found) >= limit:
                break
    return found


def _analyse(case: Case):
    insns = case.placed()
    engines = [dispatch_engine(i) for i in insns]
    played = tokenorder.play(insns, engines)
    if played.stuck:
        return None
    return played, list(_accesses(case, insns))


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
    uops_at: dict[int, Uop] = {}  # the micro-op buffer, followed through the UOP LOADs
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
            name = "ACC" if insn.memory_type == MemId.ACC_8BIT else MemId(insn.memory_type).name
            yield index, name, True, entries
            if insn.memory_type == MemId.UOP:
                _follow_uops(case, insn, image, uops_at)
        elif op in (Opcode.GEMM, Opcode.ALU):
            yield from _compute_access(index, insn, uops_at, cfg)


def _follow_uops(case: Case, insn, image, uops_at) -> None:
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
    used = range(insn.uop_bgn, min(insn.uop_end, cfg.UOP_BUFF_DEPTH))
    yield index, "UOP", False, set(used)
    dst, src, wgt = set(), set(), set()
    for u in used:
        uop = uops_at.get(u, Uop())
        for o in range(insn.iter_out):
            for i in range(insn.iter_in):
                dst.add(uop.dst_idx + o * insn.dst_factor_out + i * insn.dst_factor_in)
                src.add(uop.src_idx + o * insn.src_factor_out + i * insn.src_factor_in)
                if gemm:
                    wgt.add(uop.wgt_idx + o * insn.wgt_factor_out + i * insn.wgt_factor_in)
    if gemm and insn.reset_reg:
        yield index, "ACC", True, dst  # a reset writes ACC only
        return
    yield index, "ACC", False, dst  # accumulated into
    if gemm:
        yield index, "INP", False, src
        yield index, "WGT", False, wgt
    elif not insn.use_imm:
        yield index, "ACC", False, src
    yield index, "ACC", True, dst
    yield index, "OUT", True, dst

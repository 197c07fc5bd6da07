"""Static checks of a case: races between engines, reads of entries nothing wrote.

The engines run concurrently and meet only through the dependency-token
queues, so a program's result is defined by the ISA alone only when every two
conflicting accesses (same scratchpad entry or DRAM byte, at least one write)
made by different engines are ordered by tokens.  Token order is
*happens-before*: program order within an engine, and the k-th push onto a
queue before the k-th pop from it (a pop needs a token, and tokens are
counted).  :func:`races` computes it with :mod:`vta.progfile.tokenorder` (vector
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

from ..isa import MemId, Opcode, dispatch_engine
from ..progfile import elem_bytes, follow_uops, tokenorder
from ..progfile.lint import touches
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


def out_writes(case: Case) -> list[tuple[int, set[int]]]:
    """``(instruction, OUT entries)`` of every GEMM/ALU writing OUT."""
    return [(index, entries) for index, res, write, entries in
            _accesses(case, case.placed()) if res == "OUT" and write]


def last_writer(case: Case, reader: int, resource: str, entry: int) -> int | None:
    """The instruction whose write of ``resource`` ``entry`` instruction ``reader`` sees:
    of the writes ordered before ``reader`` by tokens (or program order), the last one
    in its engine's order (in a race-free case every conflicting write is ordered)."""
    analysis = _analyse(case)
    if analysis is None:
        return None
    played, access = analysis
    last = None
    for index, res, write, entries in access:
        if (res == resource and write and index != reader and entry in entries
                and played.before(index, reader) and (last is None or index > last)):
            last = index
    return last


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
    image = case.image()

    def read(addr: int, nbytes: int) -> bytes:  # the arena; zeros outside it
        out = bytearray(nbytes)
        lo, hi = max(addr - case.base, 0), min(addr - case.base + nbytes, len(image))
        if lo < hi:
            out[lo - (addr - case.base):hi - (addr - case.base)] = image[lo:hi]
        return bytes(out)

    kernels = follow_uops(insns, cfg, read)
    for index, insn in enumerate(insns):
        op = insn.opcode
        elem = elem_bytes(cfg, insn.memory_type) if op in (Opcode.LOAD, Opcode.STORE) else None
        if elem is not None and insn.x_size:
            rows = [((insn.dram_base + y * insn.x_stride) * elem,
                     (insn.dram_base + y * insn.x_stride + insn.x_size) * elem)
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
        elif op in (Opcode.GEMM, Opcode.ALU):
            yield from _compute_access(index, insn, kernels[index], cfg)


def _compute_access(index: int, insn, kernel, cfg) -> Iterator[tuple[int, str, bool, object]]:
    """A GEMM/ALU's accesses, from the entries :func:`vta.progfile.lint.touches` expands."""
    touched = {what: set(entries.tolist()) for what, entries in touches(insn, kernel, cfg).items()}
    if not touched:
        return
    yield index, "UOP", False, {entry for entry, _ in kernel}
    dst = touched["writes ACC"]
    if "writes OUT" not in touched:
        yield index, "ACC", True, dst  # a GEMM reset writes ACC only
        return
    yield index, "ACC", False, dst  # accumulated into
    for what in ("reads INP", "reads WGT", "reads ACC"):
        if what in touched:
            yield index, what.split()[1], False, touched[what]
    yield index, "ACC", True, dst
    yield index, "OUT", True, dst

"""Where two backends part ways on a program: the first divergence of observable state.

What both a golden device and a simulated one expose after a run is device
memory, the token-queue occupancy (the TOKENS register), the event counters and
how the run ended (done, or which fault or deadlock at which instruction).
Scratchpads are not observable on the RTL, so a wrong GEMM or ALU result shows
up at the first STORE that writes it to memory.

:func:`compare` runs the whole program on both devices; when the outcomes differ
it runs prefixes of the stream -- instructions ``0..k-1`` followed by a FINISH --
and bisects for the first prefix whose outcome differs.  The prefixes end where
a STORE can run to its end: after the last instruction that happens before it
in token order (:mod:`.tokenorder`), which may come after the STORE in the
stream.  Memory changes only at STOREs, so the STORE found is the first after
which memory differs (token counts are compared at the same points).  The
report names the region, element and lane, the two values, the STORE's
disassembly and the GEMM/ALU instruction whose result the STORE read: the last
one writing that OUT entry that happens before the STORE (from the program's
micro-ops, statically; :func:`vta.progfile.lint.store_sources`).  When both runs
end the same way, the comparison says how (a fault or a deadlock on both is no
divergence, but no success either).

Both devices keep their scratchpads between these runs; a program that reads
scratchpad entries it never wrote sees the previous run's values on both.
Bisection assumes a difference, once in memory, stays there; a later STORE
that overwrites a wrong value with a right one can hide an earlier divergence.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .. import isa, regs
from ..errors import DeadlockError, ExecutionError, VTAError
from ..isa import INSN_BYTES, GemmInsn, Opcode, dispatch_engine
from . import tokenorder
from .analysis import compute_uops
from .lint import store_sources
from .program import Program
from .replay import place

_QUEUES = ("l2g", "g2l", "g2s", "s2g")


@dataclass
class Outcome:
    """What a device exposes after one run."""

    error: str | None  # "SRAM_RANGE in compute at instruction 4", "DEADLOCK in ..." etc.
    memory: dict[str, bytes]  # output regions
    tokens: dict[str, int]
    counters: dict[str, int]  # the non-timing counters
    message: str | None = None  # the device's own words for the error


def observe(prog: Program, device: Any, count: int | None = None) -> Outcome:
    """Run ``prog`` (or its first ``count`` instructions and a FINISH) and read the outcome."""
    run = prog if count is None else prefix(prog, count)
    buffers = place(run, device)
    try:
        error = message = None
        try:
            device.run(run.insn_addr, run.insn_count)
        except (ExecutionError, DeadlockError) as exc:
            error, message = _describe_error(exc), str(exc)
        counters = {k: v for k, v in device.driver.read_counters().items()
                    if k not in regs.TIMING_COUNTERS}
        word = device.driver.read_reg("TOKENS")
        tokens = {q: (word >> (8 * i)) & 0xFF for i, q in enumerate(_QUEUES)}
        memory = {}
        for r in run.outputs:
            buf = next(b for b in buffers if b.addr <= r.addr < b.addr + b.nbytes)
            memory[r.name] = bytes(device.read(buf, r.size, offset=r.addr - buf.addr))
    finally:
        for buf in buffers:
            device.free(buf)
    return Outcome(error, memory, tokens, counters, message)


def _describe_error(exc: VTAError) -> str:
    """The comparable part of a run's error: its code, the engine and the instruction (a
    deadlock's: the first stuck engine in load, compute, store order, as the device names
    it; which instructions a deadlock stops at does not depend on timing)."""
    if isinstance(exc, DeadlockError):
        module, (index, _) = next(iter(exc.stuck.items()))
        code = "DEADLOCK"
    else:
        code, module, index = exc.code.name, exc.module, exc.index
    return f"{code} in {module}" + (f" at instruction {index}" if index is not None else "")


def prefix(prog: Program, count: int) -> Program:
    """``prog`` running only its first ``count`` instructions, then a FINISH."""
    if not 0 <= count <= prog.insn_count:
        raise ValueError(f"count must be in 0..{prog.insn_count}, not {count}")
    out = copy.deepcopy(prog)
    head = prog.stream()[:count * INSN_BYTES]
    stream = head + isa.encode(GemmInsn(opcode=Opcode.FINISH), prog.cfg)
    region = out.region_at(prog.insn_addr)
    if region is None or prog.insn_addr + len(stream) > region.end:
        raise ValueError("the instructions must lie in one region with room for a FINISH")
    start = prog.insn_addr - region.addr
    data = bytearray(region.contents())
    data[start:start + len(stream)] = stream
    region.data = bytes(data).rstrip(b"\0")
    out.insn_count = count + 1
    for r in out.regions:
        r.expect = None
    return out


@dataclass
class Divergence:
    """The first observed difference between a reference and a device under test.

    Attributes
    ----------
    after : int or None
        Index of the instruction after which the state first differs (the
        STORE that wrote the first differing memory); ``None`` when only the
        whole run differs (its end, its counters).
    what : str
        ``"memory"``, ``"tokens"``, ``"error"`` or ``"counters"``.
    message : str
        One paragraph saying what differs, with values.
    region, offset, element, lane : str, int
        For memory: where (``element`` in OUT elements of the region).
    expected, actual : int or str
        The reference's and the device's values.
    producers : list of (int, str)
        The GEMM/ALU instruction (index, disassembly) whose result the STORE
        read there: the last writing that OUT entry that happens before the
        STORE (none when no GEMM/ALU does).
    """

    after: int | None
    what: str
    message: str
    region: str | None = None
    offset: int | None = None
    element: int | None = None
    lane: int | None = None
    expected: int | str | None = None
    actual: int | str | None = None
    insn_text: str | None = None
    producers: list[tuple[int, str]] = field(default_factory=list)
    runs: int = 0

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def _first_difference(a: Outcome, b: Outcome) -> tuple[str, str] | None:
    if a.error != b.error:
        return "error", f"the reference ends with {a.error or 'DONE'}, the device with " \
                        f"{b.error or 'DONE'}"
    for name, want in a.memory.items():
        if want != b.memory.get(name):
            return "memory", name
    if a.tokens != b.tokens:
        return "tokens", (f"tokens left in the queues: reference {a.tokens}, device "
                          f"{b.tokens}")
    diff = {k: (v, b.counters.get(k)) for k, v in a.counters.items() if b.counters.get(k) != v}
    if diff:
        return "counters", "counters differ: " + ", ".join(
            f"{k} reference {x} device {y}" for k, (x, y) in diff.items())
    return None


@dataclass
class Comparison:
    """What :func:`compare` found.

    Attributes
    ----------
    divergence : Divergence or None
        The first divergence, ``None`` when the devices agree.
    reference, device : Outcome
        How the whole program ended on each (when they agree, ``reference.error``
        says whether both ran to the end or both stopped the same way).
    """

    divergence: Divergence | None
    reference: Outcome
    device: Outcome


def compare(prog: Program, reference: Any, device: Any) -> Comparison:
    """Run ``prog`` on ``reference`` and ``device``; find the first divergence, if any.

    Both devices must be freshly opened (the program keeps its addresses).
    """
    whole = (observe(prog, reference), observe(prog, device))
    found = _first_difference(*whole)
    if found is None:
        return Comparison(None, *whole)
    return Comparison(_bisect(prog, reference, device, whole, found), *whole)


def _bisect(prog: Program, reference: Any, device: Any, whole: tuple[Outcome, Outcome],
            found: tuple[str, str]) -> Divergence:
    """The first prefix whose outcome differs (the whole program's does: ``found``)."""
    n = prog.insn_count
    runs = 2
    insns = prog.insns()
    played = tokenorder.play(insns, [dispatch_engine(i) for i in insns])
    # a prefix ending after everything a STORE waits for lets the STORE finish
    points = sorted({k for i in played.order if insns[i].opcode == Opcode.STORE and
                     insns[i].x_size and (k := played.needs(i) + 1) < n})
    # bisect over those prefixes; the whole program differs
    lo, hi = -1, len(points)  # points[lo] agrees (-1: nothing ran), points[hi] differs (n)
    outcomes: dict[int, tuple[Outcome, Outcome, tuple | None]] = {n: (*whole, found)}
    while hi - lo > 1:
        mid = (lo + hi) // 2
        k = points[mid]
        a, b = observe(prog, reference, k), observe(prog, device, k)
        runs += 2
        diff = _first_difference(a, b)
        outcomes[k] = (a, b, diff)
        if diff is None:
            lo = mid
        else:
            hi = mid
    k = points[hi] if hi < len(points) else n
    a, b, (what, detail) = outcomes[k]
    if what != "memory":
        after = k - 1 if k < n else None
        where = f"after instruction {after}: " if after is not None else "at the end of the run: "
        return Divergence(after, what, where + detail, runs=runs)
    return _memory_divergence(prog, insns, played, k, a, b, detail, runs)


def _memory_divergence(prog: Program, insns, played: tokenorder.TokenPlay, k: int, a: Outcome,
                       b: Outcome, name: str, runs: int) -> Divergence:
    cfg = prog.cfg
    want = np.frombuffer(a.memory[name], dtype=np.uint8)
    got = np.frombuffer(b.memory[name], dtype=np.uint8)
    bad = np.flatnonzero(want != got)
    offset = int(bad[0])
    region = prog.region(name)
    elem = cfg.OUT_ELEM_BYTES
    addr = region.addr + offset
    # the last STORE of the prefix that wrote this byte: of those that ran to their end
    # in it (the store engine runs them in order), the last in the stream
    store = None
    for i in range(min(k, len(insns)) - 1, -1, -1):
        insn = insns[i]
        if insn.opcode == Opcode.STORE and insn.x_size and i in played.clocks and \
                played.needs(i) < k and _store_entry(insn, addr, elem) is not None:
            store = i
            break
    after = store if store is not None else k - 1
    producers = []
    entry = None
    if store is not None:
        entry = _store_entry(insns[store], addr, elem)
        writers = store_sources(insns, compute_uops(prog), played, prog.cfg)[store]
        offset_in = entry - insns[store].sram_base  # beyond the OUT buffer: no writer
        writer = int(writers[offset_in]) if offset_in < len(writers) else -1
        if writer >= 0:
            producers = [(writer, isa.disassemble(insns[writer]))]
    text = isa.disassemble(insns[after]) if after < len(insns) else "FINISH (appended)"
    message = (f"after instruction {after} ({text}): region {name}, byte {offset} (OUT element "
               f"{offset // elem}, lane {offset % elem}): expected 0x{want[offset]:02x} "
               f"({_s8(want[offset])}), got 0x{got[offset]:02x} ({_s8(got[offset])}); "
               f"{bad.size} byte(s) of {name} differ")
    if entry is not None:
        message += f"; the STORE read OUT entry {entry}"
        if producers:
            message += ", last written by " + "; ".join(f"#{i} ({t})" for i, t in producers)
    return Divergence(after, "memory", message, name, offset, offset // elem, offset % elem,
                      int(want[offset]), int(got[offset]), text, producers, runs)


def _s8(value: int) -> int:
    return int(value) - 256 if value >= 128 else int(value)


def _store_entry(insn, addr: int, elem: int) -> int | None:
    """The OUT scratchpad entry a STORE wrote to byte ``addr``, or ``None``."""
    rel = addr // elem - insn.dram_base
    if rel < 0:
        return None
    stride = insn.x_stride if insn.y_size > 1 else max(insn.x_stride, insn.x_size)
    row, col = divmod(rel, stride) if stride else (0, rel)
    if row >= insn.y_size or col >= insn.x_size:
        return None
    return insn.sram_base + row * insn.x_size + col

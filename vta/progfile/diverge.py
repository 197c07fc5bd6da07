"""Where two backends part ways on a program: the first divergence of observable state.

What both a golden device and a simulated one expose after a run is device
memory, the token-queue occupancy (the TOKENS register), the event counters and
how the run ended (done, or which fault at which instruction).  Scratchpads are
not observable on the RTL, so a wrong GEMM or ALU result shows up at the first
STORE that writes it to memory.

:func:`first_divergence` runs the whole program on both devices; when the
outcomes differ it runs prefixes of the stream -- instructions ``0..k-1``
followed by a FINISH -- ending after each STORE, and bisects for the first
prefix whose outcome differs.  Memory changes only at STOREs, so that STORE is
the first instruction after which memory differs (token counts are compared
at the same points).  The report names the region, element and lane, the two
values, the STORE's disassembly and the GEMM/ALU instructions that last wrote
the OUT entries it stored (from the program's micro-ops, statically).

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
from ..isa import INSN_BYTES, GemmInsn, Opcode
from .analysis import compute_uops
from .program import Program
from .replay import place

_QUEUES = ("l2g", "g2l", "g2s", "s2g")


@dataclass
class Outcome:
    """What a device exposes after one run."""

    error: str | None  # "ExecutionError SRAM_RANGE at instruction 4 (compute)" etc.
    memory: dict[str, bytes]  # output regions
    tokens: dict[str, int]
    counters: dict[str, int]  # the non-timing counters


def observe(prog: Program, device: Any, count: int | None = None) -> Outcome:
    """Run ``prog`` (or its first ``count`` instructions and a FINISH) and read the outcome."""
    run = prog if count is None else prefix(prog, count)
    buffers = place(run, device)
    try:
        error = None
        try:
            device.run(run.insn_addr, run.insn_count)
        except (ExecutionError, DeadlockError) as exc:
            error = _describe_error(exc)
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
    return Outcome(error, memory, tokens, counters)


def _describe_error(exc: VTAError) -> str:
    if isinstance(exc, DeadlockError):
        return "DEADLOCK"
    return f"{exc.code.name} in {exc.module} at instruction {exc.index}"


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
        GEMM/ALU instructions (index, disassembly) that last wrote the OUT
        entry the STORE wrote there.
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


def first_divergence(prog: Program, reference: Any, device: Any) -> Divergence | None:
    """The first divergence of ``device`` from ``reference`` on ``prog`` (``None``: none).

    Both devices must be freshly opened (the program keeps its addresses).
    """
    n = prog.insn_count
    whole = (observe(prog, reference), observe(prog, device))
    runs = 2
    found = _first_difference(*whole)
    if found is None:
        return None
    insns = prog.insns()
    stores = [i + 1 for i, insn in enumerate(insns)
              if insn.opcode == Opcode.STORE and insn.x_size]
    points = [k for k in stores if k < n]
    # bisect over the prefixes ending after each STORE; the whole program differs
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
    return _memory_divergence(prog, insns, k, a, b, detail, runs)


def _memory_divergence(prog: Program, insns, k: int, a: Outcome, b: Outcome, name: str,
                       runs: int) -> Divergence:
    cfg = prog.cfg
    want = np.frombuffer(a.memory[name], dtype=np.uint8)
    got = np.frombuffer(b.memory[name], dtype=np.uint8)
    bad = np.flatnonzero(want != got)
    offset = int(bad[0])
    region = prog.region(name)
    elem = cfg.OUT_ELEM_BYTES
    addr = region.addr + offset
    # the last STORE up to k that wrote this byte
    store = None
    for i in range(min(k, len(insns)) - 1, -1, -1):
        insn = insns[i]
        if insn.opcode == Opcode.STORE and insn.x_size and _store_entry(insn, addr, elem) \
                is not None:
            store = i
            break
    after = store if store is not None else k - 1
    producers = []
    entry = None
    if store is not None:
        entry = _store_entry(insns[store], addr, elem)
        producers = _producers(prog, insns, store, entry)
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


def _producers(prog: Program, insns, store: int, entry: int) -> list[tuple[int, str]]:
    """GEMM/ALU instructions before ``store`` whose micro-ops write ACC/OUT ``entry`` (last)."""
    kernels = compute_uops(prog)
    for i in range(store - 1, -1, -1):
        insn = insns[i]
        if insn.opcode not in (Opcode.GEMM, Opcode.ALU) or i not in kernels or (
                insn.opcode == Opcode.GEMM and insn.reset_reg):  # a reset writes ACC, not OUT
            continue
        dst = np.array([u.dst_idx for _, u in kernels[i]], dtype=np.int64)
        if not dst.size:
            continue
        outer = np.arange(insn.iter_out)[:, None, None] * insn.dst_factor_out
        inner = np.arange(insn.iter_in)[None, :, None] * insn.dst_factor_in
        if np.any(dst[None, None, :] + outer + inner == entry):
            return [(i, isa.disassemble(insn))]
    return []


"""Functional coverage: which features of the ISA and the device the random programs exercised.

Coverage is collected from outside the golden model: from the instructions
the reference model retired (its trace events, so a fault's unexecuted tail
does not count), the token effects recorded in those events, the reference's
fault, and -- on the simulated backends -- the RTL monitor's dispatch and
start events.  A *bin* is a named feature; a run's report counts the programs
that hit each bin and lists the *holes* (bins no program hit).

========================= ============================================================
bins                      hit when a retired instruction / the run ...
========================= ============================================================
``insn:OP[.MEM]``         is a LOAD/STORE of that memory type moving data, a GEMM
                          (``.reset``), an ALU, FINISH
``noop:ENGINE``           is a sync no-op (``x_size`` 0) of that engine;
                          ``noop:junk`` one with other fields non-zero
``alu:OP.imm|tensor``     is an ALU op with an immediate / a tensor operand
``shr:…``                 is an SHR by an immediate right (0..31), left (-31..-1),
                          >= 32, <= -32
``pad:MEM.SIDE``          is a LOAD of MEM with a non-zero pad on SIDE
``load:pads-only``,       is a LOAD with y_size 0 and pads / a pad of 15
``load:pad-15``
``stride:OP.KIND``        is a multi-row LOAD/STORE with x_stride equal to, above or
                          below x_size (dense, gap, overlap)
``nest:OP.KIND``          is a GEMM/ALU nest that is empty (``iter_out=0``,
                          ``iter_in=0``, ``no-uops``), two-deep (``nested``), moves
                          along a loop (``factor_out``, ``factor_in``), has several
                          micro-ops (``multi-uop``)
``token:Q.full``          reaches the queue's capacity (512 tokens)
``token:Q.empty-wait``    pops Q, which was empty when the instruction became its
                          engine's next (the consumer had to wait for the producer)
``backpressure:ENGINE``   (RTL) fills ENGINE's command queue, so the fetch unit waits
``fault:CODE``            ends with that fault (reference model)
========================= ============================================================
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

from ..config import TOKEN_QUEUE_DEPTH
from ..errors import PROGRAM_FAULTS
from ..golden import TraceEvent
from ..isa import ENGINES, QUEUES, AluOp, MemId, Opcode
from .generator import COMMAND_QUEUE_DEPTH, FETCH_CHUNK

_LOAD_TYPES = ("INP", "WGT", "ACC", "ACC_8BIT", "UOP")
_SIDES = ("y_pad_0", "y_pad_1", "x_pad_0", "x_pad_1")
_NEST = ("iter_out=0", "iter_in=0", "no-uops", "nested", "factor_out", "factor_in", "multi-uop")
_SHR = ("imm-right", "imm-left", "imm>=32", "imm<=-32")

#: Bins the golden reference gives on every backend.
GOLDEN_BINS: tuple[str, ...] = (
    *(f"insn:LOAD.{m}" for m in _LOAD_TYPES),
    "insn:STORE.OUT", "insn:GEMM", "insn:GEMM.reset", "insn:ALU", "insn:FINISH",
    *(f"noop:{e}" for e in ENGINES), "noop:junk",
    *(f"alu:{op.name}.{how}" for op in AluOp for how in ("imm", "tensor")),
    *(f"shr:{k}" for k in _SHR),
    *(f"pad:{m}.{side}" for m in _LOAD_TYPES for side in _SIDES),
    "load:pads-only", "load:pad-15",
    *(f"stride:{op}.{k}" for op in ("LOAD", "STORE") for k in ("dense", "gap", "overlap")),
    *(f"nest:{op}.{k}" for op in ("GEMM", "ALU") for k in _NEST),
    *(f"token:{q}.{k}" for q in QUEUES for k in ("full", "empty-wait")),
    *(f"fault:{c.name}" for c in PROGRAM_FAULTS),
)
#: Bins only a simulated backend's monitor gives.
RTL_BINS: tuple[str, ...] = tuple(f"backpressure:{e}" for e in ENGINES)


def bins_for(backend: str) -> tuple[str, ...]:
    """Every bin a run on ``backend`` can hit."""
    return GOLDEN_BINS + (RTL_BINS if backend != "golden" else ())


def collect(events: Iterable[TraceEvent], fault: str | None = None,
            monitor: Iterable[str] = (), engines: Sequence[str] = ()) -> set[str]:
    """The bins one run hit.

    Parameters
    ----------
    events
        The reference model's trace events, in retire order.
    fault
        The ErrorCode name the reference ended with, if any.
    monitor
        The RTL monitor's ``<cycle> <module> <index> <event>`` lines, if any.
    engines
        The engine of each instruction of the stream (needed with ``monitor``).
    """
    hit: set[str] = set()
    occupancy = dict.fromkeys(QUEUES, 0)
    at_head = {e: dict(occupancy) for e in ENGINES}  # queues when each engine's head came up
    for ev in events:
        hit |= insn_bins(ev.insn, ev.module)
        for q in ev.popped:
            if at_head[ev.module][q] == 0:
                hit.add(f"token:{q}.empty-wait")
            occupancy[q] -= 1
        for q in ev.pushed:
            occupancy[q] += 1
            if occupancy[q] >= TOKEN_QUEUE_DEPTH:
                hit.add(f"token:{q}.full")
        at_head[ev.module] = dict(occupancy)
    if fault is not None:
        hit.add(f"fault:{fault}")
    hit |= backpressure_bins(monitor, engines)
    return hit


def insn_bins(insn, engine: str) -> set[str]:
    """Bins of one retired instruction."""
    op = insn.opcode
    out: set[str] = set()
    if op in (Opcode.LOAD, Opcode.STORE):
        if insn.x_size == 0:
            out.add(f"noop:{engine}")
            if any((insn.sram_base, insn.dram_base, insn.y_size, insn.x_stride, insn.y_pad_0,
                    insn.y_pad_1, insn.x_pad_0, insn.x_pad_1)):
                out.add("noop:junk")
            return out
        name = Opcode(op).name
        out.add(f"insn:{name}.{MemId(insn.memory_type).name}")
        if op == Opcode.LOAD:
            for side in _SIDES:
                if getattr(insn, side):
                    out.add(f"pad:{MemId(insn.memory_type).name}.{side}")
                if getattr(insn, side) == 15:
                    out.add("load:pad-15")
            if insn.y_size == 0 and any(getattr(insn, s) for s in _SIDES):
                out.add("load:pads-only")
        if insn.y_size > 1:
            kind = ("dense" if insn.x_stride == insn.x_size else
                    "gap" if insn.x_stride > insn.x_size else "overlap")
            out.add(f"stride:{name}.{kind}")
    elif op == Opcode.FINISH:
        out.add("insn:FINISH")
    elif op in (Opcode.GEMM, Opcode.ALU):
        name = Opcode(op).name
        out.add(f"insn:{name}")
        if op == Opcode.GEMM and insn.reset_reg:
            out.add("insn:GEMM.reset")
        if op == Opcode.ALU:
            alu = AluOp(insn.alu_opcode)
            out.add(f"alu:{alu.name}.{'imm' if insn.use_imm else 'tensor'}")
            if alu == AluOp.SHR and insn.use_imm:
                imm = insn.imm
                out.add("shr:" + ("imm>=32" if imm >= 32 else "imm-right" if imm >= 0 else
                                  "imm-left" if imm >= -31 else "imm<=-32"))
        out |= {f"nest:{name}.{k}" for k in _nest_kinds(insn)}
    return out


def _nest_kinds(insn) -> list[str]:
    kinds = []
    if insn.iter_out == 0:
        kinds.append("iter_out=0")
    if insn.iter_in == 0:
        kinds.append("iter_in=0")
    if insn.uop_end <= insn.uop_bgn:
        kinds.append("no-uops")
    if kinds:
        return kinds
    if insn.iter_out > 1 and insn.iter_in > 1:
        kinds.append("nested")
    wgt = getattr(insn, "wgt_factor_out", 0), getattr(insn, "wgt_factor_in", 0)
    if insn.iter_out > 1 and (insn.dst_factor_out or insn.src_factor_out or wgt[0]):
        kinds.append("factor_out")
    if insn.iter_in > 1 and (insn.dst_factor_in or insn.src_factor_in or wgt[1]):
        kinds.append("factor_in")
    if insn.uop_end - insn.uop_bgn > 1:
        kinds.append("multi-uop")
    return kinds


def backpressure_bins(monitor: Iterable[str], engines: Sequence[str]) -> set[str]:
    """Engines whose command queue stopped the fetch unit, from the RTL monitor's events.

    ``engines[i]`` is the engine of instruction ``i``.  The fetch unit asks
    DRAM for the next CHUNK instructions only while every command queue has
    room for them; an engine takes an instruction off its queue, waits for its
    tokens, then signals ``start``.  So more than ``depth - CHUNK`` dispatched
    but not started instructions of one engine means that engine held fetch.
    """
    limit = COMMAND_QUEUE_DEPTH - FETCH_CHUNK
    waiting = dict.fromkeys(ENGINES, 0)
    hit: set[str] = set()
    for line in monitor:
        parts = line.split()
        if len(parts) != 4:
            continue
        if parts[3] == "dispatch":
            engine = engines[int(parts[2])]
            waiting[engine] += 1
            if waiting[engine] > limit:
                hit.add(f"backpressure:{engine}")
        elif parts[3] == "start" and parts[1] in waiting:
            waiting[parts[1]] -= 1
    return hit


class Coverage:
    """Programs per bin over a run, for one backend's set of bins; ``closed_at``: the
    number of programs after which every bin had been hit (None while holes remain)."""

    def __init__(self, backend: str):
        self.backend = backend
        self.bins = bins_for(backend)
        self.counts: Counter[str] = Counter()
        self.programs = 0
        self.closed_at: int | None = None
        self._open = set(self.bins)

    def add(self, hit: Iterable[str]) -> None:
        self.programs += 1
        hit = [b for b in hit if b in self.bins]
        self.counts.update(hit)
        if self._open:
            self._open.difference_update(hit)
            if not self._open:
                self.closed_at = self.programs

    @property
    def holes(self) -> list[str]:
        return [b for b in self.bins if not self.counts[b]]

    def as_dict(self) -> dict:
        return {"backend": self.backend, "programs": self.programs,
                "bins": {b: self.counts[b] for b in self.bins}, "holes": self.holes,
                "covered": len(self.bins) - len(self.holes), "total": len(self.bins),
                "closed_at": self.closed_at}

    def report(self) -> str:
        """A text report: one line per bin group, then the holes."""
        groups: dict[str, list[str]] = {}
        for b in self.bins:
            groups.setdefault(b.split(":")[0], []).append(b)
        lines = [f"coverage: {len(self.bins) - len(self.holes)}/{len(self.bins)} bins hit by "
                 f"{self.programs} programs ({self.backend})"]
        for group, members in groups.items():
            done = sum(1 for b in members if self.counts[b])
            least = min(members, key=lambda b: self.counts[b])
            lines.append(f"  {group:<13} {done:>3}/{len(members):<3} least: {least} "
                         f"({self.counts[least]})")
        if self.holes:
            lines.append("holes: " + ", ".join(self.holes))
        else:
            lines.append(f"holes: none (every bin hit after {self.closed_at} programs)")
        return "\n".join(lines)


# ------------------------------------------------------------------ cross coverage
#: The instruction classes of the opcode cross (the ``insn:`` bins without the prefix).
OPCODES: tuple[str, ...] = tuple(b.removeprefix("insn:") for b in GOLDEN_BINS
                                 if b.startswith("insn:"))
#: DRAM timing classes (vta.regress.timing); a run with fixed timing has the one class "fixed".
LATENCY_CLASSES = ("short", "medium", "long")
STALL_CLASSES = ("none", "low", "high")


def timing_class(record: dict) -> tuple[str, str]:
    """(latency class, stall class) of a result record; ("fixed", "fixed") without timing."""
    timing = record.get("timing")
    if not timing:
        return ("fixed", "fixed")
    lat, _, stall = timing["class"].partition("/")
    return (lat.removesuffix("-latency"), stall.removesuffix("-stall"))


class Cross:
    """Cross coverage of a run: opcode x configuration x DRAM latency class x stall class,
    and ALU op x operand kind (immediate or tensor) x configuration; counts programs per
    cross bin.  ``timing`` is False for runs without random timing (one class, ``fixed``)."""

    def __init__(self, configs: Sequence[str], timing: bool):
        lat = LATENCY_CLASSES if timing else ("fixed",)
        stall = STALL_CLASSES if timing else ("fixed",)
        self.configs = list(configs)
        self.universe: dict[str, tuple[str, ...]] = {
            "opcode x config x latency x stall": tuple(
                f"{op} | {c} | {la} | {st}" for op in OPCODES for c in configs
                for la in lat for st in stall),
            "alu op x operand x config": tuple(
                f"{op.name} | {how} | {c}" for op in AluOp for how in ("imm", "tensor")
                for c in configs),
        }
        self.counts: Counter[str] = Counter()

    def add(self, record: dict) -> None:
        config = record["config"]
        lat, stall = timing_class(record)
        for b in record.get("coverage", ()):
            group, _, name = b.partition(":")
            if group == "insn":
                self.counts[f"{name} | {config} | {lat} | {stall}"] += 1
            elif group == "alu":
                op, _, how = name.partition(".")
                self.counts[f"{op} | {how} | {config}"] += 1

    def holes(self, cross: str) -> list[str]:
        return [b for b in self.universe[cross] if not self.counts[b]]

    def as_dict(self) -> dict:
        return {name: {"covered": len(bins) - len(self.holes(name)), "total": len(bins),
                       "holes": self.holes(name), "bins": {b: self.counts[b] for b in bins}}
                for name, bins in self.universe.items()}

    def report(self) -> str:
        lines = []
        for name, bins in self.universe.items():
            holes = self.holes(name)
            lines.append(f"cross {name}: {len(bins) - len(holes)}/{len(bins)} bins hit"
                         + (f"; holes: {', '.join(holes[:12])}"
                            + (f" (+{len(holes) - 12} more)" if len(holes) > 12 else "")
                            if holes else ""))
        return "\n".join(lines)

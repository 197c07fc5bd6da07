"""The one per-instruction trace format, written by the golden model and the RTL monitor.

One line per retired instruction, tab-separated, so that ``diff`` works and the
CLI reads either::

    # cycle  module  index  raw            disassembly                 tokens
    1042     load    3      0000...0009    LOAD INP sram_base=... ...  pop=g2l push=l2g

=========== ==============================================================
column      meaning
=========== ==============================================================
cycle       clock cycle (since reset) at which the engine retired the
            instruction, or ``dispatch/start/retire``: the cycles fetch
            dispatched it, the engine started it (its tokens taken) and
            retired it; ``-`` for the golden model, which has no clock
module      ``load``, ``compute`` or ``store``
index       the instruction's index in the stream
raw         the 128-bit instruction word, 32 hex digits, most significant
            first (the 16 stream bytes read as a little-endian integer)
disassembly :func:`vta.isa.disassemble` of the instruction
tokens      ``pop=<queues> push=<queues>`` (comma-separated queue names,
            ``-`` for none): the tokens the instruction took before it
            started and pushed when it retired
=========== ==============================================================

Lines starting with ``#`` are comments.  :func:`normalise` drops the cycles
and orders by index, so a golden trace and an RTL trace of the same program
compare equal exactly when every engine retired the same instructions with
the same token effects.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path

from .config import Config
from .golden import ENGINES as MODULES  # queue tables shared with the golden model
from .golden import POP_QUEUE, PUSH_QUEUE
from .isa import DEP_FLAGS, INSN_BYTES, Insn, decode_word, disassemble, encode

HEADER = "# cycle\tmodule\tindex\traw\tdisassembly\ttokens"


@dataclass(frozen=True)
class TraceRecord:
    """One retired instruction.

    Attributes
    ----------
    cycle : int or None
        Retire cycle (``None`` on the golden model).
    module : str
        ``"load"``, ``"compute"`` or ``"store"``.
    index : int
        Index in the instruction stream.
    raw : int
        The 128-bit instruction word.
    text : str
        Disassembly.
    popped, pushed : tuple of str
        Token queues popped before the instruction and pushed after it.
    dispatch, start : int or None
        Cycles at which fetch dispatched the instruction and its engine started
        it (``None`` when not recorded).
    """

    cycle: int | None
    module: str
    index: int
    raw: int
    text: str
    popped: tuple[str, ...] = ()
    pushed: tuple[str, ...] = ()
    dispatch: int | None = None
    start: int | None = None

    def line(self) -> str:
        """The record as one line of the trace format (no newline)."""
        cycle = "-" if self.cycle is None else str(self.cycle)
        if self.cycle is not None and self.dispatch is not None and self.start is not None:
            cycle = f"{self.dispatch}/{self.start}/{self.cycle}"
        tokens = f"pop={','.join(self.popped) or '-'} push={','.join(self.pushed) or '-'}"
        return f"{cycle}\t{self.module}\t{self.index}\t{self.raw:032x}\t{self.text}\t{tokens}"


def token_effects(module: str, insn: Insn) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(popped, pushed) queues of ``insn`` executed by engine ``module``."""
    flags = {f: getattr(insn, f, 0) for f in DEP_FLAGS}
    popped = tuple(POP_QUEUE[(module, f)] for f in ("pop_prev_dep", "pop_next_dep")
                   if flags[f] and (module, f) in POP_QUEUE)
    pushed = tuple(PUSH_QUEUE[(module, f)] for f in ("push_prev_dep", "push_next_dep")
                   if flags[f] and (module, f) in PUSH_QUEUE)
    return popped, pushed


def record(cycle: int | None, module: str, index: int, raw: int, cfg: Config) -> TraceRecord:
    """A record for instruction word ``raw`` retired by ``module``."""
    if module not in MODULES:
        raise ValueError(f"module must be one of {', '.join(MODULES)}, not {module!r}")
    insn = decode_word(raw, cfg)
    popped, pushed = token_effects(module, insn)
    return TraceRecord(cycle, module, index, raw, disassemble(insn), popped, pushed)


def from_golden(events: Iterable, cfg: Config) -> list[TraceRecord]:
    """Records of :class:`vta.golden.TraceEvent` objects, in the order given."""
    out = []
    for ev in events:
        raw = int.from_bytes(encode(ev.insn, cfg), "little")
        out.append(TraceRecord(None, ev.module, ev.index, raw, disassemble(ev.insn),
                               tuple(ev.popped), tuple(ev.pushed)))
    return out


def from_monitor(lines: Iterable[str], stream: bytes, cfg: Config) -> list[TraceRecord]:
    """Records from the testbench monitor's ``<cycle> <module> <index> <event>`` lines.

    ``stream`` holds the run's instruction bytes (index 0 first).  Each
    ``retire`` event becomes a record, carrying the cycles of the same
    instruction's ``dispatch`` and ``start`` events; instructions that never
    retired make no record.
    """
    out = []
    dispatched: dict[int, int] = {}
    started: dict[int, int] = {}
    for line in lines:
        parts = line.split()
        if len(parts) != 4:
            continue
        cycle, module, index = int(parts[0]), parts[1], int(parts[2])
        if parts[3] == "dispatch":
            dispatched[index] = cycle
        elif parts[3] == "start":
            started[index] = cycle
        if parts[3] != "retire":
            continue
        word = stream[index * INSN_BYTES:(index + 1) * INSN_BYTES]
        if len(word) != INSN_BYTES:
            raise ValueError(f"trace names instruction {index}, beyond the "
                             f"{len(stream) // INSN_BYTES}-instruction stream")
        rec = record(cycle, module, index, int.from_bytes(word, "little"), cfg)
        out.append(replace(rec, dispatch=dispatched.get(index), start=started.get(index)))
    return out


def format_trace(records: Iterable[TraceRecord], header: bool = True) -> str:
    """Records as text, one line each (with the comment header unless ``header`` is false)."""
    lines = [HEADER] if header else []
    lines += [r.line() for r in records]
    return "\n".join(lines) + ("\n" if lines else "")


def append_trace(path: str | Path, records: list[TraceRecord]) -> None:
    """Append ``records`` to the trace file ``path`` (with the header when it is new)."""
    path = Path(path)
    new = not path.exists() or path.stat().st_size == 0
    with open(path, "a") as out:
        out.write(format_trace(records, header=new))


def parse_line(line: str) -> TraceRecord | None:
    """One record from a line of the trace format; ``None`` for blank and comment lines."""
    text = line.rstrip("\n")
    if not text.strip() or text.lstrip().startswith("#"):
        return None
    parts = text.split("\t")
    if len(parts) != 6:
        raise ValueError(f"trace line must have 6 tab-separated columns, not {len(parts)}: "
                         f"{text!r}")
    cycle_s, module, index_s, raw_s, disasm, tokens = parts
    pops, pushes = (), ()
    for item in tokens.split():
        key, _, value = item.partition("=")
        queues = () if value in ("", "-") else tuple(value.split(","))
        if key == "pop":
            pops = queues
        elif key == "push":
            pushes = queues
        else:
            raise ValueError(f"token column must read 'pop=... push=...', not {tokens!r}")
    dispatch = start = None
    if "/" in cycle_s:
        try:
            dispatch, start, cycle_s = (int(c) for c in cycle_s.split("/"))
        except ValueError:
            raise ValueError(f"cycle column must read RETIRE or DISPATCH/START/RETIRE, not "
                             f"{cycle_s!r}") from None
    return TraceRecord(None if cycle_s == "-" else int(cycle_s), module, int(index_s),
                       int(raw_s, 16), disasm, pops, pushes, dispatch, start)


def read_trace(path: str | Path) -> list[TraceRecord]:
    """Every record of a trace file."""
    out = []
    for line in Path(path).read_text().splitlines():
        rec = parse_line(line)
        if rec is not None:
            out.append(rec)
    return out


def normalise(records: Iterable[TraceRecord]) -> list[TraceRecord]:
    """Records without cycles, ordered by instruction index (for comparing traces)."""
    return sorted((replace(r, cycle=None, dispatch=None, start=None) for r in records),
                  key=lambda r: r.index)

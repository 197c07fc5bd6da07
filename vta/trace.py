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

import math
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path

from .config import Config
from .isa import (
    DEP_FLAGS,
    INSN_BYTES,
    POP_QUEUE,
    PUSH_QUEUE,
    Insn,
    decode_word,
    disassemble,
    encode,
)
from .isa import ENGINES as MODULES

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
    try:
        if "/" in cycle_s:
            dispatch, start, cycle_s = (int(c) for c in cycle_s.split("/"))
        cycle = None if cycle_s == "-" else int(cycle_s)
    except ValueError:
        raise ValueError(f"cycle column must read RETIRE, DISPATCH/START/RETIRE (integers) or "
                         f"-, not {parts[0]!r}") from None
    if module not in MODULES:
        raise ValueError(f"module column must be one of {', '.join(MODULES)}, not {module!r}")
    try:
        index, raw = int(index_s), int(raw_s, 16)
    except ValueError:
        raise ValueError(f"index and instruction columns must be an integer and a hex word, "
                         f"not {index_s!r} and {raw_s!r}") from None
    return TraceRecord(cycle, module, index, raw, disasm, pops, pushes, dispatch, start)


def read_trace(path: str | Path) -> list[TraceRecord]:
    """Every record of a trace file; ValueError naming the file and line of a bad one."""
    path = Path(path)
    try:
        text = path.read_text()
    except UnicodeDecodeError:
        raise ValueError(f"{path}: not a trace file (binary data)") from None
    out = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        try:
            rec = parse_line(line)
        except ValueError as exc:
            raise ValueError(f"{path}: line {lineno}: {exc}") from None
        if rec is not None:
            out.append(rec)
    return out


def normalise(records: Iterable[TraceRecord]) -> list[TraceRecord]:
    """Records without cycles, ordered by instruction index (for comparing traces)."""
    return sorted((replace(r, cycle=None, dispatch=None, start=None) for r in records),
                  key=lambda r: r.index)


# ------------------------------------------------------------------ analysis
@dataclass(frozen=True)
class TokenIn:
    """A token an instruction popped: its queue, the instruction that pushed it and when."""

    queue: str
    source: int | None  # index of the pushing instruction (None: never pushed in this trace)
    cycle: int | None  # retire cycle of the pushing instruction (None on the golden model)


@dataclass(frozen=True)
class Step:
    """One retired instruction with what it waited for.

    Attributes
    ----------
    record : TraceRecord
        The trace record.
    order : int
        Position in retire order (the only time the golden model has).
    previous : int or None
        Index of the same engine's previous instruction.
    tokens : tuple of TokenIn
        The tokens it popped, each matched to the instruction that pushed it
        (the k-th pop of a queue takes the k-th push: the queues are FIFOs).
    waited : int or None
        Cycles from dispatch to start (``None`` without cycles).
    ready : int or None
        When the engine could take it: the later of its dispatch and the
        retire of the engine's previous instruction.
    stalled : int or None
        Cycles from ``ready`` to start: the engine idle in front of it.
    reason : str
        What the start waited for last: ``"token l2g from #7"`` (a token pushed
        after ``ready``), ``"previous instruction #5"`` (queued behind it), or
        ``"dispatch"``.
    busy : int or None
        Cycles from start to retire: DRAM time of a LOAD/STORE, compute time of
        GEMM/ALU.
    """

    record: TraceRecord
    order: int
    previous: int | None
    tokens: tuple[TokenIn, ...]
    waited: int | None
    ready: int | None
    stalled: int | None
    reason: str
    busy: int | None

    @property
    def index(self) -> int:
        return self.record.index

    @property
    def module(self) -> str:
        return self.record.module

    def as_dict(self) -> dict:
        r = self.record
        return {"index": r.index, "order": self.order, "engine": r.module,
                "dispatch": r.dispatch, "start": r.start, "retire": r.cycle,
                "waited": self.waited, "ready": self.ready, "stalled": self.stalled,
                "waited_for": self.reason, "busy": self.busy,
                "busy_kind": busy_kind(r.text), "raw": f"{r.raw:032x}", "text": r.text,
                "popped": [{"queue": t.queue, "from": t.source, "pushed_at": t.cycle}
                           for t in self.tokens],
                "pushed": list(r.pushed), "previous": self.previous}


def busy_kind(text: str) -> str:
    """What an instruction's execution time is spent on: DRAM, GEMM, ALU or sync."""
    head = text.split()[0]
    if head in ("LOAD", "STORE"):
        return "DRAM" if " x_size=" in f" {text}" else "sync"
    if head == "GEMM":
        return "GEMM"
    if head == "FINISH":
        return "sync"
    return "ALU"


def analyse(records: Iterable[TraceRecord]) -> list[Step]:
    """Steps of a run's records (given in retire order), each with its waits explained."""
    records = list(records)
    timed = all(r.cycle is not None for r in records)
    order = sorted(records, key=lambda r: (r.cycle, r.index)) if timed and records else records
    pushes: dict[str, list[TraceRecord]] = {}
    for r in order:  # pushes in time order, per queue
        for q in r.pushed:
            pushes.setdefault(q, []).append(r)
    taken = dict.fromkeys(pushes, 0)
    # the k-th pop of a queue takes the k-th push: walk the pops in start (or retire) order
    pop_order = sorted(records, key=lambda r: (r.start if r.start is not None else
                                               r.cycle if r.cycle is not None else 0, r.index)) \
        if timed else records
    matched: dict[int, list[TokenIn]] = {}
    for r in pop_order:
        for q in r.popped:
            k = taken.get(q, 0)
            src = pushes.get(q, [])
            source = src[k] if k < len(src) else None
            taken[q] = k + 1
            matched.setdefault(r.index, []).append(
                TokenIn(q, source.index if source else None,
                        source.cycle if source else None))
    last: dict[str, TraceRecord] = {}
    steps = []
    for position, r in enumerate(order):
        previous = last.get(r.module)
        last[r.module] = r
        tokens = tuple(matched.get(r.index, ()))
        waited = ready = stalled = busy = None
        reason = ""
        if r.start is not None and r.dispatch is not None:
            waited = r.start - r.dispatch
            busy = r.cycle - r.start
            ready, reason = r.dispatch, "dispatch"
            if previous is not None and previous.cycle is not None and previous.cycle >= ready:
                ready, reason = previous.cycle, f"previous instruction #{previous.index}"
            stalled = r.start - ready
            late = [t for t in tokens if t.cycle is not None and t.cycle >= ready]
            if late:
                t = max(late, key=lambda t: t.cycle)
                reason = f"token {t.queue} from #{t.source}"
        steps.append(Step(r, position, previous.index if previous else None, tokens, waited,
                          ready, stalled, reason, busy))
    return steps


def select(steps: Iterable[Step], engines: Iterable[str] | None = None,
           first: int | None = None, last: int | None = None) -> list[Step]:
    """Steps of the given engines whose index lies in ``first..last`` (inclusive)."""
    wanted = set(engines) if engines else set(MODULES)
    return [s for s in steps if s.module in wanted
            and (first is None or s.index >= first) and (last is None or s.index <= last)]


def format_steps(steps: Iterable[Step]) -> str:
    """A fixed-width table of steps (cycles when the trace has them)."""
    steps = list(steps)
    timed = any(s.record.cycle is not None for s in steps)
    if timed:
        head = (f"{'index':>6} {'engine':<8}{'dispatch':>9}{'start':>9}{'retire':>9}"
                f"{'stall':>7}  {'waited for':<26}{'busy':>7} {'':<5} instruction")
    else:
        head = f"{'order':>6} {'index':>6} {'engine':<8} instruction"
    lines = [head]
    for s in steps:
        r = s.record
        tokens = _token_text(s)
        if timed:
            lines.append(f"{r.index:>6} {r.module:<8}{_num(r.dispatch):>9}{_num(r.start):>9}"
                         f"{_num(r.cycle):>9}{_num(s.stalled):>7}  {s.reason:<26}"
                         f"{_num(s.busy):>7} {busy_kind(r.text):<5} {r.text}{tokens}")
        else:
            lines.append(f"{s.order:>6} {r.index:>6} {r.module:<8} {r.text}{tokens}")
    return "\n".join(lines) + "\n"


def _num(value: int | None) -> str:
    return "-" if value is None else str(value)


def _token_text(s: Step) -> str:
    parts = [f"pop {t.queue}<#{'?' if t.source is None else t.source}" for t in s.tokens]
    parts += [f"push {q}" for q in s.record.pushed]
    return ("   [" + ", ".join(parts) + "]") if parts else ""


# ------------------------------------------------------------------- exports
ENGINE_COLOURS = {"DRAM": "#4c78a8", "GEMM": "#f58518", "ALU": "#54a24b", "sync": "#bab0ac"}
WAIT_COLOUR = "#e45756"


def to_chrome_json(steps: Iterable[Step], title: str = "VTA run") -> dict:
    """A Chrome / Perfetto trace-event document (JSON object format) of the steps.

    One thread per engine; each instruction is a complete event ("X") from
    start to retire, preceded by a "wait" event while its engine stood idle in
    front of it waiting for a token; each matched token is a flow arrow from
    the pushing instruction to the popping one.  One cycle is shown as one
    microsecond.  A trace without cycles (the golden model) uses the retire
    order as time, one unit each.
    """
    steps = list(steps)
    timed = all(s.record.cycle is not None for s in steps) and bool(steps)
    tid = {m: i + 1 for i, m in enumerate(MODULES)}
    events: list[dict] = [{"ph": "M", "pid": 1, "tid": 0, "name": "process_name",
                           "args": {"name": title}}]
    for m in MODULES:
        events.append({"ph": "M", "pid": 1, "tid": tid[m], "name": "thread_name",
                       "args": {"name": m}})
        events.append({"ph": "M", "pid": 1, "tid": tid[m], "name": "thread_sort_index",
                       "args": {"sort_index": tid[m]}})
    span: dict[int, tuple[int, int]] = {}
    for s in steps:
        r = s.record
        start, end = (r.start, r.cycle) if timed else (s.order, s.order + 1)
        end = max(end, start + 1) if not timed else end
        span[r.index] = (start, end)
        name = " ".join(r.text.split()[:2 if r.text.startswith(("LOAD", "STORE")) else 1])
        if timed and s.stalled and s.reason.startswith("token"):
            events.append({"ph": "X", "pid": 1, "tid": tid[r.module],
                           "name": f"wait: {s.reason}", "cat": "wait", "ts": s.ready,
                           "dur": s.stalled, "args": {"index": r.index, "for": s.reason}})
        events.append({"ph": "X", "pid": 1, "tid": tid[r.module], "name": f"{name} #{r.index}",
                       "cat": busy_kind(r.text), "ts": start, "dur": end - start,
                       "args": s.as_dict()})
    flow = 0
    for s in steps:
        for t in s.tokens:
            if t.source is None or t.source not in span or s.index not in span:
                continue
            flow += 1
            src = next(x for x in steps if x.index == t.source)
            events.append({"ph": "s", "pid": 1, "tid": tid[src.module], "name": t.queue,
                           "cat": "token", "id": flow,
                           "ts": max(span[t.source][0], span[t.source][1] - 1)})
            events.append({"ph": "f", "bp": "e", "pid": 1, "tid": tid[s.module],
                           "name": t.queue, "cat": "token", "id": flow,
                           "ts": span[s.index][0]})
    return {"traceEvents": events, "displayTimeUnit": "ns",
            "otherData": {"title": title, "time_unit": "cycle" if timed else "retire order"}}


def plot_timeline(steps: Iterable[Step], path: str | Path, title: str = "VTA run") -> Path:
    """A PNG timeline of the three engines: execution bars by kind, token waits in red.

    Needs matplotlib (the ``plot`` extra: ``pip install 'vta[plot]'``).
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.patches import Patch
    except ImportError:
        raise ImportError("the PNG timeline needs matplotlib: pip install 'vta[plot]'") from None
    steps = list(steps)
    timed = all(s.record.cycle is not None for s in steps) and bool(steps)
    fig, ax = plt.subplots(figsize=(12, 3.2), dpi=120)
    rows = {m: len(MODULES) - 1 - i for i, m in enumerate(MODULES)}
    bars = []
    for s in steps:
        r = s.record
        y = rows[r.module]
        start, end = (r.start, r.cycle) if timed else (s.order, s.order + 1)
        if timed and s.stalled and s.reason.startswith("token"):
            ax.broken_barh([(s.ready, s.stalled)], (y - 0.2, 0.4), color=WAIT_COLOUR,
                           linewidth=0)
        ax.broken_barh([(start, max(end - start, 1))], (y - 0.35, 0.7),
                       color=ENGINE_COLOURS[busy_kind(r.text)], edgecolor="black",
                       linewidth=0.3)
        bars.append((start, end, y, r))
    span = max((e for _, e, _, _ in bars), default=1) - min((s for s, _, _, _ in bars), default=0)
    for start, end, y, r in bars:  # name the instructions whose bar has room for it
        if end - start >= span / 40:
            name = r.text.split()[0] if not r.text.startswith(("LOAD", "STORE")) else \
                " ".join(r.text.split()[:2])
            label = f"#{r.index} {name}" if end - start >= span / 12 else f"#{r.index}"
            ax.text((start + end) / 2, y, label, ha="center", va="center", fontsize=7,
                    color="white", clip_on=True)
    ax.set_yticks(list(rows.values()), list(rows))
    ax.set_xlabel("cycle" if timed else "retire order (the golden model has no clock)")
    ax.set_title(title)
    handles = [Patch(color=c, label=k) for k, c in ENGINE_COLOURS.items()]
    if timed:
        handles.append(Patch(color=WAIT_COLOUR, label="idle, waiting for a token"))
    ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.3), ncol=5,
              frameon=False, fontsize=8)
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path)
    plt.close(fig)
    return path


# ------------------------------------------------------------------ roofline
def roofline(steps: Iterable[Step], cfg: Config) -> dict:
    """The engines' busy time of a run against the roofline of the work it issued.

    The bound (:mod:`vta.roofline`) is computed from the retired instructions
    alone: their micro-ops and the bytes their LOADs and STOREs move.
    Returns ``{"bound": Bound.as_dict(), "cycles": span or None, "engines":
    {engine: {"busy": cycles or None, "bound": cycles}}}`` (busy and the span
    are None without cycles: the golden model).
    """
    from . import roofline as rf

    steps = list(steps)
    bound = rf.bound(cfg, rf.program_work(cfg, (decode_word(s.record.raw, cfg) for s in steps)))
    timed = bool(steps) and all(s.record.cycle is not None and s.busy is not None
                                for s in steps)
    span = None
    if timed:
        span = max(s.record.cycle for s in steps) - min(s.record.dispatch for s in steps)
    engines = {}
    for engine in MODULES:
        busy = sum(s.busy for s in steps if s.module == engine) if timed else None
        engines[engine] = {"busy": busy, "bound": math.ceil(bound.resources[engine])}
    return {"bound": bound.as_dict(), "cycles": span, "engines": engines}


def format_roofline(info: dict) -> str:
    """One line of :func:`roofline`'s figures."""
    b = info["bound"]
    parts = [f"roofline of the issued work: {b['cycles']:,} cycles ({b['binding']} binds)"]
    if info["cycles"]:
        parts[0] += f"; the run took {info['cycles']:,} ({b['cycles'] / info['cycles']:.1%} " \
                    "of the roofline)"
    for engine, e in info["engines"].items():
        if e["busy"] is None:
            parts.append(f"{engine} needs {e['bound']:,}")
        else:
            parts.append(f"{engine} busy {e['busy']:,} of {e['bound']:,} needed")
    return "; ".join(parts)

"""Shrinking a failing case: delta debugging over instructions, tokens, micro-ops, fields, data.

:func:`shrink` takes a :class:`~vta.regress.generator.Case` that fails and a
predicate saying whether a candidate still fails *the same way* (same
:attr:`~vta.regress.check.Mismatch.signature`; :func:`same_failure` builds it
from a session; it runs every candidate from zeroed scratchpads).  Candidates
whose engines race, or that read a scratchpad
entry nothing in the candidate wrote (:mod:`vta.regress.races`), are never
kept: their result would depend on a backend's timing or on what ran before,
and the shrunk program must replay the same on a freshly opened device.
Passes, repeated until none makes progress or the budget is spent:

1. **instructions** (ddmin): drop instructions; one carrying dependency flags
   becomes a sync no-op with the same flags, so the token structure stays;
2. **tokens** (ddmin): drop matched push/pop pairs (the k-th push of a queue
   with the k-th pop), and unmatched ones; no-ops left without flags go in
   the next round of pass 1, and a no-op still carrying flags is folded into
   its engine's neighbours (pops into the next instruction, pushes into the
   previous one);
3. **micro-ops** (ddmin): drop micro-ops from UOP LOADs, shifting the
   GEMM/ALU ranges that use them;
4. **fields** (one at a time): loop extents to 1, then halved; loop factors,
   pads and immediates to 0; LOAD/STORE rows and columns to one, the back or
   the front half dropped (the front by moving the base addresses), strides
   to the row size; a micro-op LOAD's pads dropped; a one-entry STORE moved
   onto the first entry a GEMM/ALU writes; a GEMM/ALU loop cut to its last
   iteration (its micro-ops moved along);
5. **data**: zero the bytes no LOAD reads, then 1 KiB chunks (ddmin).

When these passes find nothing more, **moves** that keep the size but may let an
instruction or a field go are tried one at a time, each kept only if passes 1, 2,
the folding and the fields then make the case smaller (so the search cannot go
round in circles):

6. a LOAD of the zeros area (the prologue's) reads random data instead, so that
   a value the bug needs no longer takes a second instruction to make;
7. a GEMM/ALU uses the micro-ops of another nest or UOP LOAD of the same
   length, so that its own UOP LOAD can go; or two UOP LOADs become one, the first
   bringing the second's micro-ops after its own (the nests using them moved along);
8. a scratchpad entry is renamed: every micro-op field naming entry ``v`` of a
   buffer (and, for ACC, the STOREs reading OUT entry ``v``) names ``w``, an
   entry another LOAD or nest already writes, or 0, so that the LOAD writing
   ``v`` (or a pad around ``w``) can go.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import numpy as np

from ..errors import VTAError
from ..isa import DEP_FLAGS, MemId, Opcode, dispatch_engine
from ..progfile import elem_bytes
from .generator import DATA_BYTES, QUEUE_ENDS, Case, is_noop, noop
from .races import races, undefined_reads

_CHUNK = 1024


@dataclass
class ShrinkResult:
    """The smallest failing case found and how the search went."""

    case: Case
    stats: dict = field(default_factory=dict)


class _BudgetSpentError(Exception):
    """The time or test budget ran out."""


def same_failure(session, mismatch, fine: str | None = None) -> Callable[[Case], bool]:
    """A predicate: does a candidate, run from zeroed scratchpads, fail on ``session`` with
    ``mismatch``'s signature (and, given ``fine``, with that
    :func:`vta.regress.triage.signature`)?"""
    from .triage import signature

    target = mismatch.signature

    def fails(case: Case) -> bool:
        session.scrub()  # from zeroed scratchpads, whatever the last candidate left
        ref, dut, found = session.check(case)
        if found is None or found.signature != target:
            return False
        return fine is None or signature(case, ref, dut, found) == fine

    return fails


def shrink(case: Case, fails: Callable[[Case], bool], *, budget: float = 120.0,
           max_tests: int = 20000) -> ShrinkResult:
    """The smallest case the passes find that still ``fails`` (see the module docstring).

    ``budget`` is in seconds; when it or ``max_tests`` runs out the best case
    so far is returned (``stats["complete"]`` is then false).
    """
    s = _Shrinker(fails, budget, max_tests)
    best = case.copy()
    best.kind, best.notes = "shrunk", [f"shrunk from {case.describe()}"]
    complete = True
    try:
        while True:
            before = _size(best)
            for step in (s.instructions, s.tokens, s.instructions, s.merge, s.uops, s.fields,
                         s.data):
                best = step(best)
            if _size(best) >= before:
                best = s.moves(best)
                if _size(best) >= before:
                    break
    except _BudgetSpentError:
        complete = False
    best = s.best or best
    stats = {"tests": s.tests, "rejected": s.rejected,
             "seconds": round(time.monotonic() - s.start, 2),
             "complete": complete, "insns": [case.insn_count, best.insn_count],
             "uops": [_uops(case), _uops(best)],
             "data_bytes": [_nonzero(case.data), _nonzero(best.data)]}
    return ShrinkResult(best, stats)


_PADS = ("y_pad_0", "y_pad_1", "x_pad_0", "x_pad_1")
#: Fields that place a range rather than size it: moving one is not shrinking.
_PLACES = frozenset({"sram_base", "dram_base", "uop_bgn", "uop_end"})


def _size(case: Case) -> tuple[int, int, int, int]:
    fields_sum = sum(sum(v for k, v in i.fields().items()
                         if k not in DEP_FLAGS and k not in _PLACES and v > 0)
                     for i in case.insns)
    return (case.insn_count, _uops(case), fields_sum, _nonzero(case.data))


def _uops(case: Case) -> int:
    return sum(len(k) for k in case.kernels if k)


def _nonzero(data: bytes) -> int:
    return len(data) - data.count(0)


class _Shrinker:
    def __init__(self, fails: Callable[[Case], bool], budget: float, max_tests: int):
        self.fails = fails
        self.deadline = time.monotonic() + budget
        self.start = time.monotonic()
        self.max_tests = max_tests
        self.tests = 0
        self.rejected = 0
        self.seen: dict[bytes, bool] = {}
        self.best: Case | None = None

    def test(self, case: Case | None) -> bool:
        if case is None:
            return False
        try:
            key = hashlib.sha1(bytes(case.image())).digest()
        except (VTAError, ValueError):
            return False  # a field that no longer fits, an area overflow: not a program
        if key in self.seen:
            return self.seen[key]
        if races(case, limit=1) or undefined_reads(case, limit=1):
            self.rejected += 1  # its result would depend on timing or on earlier programs
            self.seen[key] = False
            return False
        if time.monotonic() > self.deadline or self.tests >= self.max_tests:
            raise _BudgetSpentError
        self.tests += 1
        ok = self.fails(case)
        self.seen[key] = ok
        if ok and (self.best is None or _size(case) < _size(self.best)):
            self.best = case
        return ok

    # -------------------------------------------------------------- ddmin
    def ddmin(self, case: Case, units: list, apply: Callable[[Case, set], Case | None]) -> Case:
        """Remove as many ``units`` as possible (Zeller's ddmin, complements first)."""
        removed: set = set()
        remaining = list(units)
        n = 2
        while remaining:
            size = math.ceil(len(remaining) / n)
            chunks = [remaining[k:k + size] for k in range(0, len(remaining), size)]
            for chunk in chunks:
                trial = removed | set(chunk)
                if self.test(apply(case, trial)):
                    removed = trial
                    remaining = [u for u in remaining if u not in trial]
                    n = max(n - 1, 2)
                    break
            else:
                if n >= len(remaining):
                    break
                n = min(len(remaining), 2 * n)
        return apply(case, removed) if removed else case

    # -------------------------------------------------------------- passes
    def instructions(self, case: Case) -> Case:
        units = [i for i, insn in enumerate(case.insns)
                 if insn.opcode != Opcode.FINISH and not (is_noop(insn) and _flags(insn))]
        return self.ddmin(case, units, _drop_insns)

    def tokens(self, case: Case) -> Case:
        return self.ddmin(case, _token_units(case), _drop_tokens)

    def merge(self, case: Case) -> Case:
        """Fold each flag-only no-op into its engine's neighbours: pops into the next
        instruction, pushes into the previous one."""
        index = 0
        while index < case.insn_count:
            trial = _fold_noop(case, index)
            if trial is not None and self.test(trial):
                case = trial
            else:
                index += 1
        return case

    def uops(self, case: Case) -> Case:
        units = [(i, j) for i, k in enumerate(case.kernels) if k
                 for j in range(len(k))]
        return self.ddmin(case, units, _drop_uops)

    def fields(self, case: Case) -> Case:
        for index in range(case.insn_count):
            for changes in [*_field_candidates(case.insns[index]),
                            *_store_targets(case, index)]:
                trial = case.copy()
                trial.insns[index] = trial.insns[index].replace(**changes)
                if self.test(trial):
                    case = trial
            for loop in ("iter_in", "iter_out"):
                trial = _last_iteration(case, index, loop)
                if self.test(trial):
                    case = trial
        return case

    def drop_round(self, case: Case) -> Case:
        """Passes 1 and 2, then the folding of flag-only no-ops."""
        for step in (self.instructions, self.tokens, self.instructions, self.merge):
            case = step(case)
        return case

    def moves(self, case: Case) -> Case:
        """The first move (6-8 of the module docstring) after which passes 1, 2, the
        folding and the fields make the case smaller, with them done; else ``case``."""
        for moved in _moves(case):
            if self.test(moved):
                smaller = self.fields(self.drop_round(moved))
                if _size(smaller) < _size(case):
                    return smaller
        return case

    def data(self, case: Case) -> Case:
        read = _data_read(case)
        trial = case.copy()
        trial.data = bytes(b if r else 0 for b, r in zip(case.data, read, strict=True))
        if trial.data != case.data and self.test(trial):
            case = trial
        chunks = [k for k in range(0, DATA_BYTES, _CHUNK) if any(case.data[k:k + _CHUNK])]
        return self.ddmin(case, chunks, _zero_chunks)


def _flags(insn) -> dict[str, int]:
    return {f: 1 for f in DEP_FLAGS if getattr(insn, f, 0)}


def _drop_insns(case: Case, removed: set) -> Case:
    out = case.copy()
    out.insns, out.kernels = [], []
    for i, (insn, kernel) in enumerate(zip(case.insns, case.kernels, strict=True)):
        if i not in removed:
            out.insns.append(insn)
            out.kernels.append(kernel)
        elif _flags(insn):  # keep its tokens on a no-op of the same engine
            out.insns.append(noop(dispatch_engine(insn), **_flags(insn)))
            out.kernels.append(None)
    return out


def _fold_noop(case: Case, index: int) -> Case | None:
    insn = case.insns[index]
    if not (is_noop(insn) and _flags(insn)):
        return None
    engine = dispatch_engine(insn)
    same = [i for i, other in enumerate(case.insns) if dispatch_engine(other) == engine]
    pos = same.index(index)
    out = case.copy()
    for flag in _flags(insn):
        if flag.startswith("pop"):
            if pos + 1 >= len(same):
                return None
            target = same[pos + 1]
        else:
            if pos == 0:
                return None
            target = same[pos - 1]
        if getattr(out.insns[target], flag, 0):
            return None
        out.insns[target] = out.insns[target].replace(**{flag: 1})
    del out.insns[index]
    del out.kernels[index]
    return out


def _token_units(case: Case) -> list[tuple[str, str, int]]:
    """(queue, "pair"|"push"|"pop", k) for every push/pop of every queue."""
    units = []
    for q, (prod, push, cons, pop) in QUEUE_ENDS.items():
        pushes = [i for i, insn in enumerate(case.insns)
                  if dispatch_engine(insn) == prod and getattr(insn, push, 0)]
        pops = [i for i, insn in enumerate(case.insns)
                if dispatch_engine(insn) == cons and getattr(insn, pop, 0)]
        units += [(q, "pair", k) for k in range(min(len(pushes), len(pops)))]
        units += [(q, "push", k) for k in range(len(pops), len(pushes))]
        units += [(q, "pop", k) for k in range(len(pushes), len(pops))]
    return units


def _drop_tokens(case: Case, removed: set) -> Case:
    out = case.copy()
    for q, (prod, push, cons, pop) in QUEUE_ENDS.items():
        pushes = [i for i, insn in enumerate(case.insns)
                  if dispatch_engine(insn) == prod and getattr(insn, push, 0)]
        pops = [i for i, insn in enumerate(case.insns)
                if dispatch_engine(insn) == cons and getattr(insn, pop, 0)]
        for _, how, k in (u for u in removed if u[0] == q):
            if how in ("pair", "push"):
                out.insns[pushes[k]] = out.insns[pushes[k]].replace(**{push: 0})
            if how in ("pair", "pop"):
                out.insns[pops[k]] = out.insns[pops[k]].replace(**{pop: 0})
    return out


def _drop_uops(case: Case, removed: set) -> Case:
    out = case.copy()
    for i in sorted({i for i, _ in removed}):
        load = out.insns[i]
        kernel = out.kernels[i]
        if load.y_size != 1 or load.x_size != len(kernel):
            continue  # not a plain one-row kernel load: leave it
        row = load.x_pad_0 + load.x_size + load.x_pad_1
        first = load.sram_base + load.y_pad_0 * row + load.x_pad_0
        for j in sorted((j for k, j in removed if k == i), reverse=True):
            del kernel[j]
            pos = first + j
            for c in range(i + 1, out.insn_count):  # the GEMM/ALUs up to the next UOP LOAD
                user = out.insns[c]
                if user.opcode == Opcode.LOAD and user.memory_type == MemId.UOP:
                    break
                if user.opcode in (Opcode.GEMM, Opcode.ALU):
                    bgn = user.uop_bgn - (user.uop_bgn > pos)
                    end = user.uop_end - (user.uop_end > pos)
                    out.insns[c] = user.replace(uop_bgn=bgn, uop_end=end)
        n = len(kernel)
        out.insns[i] = load.replace(x_size=n, x_stride=n)
    return out


def _field_candidates(insn) -> Iterable[dict[str, int]]:
    """Smaller values to try for an instruction's fields, most reducing first."""
    op = insn.opcode
    if op in (Opcode.GEMM, Opcode.ALU):
        for f in ("iter_out", "iter_in"):
            if getattr(insn, f) > 1:
                yield {f: 1}
                yield {f: getattr(insn, f) // 2}
        for f in ("dst_factor_out", "dst_factor_in", "src_factor_out", "src_factor_in",
                  "wgt_factor_out", "wgt_factor_in", "imm", "use_imm", "reset_reg"):
            if getattr(insn, f, 0):
                yield {f: 0}
    elif op == Opcode.LOAD and insn.memory_type == MemId.UOP and insn.y_size == 1 and any(
            getattr(insn, f) for f in _PADS):
        # the pads off a micro-op LOAD, its micro-ops staying at the same entries
        first = insn.sram_base + insn.y_pad_0 * (insn.x_pad_0 + insn.x_size + insn.x_pad_1) \
            + insn.x_pad_0
        yield {**dict.fromkeys(_PADS, 0), "sram_base": first}
    elif op in (Opcode.LOAD, Opcode.STORE) and insn.x_size and insn.memory_type != MemId.UOP:
        for f in _PADS:
            if getattr(insn, f):
                yield {f: 0}
        yield from _range_candidates(insn)
        if insn.x_stride != insn.x_size:
            yield {"x_stride": insn.x_size}


def _range_candidates(insn) -> Iterable[dict[str, int]]:
    """A LOAD's or STORE's rows and columns cut down: to one, the back half dropped, then
    from the front (the range keeps its end, the base addresses move up) half of them, all
    but the last, or the first alone."""
    y, x = insn.y_size, insn.x_size
    # entries of one scratchpad row (a LOAD's pads included; a STORE has none)
    row = insn.x_pad_0 + x + insn.x_pad_1
    if y > 1:
        yield {"y_size": 1}
        yield {"y_size": y - y // 2}
        if not insn.y_pad_0:
            for k in dict.fromkeys((y // 2, y - 1, 1)):
                yield {"y_size": y - k, "sram_base": insn.sram_base + k * row,
                       "dram_base": insn.dram_base + k * insn.x_stride}
    if x > 1:
        yield {"x_size": 1, "x_stride": max(1, min(insn.x_stride, 1))}
        yield {"x_size": x - x // 2}
        if y == 1 and not (insn.x_pad_0 or insn.y_pad_0):
            for k in dict.fromkeys((x // 2, x - 1, 1)):
                yield {"x_size": x - k, "x_stride": x - k, "sram_base": insn.sram_base + k,
                       "dram_base": insn.dram_base + k}


def _kernel_slot(case: Case, index: int, pos: int) -> tuple[int, int] | None:
    """(UOP LOAD, position in its kernel) of the micro-op at buffer entry ``pos`` that the
    GEMM/ALU ``index`` uses: the last plain one-row micro-op LOAD before it covering it."""
    for i in range(index - 1, -1, -1):
        load, kernel = case.insns[i], case.kernels[i]
        if kernel is None or load.opcode != Opcode.LOAD or load.memory_type != MemId.UOP:
            continue
        first = load.sram_base + load.y_pad_0 * (load.x_pad_0 + load.x_size + load.x_pad_1) \
            + load.x_pad_0
        if load.y_size == 1 and load.x_size == len(kernel) and first <= pos < first + len(kernel):
            return i, pos - first
    return None


def _last_iteration(case: Case, index: int, loop: str) -> Case | None:
    """A GEMM/ALU nest cut to the last iteration of ``loop`` (``iter_in``/``iter_out``): one
    iteration, its micro-ops moved by the loop's factors times the iterations dropped."""
    insn = case.insns[index]
    if insn.opcode not in (Opcode.GEMM, Opcode.ALU) or getattr(insn, loop) < 2:
        return None
    side = loop.removeprefix("iter_")
    steps = getattr(insn, loop) - 1
    shift = {f"{what}_idx": steps * getattr(insn, f"{what}_factor_{side}", 0)
             for what in ("dst", "src", "wgt")}
    out = case.copy()
    for pos in range(insn.uop_bgn, insn.uop_end):
        slot = _kernel_slot(case, index, pos)
        if slot is None:
            return None
        i, j = slot
        uop = out.kernels[i][j]
        out.kernels[i][j] = type(uop)(**{k: getattr(uop, k) + v for k, v in shift.items()})
    out.insns[index] = insn.replace(**{loop: 1})
    return out


def _store_targets(case: Case, index: int) -> list[dict[str, int]]:
    """A one-entry STORE moved onto the first OUT entry each GEMM/ALU writes (so that the
    writer's loops can shrink to their first iteration next; a move onto a write not
    ordered before the STORE is a race or an undefined read, and rejected)."""
    insn = case.insns[index]
    if insn.opcode != Opcode.STORE or insn.x_size != 1 or insn.y_size != 1:
        return []
    from .races import out_writes

    firsts = sorted({min(entries) for _, entries in out_writes(case) if entries})
    return [{"sram_base": e} for e in firsts if e < insn.sram_base][:4]


def _data_read(case: Case) -> list[bool]:
    """Which bytes of the data area some LOAD (or anything else) may read."""
    cfg = case.cfg
    lo = case.base + case.layout.data
    read = [False] * DATA_BYTES
    elem = {MemId.INP: cfg.INP_ELEM_BYTES, MemId.WGT: cfg.WGT_ELEM_BYTES,
            MemId.ACC: cfg.ACC_ELEM_BYTES, MemId.ACC_8BIT: cfg.BATCH * cfg.BLOCK_OUT}
    for insn in case.insns:
        if insn.opcode != Opcode.LOAD or not insn.x_size:
            continue
        if insn.memory_type not in elem:
            continue
        e = elem[insn.memory_type]
        for y in range(insn.y_size):
            start = (insn.dram_base + y * insn.x_stride) * e - lo
            for b in range(max(0, start), min(DATA_BYTES, start + insn.x_size * e)):
                read[b] = True
    return read


def _zero_chunks(case: Case, removed: set) -> Case:
    out = case.copy()
    data = bytearray(case.data)
    for k in removed:
        data[k:k + _CHUNK] = bytes(min(_CHUNK, DATA_BYTES - k))
    out.data = bytes(data)
    return out


# ------------------------------------------------------------------ moves
def _moves(case: Case) -> Iterable[Case]:
    """Candidates of the same size that may let an instruction go (module docstring)."""
    yield from _data_sources(case)
    yield from _shared_kernels(case)
    yield from _joined_kernels(case)
    yield from _renames(case)


def _data_sources(case: Case) -> Iterable[Case]:
    """LOADs of the zeros area reading the data area instead, all at once, then each; the
    bytes they read there made random if the data pass zeroed them."""
    lay = case.layout
    zeros = (case.base + lay.zeros, case.base + lay.data)
    moved: dict[int, tuple] = {}
    for i, insn in enumerate(case.insns):
        if insn.opcode != Opcode.LOAD or not insn.x_size or insn.memory_type not in (
                MemId.INP, MemId.WGT, MemId.ACC, MemId.ACC_8BIT):
            continue
        e = elem_bytes(case.cfg, insn.memory_type)
        span = (insn.y_size - 1) * insn.x_stride + insn.x_size  # elements
        lo = insn.dram_base * e
        if not (zeros[0] <= lo and lo + span * e <= zeros[1]) or span * e > DATA_BYTES:
            continue
        offset = min(lo // e - zeros[0] // e, DATA_BYTES // e - span)
        moved[i] = (insn.replace(dram_base=(case.base + lay.data) // e + offset),
                    offset * e, span * e)
    for chosen in ([*moved] if len(moved) > 1 else [], *([i] for i in moved)):
        if not chosen:
            continue
        out = case.copy()
        data = bytearray(case.data)
        rng = np.random.default_rng(case.seed)
        for i in chosen:
            out.insns[i], lo, n = moved[i]
            if not any(data[lo:lo + n]):
                data[lo:lo + n] = rng.integers(0, 256, n, dtype=np.uint8).tobytes()
        out.data = bytes(data)
        yield out


def _nests(case: Case) -> list[int]:
    return [i for i, insn in enumerate(case.insns)
            if insn.opcode in (Opcode.GEMM, Opcode.ALU) and insn.uop_end > insn.uop_bgn]


def _shared_kernels(case: Case) -> Iterable[Case]:
    """A nest using the micro-op range of another nest, or of a UOP LOAD before it, of
    the same length (so that its own UOP LOAD may go)."""
    nests = _nests(case)
    for c in nests:
        insn = case.insns[c]
        n = insn.uop_end - insn.uop_bgn
        starts = [case.insns[d].uop_bgn for d in nests
                  if d != c and case.insns[d].uop_end - case.insns[d].uop_bgn == n]
        for i in range(c):
            load, kernel = case.insns[i], case.kernels[i]
            if kernel and load.opcode == Opcode.LOAD and load.y_size == 1 \
                    and load.x_size == len(kernel) >= n:
                row = load.x_pad_0 + load.x_size + load.x_pad_1
                starts.append(load.sram_base + load.y_pad_0 * row + load.x_pad_0)
        for start in dict.fromkeys(starts):
            if start != insn.uop_bgn:
                out = case.copy()
                out.insns[c] = insn.replace(uop_bgn=start, uop_end=start + n)
                yield out


def _joined_kernels(case: Case) -> Iterable[Case]:
    """Two UOP LOADs of one row without pads as one: the first brings the second's
    micro-ops too, after its own, and the nests after the second that use them read them
    there (until a UOP LOAD writes their entries again), so that the second can go."""
    loads = [i for i, (insn, kernel) in enumerate(zip(case.insns, case.kernels, strict=True))
             if kernel and insn.y_size == 1 and insn.x_size == len(kernel)
             and not any(getattr(insn, p) for p in _PADS)]
    depth, nests = case.cfg.UOP_BUFF_DEPTH, set(_nests(case))
    for pos, a in enumerate(loads):
        for b in loads[pos + 1:]:
            first, second = case.insns[a], case.insns[b]
            joined = [*case.kernels[a], *case.kernels[b]]
            if first.sram_base + len(joined) > depth:
                continue
            lo, hi = second.sram_base, second.sram_base + second.x_size
            shift = first.sram_base + first.x_size - lo
            out = case.copy()
            out.insns[a] = first.replace(x_size=len(joined), x_stride=len(joined))
            out.kernels[a] = joined
            for j in range(b + 1, len(case.insns)):
                insn = case.insns[j]
                if case.kernels[j] is not None and insn.sram_base < hi and \
                        lo < insn.sram_base + insn.x_size:
                    break  # a UOP LOAD writes them again
                if j in nests and lo <= insn.uop_bgn and insn.uop_end <= hi:
                    out.insns[j] = insn.replace(uop_bgn=insn.uop_bgn + shift,
                                                uop_end=insn.uop_end + shift)
            yield out


def _field_buffers(insn) -> dict[str, str]:
    """The buffer each micro-op field of nest ``insn`` names."""
    if insn.opcode == Opcode.GEMM:
        return {"dst_idx": "ACC"} if insn.reset_reg else {
            "dst_idx": "ACC", "src_idx": "INP", "wgt_idx": "WGT"}
    return {"dst_idx": "ACC"} if insn.use_imm else {"dst_idx": "ACC", "src_idx": "ACC"}


_LOADED = {MemId.INP: "INP", MemId.WGT: "WGT", MemId.ACC: "ACC", MemId.ACC_8BIT: "ACC"}


def _renames(case: Case) -> Iterable[Case]:
    """Entry ``v`` of a buffer renamed ``w`` in every micro-op field naming it (and for ACC,
    in the one-entry STOREs of OUT entry ``v``): ``w`` an entry that a LOAD (its first
    entry or its first loaded one) or another nest (its destination) writes, or 0."""
    # (kernel slot, field) -> buffer, from the nests using each micro-op
    named: dict[tuple[int, int, str], str] = {}
    for c in _nests(case):
        insn = case.insns[c]
        for pos in range(insn.uop_bgn, insn.uop_end):
            slot = _kernel_slot(case, c, pos)
            if slot is None:
                continue
            for f, buf in _field_buffers(insn).items():
                named.setdefault((*slot, f), buf)
    values: dict[str, dict[int, list]] = {}
    for (i, j, f), buf in named.items():
        values.setdefault(buf, {}).setdefault(getattr(case.kernels[i][j], f), []).append(
            (i, j, f))
    targets: dict[str, list[int]] = {}
    for insn in case.insns:
        buf = _LOADED.get(insn.memory_type) if insn.opcode == Opcode.LOAD and insn.x_size \
            else None
        if buf is not None:
            row = insn.x_pad_0 + insn.x_size + insn.x_pad_1
            targets.setdefault(buf, []).extend(
                [insn.sram_base, insn.sram_base + insn.y_pad_0 * row + insn.x_pad_0])
    for buf, entries in values.items():
        wanted = [*targets.get(buf, []), *(entries if buf == "ACC" else []), 0]
        for v, fields in entries.items():
            for w in dict.fromkeys(wanted):
                if w != v:
                    yield _rename(case, fields, buf, v, w)


def _rename(case: Case, fields: list, buf: str, v: int, w: int) -> Case:
    out = case.copy()
    for i, j, f in fields:
        out.kernels[i][j] = dataclasses.replace(out.kernels[i][j], **{f: w})
    if buf == "ACC":
        for k, insn in enumerate(out.insns):
            if insn.opcode == Opcode.STORE and insn.x_size == insn.y_size == 1 \
                    and insn.sram_base == v:
                out.insns[k] = insn.replace(sram_base=w)
    return out

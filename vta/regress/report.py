"""Failing and shrunk cases as program files (docs/program-files.md), next to the report.

A case becomes a :class:`vta.progfile.Program` with one region per area of
its arena (``zeros``, ``data``, ``uops``, ``out``, ``insn``).  When the golden
reference finished the case, the ``out`` region carries the reference's
result as its expectation, so ``vta run FILE -b verilator`` replays the
failure and reports the first byte where the device differs from the golden
model (exit status 3).
"""

from __future__ import annotations

from pathlib import Path

from .. import progfile
from ..isa import encode
from .generator import Case


def to_program(case: Case, *, expect_out: bytes | None = None,
               notes: list[str] | None = None) -> progfile.Program:
    """``case`` as a program file's :class:`~vta.progfile.Program`.

    ``expect_out`` is the output area after the reference's run (its
    expectation); ``notes`` go to the file's header comments.
    """
    lay = case.layout
    raw = b"".join(encode(i, case.cfg) for i in case.placed())
    areas = lay.areas()
    regions = [
        progfile.Region("zeros", case.base + lay.zeros, areas["zeros"][1], "in"),
        progfile.Region("data", case.base + lay.data, areas["data"][1], "in", case.data),
        progfile.Region("uops", case.base + lay.uops, areas["uops"][1], "uop",
                        case.uop_bytes()),
        progfile.Region("out", case.base + lay.out, areas["out"][1], "out", b"", expect_out),
        progfile.Region("insn", case.insn_addr, len(raw), "insn", raw),
    ]
    for r in regions:  # trailing zeros are implied
        r.data = r.data.rstrip(b"\0")
        if r.expect is not None:
            r.expect = r.expect.rstrip(b"\0")
    return progfile.Program(case.cfg, case.insn_addr, case.insn_count, regions, None,
                            [f"vta regress: {case.describe()}", *(notes or [])])


def write_case(case: Case, stem: Path, **kw) -> Path:
    """Write ``case`` as ``<stem>.vtaprog`` (:func:`to_program` options); returns the path."""
    path = stem.with_name(stem.name + progfile.SUFFIX)
    to_program(case, **kw).save(path)
    return path

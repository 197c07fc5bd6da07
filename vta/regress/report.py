"""Writing failing and shrunk cases next to a regression's report."""

from __future__ import annotations

from pathlib import Path

from ..isa import disassemble
from .generator import Case


def listing(case: Case) -> str:
    """The case as text: a header, then one ``vta asm`` line per instruction.

    Each UOP LOAD is followed by comments listing the micro-ops it loads.
    """
    cfg = case.cfg
    lines = [f"# {case.describe()}", f"# configuration {cfg.name}: {cfg.bitstream}, bus "
             f"{cfg.BUS_WIDTH} bits", f"# arena at 0x{case.base:x}; instructions at "
             f"0x{case.insn_addr:x}, {case.insn_count} instructions"]
    for index, (insn, kernel) in enumerate(zip(case.placed(), case.kernels, strict=True)):
        lines.append(f"{index:5d}: {disassemble(insn)}")
        for uop in kernel or ():
            lines.append(f"#        UOP dst_idx={uop.dst_idx} src_idx={uop.src_idx} "
                         f"wgt_idx={uop.wgt_idx}")
    return "\n".join(lines) + "\n"


def write_case(case: Case, stem: Path) -> Path:
    """Write ``case`` as ``<stem>.s`` (:func:`listing`); returns the path."""
    path = stem.with_name(stem.name + ".s")
    path.write_text(listing(case))
    return path

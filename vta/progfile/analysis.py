"""Static analysis of a stream: the DRAM bytes its LOADs and STOREs touch, and the
micro-ops each GEMM/ALU instruction runs (followed through the UOP loads)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np

from .. import isa
from ..config import Config
from ..isa import UOP_BYTES, Insn, MemId, Opcode, Uop
from .program import Program, elem_bytes


@dataclass(frozen=True)
class Access:
    """The DRAM bytes one LOAD or STORE touches: rows of ``row_bytes`` from ``start``."""

    index: int
    kind: str  # "uop", "in" (LOAD of INP/WGT/ACC/ACC_8BIT) or "out" (STORE)
    start: int
    rows: int
    row_bytes: int
    stride: int

    @property
    def end(self) -> int:
        return self.start + (self.rows - 1) * self.stride + self.row_bytes if self.rows else \
            self.start


def accesses(insns: Iterable[Insn], cfg: Config) -> list[Access]:
    """DRAM accesses of every LOAD/STORE that moves data (no-ops and bad types skipped)."""
    out = []
    for index, insn in enumerate(insns):
        if insn.opcode not in (Opcode.LOAD, Opcode.STORE) or not insn.x_size:
            continue
        elem = elem_bytes(cfg, insn.memory_type)
        if elem is None or (insn.opcode == Opcode.STORE) != (insn.memory_type == MemId.OUT):
            continue
        kind = ("out" if insn.opcode == Opcode.STORE
                else "uop" if insn.memory_type == MemId.UOP else "in")
        out.append(Access(index, kind, insn.dram_base * elem, insn.y_size, insn.x_size * elem,
                          insn.x_stride * elem))
    return out


def compute_uops(prog: Program) -> dict[int, list[tuple[int, Uop]]]:
    """For every GEMM/ALU instruction, the micro-ops it runs: ``index -> [(entry, Uop)]``.

    The micro-op buffer is followed statically through the stream's UOP LOADs
    (they and GEMM/ALU all run on the compute engine, in stream order) from the
    program's memory image; entries no LOAD wrote read as zero.
    """
    return follow_uops(prog.insns(), prog.cfg, prog.read)


def follow_uops(insns: Iterable[Insn], cfg: Config, read: Callable[[int, int], bytes]
                ) -> dict[int, list[tuple[int, Uop]]]:
    """:func:`compute_uops` for any stream: ``read(addr, nbytes)`` gives the memory image
    before the run (zeros outside what it holds)."""
    sram = np.zeros(cfg.UOP_BUFF_DEPTH, dtype="<u4")
    out: dict[int, list[tuple[int, Uop]]] = {}
    for index, insn in enumerate(insns):
        if insn.opcode == Opcode.LOAD and insn.memory_type == MemId.UOP and insn.x_size:
            x_total = insn.x_pad_0 + insn.x_size + insn.x_pad_1
            block = np.zeros((insn.y_pad_0 + insn.y_size + insn.y_pad_1, x_total), dtype="<u4")
            for y in range(insn.y_size):
                raw = read((insn.dram_base + y * insn.x_stride) * UOP_BYTES,
                           insn.x_size * UOP_BYTES)
                block[insn.y_pad_0 + y, insn.x_pad_0:insn.x_pad_0 + insn.x_size] = (
                    np.frombuffer(raw, dtype="<u4"))
            flat = block.reshape(-1)
            n = max(0, min(flat.size, sram.size - insn.sram_base))
            sram[insn.sram_base:insn.sram_base + n] = flat[:n]
        elif insn.opcode in (Opcode.GEMM, Opcode.ALU):
            entries = range(insn.uop_bgn, min(insn.uop_end, sram.size))
            out[index] = [(e, isa.decode_uop(int(sram[e]).to_bytes(4, "little"), cfg))
                          for e in entries]
    return out


def region_role(kinds: set[str]) -> str:
    """The role of a region from the kinds of access that touch it (:data:`ROLES`)."""
    reads = kinds & {"in", "uop", "insn"}
    if "out" in kinds:
        return "inout" if reads else "out"
    if "insn" in kinds:
        return "insn"
    if reads == {"uop"}:
        return "uop"
    return "in" if reads else "data"

"""Program files: the data model and its canonical text (the file format).

A program file (suffix ``.vtaprog``) holds everything a run needs: the
configuration, the device-memory regions the stream reads or writes (with their
addresses, roles and contents), the instruction address and count, and
optionally the contents the output regions had after the run that was
recorded.  The format is line-oriented text, documented in
``docs/program-files.md``; in short::

    .vta_program 1
    .config {"name": "tiny", "LOG_INP_WIDTH": 3, ...}
    .run @insn 7
    .region x addr=0x1000 size=64 role=in
    +0000: 01 ff 02 fe 00 00 00 00 00 00 00 00 00 00 00 00
    .region insn addr=0x3000 size=112 role=insn
         0: LOAD UOP x_size=1 y_size=1 x_stride=1 dram_base=@uop
         1: GEMM uop_end=1 iter_out=1 iter_in=1 ...
    .region uop addr=0x2000 size=4 role=uop
         0: UOP dst_idx=0 src_idx=0 wgt_idx=0
    .expect out
    +0000: 0a 00 ...

Instruction lines are :func:`vta.isa.disassemble` text and micro-op lines
:func:`vta.isa.disassemble_uop` text, so a program can be written by hand;
``dram_base=@NAME+N`` refers to element ``N`` of region ``NAME``.

Programs come from three places: :func:`capture` records a run a device is about
to make (``vta.open_device(..., capture=DIR)``, ``$VTA_CAPTURE``, or
``CommandQueue.synchronize(capture=PATH)``), :func:`parse` / :func:`load` read
text, and :class:`Program` can be built directly.  :func:`replay` runs one on a
freshly opened device.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from .. import isa
from ..config import Config
from ..errors import AssemblyError, VTAError
from ..isa import INSN_BYTES, UOP_BYTES, Insn, MemId, Opcode

#: The format version this module writes; files of a newer version are refused.
FORMAT_VERSION = 1
#: The suffix program files are written with.
SUFFIX = ".vtaprog"
#: Region roles: instructions, micro-ops, read by LOADs, written by STOREs, both, neither.
ROLES = ("insn", "uop", "in", "out", "inout", "data")
#: Device memory below this address (page 0) is never handed out, so no region lies there.
PAGE = 4096
_LINE_BYTES = 16
#: Region names: a letter or "_", then letters, digits, "_" or ".".
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*\Z")
#: The first line of every file this module writes.
HEADER = "# VTA program file (format: docs/program-files.md)"
# --------------------------------------------------------------------- model
@dataclass
class Region:
    """A named range of device memory.

    Attributes
    ----------
    name : str
        Unique name (letters, digits, ``_`` and ``.``).
    addr : int
        Device byte address (at least 4096).
    size : int
        Bytes.
    role : str
        One of :data:`ROLES`.
    data : bytes
        Contents before the run: the first ``len(data)`` bytes; the rest is zero.
    expect : bytes or None
        Contents after the recorded run (same convention), if recorded.
    """

    name: str
    addr: int
    size: int
    role: str = "data"
    data: bytes = b""
    expect: bytes | None = None

    @property
    def end(self) -> int:
        """First byte address past the region."""
        return self.addr + self.size

    def contents(self) -> bytes:
        """All ``size`` bytes before the run."""
        return _padded(self.data, self.size)

    def expected(self) -> bytes | None:
        """All ``size`` bytes after the recorded run, or ``None``."""
        return None if self.expect is None else _padded(self.expect, self.size)

    @property
    def is_output(self) -> bool:
        return self.role in ("out", "inout")


@dataclass
class Program:
    """A replayable run: configuration, memory regions and the stream to execute.

    Attributes
    ----------
    cfg : Config
        The configuration the stream is encoded for.
    insn_addr, insn_count : int
        Where the instructions are and how many run.
    regions : list of Region
        Non-overlapping memory regions, by address.
    mem_size : int or None
        Device memory the program asks for (``None``: the backend's default).
    notes : list of str
        Free text kept as comments at the top of the file (provenance, errors).
    """

    cfg: Config
    insn_addr: int
    insn_count: int
    regions: list[Region] = field(default_factory=list)
    mem_size: int | None = None
    notes: list[str] = field(default_factory=list)

    def region(self, name: str) -> Region:
        """The region called ``name``."""
        for r in self.regions:
            if r.name == name:
                return r
        raise KeyError(f"no region {name!r} (regions: {', '.join(self.names) or 'none'})")

    @property
    def names(self) -> list[str]:
        return [r.name for r in self.regions]

    @property
    def outputs(self) -> list[Region]:
        """Regions STOREs write (role ``out`` or ``inout``)."""
        return [r for r in self.regions if r.is_output]

    def region_at(self, addr: int) -> Region | None:
        """The region holding byte ``addr``, if any."""
        for r in self.regions:
            if r.addr <= addr < r.end:
                return r
        return None

    def read(self, addr: int, nbytes: int) -> bytes:
        """Bytes of the memory image before the run (zero outside every region)."""
        out = bytearray(nbytes)
        for r in self.regions:
            lo, hi = max(addr, r.addr), min(addr + nbytes, r.addr + len(r.data))
            if lo < hi:
                out[lo - addr:hi - addr] = r.data[lo - r.addr:hi - r.addr]
        return bytes(out)

    def stream(self) -> bytes:
        """The ``insn_count`` instructions (16 bytes each)."""
        return self.read(self.insn_addr, self.insn_count * INSN_BYTES)

    def insns(self) -> list[Insn]:
        """The decoded instructions."""
        return isa.decode_stream(self.stream(), self.cfg)

    @property
    def end(self) -> int:
        """First byte address past every region."""
        return max((r.end for r in self.regions), default=PAGE)

    def validate(self) -> None:
        """Raise :class:`~vta.errors.AssemblyError` unless the regions and run are consistent."""
        seen: set[str] = set()
        for r in self.regions:
            if not _NAME.match(r.name):
                raise AssemblyError(f"region name {r.name!r} must be letters, digits, '_' or '.', "
                                    "starting with a letter or '_'")
            if r.name in seen:
                raise AssemblyError(f"region name {r.name!r} is used twice")
            seen.add(r.name)
            if r.role not in ROLES:
                raise AssemblyError(f"region {r.name}: role must be one of {', '.join(ROLES)}, "
                                    f"not {r.role!r}")
            if r.addr < PAGE:
                raise AssemblyError(f"region {r.name}: addr must be at least 0x{PAGE:x} (page 0 "
                                    f"is never allocated), not 0x{r.addr:x}")
            if r.size <= 0:
                raise AssemblyError(f"region {r.name}: size must be positive, not {r.size}")
            for what, blob in (("data", r.data), ("expect", r.expect)):
                if blob is not None and len(blob) > r.size:
                    raise AssemblyError(f"region {r.name}: {len(blob)} bytes of {what} do not "
                                        f"fit its size of {r.size} bytes")
        ordered = sorted(self.regions, key=lambda r: r.addr)
        for a, b in zip(ordered, ordered[1:], strict=False):
            if b.addr < a.end:
                raise AssemblyError(f"regions {a.name} (0x{a.addr:x}..0x{a.end:x}) and {b.name} "
                                    f"(0x{b.addr:x}..0x{b.end:x}) overlap")
        if self.insn_count <= 0:
            raise AssemblyError(f"the run must execute at least one instruction, not "
                                f"{self.insn_count}")
        if self.insn_addr % INSN_BYTES:
            raise AssemblyError(f"the run's instruction address must be a multiple of 16, not "
                                f"0x{self.insn_addr:x}")
        if self.mem_size is not None and self.mem_size < self.end:
            raise AssemblyError(f"mem_size 0x{self.mem_size:x} is smaller than the regions, which "
                                f"end at 0x{self.end:x}")

    # ------------------------------------------------------------ text
    def to_text(self) -> str:
        """The program in the program-file format."""
        return format_program(self)

    def save(self, path: str | Path) -> Path:
        """Write the program file ``path`` (returned)."""
        path = Path(path)
        path.write_text(self.to_text())
        return path


def _padded(data: bytes, size: int) -> bytes:
    return data + bytes(size - len(data)) if len(data) < size else data


def _trim(data: bytes) -> bytes:
    return data.rstrip(b"\0")


def elem_bytes(cfg: Config, memory_type: int) -> int | None:
    """Bytes of one DRAM element of ``memory_type`` (``None`` for an undefined type)."""
    if memory_type == MemId.UOP:
        return UOP_BYTES
    if memory_type == MemId.ACC_8BIT:
        return cfg.BATCH * cfg.BLOCK_OUT
    if memory_type in (MemId.INP, MemId.WGT, MemId.ACC, MemId.OUT):
        return cfg.elem_bytes_of(MemId(memory_type).name)
    return None



# ---------------------------------------------------------------- formatting
def format_program(prog: Program) -> str:
    """Render ``prog`` as program-file text (canonical form)."""
    prog.validate()
    cfg = prog.cfg
    lines = [HEADER]
    lines += [f"# {ln}" if ln else "#" for note in prog.notes for ln in note.splitlines()]
    lines.append(f".vta_program {FORMAT_VERSION}")
    lines.append(".config " + json.dumps({"name": cfg.name, **cfg.to_dict()}))
    if prog.mem_size is not None:
        lines.append(f".mem_size 0x{prog.mem_size:x}")
    start = prog.region_at(prog.insn_addr)
    where = (f"@{start.name}" + (f"+{prog.insn_addr - start.addr}"
                                 if prog.insn_addr != start.addr else "")
             if start is not None else f"0x{prog.insn_addr:x}")
    lines.append(f".run {where} {prog.insn_count}")
    for r in sorted(prog.regions, key=lambda r: r.addr):
        lines.append("")
        lines.append(f".region {r.name} addr=0x{r.addr:x} size={r.size} role={r.role}")
        if r.addr <= prog.insn_addr < r.end and not (prog.insn_addr - r.addr) % INSN_BYTES:
            lines += _insn_lines(prog, r)
        elif r.role == "uop":
            lines += _uop_lines(cfg, r.data)
        else:
            lines += _hex_lines(r.data)
    for r in sorted(prog.outputs, key=lambda r: r.addr):
        if r.expect is not None:
            lines.append("")
            lines.append(f".expect {r.name}")
            lines += _hex_lines(r.expect)
    return "\n".join(lines) + "\n"


def _hex_lines(data: bytes, start: int = 0) -> list[str]:
    """Data lines for ``data[start:]``, 16 bytes each, all-zero lines left out."""
    out = []
    for off in range(start, len(data), _LINE_BYTES):
        chunk = data[off:off + _LINE_BYTES]
        if any(chunk):
            out.append(f"+{off:04x}: {chunk.hex(' ')}")
    return out


def _insn_lines(prog: Program, r: Region) -> list[str]:
    """The run's instructions as text; bytes before and after them as data lines."""
    cfg = prog.cfg
    first = prog.insn_addr - r.addr  # byte offset of instruction 0
    stop = min(len(r.data), first + prog.insn_count * INSN_BYTES)
    out = _hex_lines(r.data[:first])
    if first:
        out.append(f".org 0x{first:x}")
    for off in range(first, stop, INSN_BYTES):
        raw = _padded(r.data[off:off + INSN_BYTES], INSN_BYTES)
        insn = isa.decode(raw, cfg)
        text = _symbolic(isa.disassemble(insn), insn, prog)
        try:
            exact = isa.encode(isa.assemble(isa.disassemble(insn)), cfg) == raw
        except VTAError:  # undefined fields make disassembly lossy
            exact = False
        index = (off - first) // INSN_BYTES
        if exact:
            out.append(f"{index:6d}: {text}")
        else:
            out.append(f"+{off:04x}: {raw.hex(' ')}  # {index}: {text}")
    return out + _hex_lines(r.data, stop)


def _uop_lines(cfg: Config, data: bytes) -> list[str]:
    data = data + bytes(-len(data) % UOP_BYTES)
    out = []
    for off in range(0, len(data), UOP_BYTES):
        raw = data[off:off + UOP_BYTES]
        uop = isa.decode_uop(raw, cfg)
        if isa.encode_uop(uop, cfg) == raw:
            out.append(f"{off // UOP_BYTES:6d}: {isa.disassemble_uop(uop)}")
        else:
            out.append(f"+{off:04x}: {raw.hex(' ')}  # unused micro-op bits set")
    return out


def _symbolic(text: str, insn: Insn, prog: Program) -> str:
    """Replace ``dram_base=0x..`` by ``dram_base=@REGION+N`` when it points into a region."""
    if insn.opcode not in (Opcode.LOAD, Opcode.STORE) or not insn.dram_base:
        return text
    elem = elem_bytes(prog.cfg, insn.memory_type)
    if elem is None:
        return text
    r = prog.region_at(insn.dram_base * elem)
    if r is None or r.addr % elem:
        return text
    n = insn.dram_base - r.addr // elem
    return text.replace(f"dram_base={insn.dram_base:#x}",
                        f"dram_base=@{r.name}" + (f"+{n}" if n else ""))

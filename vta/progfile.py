"""Program files: one VTA run, replayable, as a text file people can read and diff.

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

import datetime
import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from . import __version__, isa
from .config import PRESETS, Config
from .errors import AssemblyError, ConfigError, DeviceError, EncodingError, VTAError
from .isa import INSN_BYTES, UOP_BYTES, Insn, MemId, Opcode, Uop

if TYPE_CHECKING:
    from .device import Device
    from .driver.host import RunStats

#: The format version this module writes; files of a newer version are refused.
FORMAT_VERSION = 1
#: The suffix program files are written with.
SUFFIX = ".vtaprog"
#: Region roles: instructions, micro-ops, read by LOADs, written by STOREs, both, neither.
ROLES = ("insn", "uop", "in", "out", "inout", "data")
#: Device memory below this address (page 0) is never handed out, so no region lies there.
PAGE = 4096
_LINE_BYTES = 16
#: The first line of every file this module writes.
HEADER = "# VTA program file (format: docs/program-files.md)"
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*\Z")
_SYMBOL = re.compile(r"dram_base=@([A-Za-z_][A-Za-z0-9_.]*)(?:([+-])(\d+|0x[0-9a-fA-F]+))?\Z")
_VALUE_TYPES = {".i8": "<i1", ".u8": "<u1", ".i16": "<i2", ".u16": "<u2", ".i32": "<i4",
                ".u32": "<u4"}


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


# ----------------------------------------------------------- static analysis
def elem_bytes(cfg: Config, memory_type: int) -> int | None:
    """Bytes of one DRAM element of ``memory_type`` (``None`` for an undefined type)."""
    if memory_type == MemId.UOP:
        return UOP_BYTES
    if memory_type == MemId.ACC_8BIT:
        return cfg.BATCH * cfg.BLOCK_OUT
    if memory_type in (MemId.INP, MemId.WGT, MemId.ACC, MemId.OUT):
        return cfg.elem_bytes_of(MemId(memory_type).name)
    return None


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


# ------------------------------------------------------------------ capture
def capture(device: Device, insn_addr: int, insn_count: int) -> Program:
    """Record what a run of ``insn_count`` instructions at ``insn_addr`` will need.

    Called just before the run: the regions are the device's live buffers the
    stream touches (instructions, LOAD sources, STORE destinations), named as
    given to :meth:`vta.device.Device.alloc`; memory the stream touches outside
    every buffer becomes page-aligned regions ``mem0``, ``mem1`` ...  A region
    only read keeps the bytes up to the last one read; trailing zeros are
    dropped (they are implied).
    """
    cfg = device.cfg
    transport = device.driver.transport
    try:
        stream = transport.mem_read(insn_addr, insn_count * INSN_BYTES)
    except DeviceError:
        stream = b""  # the fetch will fault; record what there is
    insns = isa.decode_stream(stream[:len(stream) // INSN_BYTES * INSN_BYTES], cfg)
    spans: list[tuple[str, int, int]] = [(a.kind, a.start, a.end) for a in accesses(insns, cfg)]
    if stream:
        spans.append(("insn", insn_addr, insn_addr + len(stream)))
    spans = [(k, lo, min(hi, transport.mem_size)) for k, lo, hi in spans
             if lo < transport.mem_size]
    names = getattr(device, "buffer_names", {})
    found: list[tuple[int, int, str | None, set[str], int]] = []  # addr size name kinds read_end
    covered = []
    for buf in device.driver.live_buffers:
        kinds, read_end = set(), buf.addr
        for kind, lo, hi in spans:
            if lo < buf.addr + buf.nbytes and buf.addr < hi:
                kinds.add(kind)
                if kind != "out":
                    read_end = max(read_end, min(hi, buf.addr + buf.nbytes))
                covered.append((max(lo, buf.addr), min(hi, buf.addr + buf.nbytes)))
        if kinds:
            found.append((buf.addr, buf.nbytes, names.get(buf.addr), kinds, read_end))
    buffers = [(addr, addr + size) for addr, size, *_ in found]
    for lo, hi, kinds in _uncovered(spans, covered):
        # whole pages, without reaching into a buffer's region
        lo = max([lo // PAGE * PAGE, PAGE] + [e for b, e in buffers if e <= lo])
        hi = min([-(-hi // PAGE) * PAGE] + [b for b, e in buffers if b >= hi])
        if lo < hi:
            found.append((lo, hi - lo, None, kinds, hi))
    regions = []
    used: set[str] = set()
    for addr, size, name, kinds, read_end in sorted(found):
        role = _role(kinds)
        data = transport.mem_read(addr, size if "out" in kinds else read_end - addr)
        regions.append(Region(_unique(name or _default_name(role), used), addr, size, role,
                              _trim(data)))
    return Program(cfg, insn_addr, insn_count, regions)


def _uncovered(spans, covered):
    """Parts of ``spans`` outside ``covered``: merged (lo, hi, kinds)."""
    pieces = []
    for kind, lo, hi in spans:
        parts = [(lo, hi)]
        for c_lo, c_hi in covered:
            parts = [p for a, b in parts for p in ((a, min(b, c_lo)), (max(a, c_hi), b))
                     if p[0] < p[1]]
        pieces += [(a, b, {kind}) for a, b in parts]
    pieces.sort(key=lambda p: p[0])
    merged: list[tuple[int, int, set[str]]] = []
    for a, b, kinds in pieces:
        if merged and a < -(-merged[-1][1] // PAGE) * PAGE:  # they share a page
            merged[-1] = (merged[-1][0], max(b, merged[-1][1]), merged[-1][2] | kinds)
        else:
            merged.append((a, b, kinds))
    return merged


def _role(kinds: set[str]) -> str:
    reads = kinds & {"in", "uop", "insn"}
    if "out" in kinds:
        return "inout" if reads else "out"
    if "insn" in kinds:
        return "insn"
    if reads == {"uop"}:
        return "uop"
    return "in" if reads else "data"


def _default_name(role: str) -> str:
    return {"insn": "insn", "uop": "uop"}.get(role, "mem")


def _unique(name: str, used: set[str]) -> str:
    base = re.sub(r"[^A-Za-z0-9_.]", "_", name) or "mem"
    if not re.match(r"[A-Za-z_]", base):
        base = "_" + base
    candidate, n = base, 1
    while candidate in used:
        candidate = f"{base}{n}"
        n += 1
    used.add(candidate)
    return candidate


def record_outputs(prog: Program, device: Device) -> None:
    """Set ``expect`` of every output region from the device's memory (after the run)."""
    transport = device.driver.transport
    for r in prog.outputs:
        r.expect = _trim(transport.mem_read(r.addr, r.size))


def capture_path(target: str | Path) -> Path:
    """Where a capture goes: ``target`` itself, or the next free ``run-NNNN.vtaprog`` in it.

    ``target`` is a directory unless it ends in :data:`SUFFIX`; directories are created.
    """
    target = Path(target)
    if target.suffix == SUFFIX:
        target.parent.mkdir(parents=True, exist_ok=True)
        return target
    target.mkdir(parents=True, exist_ok=True)
    n = 1 + max((int(m.group(1)) for p in target.glob(f"run-*{SUFFIX}")
                 if (m := re.fullmatch(rf"run-(\d+){re.escape(SUFFIX)}", p.name))), default=0)
    while True:
        path = target / f"run-{n:04d}{SUFFIX}"
        try:
            path.open("x").close()  # claim the name (another process may be capturing)
            return path
        except FileExistsError:
            n += 1


def provenance(device: Device) -> str:
    """A note naming the toolkit version, backend, configuration and time."""
    when = datetime.datetime.now().astimezone().isoformat(timespec="seconds")
    return (f"captured by vta {__version__} on the {device.backend} backend, configuration "
            f"{device.cfg.name} ({device.cfg.bitstream}), {when}")


# ------------------------------------------------------------------- replay
@dataclass
class Replay:
    """The result of :func:`replay`.

    Attributes
    ----------
    stats : RunStats
        The run's counters.
    outputs : dict[str, bytes]
        Contents of every output region after the run.
    """

    stats: RunStats
    outputs: dict[str, bytes]


def place(prog: Program, device: Device) -> list:
    """Allocate the program's regions on ``device`` at their addresses and write them.

    Each region gets its own buffer, named after it (regions sharing a page
    share one); the device must have nothing allocated below the program's end
    (a freshly opened device).  Returns the buffers.
    """
    if device.cfg != prog.cfg:
        raise DeviceError("the program was written for another configuration than the device's: "
                          + "; ".join(prog.cfg.diff(device.cfg)))
    prog.validate()
    mem = device.driver.transport.mem_size
    if prog.end > mem:
        raise DeviceError(f"the program's regions end at 0x{prog.end:x}, beyond the "
                          f"{device.backend} device's {mem}-byte memory (give a larger mem_size)")
    groups: list[list[Region]] = []  # regions sharing a page share a buffer
    for r in sorted(prog.regions, key=lambda r: r.addr):
        if groups and r.addr // PAGE * PAGE < _page_end(groups[-1][-1].end):
            groups[-1].append(r)
        else:
            groups.append([r])
    buffers, fillers = [], []
    try:
        cursor = PAGE
        for group in groups:
            lo = group[0].addr // PAGE * PAGE
            if lo > cursor:  # a gap: hold it while the next buffer is placed
                fillers.append(device.alloc(lo - cursor))
            buf = device.alloc(group[-1].end - lo, name=group[0].name)
            buffers.append(buf)
            if buf.addr != lo:
                raise DeviceError(
                    f"the program needs device memory 0x{PAGE:x}..0x{prog.end:x} free, but "
                    "buffers are already allocated there; replay it on a freshly opened device")
            for r in group:
                device.write(buf, r.contents(), offset=r.addr - lo)
            cursor = _page_end(group[-1].end)
    except BaseException:
        for buf in buffers:
            device.free(buf)
        raise
    finally:
        for buf in fillers:
            device.free(buf)
    return buffers


def _page_end(addr: int) -> int:
    return -(-addr // PAGE) * PAGE


def replay(prog: Program, device: Device, *, timeout: float | None = None) -> Replay:
    """Run ``prog`` on a freshly opened ``device``; returns the counters and output regions."""
    buffers = place(prog, device)
    try:
        stats = device.run(prog.insn_addr, prog.insn_count, timeout=timeout)
        outputs = {}
        for r in prog.outputs:
            buf = next(b for b in buffers if b.addr <= r.addr < b.addr + b.nbytes)
            outputs[r.name] = bytes(device.read(buf, r.size, offset=r.addr - buf.addr))
    finally:
        if not device.closed:
            for buf in buffers:
                device.free(buf)
    return Replay(stats, outputs)


@dataclass(frozen=True)
class Mismatch:
    """The first difference in one output region.

    Attributes
    ----------
    region : str
        Region name.
    offset : int
        Byte offset of the first differing byte.
    expected, actual : int
        The two byte values there.
    count : int
        Number of differing bytes in the region.
    """

    region: str
    offset: int
    expected: int
    actual: int
    count: int

    def describe(self, cfg: Config | None = None) -> str:
        where = f"byte {self.offset}"
        if cfg is not None:
            elem = cfg.OUT_ELEM_BYTES
            where += f" (OUT element {self.offset // elem}, lane {self.offset % elem})"
        return (f"region {self.region}: {self.count} byte(s) differ; first at {where}: expected "
                f"0x{self.expected:02x} ({_s8(self.expected)}), got 0x{self.actual:02x} "
                f"({_s8(self.actual)})")


def _s8(value: int) -> int:
    return value - 256 if value >= 128 else value


def compare(expected: dict[str, bytes], actual: dict[str, bytes]) -> list[Mismatch]:
    """Mismatches between two sets of region contents (regions present in both)."""
    out = []
    for name, want in expected.items():
        got = actual.get(name)
        if got is None:
            continue
        a = np.frombuffer(want, dtype=np.uint8)
        b = np.frombuffer(got, dtype=np.uint8)
        n = min(a.size, b.size)
        diff = np.flatnonzero(a[:n] != b[:n])
        if diff.size:
            i = int(diff[0])
            out.append(Mismatch(name, i, int(a[i]), int(b[i]), int(diff.size)))
    return out


def expectations(prog: Program) -> dict[str, bytes]:
    """Recorded contents of the output regions that have them."""
    return {r.name: r.expected() for r in prog.outputs if r.expect is not None}


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


# ------------------------------------------------------------------- parsing
@dataclass
class _Pending:
    """A region while its file is being read: header and body lines."""

    name: str
    addr: int | None
    size: int | None
    role: str | None
    lineno: int
    lines: list[tuple[int, str]] = field(default_factory=list)
    expect_lines: list[tuple[int, str]] | None = None


def load(path: str | Path) -> Program:
    """Read the program file ``path``."""
    path = Path(path)
    try:
        text = path.read_text()
    except UnicodeDecodeError:
        raise AssemblyError(f"{path}: not a program file (binary data; a raw instruction "
                            "stream is read by `vta disasm`)") from None
    except OSError as exc:
        raise AssemblyError(f"{path}: cannot be read ({exc.strerror})") from None
    return parse(text, where=str(path), base_dir=path.parent)


def parse(text: str, *, where: str = "<program>", base_dir: Path | None = None,
          cfg: Config | None = None) -> Program:
    """Parse program-file text (canonical or hand-written).

    ``cfg`` is used when the text has no ``.config`` line.  Errors are
    :class:`~vta.errors.AssemblyError` naming ``where`` and the line.
    """
    version = None
    run: tuple[int, str, str | None] | None = None
    mem_size = None
    pending: list[_Pending] = []
    current: list[tuple[int, str]] | None = None
    notes: list[str] = []
    in_header = True

    def fail(lineno: int, message: str) -> AssemblyError:
        return AssemblyError(f"{where}: line {lineno}: {message}")

    for lineno, raw_line in enumerate(text.splitlines(), start=1):
        line = raw_line.strip()
        if not line or line.startswith("#"):
            if in_header and line.startswith("#") and line != HEADER:
                notes.append(line[1:].strip())
            continue
        in_header = False
        if not line.startswith(".") or line.split()[0] in (*_VALUE_TYPES, ".zero", ".org"):
            if current is None:
                raise fail(lineno, f"data or instructions outside a region: {line!r} (start a "
                                   "region with `.region NAME`)")
            current.append((lineno, line))
            continue
        words = _strip_comment(line).split()
        directive, args = words[0], words[1:]
        if directive == ".vta_program":
            if len(args) != 1 or not args[0].isdigit():
                raise fail(lineno, "expected `.vta_program VERSION`")
            version = int(args[0])
            if version > FORMAT_VERSION:
                raise fail(lineno, f"format version {version} is newer than this vta reads "
                                   f"({FORMAT_VERSION}); upgrade vta")
            if version < 1:
                raise fail(lineno, f"format version must be 1..{FORMAT_VERSION}, not {version}")
        elif directive == ".config":
            cfg = _parse_config(_strip_comment(line)[len(".config"):].strip(), base_dir,
                                lambda msg, n=lineno: fail(n, msg))
        elif directive == ".mem_size":
            if len(args) != 1:
                raise fail(lineno, "expected `.mem_size BYTES`")
            mem_size = _int(args[0], "mem_size", lambda msg, n=lineno: fail(n, msg))
        elif directive == ".run":
            if len(args) not in (1, 2):
                raise fail(lineno, "expected `.run ADDRESS [COUNT]` (ADDRESS: @REGION, "
                                   "@REGION+BYTES or a number)")
            run = (lineno, args[0], args[1] if len(args) == 2 else None)
        elif directive == ".region":
            if not args:
                raise fail(lineno, "expected `.region NAME [addr=A] [size=S] [role=R]`")
            name = args[0]
            if not _NAME.match(name):
                raise fail(lineno, f"region name {name!r} must be letters, digits, '_' or '.', "
                                   "starting with a letter or '_'")
            if any(p.name == name for p in pending):
                raise fail(lineno, f"region {name!r} is defined twice")
            keys = _keywords(args[1:], ("addr", "size", "role"), lambda msg, n=lineno:
                             fail(n, msg))
            role = keys.get("role")
            if role is not None and role not in ROLES:
                raise fail(lineno, f"role must be one of {', '.join(ROLES)}, not {role!r}")
            num = {k: _int(keys[k], k, lambda msg, n=lineno: fail(n, msg))
                   for k in ("addr", "size") if k in keys}
            pending.append(_Pending(name, num.get("addr"), num.get("size"), role, lineno))
            current = pending[-1].lines
        elif directive == ".expect":
            if len(args) != 1:
                raise fail(lineno, "expected `.expect REGION`")
            target = next((p for p in pending if p.name == args[0]), None)
            if target is None:
                raise fail(lineno, f".expect names region {args[0]!r}, which is not defined "
                                   "above")
            if target.expect_lines is not None:
                raise fail(lineno, f"region {args[0]!r} has two .expect sections")
            target.expect_lines = []
            current = target.expect_lines
        else:
            raise fail(lineno, f"unknown directive {directive!r} (.vta_program, .config, "
                               ".mem_size, .run, .region, .expect, .i8/.u8/.i16/.u16/.i32/.u32, "
                               ".zero, .org)")
    if cfg is None:
        raise AssemblyError(f"{where}: no `.config` line (a preset name or a JSON object)")
    if not pending:
        raise AssemblyError(f"{where}: no regions (a program needs at least its instructions "
                            "in a `.region`)")
    if run is None:
        raise AssemblyError(f"{where}: no `.run ADDRESS COUNT` line")
    return _build(cfg, pending, run, mem_size, notes, fail)


def _strip_comment(line: str) -> str:
    return line.split("#", 1)[0].strip()


def _int(text: str, what: str, fail) -> int:
    try:
        return int(text, 0)
    except ValueError:
        raise fail(f"{what} must be an integer, not {text!r}") from None


def _keywords(args: list[str], allowed: tuple[str, ...], fail) -> dict[str, str]:
    out: dict[str, str] = {}
    for arg in args:
        key, sep, value = arg.partition("=")
        if not sep or key not in allowed:
            raise fail(f"expected key=value with key {', '.join(allowed)}, not {arg!r}")
        if key in out:
            raise fail(f"{key} is given twice")
        out[key] = value
    return out


def _parse_config(text: str, base_dir: Path | None, fail) -> Config:
    try:
        if text.startswith("{"):
            try:
                data = json.loads(text)
            except json.JSONDecodeError as exc:
                raise fail(f".config JSON is not valid: {exc}") from None
            if not isinstance(data, dict):
                raise fail(".config JSON must be an object")
            return Config.from_dict(data, name=str(data.get("name", "custom")),
                                    source=".config")
        if text in PRESETS or base_dir is None:
            return Config.load(text)
        path = Path(text)
        return Config.load(path if path.is_absolute() else base_dir / path)
    except ConfigError as exc:
        raise fail(str(exc)) from None


class _Body:
    """Bytes of one region or expectation as its lines are read."""

    def __init__(self) -> None:
        self.buf = bytearray()
        self.cursor = 0
        self.insns: list[tuple[int, int, str]] = []  # (offset, lineno, text) to assemble later

    def put(self, data: bytes) -> None:
        end = self.cursor + len(data)
        if end > len(self.buf):
            self.buf.extend(bytes(end - len(self.buf)))
        self.buf[self.cursor:end] = data
        self.cursor = end


_DATA_LINE = re.compile(r"\+([0-9a-fA-F]+)\s*:(.*)\Z")
_INDEXED = re.compile(r"-?\d+\s*:\s*(.*)\Z")


def _read_body(lines: list[tuple[int, str]], fail, *, code: bool) -> _Body:
    body = _Body()
    for lineno, line in lines:
        text = _strip_comment(line)
        if not text:
            continue
        m = _DATA_LINE.match(text)
        if m:
            body.cursor = int(m.group(1), 16)
            try:
                body.put(bytes.fromhex(m.group(2)))
            except ValueError:
                raise fail(lineno, f"data must be hex byte pairs, not {m.group(2).strip()!r}") \
                    from None
            continue
        head = text.split()[0]
        if head in _VALUE_TYPES:
            dtype = np.dtype(_VALUE_TYPES[head])
            info = np.iinfo(dtype)
            values = [_int(v, head, lambda msg, n=lineno: fail(n, msg)) for v in text.split()[1:]]
            bad = [v for v in values if not info.min <= v <= info.max]
            if bad:
                raise fail(lineno, f"{head} values must be in {info.min}..{info.max}, not "
                                   f"{bad[0]}")
            body.put(np.array(values, dtype=dtype).tobytes())
            continue
        if head == ".org":
            args = text.split()[1:]
            if len(args) != 1:
                raise fail(lineno, "expected `.org OFFSET` (a byte offset in the region)")
            body.cursor = _int(args[0], ".org", lambda msg, n=lineno: fail(n, msg))
            if body.cursor < 0:
                raise fail(lineno, f".org needs an offset >= 0, not {body.cursor}")
            continue
        if head == ".zero":
            args = text.split()[1:]
            if len(args) != 1:
                raise fail(lineno, "expected `.zero BYTES`")
            n = _int(args[0], ".zero", lambda msg, n=lineno: fail(n, msg))
            if n < 0:
                raise fail(lineno, f".zero needs a byte count >= 0, not {n}")
            body.put(bytes(n))
            continue
        if not code:
            raise fail(lineno, f"an .expect section holds data lines only, not {text!r}")
        m = _INDEXED.match(text)
        stmt = m.group(1) if m else text
        if stmt.split()[0].upper() == "UOP":
            body.insns.append((body.cursor, lineno, stmt))
            body.put(bytes(UOP_BYTES))
        else:
            body.insns.append((body.cursor, lineno, stmt))
            body.put(bytes(INSN_BYTES))
    return body


def _build(cfg: Config, pending: list[_Pending], run, mem_size, notes, fail) -> Program:
    bodies = {p.name: _read_body(p.lines, fail, code=True) for p in pending}
    filled = {name: len(body.buf) for name, body in bodies.items()}  # before trimming
    # addresses: given, else the next free page after the regions before
    regions: list[Region] = []
    next_addr = PAGE
    for p in pending:
        body = bodies[p.name]
        size = p.size if p.size is not None else max(len(body.buf), 1)
        addr = p.addr if p.addr is not None else next_addr
        if len(body.buf) > size:
            raise fail(p.lineno, f"region {p.name}: its lines fill {len(body.buf)} bytes, more "
                                 f"than size={size}")
        regions.append(Region(p.name, addr, size, p.role or "data"))
        next_addr = max(next_addr, -(-(addr + size) // PAGE) * PAGE)
    by_name = {r.name: r for r in regions}
    for p, r in zip(pending, regions, strict=True):
        body = bodies[p.name]
        for offset, lineno, stmt in body.insns:
            body.cursor = offset
            body.put(_assemble(stmt, lineno, cfg, by_name, fail))
        r.data = _trim(bytes(body.buf))
        if p.expect_lines is not None:
            exp = _read_body(p.expect_lines, fail, code=False)
            if len(exp.buf) > r.size:
                raise fail(p.lineno, f"region {p.name}: its .expect lines fill {len(exp.buf)} "
                                     f"bytes, more than size={r.size}")
            r.expect = _trim(bytes(exp.buf))
    lineno, where, count_text = run
    insn_addr = _address(where, by_name, lambda msg: fail(lineno, msg))
    if count_text is None:
        r = next((r for r in regions if r.addr <= insn_addr < r.end), None)
        if r is None:
            raise fail(lineno, "give the instruction count: the address is in no region")
        count = (filled[r.name] - (insn_addr - r.addr)) // INSN_BYTES
    else:
        count = _int(count_text, "the instruction count", lambda msg: fail(lineno, msg))
    prog = Program(cfg, insn_addr, count, sorted(regions, key=lambda r: r.addr), mem_size,
                   notes)
    missing = [r for r in prog.regions if r.name not in {p.name for p in pending if p.role}]
    if missing:
        _derive_roles(prog, missing)
    try:
        prog.validate()
    except AssemblyError as exc:
        raise fail(lineno, str(exc)) from None
    return prog


def _address(text: str, regions: dict[str, Region], fail) -> int:
    if text.startswith("@"):
        name, sign, off = re.fullmatch(r"@([^+-]+)(?:([+-])(.+))?", text).groups()
        if name not in regions:
            raise fail(f"unknown region {name!r} in {text!r}")
        delta = _int(off, "offset", fail) if off else 0
        return regions[name].addr + (-delta if sign == "-" else delta)
    return _int(text, "address", fail)


def _assemble(stmt: str, lineno: int, cfg: Config, regions: dict[str, Region], fail) -> bytes:
    where = f"line {lineno}"
    try:
        if stmt.split()[0].upper() == "UOP":
            return isa.encode_uop(isa.assemble_uop(stmt, where=where), cfg)
        tokens = stmt.split()
        symbol = None
        for i, tok in enumerate(tokens):
            if tok.startswith("dram_base=@"):
                symbol = _SYMBOL.match(tok)
                if symbol is None:
                    raise fail(lineno, f"expected dram_base=@REGION or @REGION+ELEMENTS, not "
                                       f"{tok!r}")
                tokens[i] = "dram_base=0"
        insn = isa.assemble(" ".join(tokens), where=where)
        if symbol is not None:
            name, sign, off = symbol.groups()
            if name not in regions:
                raise fail(lineno, f"dram_base names region {name!r}, which is not defined")
            elem = elem_bytes(cfg, getattr(insn, "memory_type", -1))
            if elem is None:
                raise fail(lineno, "dram_base=@REGION needs a LOAD or STORE of a defined memory "
                                   "type")
            r = regions[name]
            if r.addr % elem:
                raise fail(lineno, f"region {name} at 0x{r.addr:x} is not aligned to the "
                                   f"{elem}-byte {MemId(insn.memory_type).name} element")
            delta = int(off, 0) if off else 0
            insn.dram_base = r.addr // elem + (-delta if sign == "-" else delta)
        return isa.encode(insn, cfg)
    except AssemblyError as exc:
        raise fail(lineno, str(exc).removeprefix(f"{where}: ")) from None
    except EncodingError as exc:  # a field value that does not fit
        raise fail(lineno, str(exc)) from None


def _derive_roles(prog: Program, regions: list[Region]) -> None:
    """Roles from what the stream does with each region (for hand-written files)."""
    kinds: dict[str, set[str]] = {r.name: set() for r in regions}
    spans = [(a.kind, a.start, a.end) for a in accesses(prog.insns(), prog.cfg)]
    spans.append(("insn", prog.insn_addr, prog.insn_addr + prog.insn_count * INSN_BYTES))
    for r in regions:
        for kind, lo, hi in spans:
            if lo < r.end and r.addr < hi:
                kinds[r.name].add(kind)
        r.role = _role(kinds[r.name])


def describe(prog: Program) -> dict[str, Any]:
    """A JSON-able summary: configuration, run and regions."""
    return {
        "format": FORMAT_VERSION,
        "config": prog.cfg.name,
        "bitstream": prog.cfg.bitstream,
        "insn_addr": prog.insn_addr,
        "insn_count": prog.insn_count,
        "regions": [{"name": r.name, "addr": r.addr, "size": r.size, "role": r.role,
                     "expect": r.expect is not None} for r in prog.regions],
    }

"""Reading program files: :func:`parse` text, :func:`load` a file (docs/program-files.md)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .. import isa
from ..config import PRESETS, Config
from ..errors import AssemblyError, ConfigError, EncodingError
from ..isa import INSN_BYTES, UOP_BYTES, MemId
from .analysis import accesses, elem_bytes, region_role
from .program import _NAME, FORMAT_VERSION, HEADER, PAGE, ROLES, Program, Region, _trim

_SYMBOL = re.compile(r"dram_base=@([A-Za-z_][A-Za-z0-9_.]*)(?:([+-])(\d+|0x[0-9a-fA-F]+))?\Z")
_VALUE_TYPES = {".i8": "<i1", ".u8": "<u1", ".i16": "<i2", ".u16": "<u2", ".i32": "<i4",
                ".u32": "<u4"}




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
            value = _strip_comment(line)[len(".config"):].strip()
            column = raw_line.find(value) + 1  # where the value starts on the line
            cfg = _parse_config(value, column, base_dir, lambda msg, n=lineno: fail(n, msg))
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


def _parse_config(text: str, column: int, base_dir: Path | None, fail) -> Config:
    """The configuration of a ``.config`` line: ``text`` starts at ``column`` of the line."""
    try:
        if text.startswith("{"):
            try:
                data = json.loads(text)
            except json.JSONDecodeError as exc:
                raise fail(f".config JSON is not valid at column {column + exc.pos}: "
                           f"{exc.msg}") from None
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
        if not stmt:
            raise fail(lineno, f"{text!r} has no instruction or micro-op after its index (is "
                               "the file cut short?)")
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
        m = re.fullmatch(r"@([^+-]+)(?:([+-])(.+))?", text)
        if m is None:
            raise fail(f"expected @REGION or @REGION+BYTES, not {text!r}")
        name, sign, off = m.groups()
        if name not in regions:
            raise fail(f"unknown region {name!r} in {text!r}")
        delta = _int(off, "offset", fail) if off else 0
        return regions[name].addr + (-delta if sign == "-" else delta)
    return _int(text, "address", fail)


def _assemble(stmt: str, lineno: int, cfg: Config, regions: dict[str, Region], fail) -> bytes:
    where = f"line {lineno}"

    def isa_call(call, *args, **kwargs):
        """``call`` of :mod:`vta.isa`, its errors located once (isa's name the line only)."""
        try:
            return call(*args, **kwargs)
        except AssemblyError as exc:
            raise fail(lineno, str(exc).removeprefix(f"{where}: ")) from None
        except EncodingError as exc:  # a field value that does not fit
            raise fail(lineno, str(exc)) from None

    if stmt.split()[0].upper() == "UOP":
        return isa_call(isa.encode_uop, isa_call(isa.assemble_uop, stmt, where=where), cfg)
    tokens = stmt.split()
    symbol = None
    for i, tok in enumerate(tokens):
        if tok.startswith("dram_base=@"):
            symbol = _SYMBOL.match(tok)
            if symbol is None:
                raise fail(lineno, f"expected dram_base=@REGION or @REGION+ELEMENTS, not "
                                   f"{tok!r}")
            tokens[i] = "dram_base=0"
    insn = isa_call(isa.assemble, " ".join(tokens), where=where)
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
    return isa_call(isa.encode, insn, cfg)


def _derive_roles(prog: Program, regions: list[Region]) -> None:
    """Roles from what the stream does with each region (for hand-written files)."""
    kinds: dict[str, set[str]] = {r.name: set() for r in regions}
    spans = [(a.kind, a.start, a.end) for a in accesses(prog.insns(), prog.cfg)]
    spans.append(("insn", prog.insn_addr, prog.insn_addr + prog.insn_count * INSN_BYTES))
    for r in regions:
        for kind, lo, hi in spans:
            if lo < r.end and r.addr < hi:
                kinds[r.name].add(kind)
        r.role = region_role(kinds[r.name])


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

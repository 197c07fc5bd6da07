"""The VTA instruction set: field tables, bit-exact encode/decode, (dis)assembly.

The ISA is data.  For every format there is one ordered table of
``(field name, width)`` pairs, in ``hw_spec.h`` order.  :func:`layout` places the
fields the way GCC lays out ``uint64_t`` bit-fields on x86-64: from bit 0
upward, and a field that would straddle a 64-bit boundary starts at the next
64-bit word instead.  Micro-ops are ``uint32_t`` bit-fields, laid out the same
way in 32-bit units.  Encode, decode, the disassembler and the assembler all
read the placed tables, so they agree for every configuration.

Instructions are 16 bytes little-endian (bits 0..63 in the first 8 bytes),
micro-ops 4 bytes little-endian.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import operator
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import ClassVar, NamedTuple, Protocol

from .errors import AssemblyError, ConfigError, EncodingError

INSN_BYTES = 16
UOP_BYTES = 4


class IsaConfig(Protocol):
    """What the ISA reads of a configuration (a :class:`vta.Config` is one).

    The index fields are as wide as the scratchpads are deep, so the layouts
    depend on these four depths (log2 of entries) alone; ``name`` and
    ``bitstream`` title the generated documentation.  The ISA sits below the
    configuration: :class:`vta.Config` checks at construction that its layouts
    fit (:func:`check_layouts`).
    """

    LOG_UOP_BUFF_DEPTH: int
    LOG_INP_BUFF_DEPTH: int
    LOG_WGT_BUFF_DEPTH: int
    LOG_ACC_BUFF_DEPTH: int
    name: str
    bitstream: str


class Opcode(enum.IntEnum):
    """Instruction opcodes (3 bits); 5..7 are undefined."""

    LOAD = 0
    STORE = 1
    GEMM = 2
    FINISH = 3
    ALU = 4


class MemId(enum.IntEnum):
    """``memory_type`` values of LOAD/STORE (3 bits); 6 and 7 are undefined."""

    UOP = 0
    WGT = 1
    INP = 2
    ACC = 3
    OUT = 4
    ACC_8BIT = 5


class AluOp(enum.IntEnum):
    """ALU opcodes (3 bits); 5..7 are undefined."""

    MIN = 0
    MAX = 1
    ADD = 2
    SHR = 3
    MUL = 4


DEP_FLAGS = ("pop_prev_dep", "pop_next_dep", "push_prev_dep", "push_next_dep")


@dataclass(frozen=True)
class Field:
    """One placed bit-field: bits ``[lo, lo + width)``; ``min``/``max`` bound its values."""

    name: str
    lo: int
    width: int
    signed: bool = False
    min: int = dataclasses.field(init=False, compare=False)
    max: int = dataclasses.field(init=False, compare=False)

    def __post_init__(self) -> None:
        lo, hi = ((-(1 << (self.width - 1)), (1 << (self.width - 1)) - 1) if self.signed
                  else (0, (1 << self.width) - 1))
        object.__setattr__(self, "min", lo)
        object.__setattr__(self, "max", hi)

    @property
    def hi(self) -> int:
        """Index of the field's most significant bit."""
        return self.lo + self.width - 1


# ----------------------------------------------------------------- field tables
def _common() -> list[tuple[str, int]]:
    return [("opcode", 3), *((flag, 1) for flag in DEP_FLAGS)]


def field_table(fmt: str, cfg: IsaConfig) -> list[tuple[str, int]]:
    """Ordered ``(name, width)`` pairs of ``fmt``: generic, mem, gemm, alu or uop."""
    u, a = cfg.LOG_UOP_BUFF_DEPTH, cfg.LOG_ACC_BUFF_DEPTH
    i, w = cfg.LOG_INP_BUFF_DEPTH, cfg.LOG_WGT_BUFF_DEPTH
    compute_head = [("reset_reg", 1), ("uop_bgn", u), ("uop_end", u + 1),
                    ("iter_out", 14), ("iter_in", 14), ("dst_factor_out", a), ("dst_factor_in", a)]
    if fmt == "generic":
        return _common()
    if fmt == "mem":
        return [*_common(), ("memory_type", 3), ("sram_base", 16), ("dram_base", 32),
                ("y_size", 16), ("x_size", 16), ("x_stride", 16),
                ("y_pad_0", 4), ("y_pad_1", 4), ("x_pad_0", 4), ("x_pad_1", 4)]
    if fmt == "gemm":
        return [*_common(), *compute_head, ("src_factor_out", i), ("src_factor_in", i),
                ("wgt_factor_out", w), ("wgt_factor_in", w)]
    if fmt == "alu":
        return [*_common(), *compute_head, ("src_factor_out", a), ("src_factor_in", a),
                ("alu_opcode", 3), ("use_imm", 1), ("imm", 16)]
    if fmt == "uop":
        return [("dst_idx", a), ("src_idx", max(a, i)), ("wgt_idx", w)]
    raise ValueError(f"format must be one of generic, mem, gemm, alu, uop, not {fmt!r}")


def _place(table: list[tuple[str, int]], unit: int) -> tuple[tuple[Field, ...], int]:
    """Place fields as GCC does for bit-fields of a ``unit``-bit type."""
    placed = []
    pos = 0
    for name, width in table:
        if (pos % unit) + width > unit:
            pos = (pos // unit + 1) * unit
        placed.append(Field(name, pos, width, signed=(name == "imm")))
        pos += width
    return tuple(placed), pos


def _depths(cfg: IsaConfig) -> tuple[int, int, int, int]:
    """The four depths a layout depends on (the key of the layout caches)."""
    return (cfg.LOG_UOP_BUFF_DEPTH, cfg.LOG_INP_BUFF_DEPTH, cfg.LOG_WGT_BUFF_DEPTH,
            cfg.LOG_ACC_BUFF_DEPTH)


class _Depths(NamedTuple):
    LOG_UOP_BUFF_DEPTH: int
    LOG_INP_BUFF_DEPTH: int
    LOG_WGT_BUFF_DEPTH: int
    LOG_ACC_BUFF_DEPTH: int


def _layout(fmt: str, cfg: IsaConfig) -> tuple[Field, ...]:
    return _placed_layout(fmt, _depths(cfg))


@functools.cache
def _placed_layout(fmt: str, depths: tuple[int, int, int, int]) -> tuple[Field, ...]:
    unit, total = (32, 32) if fmt == "uop" else (64, 128)
    fields, end = _place(field_table(fmt, _Depths(*depths)), unit)
    if end > total:
        raise ConfigError(
            f"the {fmt} format needs {end} bits with these buffer depths, more than the "
            f"{total}-bit {'micro-op' if fmt == 'uop' else 'instruction'}"
        )
    return fields


def layout(fmt: str, cfg: IsaConfig) -> tuple[Field, ...]:
    """Placed fields of format ``fmt`` for configuration ``cfg``."""
    return _layout(fmt, cfg)


def check_layouts(cfg: IsaConfig) -> None:
    """Raise :class:`ConfigError` if any format does not fit (called by Config)."""
    for fmt in ("mem", "gemm", "alu", "uop"):
        _layout(fmt, cfg)


# ------------------------------------------------------------- instruction types
@dataclass
class Insn:
    """Fields common to every instruction; also what an undefined opcode decodes to."""

    opcode: int = 0
    pop_prev_dep: int = 0
    pop_next_dep: int = 0
    push_prev_dep: int = 0
    push_next_dep: int = 0

    FORMAT: ClassVar[str] = "generic"

    def fields(self) -> dict[str, int]:
        """Field values by name, in table order."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    def replace(self, **changes: int) -> Insn:
        return dataclasses.replace(self, **changes)


@dataclass
class MemInsn(Insn):
    """LOAD or STORE."""

    memory_type: int = 0
    sram_base: int = 0
    dram_base: int = 0
    y_size: int = 0
    x_size: int = 0
    x_stride: int = 0
    y_pad_0: int = 0
    y_pad_1: int = 0
    x_pad_0: int = 0
    x_pad_1: int = 0

    FORMAT: ClassVar[str] = "mem"


@dataclass
class GemmInsn(Insn):
    """GEMM, and FINISH (which upstream encodes in the GEMM format)."""

    reset_reg: int = 0
    uop_bgn: int = 0
    uop_end: int = 0
    iter_out: int = 0
    iter_in: int = 0
    dst_factor_out: int = 0
    dst_factor_in: int = 0
    src_factor_out: int = 0
    src_factor_in: int = 0
    wgt_factor_out: int = 0
    wgt_factor_in: int = 0

    FORMAT: ClassVar[str] = "gemm"


@dataclass
class AluInsn(Insn):
    """ALU (MIN, MAX, ADD, SHR, MUL); ``imm`` is signed."""

    reset_reg: int = 0
    uop_bgn: int = 0
    uop_end: int = 0
    iter_out: int = 0
    iter_in: int = 0
    dst_factor_out: int = 0
    dst_factor_in: int = 0
    src_factor_out: int = 0
    src_factor_in: int = 0
    alu_opcode: int = 0
    use_imm: int = 0
    imm: int = 0

    FORMAT: ClassVar[str] = "alu"


@dataclass
class Uop:
    """A 32-bit micro-op: indices into ACC (dst), INP or ACC (src) and WGT."""

    dst_idx: int = 0
    src_idx: int = 0
    wgt_idx: int = 0

    FORMAT: ClassVar[str] = "uop"


_CLASS_OF_OPCODE = {
    Opcode.LOAD: MemInsn,
    Opcode.STORE: MemInsn,
    Opcode.GEMM: GemmInsn,
    Opcode.FINISH: GemmInsn,
    Opcode.ALU: AluInsn,
}


def insn_class(opcode: int) -> type[Insn]:
    """The instruction class for ``opcode`` (``Insn`` for undefined opcodes)."""
    return _CLASS_OF_OPCODE.get(opcode, Insn)


def _pack(obj: Insn | Uop, fields: Iterable[Field], what: str) -> int:
    word = 0
    for f in fields:
        value = getattr(obj, f.name)
        if isinstance(value, bool) or not isinstance(value, int):
            try:
                value = operator.index(value)  # numpy integers; not str or float
            except TypeError:
                raise EncodingError(
                    f"{what} field {f.name!r} must be an integer, not {value!r}"
                ) from None
        if not f.min <= value <= f.max:
            raise EncodingError(
                f"{what} field {f.name!r} is {f.width} bits wide and holds {f.min}..{f.max}, "
                f"not {value}"
            )
        word |= (value & ((1 << f.width) - 1)) << f.lo
    return word


def _unpack(word: int, fields: Iterable[Field]) -> dict[str, int]:
    out = {}
    for f in fields:
        value = (word >> f.lo) & ((1 << f.width) - 1)
        if f.signed and value >> (f.width - 1):
            value -= 1 << f.width
        out[f.name] = value
    return out


def encode(insn: Insn, cfg: IsaConfig) -> bytes:
    """Encode one instruction to 16 bytes (little-endian, TVM VTA layout)."""
    if not isinstance(insn, Insn):
        raise TypeError(f"encode expects an Insn, not {type(insn).__name__}")
    expected = _CLASS_OF_OPCODE.get(insn.opcode)
    if expected is not None and type(insn) is not expected:
        raise EncodingError(
            f"opcode {Opcode(insn.opcode).name} needs a {expected.__name__}, "
            f"not a {type(insn).__name__}"
        )
    name = Opcode(insn.opcode).name if expected is not None else "instruction"
    return _pack(insn, _layout(insn.FORMAT, cfg), name).to_bytes(INSN_BYTES, "little")


def decode_word(word: int, cfg: IsaConfig) -> Insn:
    """Decode a 128-bit integer into an instruction object."""
    cls = _CLASS_OF_OPCODE.get(word & 0x7, Insn)
    fields, signed = _decoder(cls, cfg)
    values = [(word >> lo) & mask for lo, mask in fields]
    for i, width in signed:
        if values[i] >> (width - 1):
            values[i] -= 1 << width
    return cls(*values)


def _decoder(cls: type[Insn], cfg: IsaConfig) -> tuple[tuple[tuple[int, int], ...],
                                                    tuple[tuple[int, int], ...]]:
    """``(lo, mask)`` of each field of ``cls`` in constructor order, and ``(position, width)``
    of its signed fields (decode_word's table, built once per class and layout)."""
    return _decoder_of(cls, _depths(cfg))


@functools.cache
def _decoder_of(cls: type[Insn], depths: tuple[int, int, int, int]):
    placed = {f.name: f for f in _placed_layout(cls.FORMAT, depths)}
    order = [placed[f.name] for f in dataclasses.fields(cls)]
    return (tuple((f.lo, (1 << f.width) - 1) for f in order),
            tuple((i, f.width) for i, f in enumerate(order) if f.signed))


def decode(raw: bytes | bytearray | memoryview, cfg: IsaConfig) -> Insn:
    """Decode 16 bytes into an instruction object with the upstream field names."""
    raw = bytes(raw)
    if len(raw) != INSN_BYTES:
        raise EncodingError(f"an instruction is {INSN_BYTES} bytes, not {len(raw)}")
    return decode_word(int.from_bytes(raw, "little"), cfg)


def encode_uop(uop: Uop, cfg: IsaConfig) -> bytes:
    """Encode one micro-op to 4 bytes (little-endian)."""
    return _pack(uop, layout("uop", cfg), "micro-op").to_bytes(UOP_BYTES, "little")


def decode_uop(raw: bytes | bytearray | memoryview, cfg: IsaConfig) -> Uop:
    """Decode 4 bytes into a :class:`Uop`."""
    raw = bytes(raw)
    if len(raw) != UOP_BYTES:
        raise EncodingError(f"a micro-op is {UOP_BYTES} bytes, not {len(raw)}")
    return Uop(**_unpack(int.from_bytes(raw, "little"), layout("uop", cfg)))


def encode_stream(insns: Iterable[Insn], cfg: IsaConfig) -> bytes:
    """Encode a sequence of instructions back to back; errors name the index."""
    out = bytearray()
    for index, insn in enumerate(insns):
        try:
            out += encode(insn, cfg)
        except EncodingError as exc:
            raise EncodingError(f"instruction {index}: {exc}") from None
    return bytes(out)


def decode_stream(raw: bytes | bytearray | memoryview, cfg: IsaConfig) -> list[Insn]:
    """Decode a byte string holding whole instructions."""
    raw = bytes(raw)
    if len(raw) % INSN_BYTES:
        raise EncodingError(
            f"an instruction stream must be a multiple of {INSN_BYTES} bytes, not {len(raw)}"
        )
    return [decode(raw[i:i + INSN_BYTES], cfg) for i in range(0, len(raw), INSN_BYTES)]


# -------------------------------------------------------- disassembly / assembly
# One instruction per line:  MNEMONIC [MEMTYPE] field=value ... [deps=flag,flag]
# Fields equal to zero are left out (the assembler defaults them to zero); the
# dependency flags are written without their "_dep" suffix.

_MNEMONIC_FIELDS = {"opcode", "memory_type", "alu_opcode"}
_HEX_FIELDS = {"dram_base"}


#: Opcode values the ISA defines (5..7 are undefined).
DEFINED_OPCODES = frozenset(int(o) for o in Opcode)
_MEM_IDS = frozenset(int(m) for m in MemId)
_ALU_OPS = frozenset(int(a) for a in AluOp)


def _mnemonic(insn: Insn) -> list[str]:
    op = insn.opcode
    if op in (Opcode.LOAD, Opcode.STORE):
        head = [Opcode(op).name]
        mem = insn.memory_type
        head.append(MemId(mem).name if mem in _MEM_IDS else f"MEM{mem}")
        return head
    if op == Opcode.ALU:
        alu = insn.alu_opcode
        return [AluOp(alu).name if alu in _ALU_OPS else f"ALU{alu}"]
    if op in DEFINED_OPCODES:
        return [Opcode(op).name]
    return [f"OP{op}"]


def disassemble(insn: Insn) -> str:
    """Render one instruction as a line of assembly text."""
    parts = _mnemonic(insn)
    deps = []
    for name, value in insn.fields().items():
        if name in _MNEMONIC_FIELDS:
            continue
        if name in DEP_FLAGS:
            if value:
                deps.append(name[:-4])
            continue
        if value:
            parts.append(f"{name}={value:#x}" if name in _HEX_FIELDS else f"{name}={value}")
    if deps:
        parts.append("deps=" + ",".join(deps))
    return " ".join(parts)


def disassemble_stream(raw: bytes | bytearray | memoryview, cfg: IsaConfig,
                       *, start: int = 0) -> str:
    """Disassemble whole instructions, one per line, prefixed by their index."""
    lines = []
    for index, insn in enumerate(decode_stream(raw, cfg), start=start):
        lines.append(f"{index:6d}: {disassemble(insn)}")
    return "\n".join(lines) + ("\n" if lines else "")


_LINE = re.compile(r"^\s*(?:\d+\s*:)?\s*(?P<body>[^#;]*)")


def _parse_mnemonic(tokens: list[str], where: str) -> tuple[type[Insn], dict[str, int], list[str]]:
    head = tokens[0].upper()
    rest = tokens[1:]
    values: dict[str, int] = {}
    if head in ("LOAD", "STORE"):
        values["opcode"] = Opcode[head]
        if not rest or "=" in rest[0]:
            raise AssemblyError(f"{where}: {head} needs a memory type (UOP, WGT, INP, ACC, OUT, "
                                f"ACC_8BIT or MEM<n>)")
        mem = rest[0].upper()
        if mem in MemId.__members__:
            values["memory_type"] = MemId[mem]
        elif re.fullmatch(r"MEM[0-7]", mem):
            values["memory_type"] = int(mem[3:])
        else:
            raise AssemblyError(f"{where}: unknown memory type {rest[0]!r}")
        return MemInsn, values, rest[1:]
    if head in ("GEMM", "FINISH"):
        values["opcode"] = Opcode[head]
        return GemmInsn, values, rest
    if head in AluOp.__members__ or re.fullmatch(r"ALU[0-7]", head):
        values["opcode"] = Opcode.ALU
        values["alu_opcode"] = AluOp[head] if head in AluOp.__members__ else int(head[3:])
        return AluInsn, values, rest
    if re.fullmatch(r"OP[5-7]", head):
        values["opcode"] = int(head[2:])
        return Insn, values, rest
    raise AssemblyError(f"{where}: unknown mnemonic {tokens[0]!r}")


def assemble(line: str, *, where: str = "line 1") -> Insn:
    """Parse one line of assembly text (the inverse of :func:`disassemble`)."""
    body = _LINE.match(line).group("body").strip()
    if not body:
        raise AssemblyError(f"{where}: no instruction")
    tokens = body.split()
    cls, values, rest = _parse_mnemonic(tokens, where)
    head = " ".join(tokens[:len(tokens) - len(rest)]).upper()  # e.g. "LOAD INP"
    names = [f.name for f in dataclasses.fields(cls)]
    seen: set[str] = set()
    for token in rest:
        key, sep, text = token.partition("=")
        if not sep:
            raise AssemblyError(f"{where}: expected field=value, not {token!r}")
        if key == "deps":
            if "deps" in seen:
                raise AssemblyError(f"{where}: field 'deps' is given twice")
            seen.add("deps")
            for flag in filter(None, text.split(",")):
                if f"{flag}_dep" not in DEP_FLAGS:
                    raise AssemblyError(
                        f"{where}: unknown dependency flag {flag!r} (pop_prev, pop_next, "
                        f"push_prev, push_next)"
                    )
                values[f"{flag}_dep"] = 1
            continue
        if key not in names or key in _MNEMONIC_FIELDS:
            valid = [n for n in names if n not in _MNEMONIC_FIELDS and n not in DEP_FLAGS]
            raise AssemblyError(f"{where}: {head} has no field {key!r} (its fields: "
                                f"{', '.join(valid)}, deps)")
        if key in seen:
            raise AssemblyError(f"{where}: field {key!r} is given twice")
        seen.add(key)
        values[key] = _parse_int(text, key, where)
    return cls(**values)


def _parse_int(text: str, key: str, where: str) -> int:
    try:
        return int(text, 0)
    except ValueError:
        raise AssemblyError(f"{where}: field {key!r} needs an integer, not {text!r}") from None


def disassemble_uop(uop: Uop) -> str:
    """Render one micro-op as ``UOP dst_idx=.. src_idx=.. wgt_idx=..`` (zero fields left out)."""
    parts = ["UOP"]
    parts += [f"{name}={value}" for name, value in dataclasses.asdict(uop).items() if value]
    return " ".join(parts)


def assemble_uop(line: str, *, where: str = "line 1") -> Uop:
    """Parse one micro-op line (the inverse of :func:`disassemble_uop`)."""
    tokens = _LINE.match(line).group("body").split()
    if not tokens or tokens[0].upper() != "UOP":
        raise AssemblyError(f"{where}: a micro-op line starts with UOP, not "
                            f"{(tokens or [''])[0]!r}")
    names = [f.name for f in dataclasses.fields(Uop)]
    values: dict[str, int] = {}
    for token in tokens[1:]:
        key, sep, text = token.partition("=")
        if not sep:
            raise AssemblyError(f"{where}: expected field=value, not {token!r}")
        if key not in names:
            raise AssemblyError(f"{where}: UOP has no field {key!r} (its fields: "
                                f"{', '.join(names)})")
        if key in values:
            raise AssemblyError(f"{where}: field {key!r} is given twice")
        values[key] = _parse_int(text, key, where)
    return Uop(**values)


def assemble_stream(text: str, cfg: IsaConfig) -> bytes:
    """Assemble text (one instruction per line; blank lines and ``#`` comments skipped)."""
    out = bytearray()
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not _LINE.match(line).group("body").strip():
            continue
        where = f"line {lineno}"
        insn = assemble(line, where=where)
        try:
            out += encode(insn, cfg)
        except EncodingError as exc:
            raise AssemblyError(f"{where}: {exc}") from None
    return bytes(out)


# ------------------------------------------------------- engines and token queues
#: The three engines fetch dispatches to, in the order the golden model lets them take turns.
ENGINES = ("load", "compute", "store")
#: The four dependency-token queues ("prev"/"next" follow load -> compute -> store).
QUEUES = ("l2g", "g2l", "g2s", "s2g")
#: The queue an engine pops for a flag (vta-reference 3.9).
POP_QUEUE = {
    ("load", "pop_next_dep"): "g2l",
    ("compute", "pop_prev_dep"): "l2g",
    ("compute", "pop_next_dep"): "s2g",
    ("store", "pop_prev_dep"): "g2s",
}
#: The queue an engine pushes for a flag.
PUSH_QUEUE = {
    ("load", "push_next_dep"): "l2g",
    ("compute", "push_prev_dep"): "g2l",
    ("compute", "push_next_dep"): "g2s",
    ("store", "push_prev_dep"): "s2g",
}
#: Flags an engine must never set (vta-reference 3.9 and decision 6).
FORBIDDEN_FLAGS = {
    "load": ("pop_prev_dep", "push_prev_dep"),
    "store": ("pop_next_dep", "push_next_dep"),
    "compute": (),
}


def dispatch_engine(insn: Insn) -> str:
    """The engine an instruction goes to (vta-reference 3.8)."""
    if insn.opcode == Opcode.STORE:
        return "store"
    if insn.opcode == Opcode.LOAD and insn.memory_type in (MemId.INP, MemId.WGT):
        return "load"
    return "compute"


# ------------------------------------------------------------------ documentation
_FORMAT_TITLES = (("mem", "LOAD / STORE"), ("gemm", "GEMM (and FINISH)"), ("alu", "ALU"),
                  ("uop", "micro-op (32 bits)"))


def render_markdown(cfg: IsaConfig) -> str:
    """Bit layout of every format for ``cfg``, as Markdown (docs/isa.md comes from this)."""
    lines = [f"# Instruction set layout for `{cfg.name}` ({cfg.bitstream})", "",
             "Generated by `vta isa` from the field tables in `vta/isa.py`; do not edit by hand.",
             "Instructions are 128 bits, stored little-endian (bits 0..63 first); a field never",
             "straddles a 64-bit word (32-bit for micro-ops), as GCC lays out `hw_spec.h`'s",
             "bit-fields.  `vta isa --config NAME` prints the layout of another configuration.",
             "", "Opcodes: " + ", ".join(f"{o.name} {o.value}" for o in Opcode) + ".",
             "Memory types: " + ", ".join(f"{m.name} {m.value}" for m in MemId) + ".",
             "ALU opcodes: " + ", ".join(f"{a.name} {a.value}" for a in AluOp) + "."]
    for fmt, title in _FORMAT_TITLES:
        lines += ["", f"## {title}", "", "| field | bits | width |", "|---|---|---|"]
        for f in layout(fmt, cfg):
            kind = ", signed" if f.signed else ""
            lines.append(f"| {f.name} | [{f.lo}..{f.hi}] | {f.width}{kind} |")
    return "\n".join(lines) + "\n"

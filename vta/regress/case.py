"""A generated program kept structured (:class:`Case`), and the arena it is laid out in.

Every case lives in one arena of device memory (:data:`ARENA_BYTES` from a page-aligned
base): a zeroed area as big as the largest scratchpad, random data for LOADs, the
micro-ops of its UOP LOADs, an output area for STOREs, then the instructions
(:class:`Layout`).  The generator (:mod:`vta.regress.generator`), the shrinker, the
static checks and the reports all work on cases.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..config import Config
from ..isa import (
    ENGINES,
    POP_QUEUE,
    PUSH_QUEUE,
    QUEUES,
    UOP_BYTES,
    Insn,
    MemId,
    MemInsn,
    Opcode,
    Uop,
    encode,
    encode_uop,
)
from ..progfile import elem_bytes

PAGE = 4096
#: Bytes of random data LOADs read from.
DATA_BYTES = 1 << 16
#: Bytes reserved for micro-ops.
UOP_AREA_BYTES = 1 << 14
#: Bytes STOREs write to.
OUT_BYTES = 1 << 16
#: Device memory every case fits in (from the arena's base address).
ARENA_BYTES = 1 << 20
#: Device bytes ``(address, size)`` answering every access with an error response in
#: every regression session (``bus_error`` of :func:`vta.open_device`): whole pages above
#: any arena, inside the smallest device memory of the backends (16 MiB, Icarus).
BUS_ERROR_WINDOW = (8 << 20, 2 * PAGE)
#: (producer engine, push flag, consumer engine, pop flag) of each token queue.
QUEUE_ENDS: dict[str, tuple[str, str, str, str]] = {
    q: (*next(k for k, v in PUSH_QUEUE.items() if v == q),
        *next(k for k, v in POP_QUEUE.items() if v == q)) for q in QUEUES}


def _align(n: int, to: int = PAGE) -> int:
    return -(-n // to) * to


# ---------------------------------------------------------------------- case
@dataclass(frozen=True)
class Layout:
    """Offsets of the arena's areas, from its base address."""

    zeros: int
    data: int
    uops: int
    out: int
    insns: int

    @classmethod
    def of(cls, cfg: Config) -> Layout:
        zeros = max(cfg.INP_BUFF_DEPTH * cfg.INP_ELEM_BYTES,
                    cfg.WGT_BUFF_DEPTH * cfg.WGT_ELEM_BYTES,
                    cfg.ACC_BUFF_DEPTH * cfg.ACC_ELEM_BYTES, cfg.UOP_BUFF_DEPTH * UOP_BYTES)
        data = _align(zeros)
        return cls(0, data, data + DATA_BYTES, data + DATA_BYTES + UOP_AREA_BYTES,
                   data + DATA_BYTES + UOP_AREA_BYTES + OUT_BYTES)

    def areas(self) -> dict[str, tuple[int, int]]:
        """``name -> (offset, bytes)`` of every area but the instructions."""
        return {"zeros": (self.zeros, self.data - self.zeros), "data": (self.data, DATA_BYTES),
                "uops": (self.uops, UOP_AREA_BYTES), "out": (self.out, OUT_BYTES)}


@dataclass
class Case:
    """A generated program, kept structured so that it can be shrunk.

    Attributes
    ----------
    cfg : Config
        Configuration the stream is encoded for.
    seed : int
        The seed it came from.
    kind : str
        One of :data:`KINDS` (``"shrunk"`` after shrinking).
    base : int
        Device byte address of the arena (4 KiB aligned); ``dram_base``
        fields are absolute.
    insns : list of Insn
        The stream, FINISH included.
    kernels : list
        Parallel to ``insns``: for a UOP LOAD, the micro-ops it loads (their
        DRAM address is assigned when the image is built); else ``None``.
    data : bytes
        Contents of the data area LOADs read.
    notes : list of str
        How the case was made.
    """

    cfg: Config
    seed: int
    kind: str
    base: int
    insns: list[Insn]
    kernels: list[list[Uop] | None]
    data: bytes
    notes: list[str] = field(default_factory=list)

    @property
    def layout(self) -> Layout:
        return Layout.of(self.cfg)

    @property
    def insn_addr(self) -> int:
        """Device byte address of the first instruction."""
        return self.base + self.layout.insns

    @property
    def insn_count(self) -> int:
        return len(self.insns)

    def copy(self) -> Case:
        """A copy whose lists can be edited without touching this case."""
        return Case(self.cfg, self.seed, self.kind, self.base, list(self.insns),
                    [None if k is None else list(k) for k in self.kernels], self.data,
                    list(self.notes))

    def placed(self) -> list[Insn]:
        """The instructions with every UOP LOAD's ``dram_base`` pointing at its micro-ops."""
        out, start = [], (self.base + self.layout.uops) // UOP_BYTES
        for insn, kernel in zip(self.insns, self.kernels, strict=True):
            if kernel is not None:
                insn = insn.replace(dram_base=start)
                start += len(kernel)
            out.append(insn)
        return out

    def uop_bytes(self) -> bytes:
        return b"".join(encode_uop(u, self.cfg) for k in self.kernels if k for u in k)

    def image(self) -> bytearray:
        """The arena's contents: zeros, data, micro-ops, output area, instructions."""
        lay = self.layout
        raw_uops = self.uop_bytes()
        if len(raw_uops) > UOP_AREA_BYTES:
            raise ValueError(f"{len(raw_uops)} bytes of micro-ops exceed the "
                             f"{UOP_AREA_BYTES}-byte area")
        raw = b"".join(encode(i, self.cfg) for i in self.placed())
        image = bytearray(lay.insns + _align(len(raw)))
        image[lay.data:lay.data + len(self.data)] = self.data
        image[lay.uops:lay.uops + len(raw_uops)] = raw_uops
        image[lay.insns:lay.insns + len(raw)] = raw
        if len(image) > ARENA_BYTES:
            raise ValueError(f"the case needs {len(image)} bytes, more than the "
                             f"{ARENA_BYTES}-byte arena")
        return image

    def reaches(self, lo: int, hi: int) -> bool:
        """Whether a LOAD or STORE moving data touches device bytes ``[lo, hi)``."""
        for insn in self.placed():
            if insn.opcode not in (Opcode.LOAD, Opcode.STORE) or not insn.x_size:
                continue
            e = elem_bytes(self.cfg, insn.memory_type)
            if e is None:
                continue
            start = insn.dram_base * e
            end = start + ((max(insn.y_size, 1) - 1) * insn.x_stride + insn.x_size) * e
            if start < hi and end > lo:
                return True
        return False

    def describe(self) -> str:
        """``kind seed N (notes)``."""
        notes = f" ({', '.join(self.notes)})" if self.notes else ""
        return f"{self.kind} seed {self.seed}{notes}"


def noop(engine: str, **fields: int) -> MemInsn:
    """The runtime's sync no-op for ``engine``, with other ``fields`` (dependency flags)."""
    if engine == "load":
        return MemInsn(opcode=Opcode.LOAD, memory_type=MemId.INP, **fields)
    if engine == "compute":
        return MemInsn(opcode=Opcode.LOAD, memory_type=MemId.UOP, **fields)
    if engine == "store":
        return MemInsn(opcode=Opcode.STORE, **fields)
    raise ValueError(f"engine must be one of {', '.join(ENGINES)}, not {engine!r}")


def is_noop(insn: Insn) -> bool:
    """A LOAD or STORE with ``x_size`` 0 (it only carries tokens)."""
    return insn.opcode in (Opcode.LOAD, Opcode.STORE) and insn.x_size == 0

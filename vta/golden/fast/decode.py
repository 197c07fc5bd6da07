"""The fast model's decoder: a fetched stream, dispatched in one table look-up and decoded
with NumPy a block of :data:`BLOCK` instructions at a time.

An instruction decodes to the list of its field values in its :mod:`vta.isa` class's order
(no object per instruction); the executors unpack it by position, an order checked here
when the module is imported.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from ...config import Config
from ...isa import (
    DEFINED_OPCODES,
    DEP_FLAGS,
    ENGINES,
    FORBIDDEN_FLAGS,
    POP_QUEUE,
    PUSH_QUEUE,
    AluInsn,
    GemmInsn,
    MemInsn,
    dispatch_engine,
    insn_class,
    layout,
)

#: Instructions decoded together, and decoded blocks a run keeps (older ones are dropped).
BLOCK = 1024
BLOCKS_KEPT = 64


class Stream:
    """A fetched stream, decoded a block of :data:`BLOCK` instructions at a time.

    An engine asks for an instruction when it reaches it; its block is decoded
    then, with NumPy, all fields of all its instructions at once.  At most
    :data:`BLOCKS_KEPT` blocks stay decoded, so a stream of any length needs
    bounded memory.
    """

    def __init__(self, words: np.ndarray, codes: list[int], decoding: Decoding):
        self.words = words
        self.codes = codes
        self.decoding = decoding
        self.blocks: dict[int, tuple[list[list[int]], list[Links]]] = {}

    def block(self, number: int) -> tuple[list[list[int]], list[Links]]:
        """Block ``number`` decoded: its instructions and what their engines do with their
        flags."""
        block = self.blocks.get(number)
        if block is None:
            if len(self.blocks) >= BLOCKS_KEPT:
                self.blocks.clear()
            rows = slice(number * BLOCK, (number + 1) * BLOCK)
            block = self.blocks[number] = decode_block(self.words[rows], self.codes[rows],
                                                        self.decoding)
        return block

    def queue(self, indices: list[int]) -> Iterator[tuple[int, list[int], Links]]:
        """The instructions at ``indices`` (ascending), in order: (index, decoded
        instruction, links)."""
        if len(self.words) <= BLOCK and indices:  # one block: a list is cheaper to go through
            insns, links = self.block(0)
            return iter([(index, insns[index], links[index]) for index in indices])
        return self._queue(indices)

    def _queue(self, indices: list[int]) -> Iterator[tuple[int, list[int], Links]]:
        number, insns, links = -1, [], []
        for index in indices:
            if index // BLOCK != number:
                number = index // BLOCK
                insns, links = self.block(number)
            yield index, insns[index - number * BLOCK], links[index - number * BLOCK]


class Decoding(NamedTuple):
    """How instruction words of one configuration decode (see :func:`decoding_tables`)."""

    key_mask: np.uint64  # the low bits holding the opcode, the flags and the memory type
    codes: np.ndarray  # (2**key bits,) links code of each key, -1 for an undefined opcode
    formats: np.ndarray  # (8,) format number of each opcode (its class's), -1 if undefined
    #: per format: each field's 64-bit half, shift and mask, and (position, sign bit) of
    #: each signed field
    places: list[tuple[np.ndarray, np.ndarray, np.ndarray, list[tuple[int, int]]]]


#: The classes defined opcodes decode to, in format-number order.
_CLASSES = sorted({insn_class(op) for op in DEFINED_OPCODES}, key=lambda cls: cls.__name__)


def _field_names(cls: type) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(cls))


# A decoded instruction is the list of its field values in its class's order; the executors
# unpack it by position, so the order they assume is checked here, once.
if (_field_names(MemInsn)[:5] != ("opcode", *DEP_FLAGS)
        or _field_names(MemInsn)[5:] != ("memory_type", "sram_base", "dram_base", "y_size",
                                         "x_size", "x_stride", "y_pad_0", "y_pad_1", "x_pad_0",
                                         "x_pad_1")
        or _field_names(GemmInsn)[5:16] != _field_names(AluInsn)[5:14] + ("wgt_factor_out",
                                                                          "wgt_factor_in")
        or _field_names(AluInsn)[5:] != ("reset_reg", "uop_bgn", "uop_end", "iter_out",
                                         "iter_in", "dst_factor_out", "dst_factor_in",
                                         "src_factor_out", "src_factor_in", "alu_opcode",
                                         "use_imm", "imm")):
    raise ImportError("vta.golden: the instruction classes of vta.isa changed their field order")


def decoding_tables(cfg: Config) -> Decoding:
    """What :meth:`GoldenModel.fetch` and :func:`decode_block` need, per configuration.

    For each instruction class, its fields in constructor order, each with its
    place in the 128-bit word and, if signed, its sign bit.  The dispatch
    table maps the low bits of a word (opcode, flags and memory type) to the
    instruction's engine and flag bits.
    """
    places = []
    for cls in _CLASSES:
        placed = {f.name: f for f in layout(cls.FORMAT, cfg)}
        order = [placed[name] for name in _field_names(cls)]
        half, shift, mask = (np.array(column, dtype=dtype) for column, dtype in zip(
            zip(*[(f.lo // 64, f.lo % 64, (1 << f.width) - 1) for f in order], strict=True),
            (np.intp, np.uint64, np.uint64), strict=True))
        places.append((half, shift, mask,
                       [(k, 1 << (f.width - 1)) for k, f in enumerate(order) if f.signed]))
    formats = np.array([_CLASSES.index(insn_class(op)) if op in DEFINED_OPCODES else -1
                        for op in range(8)], dtype=np.intp)
    placed = {f.name: f for f in layout("mem", cfg)}  # generic fields plus the memory type
    key_bits = max(placed[name].lo + placed[name].width
                   for name in ("opcode", *DEP_FLAGS, "memory_type"))
    keys = np.arange(1 << key_bits)
    value = {name: keys >> placed[name].lo & (1 << placed[name].width) - 1
             for name in ("opcode", *DEP_FLAGS, "memory_type")}
    engine = np.array([[ENGINES.index(dispatch_engine(MemInsn(opcode=op, memory_type=mem_type)))
                        for mem_type in range(8)] for op in range(8)])  # by opcode, memory type
    codes = engine[value["opcode"], value["memory_type"]] << 4
    for i, name in enumerate(DEP_FLAGS):
        codes |= value[name] << i
    codes[~np.isin(value["opcode"], list(DEFINED_OPCODES))] = -1
    return Decoding(np.uint64((1 << key_bits) - 1), codes, formats, places)


def decode_block(words: np.ndarray, codes: list[int],
                  decoding: Decoding) -> tuple[list[list[int]], list[Links]]:
    """Decode (n, 2) instruction words of defined opcodes with links codes ``codes`` (from
    the fetch): the instructions, and what their engines do with their flags.

    An instruction decodes to the list of its field values in the order of its class's
    fields (``insn_class(opcode)(*fields)`` is the :mod:`vta.isa` object); the
    instructions of each class are decoded together, all fields at once.
    """
    insns: list = [None] * len(words)
    formats = decoding.formats[(words[:, 0] & 0x7).astype(np.intp)]
    for number, (half, shift, mask, signed) in enumerate(decoding.places):
        rows = (formats == number).nonzero()[0]
        if rows.size:
            values = ((words[rows[:, None], half] >> shift) & mask).tolist()
            for k, bit in signed:  # signed fields (ALU's imm): two's complement, in Python
                for insn in values:  # (cheaper than the NumPy passes for a few instructions)
                    if insn[k] & bit:
                        insn[k] -= bit << 1
            for row, insn in zip(rows.tolist(), values, strict=True):
                insns[row] = insn
    return insns, [LINKS_BY_CODE[code] for code in codes]


@dataclass(frozen=True)
class Links:
    """What an engine does with an instruction's four dependency flags."""

    pops: tuple[str, ...]  # queues popped, in flag order
    pushes: tuple[tuple[str, str], ...]  # (queue, flag) pushed, in flag order
    forbidden: str | None  # the first flag set that the engine does not have


def _links(engine: str, flags: int) -> Links:
    """The links of an instruction of ``engine`` whose flag bits (DEP_FLAGS order) are ``flags``."""
    names = [f for i, f in enumerate(DEP_FLAGS) if flags >> i & 1]
    forbidden = next((f for f in names if f in FORBIDDEN_FLAGS[engine]), None)
    return Links(tuple(POP_QUEUE[(engine, f)] for f in names if (engine, f) in POP_QUEUE),
                 tuple((PUSH_QUEUE[(engine, f)], f) for f in names if (engine, f) in PUSH_QUEUE),
                 forbidden)


#: The same by engine number << 4 | flag bits.
LINKS_BY_CODE = [_links(engine, flags) for engine in ENGINES for flags in range(16)]



"""The exception hierarchy of the toolkit.

Every error the toolkit raises on purpose derives from :class:`VTAError`.  The
subclasses that describe a wrong *value* also derive from :class:`ValueError`,
so code that only knows the standard library can still catch them.  Messages say
what must hold and what was given; the CLI is the only layer that turns them
into ``click.ClickException``.
"""

from __future__ import annotations

import enum


class ErrorCode(enum.IntEnum):
    """Fault codes, shared by the golden model, the register map and the RTL."""

    NONE = 0
    BAD_OPCODE = 1  # undefined instruction opcode (fetch)
    BAD_MEMORY_TYPE = 2  # undefined / unusable memory_type
    SRAM_RANGE = 3  # a scratchpad index (sram_base, micro-op index, uop_end) out of range
    DRAM_RANGE = 4  # a DRAM access outside device memory
    BAD_ALU_OPCODE = 5  # undefined ALU opcode
    TOKEN_OVERFLOW = 6  # a push onto a full dependency-token queue
    BAD_DEP_FLAG = 7  # a dependency flag the engine does not have (load *_prev, store *_next)
    STORE_PAD = 8  # a STORE with a non-zero pad
    DEADLOCK = 9  # every unfinished engine waits on an empty token queue
    NO_FINISH = 10  # the stream ended without FINISH
    BUS_ERROR = 11  # the memory answered a DRAM access with SLVERR or DECERR


#: Codes an instruction stream alone can cause (BUS_ERROR comes from the memory).
PROGRAM_FAULTS = tuple(c for c in ErrorCode if c not in (ErrorCode.NONE, ErrorCode.BUS_ERROR))

_CODE_OF_FIELD = {
    "opcode": ErrorCode.BAD_OPCODE,
    "memory_type": ErrorCode.BAD_MEMORY_TYPE,
    "sram_base": ErrorCode.SRAM_RANGE,
    "uop_end": ErrorCode.SRAM_RANGE,
    "dst_idx": ErrorCode.SRAM_RANGE,
    "src_idx": ErrorCode.SRAM_RANGE,
    "wgt_idx": ErrorCode.SRAM_RANGE,
    "dram_base": ErrorCode.DRAM_RANGE,
    "insn_addr": ErrorCode.DRAM_RANGE,
    "insn_count": ErrorCode.DRAM_RANGE,
    "alu_opcode": ErrorCode.BAD_ALU_OPCODE,
    "y_pad_0": ErrorCode.STORE_PAD,
    "y_pad_1": ErrorCode.STORE_PAD,
    "x_pad_0": ErrorCode.STORE_PAD,
    "x_pad_1": ErrorCode.STORE_PAD,
    "pop_prev_dep": ErrorCode.BAD_DEP_FLAG,
    "pop_next_dep": ErrorCode.BAD_DEP_FLAG,
    "push_prev_dep": ErrorCode.BAD_DEP_FLAG,
    "push_next_dep": ErrorCode.BAD_DEP_FLAG,
}


class VTAError(Exception):
    """Base class of every error raised by the vta toolkit."""


class ConfigError(VTAError, ValueError):
    """An invalid configuration: names the key and the offending value."""


class EncodingError(VTAError, ValueError):
    """An instruction or micro-op field value that does not fit its field."""


class AssemblyError(VTAError, ValueError):
    """Text that the assembler cannot parse: names the line and the token."""


class ExecutionError(VTAError):
    """A program fault found while executing a stream.

    Attributes
    ----------
    module : str
        ``"fetch"``, ``"load"``, ``"compute"`` or ``"store"``.
    index : int or None
        Index of the faulting instruction in the stream.
    field : str or None
        The instruction field (or resource) that is wrong.
    code : ErrorCode
        The fault code the hardware would report; derived from ``field``
        unless given.
    address : int or None
        For ``BUS_ERROR``: device byte address of the AXI burst that got the
        error response (the ERR_ADDR register).
    """

    def __init__(self, message: str, *, module: str, index: int | None = None,
                 field: str | None = None, code: ErrorCode | None = None,
                 address: int | None = None):
        super().__init__(message)
        self.module = module
        self.index = index
        self.field = field
        self.code = code if code is not None else _CODE_OF_FIELD.get(field, ErrorCode.NONE)
        self.address = address


class DeadlockError(VTAError):
    """A stream whose dependency tokens can never be satisfied.

    ``stuck`` maps each blocked module name to ``(instruction index, queue name)``.
    """

    code = ErrorCode.DEADLOCK

    def __init__(self, message: str, *, stuck: dict[str, tuple[int, str]]):
        super().__init__(message)
        self.stuck = stuck


class DeviceError(VTAError):
    """A device-level failure: bad buffer access, exhaustion, error status."""


class DeviceTimeoutError(DeviceError, TimeoutError):
    """The device did not report done within the allowed time."""

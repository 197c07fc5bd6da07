"""What the specification model and the fast model share: how a run is reported.

Both models report a run the same way -- :class:`Counters`, :class:`TraceEvent`,
:class:`RunTimeoutError`, and the faults built here, one function per fault with
its message -- so a program's outcome on one can be compared with the other's
field for field and message for message.  Nothing here decides what an
instruction does or when a fault happens: that is :mod:`vta.golden.spec`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from ..config import TOKEN_QUEUE_DEPTH
from ..errors import DeadlockError, DeviceTimeoutError, ErrorCode, ExecutionError
from ..isa import (
    DEFINED_OPCODES,
    DEP_FLAGS,
    FORBIDDEN_FLAGS,
    INSN_BYTES,
    QUEUES,
    Insn,
    MemId,
    dispatch_engine,
)


@dataclass
class Counters:
    """Event counters of one run, like upstream fsim's plus per-engine counts."""

    uop_load_bytes: int = 0
    inp_load_bytes: int = 0
    wgt_load_bytes: int = 0
    acc_load_bytes: int = 0
    acc8_load_bytes: int = 0
    out_store_bytes: int = 0
    gemm_uops: int = 0
    alu_uops: int = 0
    load_insns: int = 0
    compute_insns: int = 0
    store_insns: int = 0
    tokens: dict[str, int] = field(default_factory=lambda: dict.fromkeys(QUEUES, 0))

    def as_dict(self) -> dict[str, int]:
        out = {k: v for k, v in self.__dict__.items() if k != "tokens"}
        out.update({f"{q}_tokens": n for q, n in self.tokens.items()})
        return out


@dataclass(frozen=True)
class TraceEvent:
    """One retired instruction: engine, stream index, instruction, token effects."""

    module: str
    index: int
    insn: Insn
    popped: tuple[str, ...]
    pushed: tuple[str, ...]


class RunTimeoutError(DeviceTimeoutError):
    """A run passed its deadline; it stopped in instruction ``index`` of engine ``module``."""

    def __init__(self, message: str, *, module: str, index: int):
        super().__init__(message)
        self.module = module
        self.index = index


def device_memory(memory: np.ndarray | int) -> np.ndarray:
    """A model's device memory: ``memory`` itself (shared, not copied), or that many zero
    bytes."""
    if isinstance(memory, (int, np.integer)):
        memory = np.zeros(int(memory), dtype=np.uint8)
    if memory.dtype != np.uint8 or memory.ndim != 1 or not memory.flags.c_contiguous:
        raise TypeError("memory must be a contiguous 1-D uint8 numpy array")
    return memory


# ------------------------------------------------------------------------ faults
def fault(engine: str, index: int, field: str, text: str) -> ExecutionError:
    """A fault of instruction ``index`` in ``engine``, in ``field`` (which gives its code)."""
    return ExecutionError(f"instruction {index} ({engine}): {text}", module=engine,
                          index=index, field=field)


def static_fault(index: int, insn: Insn) -> ExecutionError | None:
    """The fault an instruction has whatever the state: an undefined opcode (the fetch's),
    or a dependency flag its engine does not have (the first, in flag order)."""
    if insn.opcode not in DEFINED_OPCODES:
        return undefined_opcode(index, insn.opcode)
    engine = dispatch_engine(insn)
    flag = next((f for f in DEP_FLAGS if getattr(insn, f) and f in FORBIDDEN_FLAGS[engine]),
                None)
    return None if flag is None else forbidden_flag(engine, index, flag)


def undefined_opcode(index: int, opcode: int) -> ExecutionError:
    return fault("fetch", index, "opcode", f"undefined opcode {opcode}")


def forbidden_flag(engine: str, index: int, flag: str) -> ExecutionError:
    return fault(engine, index, flag, f"{flag} is set, but the {engine} engine has no "
                 f"{'previous' if 'prev' in flag else 'next'} stage")


def token_overflow(engine: str, index: int, queue: str, flag: str) -> ExecutionError:
    return ExecutionError(
        f"instruction {index} ({engine}): {flag} overflows token queue {queue} "
        f"(capacity {TOKEN_QUEUE_DEPTH})", module=engine, index=index, field=flag,
        code=ErrorCode.TOKEN_OVERFLOW)


def bad_insn_count(insn_count: int) -> ExecutionError:
    return ExecutionError(f"insn_count must be >= 0, not {insn_count}", module="fetch",
                          field="insn_count")


def stream_outside(insn_addr: int, end: int, mem_size: int) -> ExecutionError:
    return ExecutionError(
        f"fetch: instructions at 0x{insn_addr:x}..0x{end:x} lie outside device memory "
        f"(0x{mem_size:x} bytes)", module="fetch", field="insn_addr")


def load_memory_type(engine: str, index: int, memory_type: int) -> ExecutionError:
    what = "OUT cannot be loaded" if memory_type == MemId.OUT else "undefined"
    return fault(engine, index, "memory_type", f"LOAD memory_type {memory_type} ({what})")


def load_beyond_sram(engine: str, index: int, memory_type: str, first: int, end: int,
                     depth: int, buffer: str) -> ExecutionError:
    return fault(engine, index, "sram_base",
                 f"LOAD {memory_type} writes SRAM entries {first}..{end - 1}, beyond the "
                 f"{depth}-entry {buffer} buffer")


def store_memory_type(index: int, memory_type: int) -> ExecutionError:
    return fault("store", index, "memory_type",
                 f"STORE memory_type must be OUT (4), not {memory_type}")


def store_pad(index: int, pad: str, value: int) -> ExecutionError:
    return fault("store", index, pad, f"STORE {pad} must be 0, not {value}")


def store_beyond_sram(index: int, first: int, end: int, depth: int) -> ExecutionError:
    return fault("store", index, "sram_base",
                 f"STORE reads SRAM entries {first}..{end - 1}, beyond the {depth}-entry OUT "
                 "buffer")


def dram_outside(engine: str, index: int, start: int, end: int, dram_base: int, y_size: int,
                 x_stride: int, mem_size: int) -> ExecutionError:
    return fault(engine, index, "dram_base",
                 f"DRAM access 0x{start:x}..0x{end:x} (dram_base {dram_base}, y_size "
                 f"{y_size}, x_stride {x_stride}) lies outside device memory "
                 f"(0x{mem_size:x} bytes)")


def bus_check(window: tuple[int, int] | None, bus_bytes: int, engine: str, index: int | None,
              ranges: Iterable[tuple[int, int]], what: str) -> None:
    """BUS_ERROR if one of the byte ranges ``[start, end)`` (in access order) reaches the
    ``window`` of memory that answers with an error response (``bus_error`` of a model).

    The fault's address is where the hardware's first failing AXI burst starts: the first
    bus word of the access inside the window, or the window's first byte when the access
    enters it from below (bursts never cross a 4 KiB boundary; windows are whole pages).
    ``index`` None is the fetch: the first instruction of that burst.
    """
    if window is None:
        return
    lo, hi = window
    for start, end in ranges:
        if start < hi and end > lo:
            addr = max(start - start % bus_bytes, lo)
            if index is None:
                index = max(0, addr - start) // INSN_BYTES
            raise ExecutionError(
                f"instruction {index} ({engine}): bus error: the memory answered the DRAM "
                f"burst at 0x{addr:x} with an error response ({what}: bytes "
                f"0x{start:x}..0x{end:x}; error window 0x{lo:x}..0x{hi:x})",
                module=engine, index=index, field="dram_base", code=ErrorCode.BUS_ERROR,
                address=addr)


def uop_end_beyond(index: int, what: str, uop_end: int, depth: int) -> ExecutionError:
    return fault("compute", index, "uop_end",
                 f"{what} uop_end {uop_end} is beyond the {depth}-entry micro-op buffer")


def index_beyond(index: int, what: str, name: str, top: int, depth: int,
                 buffer: str) -> ExecutionError:
    return fault("compute", index, name,
                 f"{what} {name} reaches {top} (micro-op field plus loop offsets), beyond "
                 f"the {depth}-entry {buffer} buffer")


def alu_opcode(index: int, opcode: int) -> ExecutionError:
    return fault("compute", index, "alu_opcode", f"undefined ALU opcode {opcode}")


def deadlock(stuck: dict[str, tuple[int, str]]) -> DeadlockError:
    """``stuck``: each waiting engine's instruction and the empty queue it waits on."""
    detail = "; ".join(f"{engine} at instruction {index} waits on {queue} (empty)"
                       for engine, (index, queue) in stuck.items())
    return DeadlockError(f"deadlock: {detail}", stuck=stuck)


def no_finish(insn_count: int) -> ExecutionError:
    return ExecutionError(
        f"the stream of {insn_count} instructions has no FINISH; the device would never "
        "report done", module="compute", index=None, field="opcode", code=ErrorCode.NO_FINISH)


def timeout(engine: str, index: int, *, in_nest: bool = False) -> RunTimeoutError:
    where = " inside its loop nest" if in_nest else ""
    return RunTimeoutError(f"instruction {index} ({engine}): the run passed its deadline{where}",
                           module=engine, index=index)

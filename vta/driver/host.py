"""The one host driver: identification, device-memory pages, the run protocol, counters.

Every backend (golden model, RTL simulation, AWS FPGA) is reached through a
:class:`~vta.driver.transport.Transport`; everything else lives here, once:

* **Identification** on open: ID, HW_VERSION, CONFIG_SIG and CONFIG0/1 are read
  and a device built for another configuration is refused, naming every key
  that differs.
* **Device memory** is paged like upstream's simulated DRAM (vta-reference
  4.4): 4 KiB pages, page 0 (address 0) never handed out, first-fit reuse of
  freed runs.  Every access is checked against its buffer.
* **Runs** follow docs/rtl-interface.md: CLEAR, INSN_ADDR_LO/HI, INSN_COUNT,
  START, ``transport.wait_idle``, poll STATUS, read every counter of
  :data:`vta.regs.COUNTERS` into a :class:`RunStats`, and turn an ERROR
  status into :class:`~vta.errors.ExecutionError` /
  :class:`~vta.errors.DeadlockError`.

A transport may declare ``has_timing = False`` (the golden model has no
clock); the timing counters of :data:`vta.regs.TIMING_COUNTERS` are then
reported as ``None``.  A transport may also offer ``last_error_detail() -> str |
None``, whose text is appended to the decoded error.
"""

from __future__ import annotations

import functools
import itertools
import operator
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from .. import regs
from ..config import Config
from ..errors import DeadlockError, DeviceError, DeviceTimeoutError, ErrorCode, ExecutionError
from ..isa import INSN_BYTES
from .transport import Transport

#: Bytes per device-memory page (upstream ``VTA_PAGE_BYTES``).
PAGE_BYTES = 4096

#: Numbers drivers (so a buffer knows which device allocated it).
_DRIVER_NUMBERS = itertools.count(1)

#: ERR_INDEX value meaning "no instruction" (e.g. a stream without FINISH).
NO_INDEX = 0xFFFFFFFF

_QUEUES = ("l2g", "g2l", "g2s", "s2g")
_COUNTER_NAMES = tuple(name for name, _ in regs.COUNTERS)


@dataclass(frozen=True, eq=False)
class Buffer:
    """A device-memory allocation.

    Attributes
    ----------
    addr : int
        Device byte address (a multiple of 4096, never 0).
    nbytes : int
        Size requested by the caller; accesses are checked against it.
    """

    addr: int
    nbytes: int
    #: Number of the driver (device) that allocated it (0: none).
    owner: int = field(default=0, repr=False)

    @property
    def pages(self) -> int:
        """Number of 4 KiB pages the allocation occupies."""
        return -(-self.nbytes // PAGE_BYTES)

    def __repr__(self) -> str:
        return f"Buffer(addr=0x{self.addr:x}, nbytes={self.nbytes})"


class RunStats:
    """Counters of one run, read from the counter registers.

    Every name of :data:`vta.regs.COUNTERS` is an attribute
    (``stats.cycles``, ``stats.gemm_uops`` ...); timing counters are ``None``
    when the transport has no clock (the golden model).

    Attributes
    ----------
    counters : dict[str, int | None]
        All counters by name, in register order.
    insn_count : int
        Instructions in the run (several runs: their sum).
    wall_time : float
        Host seconds from START to the counters being read (several runs: sum).
    runs : int
        Number of runs these statistics cover.
    """

    def __init__(self, counters: dict[str, int | None], insn_count: int = 0,
                 wall_time: float = 0.0, runs: int = 1):
        self.counters = dict(counters)
        self.insn_count = insn_count
        self.wall_time = wall_time
        self.runs = runs

    def __getattr__(self, name: str) -> Any:
        counters = self.__dict__.get("counters", {})
        if name in counters:
            return counters[name]
        raise AttributeError(f"RunStats has no counter {name!r}")

    def as_dict(self) -> dict[str, Any]:
        """Counters plus ``insn_count``, ``wall_time`` and ``runs``."""
        return {**self.counters, "insn_count": self.insn_count, "wall_time": self.wall_time,
                "runs": self.runs}

    @classmethod
    def total(cls, stats: Iterable[RunStats]) -> RunStats | None:
        """Sum of several runs' statistics (``None`` for no runs; ``None`` counters stay None)."""
        stats = list(stats)
        if not stats:
            return None
        counters: dict[str, int | None] = {}
        for name, _ in regs.COUNTERS:
            values = [s.counters.get(name) for s in stats]
            counters[name] = None if any(v is None for v in values) else sum(values)
        return cls(counters, sum(s.insn_count for s in stats), sum(s.wall_time for s in stats),
                   sum(s.runs for s in stats))

    def __repr__(self) -> str:
        shown = ", ".join(f"{k}={v}" for k, v in self.counters.items() if v)
        return f"RunStats(insn_count={self.insn_count}, {shown})"


@dataclass
class _Allocator:
    """First-fit page allocator over pages 1 .. total_pages - 1 (page 0 is never used)."""

    total_pages: int
    free_runs: list[list[int]] = field(default_factory=list)  # [first_page, npages], sorted

    def __post_init__(self) -> None:
        if self.total_pages > 1:
            self.free_runs = [[1, self.total_pages - 1]]

    def free_pages(self) -> int:
        return sum(n for _, n in self.free_runs)

    def largest_run(self) -> int:
        return max((n for _, n in self.free_runs), default=0)

    def take(self, npages: int) -> int | None:
        for run in self.free_runs:
            if run[1] >= npages:
                first = run[0]
                run[0] += npages
                run[1] -= npages
                if run[1] == 0:
                    self.free_runs.remove(run)
                return first
        return None

    def give(self, first: int, npages: int) -> None:
        runs = self.free_runs
        runs.append([first, npages])
        runs.sort()
        merged: list[list[int]] = []
        for run in runs:
            if merged and merged[-1][0] + merged[-1][1] == run[0]:
                merged[-1][1] += run[1]
            else:
                merged.append(run)
        self.free_runs = merged


class Driver:
    """The host driver over one transport.

    Parameters
    ----------
    transport : Transport
        How to reach the device (control registers and device memory).
    cfg : Config
        The configuration the caller expects the device to implement; opening
        fails with :class:`~vta.errors.DeviceError` when the device differs.
    explain : callable, optional
        ``explain(driver, insn_addr, insn_count, module, index, code) -> str | None``:
        a message for a fault the device reported only as a code (and no detail
        of its own); :func:`vta.device.open_device` gives the golden model's.

    Attributes
    ----------
    has_timing : bool
        Whether the device counts clock cycles (``False`` on the golden model).
    """

    def __init__(self, transport: Transport, cfg: Config,
                 explain: Callable[..., str | None] | None = None):
        if not isinstance(cfg, Config):
            raise TypeError(f"cfg must be a vta.Config, not {type(cfg).__name__}")
        self.transport = transport
        self.cfg = cfg
        self.explain = explain
        self.has_timing = bool(getattr(transport, "has_timing", True))
        self._number = next(_DRIVER_NUMBERS)
        self._live: dict[int, Buffer] = {}
        self._freed: set[int] = set()
        self._closed = False
        self.identify()
        mem_size = int(transport.mem_size)
        self._alloc = _Allocator(mem_size // PAGE_BYTES)

    def _describe(self) -> str:
        return f"{getattr(self.transport, 'name', 'device')} device ({self.cfg.name})"

    # ---------------------------------------------------------- registers
    def read_reg(self, name: str) -> int:
        """Read 32-bit register ``name`` (``"STATUS"``; ``"CYCLES_HI"`` for a high word)."""
        if name.endswith("_HI"):
            return self.transport.read32(regs.offset(name[:-3]) + 4)
        if name.endswith("_LO"):
            name = name[:-3]
        return self.transport.read32(regs.offset(name))

    def read_reg64(self, name: str) -> int:
        """Read the 64-bit register pair ``name`` (low word first)."""
        base = regs.offset(name)
        lo = self.transport.read32(base)
        hi = self.transport.read32(base + 4)
        return (hi << 32) | lo

    def identify(self) -> dict[str, int]:
        """Read the identification registers and check them against ``cfg``.

        Returns the register values; raises :class:`DeviceError` when the
        device is not a VTA of this register-map revision and ISA version, or
        was built for a different configuration (each differing key is listed
        as ``KEY: device X, requested Y``).
        """
        t = self.transport
        ident = {name: t.read32(regs.offset(name))
                 for name in ("ID", "HW_VERSION", "CONFIG_SIG", "CONFIG0", "CONFIG1")}
        where = f"{getattr(t, 'name', 'device')} device"
        if ident["ID"] != regs.ID_MAGIC:
            raise DeviceError(f"{where} is not a VTA: ID register reads 0x{ident['ID']:08x}, "
                              f"expected 0x{regs.ID_MAGIC:08x}")
        if ident["HW_VERSION"] != regs.HW_VERSION:
            raise DeviceError(
                f"{where} implements ISA version {_version(ident['HW_VERSION'])}, this driver "
                f"needs {_version(regs.HW_VERSION)}")
        dev_keys = regs.config_from_words(ident["CONFIG0"], ident["CONFIG1"])
        want_keys = regs.config_from_words(*regs.config_words(self.cfg))
        diffs = [f"{k}: device {dev_keys[k]}, requested {want_keys[k]}"
                 for k in want_keys if dev_keys[k] != want_keys[k]]
        if not diffs and ident["CONFIG_SIG"] != self.cfg.signature:
            diffs.append(f"CONFIG_SIG: device 0x{ident['CONFIG_SIG']:08x}, requested "
                         f"0x{self.cfg.signature:08x}")
        if diffs:
            raise DeviceError(
                f"{where} was built for a different configuration than requested "
                f"({self.cfg.name}): " + "; ".join(diffs))
        return ident

    # ------------------------------------------------------------- memory
    def alloc(self, nbytes: int) -> Buffer:
        """Allocate ``nbytes`` of device memory (whole 4 KiB pages, never address 0)."""
        if isinstance(nbytes, bool):
            raise TypeError(f"nbytes must be an integer, not {nbytes!r}")
        try:
            nbytes = operator.index(nbytes)  # int or numpy integer
        except TypeError:
            raise TypeError(f"nbytes must be an integer, not {nbytes!r}") from None
        if nbytes <= 0:
            raise ValueError(f"nbytes must be positive, not {nbytes}")
        self._check_open()
        npages = -(-nbytes // PAGE_BYTES)
        first = self._alloc.take(npages)
        if first is None:
            free = self._alloc.free_pages()
            raise DeviceError(
                f"device memory exhausted: requested {nbytes} bytes ({npages} pages), "
                f"{free * PAGE_BYTES} bytes ({free} pages) free, largest free run "
                f"{self._alloc.largest_run()} pages, of {self.transport.mem_size} bytes")
        buf = Buffer(first * PAGE_BYTES, nbytes, self._number)
        self._live[buf.addr] = buf
        self._freed.discard(buf.addr)
        return buf

    def free(self, buf: Buffer) -> None:
        """Return ``buf``'s pages; freeing twice (or a foreign buffer) is an error."""
        if not isinstance(buf, Buffer):
            raise TypeError(f"free expects a Buffer, not {type(buf).__name__}")
        if self._live.get(buf.addr) is not buf:
            if buf.owner and buf.owner != self._number:
                raise DeviceError(f"free of buffer 0x{buf.addr:x} ({buf.nbytes} bytes): it "
                                  f"belongs to another device, not this {self._describe()}")
            if buf.addr in self._freed or buf.addr in self._live:
                raise DeviceError(f"double free of buffer 0x{buf.addr:x} ({buf.nbytes} bytes): "
                                  "it was already freed")
            raise DeviceError(f"free of buffer 0x{buf.addr:x} ({buf.nbytes} bytes): it was "
                              "never allocated on this device")
        del self._live[buf.addr]
        self._freed.add(buf.addr)
        self._alloc.give(buf.addr // PAGE_BYTES, buf.pages)

    def check_access(self, buf: Buffer, offset: int, length: int, what: str) -> None:
        """Raise :class:`DeviceError` unless ``[offset, offset + length)`` lies in live ``buf``."""
        if not isinstance(buf, Buffer):
            raise TypeError(f"{what} expects a Buffer, not {type(buf).__name__}")
        if self._live.get(buf.addr) is not buf:
            if buf.owner and buf.owner != self._number:
                raise DeviceError(f"{what} of buffer 0x{buf.addr:x} ({buf.nbytes} bytes): it "
                                  f"belongs to another device, not this {self._describe()}")
            raise DeviceError(f"{what} of buffer 0x{buf.addr:x} ({buf.nbytes} bytes): the buffer "
                              "is not allocated (freed or foreign)")
        if offset < 0 or length < 0 or offset + length > buf.nbytes:
            raise DeviceError(
                f"{what} outside buffer 0x{buf.addr:x} ({buf.nbytes} bytes): offset {offset}, "
                f"length {length} (bytes {offset}..{offset + length} of 0..{buf.nbytes})")

    def write(self, buf: Buffer, data: bytes | bytearray | memoryview, offset: int = 0) -> None:
        """Copy ``data`` into ``buf`` at byte ``offset``."""
        self._check_open()
        view = memoryview(data).cast("B")
        self.check_access(buf, offset, view.nbytes, "write")
        if view.nbytes:
            self.transport.mem_write(buf.addr + offset, view)

    def read(self, buf: Buffer, nbytes: int | None = None, offset: int = 0) -> bytes:
        """Copy ``nbytes`` (default: the rest of the buffer) from ``buf`` at ``offset``."""
        self._check_open()
        if nbytes is None:
            nbytes = buf.nbytes - offset
        self.check_access(buf, offset, nbytes, "read")
        return self.transport.mem_read(buf.addr + offset, nbytes) if nbytes else b""

    @property
    def live_buffers(self) -> list[Buffer]:
        """Buffers currently allocated, by address."""
        return [self._live[a] for a in sorted(self._live)]

    # ---------------------------------------------------------------- run
    def run(self, insn_addr: int, insn_count: int, timeout: float = 60.0) -> RunStats:
        """Run ``insn_count`` instructions at device byte address ``insn_addr``.

        Raises :class:`~vta.errors.DeviceTimeoutError` (with a snapshot of
        FETCH_INDEX, token occupancy and retired counts) when STATUS is still
        BUSY after ``timeout`` seconds, and :class:`~vta.errors.ExecutionError`
        or :class:`~vta.errors.DeadlockError` when the device reports ERROR.
        """
        self._check_open()
        if insn_addr < 0 or insn_addr >= 1 << 64:
            raise ValueError(f"insn_addr must be in 0..2**64-1, not {insn_addr}")
        if insn_addr % INSN_BYTES:
            raise ValueError(f"insn_addr must be a multiple of {INSN_BYTES} (instructions are "
                             f"{INSN_BYTES}-byte aligned), not 0x{insn_addr:x}")
        if not 0 < insn_count < 1 << 32:
            raise ValueError(f"insn_count must be in 1..2**32-1, not {insn_count}")
        t = self.transport
        if self.read_reg("STATUS") & regs.STATUS_BUSY:
            raise DeviceError("cannot start a run: the device is busy with another one")
        t.write32(regs.offset("CTRL"), regs.CTRL_CLEAR)
        t.write32(regs.offset("INSN_ADDR"), insn_addr & 0xFFFFFFFF)
        t.write32(regs.offset("INSN_ADDR") + 4, insn_addr >> 32)
        t.write32(regs.offset("INSN_COUNT"), insn_count)
        start = time.perf_counter()
        t.write32(regs.offset("CTRL"), regs.CTRL_START)
        t.wait_idle(timeout)
        status = self.read_reg("STATUS")
        delay = 1e-5
        while status & regs.STATUS_BUSY:
            elapsed = time.perf_counter() - start
            if elapsed >= timeout:
                raise DeviceTimeoutError(
                    f"run of {insn_count} instructions at 0x{insn_addr:x} did not finish: "
                    f"device still busy after {elapsed:.3f} s (timeout {timeout} s); "
                    + self.snapshot_text())
            time.sleep(delay)
            delay = min(delay * 2, 0.01)
            status = self.read_reg("STATUS")
        wall = time.perf_counter() - start
        counters = self.read_counters()
        if status & regs.STATUS_ERROR:
            raise self._decode_error(status, insn_addr, insn_count)
        if not status & regs.STATUS_DONE:
            raise DeviceError(f"run of {insn_count} instructions at 0x{insn_addr:x}: device went "
                              f"idle without DONE or ERROR (STATUS 0x{status:08x})")
        return RunStats(counters, insn_count, wall)

    def read_counters(self) -> dict[str, int | None]:
        """Every counter of :data:`regs.COUNTERS` (timing ones ``None`` without a clock)."""
        names, offsets = _counter_words(self.has_timing)
        words = self.transport.read32_many(offsets)
        counters = dict.fromkeys(_COUNTER_NAMES)  # every counter, in register order
        for k, name in enumerate(names):
            counters[name] = words[2 * k] | words[2 * k + 1] << 32
        return counters

    def snapshot(self) -> dict[str, Any]:
        """Hang-diagnosis registers: FETCH_INDEX, token occupancy, retired counts, STATUS."""
        tokens = self.read_reg("TOKENS")
        return {
            "status": self.read_reg("STATUS"),
            "fetch_index": self.read_reg("FETCH_INDEX"),
            "tokens": {q: (tokens >> (8 * i)) & 0xFF for i, q in enumerate(_QUEUES)},
            "retired": {e: self.read_reg64(f"{e.upper()}_INSNS")
                        for e in ("load", "compute", "store")},
        }

    def snapshot_text(self) -> str:
        """:meth:`snapshot` as one line of text."""
        snap = self.snapshot()
        tokens = " ".join(f"{q}={n}" for q, n in snap["tokens"].items())
        retired = " ".join(f"{e}={n}" for e, n in snap["retired"].items())
        return (f"FETCH_INDEX={snap['fetch_index']}, tokens {tokens}, retired {retired}, "
                f"STATUS=0x{snap['status']:08x}")

    def _decode_error(self, status: int, insn_addr: int, insn_count: int) -> Exception:
        module_no = (status >> regs.STATUS_MODULE_SHIFT) & 0xF
        module = regs.MODULES[module_no] if module_no < len(regs.MODULES) else f"#{module_no}"
        code_no = (status >> regs.STATUS_CODE_SHIFT) & 0xFF
        try:
            code: ErrorCode | int = ErrorCode(code_no)
            code_name = code.name
        except ValueError:
            code, code_name = code_no, f"unknown code {code_no}"
        raw_index = self.read_reg("ERR_INDEX")
        index = None if raw_index == NO_INDEX else raw_index
        where = f"instruction {index}" if index is not None else "no instruction"
        message = (f"run of {insn_count} instructions at 0x{insn_addr:x} stopped with "
                   f"{code_name} in the {module} module at {where}")
        address = None
        if code == ErrorCode.BUS_ERROR:
            address = self.read_reg64("ERR_ADDR")
            message += f" (error response to the DRAM burst at 0x{address:x})"
        detail_fn = getattr(self.transport, "last_error_detail", None)
        detail = detail_fn() if callable(detail_fn) else None
        if not detail and self.explain is not None:
            detail = self.explain(self, insn_addr, insn_count, module, index, code)
        if detail:
            message += f": {detail}"
        if code == ErrorCode.DEADLOCK:
            message += f" ({self.snapshot_text()})"
            return DeadlockError(message, stuck={module: (index, "")})
        return ExecutionError(message, module=module, index=index,
                              code=code if isinstance(code, ErrorCode) else None, address=address)

    # -------------------------------------------------------------- close
    def _check_open(self) -> None:
        if self._closed:
            raise DeviceError("the device is closed")

    def close(self) -> None:
        """Close the transport (idempotent)."""
        if not self._closed:
            self._closed = True
            self.transport.close()


def _version(word: int) -> str:
    return f"{(word >> 16) & 0xFF}.{(word >> 8) & 0xFF}.{word & 0xFF}"


@functools.cache
def _counter_words(has_timing: bool) -> tuple[tuple[str, ...], tuple[int, ...]]:
    """The counters a driver reads after a run (all, or all but the timing ones) and the
    offsets of their 32-bit words, low word first: worked out once, not on every run."""
    names = tuple(name for name, _ in regs.COUNTERS
                  if has_timing or name not in regs.TIMING_COUNTERS)
    return names, tuple(regs.offset(name.upper()) + half for name in names for half in (0, 4))

"""The golden backend: a register-file model in front of the NumPy golden model.

:class:`GoldenTransport` answers the register map of :mod:`vta.regs`
exactly as the hardware does -- identification, STATUS, ERR_INDEX, TOKENS,
FETCH_INDEX and every counter -- and runs :class:`vta.golden.GoldenModel`
when CTRL.START is written: inside :meth:`~GoldenTransport.wait_idle`, which
the driver calls with the run's timeout, or else at the next register or
memory access.  One model lives as long as the transport, so the scratchpads
persist across runs as on hardware.  The model has no clock: the transport
declares ``has_timing = False`` and its timing counters read 0 (the driver
reports them as ``None``).  With ``trace`` the instructions each run retired
are kept as :mod:`vta.trace` records, in the order the model retired them
(:attr:`GoldenTransport.last_trace`).

A run still going when its timeout passes is stopped (between instructions,
or between pieces of a large loop nest) and :meth:`wait_idle` raises
:class:`~vta.errors.DeviceTimeoutError`; the device is then idle, holding
whatever the stopped run had written.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from .. import regs
from ..config import Config
from ..driver.host import NO_INDEX
from ..driver.transport import Transport
from ..errors import DeadlockError, DeviceError, DeviceTimeoutError, ErrorCode, ExecutionError
from ..golden import Counters, GoldenModel, RunTimeoutError, TraceEvent
from ..isa import ENGINES, QUEUES

#: Options of :func:`vta.open_device` this backend takes (the others are ignored here).
OPTIONS = frozenset({"mem_size", "trace", "bus_error"})

#: Default device memory: 256 MiB, zero-filled lazily by the OS.
DEFAULT_MEM_SIZE = 1 << 28

_MASK32 = 0xFFFFFFFF
_DONE = regs.status_word(done=True)  # STATUS after a run that finished
#: Offsets of the registers the transport decodes itself.
_STATUS, _ERR_INDEX, _ERR_ADDR, _INSN_ADDR, _INSN_COUNT, _TOKENS, _FETCH_INDEX, _CTRL = (
    regs.offset(name) for name in ("STATUS", "ERR_INDEX", "ERR_ADDR", "INSN_ADDR", "INSN_COUNT",
                                   "TOKENS", "FETCH_INDEX", "CTRL"))


class GoldenTransport(Transport):
    """Transport to the golden model.

    Parameters
    ----------
    cfg : Config
        Configuration the modelled device implements (the identification
        registers report it).
    mem_size : int
        Bytes of device memory (default 256 MiB).
    trace : bool, str or Path
        ``True``: keep each run's trace in :attr:`last_trace`; a path: also
        append it to that file in the :mod:`vta.trace` format.
    bus_error : (int, int) or None
        Fault injection: ``(addr, nbytes)``, whole 4 KiB pages whose memory
        answers every access with an error response (``BUS_ERROR``; see
        :attr:`vta.golden.GoldenModel.bus_error`).
    """

    name = "golden"
    has_timing = False

    def __init__(self, cfg: Config, mem_size: int = DEFAULT_MEM_SIZE,
                 trace: bool | str | Path | None = None,
                 bus_error: tuple[int, int] | None = None):
        if mem_size <= 0 or mem_size % 4096:
            raise ValueError(f"mem_size must be a positive multiple of 4096, not {mem_size}")
        self.cfg = cfg
        self.mem_size = int(mem_size)
        self.mem = np.zeros(self.mem_size, dtype=np.uint8)
        self.model = GoldenModel(cfg, self.mem)
        if bus_error is not None:
            addr, nbytes = bus_error
            self.model.bus_error = (addr, addr + nbytes)
        w0, w1 = regs.config_words(cfg)
        self._const = {
            regs.offset("ID"): regs.ID_MAGIC,
            regs.offset("HW_VERSION"): regs.HW_VERSION,
            regs.offset("CONFIG_SIG"): cfg.signature,
            regs.offset("CONFIG0"): w0,
            regs.offset("CONFIG1"): w1,
        }
        #: offset of each 32-bit word of a 64-bit counter -> (counter, shift of the word)
        self._counter_words = {regs.offset(n.upper()) + 4 * high: (n, 32 * high)
                               for n, _ in regs.COUNTERS for high in (0, 1)}
        self._insn_addr = 0
        self._insn_count = 0
        self._status = 0
        self._err_index = 0
        self._err_addr = 0
        self._fetch_index = 0
        self._pending = False  # START written, the run not executed yet
        self._counters: dict[str, int] = {n: 0 for n, _ in regs.COUNTERS}
        self._detail: str | None = None
        self._closed = False
        self.tracing = bool(trace)
        self.trace_path = Path(trace) if isinstance(trace, (str, Path)) else None
        self.last_trace: list = []

    # ---------------------------------------------------------- registers
    def read32(self, offset: int) -> int:
        word = self._counter_words.get(offset)  # first: the driver reads them all after a run
        if word is not None:
            self._settle()
            counter, shift = word
            return (self._counters[counter] >> shift) & _MASK32
        self._check_offset(offset)
        self._settle()
        if offset in self._const:
            return self._const[offset]
        if offset == _STATUS:
            return self._status
        if offset == _ERR_INDEX:
            return self._err_index
        if offset == _ERR_ADDR:
            return self._err_addr & _MASK32
        if offset == _ERR_ADDR + 4:
            return self._err_addr >> 32
        if offset == _INSN_ADDR:
            return self._insn_addr & _MASK32
        if offset == _INSN_ADDR + 4:
            return self._insn_addr >> 32
        if offset == _INSN_COUNT:
            return self._insn_count
        if offset == _TOKENS:
            live = self.model.tokens
            return sum(min(live[q], 255) << (8 * i) for i, q in enumerate(QUEUES))
        if offset == _FETCH_INDEX:
            return self._fetch_index
        return 0  # unmapped and write-only registers read as 0

    def read32_many(self, offsets) -> list[int]:
        """The registers at ``offsets``, in order; counter words without a call each (the
        driver reads every counter after a run)."""
        self._settle()
        counters, words = self._counters, self._counter_words
        return [(counters[word[0]] >> word[1]) & _MASK32 if (word := words.get(offset))
                else self.read32(offset) for offset in offsets]

    def write32(self, offset: int, value: int) -> None:
        self._check_offset(offset)
        self._settle()
        value &= _MASK32
        if offset == _INSN_ADDR:
            self._insn_addr = (self._insn_addr & ~_MASK32) | value
        elif offset == _INSN_ADDR + 4:
            self._insn_addr = (self._insn_addr & _MASK32) | (value << 32)
        elif offset == _INSN_COUNT:
            self._insn_count = value
        elif offset == _CTRL:
            if value & regs.CTRL_CLEAR:
                self._status = 0
                self._err_index = 0
                self._err_addr = 0
                self._detail = None
            if value & regs.CTRL_START and not self._status & regs.STATUS_BUSY:
                self._status = regs.STATUS_BUSY
                self._pending = True
        # writes to read-only registers are ignored, as by the hardware

    @staticmethod
    def _check_offset(offset: int) -> None:
        if offset % 4 or not 0 <= offset < regs.MAP_BYTES:
            raise DeviceError(f"register offset must be a multiple of 4 in 0..0x{regs.MAP_BYTES:x},"
                              f" not 0x{offset:x}")

    # ---------------------------------------------------------------- run
    def wait_idle(self, timeout: float) -> None:
        """Execute the started run, stopping it after ``timeout`` seconds.

        Raises :class:`~vta.errors.DeviceTimeoutError` when the run is
        stopped; the device is idle afterwards (STATUS neither DONE nor ERROR)
        and its counters, FETCH_INDEX and TOKENS describe where it stopped.
        """
        if not self._pending:
            return
        start = time.monotonic()
        try:
            self._run(deadline=start + timeout)
        except RunTimeoutError as exc:
            self._stopped(exc, time.monotonic() - start, timeout)

    def _settle(self) -> None:
        """Finish a started run before any other access (no deadline: nobody gave one)."""
        if self._pending:
            self._run(deadline=None)

    def _run(self, deadline: float | None) -> None:
        """Run the started stream and set STATUS, counters and FETCH_INDEX."""
        self._pending = False
        self._fetch_index = 0
        self._err_index = 0
        self._err_addr = 0
        self._detail = None
        events: list[TraceEvent] = []
        try:
            # The model checks and dispatches the whole stream before executing: a
            # fetch fault stops with nothing executed, anything else after it all.
            counters = self.model.run(self._insn_addr, self._insn_count, deadline=deadline,
                                      trace=events.append if self.tracing else None)
        except DeadlockError as exc:
            self._fetch_index = self._insn_count
            module = next(e for e in ENGINES if e in exc.stuck)
            self._fail(module, exc.stuck[module][0], ErrorCode.DEADLOCK, str(exc))
        except ExecutionError as exc:
            if exc.module == "fetch":
                self._fetch_index = exc.index or 0
            else:
                self._fetch_index = self._insn_count
            self._fail(exc.module, exc.index, exc.code, str(exc), exc.address or 0)
        except RunTimeoutError:
            self._fetch_index = self._insn_count
            self._set_counters(self.model.counters)
            self._status = 0
            raise
        else:
            self._fetch_index = self._insn_count
            self._set_counters(counters)
            self._status = _DONE
        finally:
            if self.tracing:
                self._keep_trace(events)

    def _keep_trace(self, events: list[TraceEvent]) -> None:
        from .. import trace as vtrace

        self.last_trace = vtrace.from_golden(events, self.cfg)
        if self.trace_path is not None:
            vtrace.append_trace(self.trace_path, self.last_trace)

    def _stopped(self, exc: RunTimeoutError, elapsed: float, timeout: float) -> None:
        c = self.model.counters
        tokens = " ".join(f"{q}={n}" for q, n in self.model.tokens.items())
        retired = " ".join(f"{e}={getattr(c, f'{e}_insns')}" for e in ENGINES)
        raise DeviceTimeoutError(
            f"run of {self._insn_count} instructions at 0x{self._insn_addr:x} did not finish: "
            f"the golden model was stopped after {elapsed:.3f} s (timeout {timeout} s) in "
            f"instruction {exc.index} ({exc.module}); FETCH_INDEX={self._fetch_index}, tokens "
            f"{tokens}, retired {retired}. The device is idle again; the stopped run's writes "
            "to memory and scratchpads stay") from exc

    def _fail(self, module: str, index: int | None, code: ErrorCode, detail: str,
              address: int = 0) -> None:
        self._set_counters(self.model.counters)  # what the engines retired before the fault
        self._err_index = NO_INDEX if index is None else index
        self._err_addr = address
        self._detail = detail
        self._status = regs.status_word(error=True, module=module, code=code)

    def _set_counters(self, counters: Counters) -> None:
        # every counter but the timing ones (which stay 0: the model has no clock)
        self._counters.update(counters.as_dict())

    def last_error_detail(self) -> str | None:
        """The golden model's own message for the last ERROR, if any."""
        return self._detail

    # ------------------------------------------------------------- memory
    def _check_range(self, addr: int, nbytes: int) -> None:
        if addr < 0 or nbytes < 0 or addr + nbytes > self.mem_size:
            raise DeviceError(f"device memory access 0x{addr:x}..0x{addr + nbytes:x} lies outside "
                              f"the {self.mem_size}-byte device memory")

    def mem_write(self, addr: int, data: bytes | bytearray | memoryview) -> None:
        self._settle()
        src = np.frombuffer(data, dtype=np.uint8)
        self._check_range(addr, src.size)
        self.mem[addr:addr + src.size] = src

    def mem_read(self, addr: int, nbytes: int) -> bytes:
        self._settle()
        self._check_range(addr, nbytes)
        return self.mem[addr:addr + nbytes].tobytes()

    def close(self) -> None:
        self._closed = True


def open_transport(backend: str, cfg: Config, **options) -> GoldenTransport:
    """Backend plug-in entry point (``vta.open_device("golden", ...)``)."""
    return GoldenTransport(cfg, **options)

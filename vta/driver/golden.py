"""The golden backend: a register-file model in front of the NumPy golden model.

:class:`GoldenTransport` answers the register map of :mod:`vta.driver.regs`
exactly as the hardware does -- identification, STATUS, ERR_INDEX, TOKENS,
FETCH_INDEX and every counter -- and runs :class:`vta.golden.GoldenModel`
synchronously when CTRL.START is written.  One model lives as long as the
transport, so the scratchpads persist across runs as on hardware.  The model
has no clock: the transport declares ``has_timing = False`` and its timing
counters read 0 (the driver reports them as ``None``).  With ``trace`` the
instructions each run retired are kept as :mod:`vta.trace` records, in the
order the model retired them (:attr:`GoldenTransport.last_trace`).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..config import Config
from ..errors import DeadlockError, DeviceError, ErrorCode, ExecutionError
from ..golden import ENGINES, QUEUES, Counters, GoldenModel, TraceEvent
from ..isa import MemId, Opcode
from . import regs
from .host import NO_INDEX
from .transport import Transport

#: Default device memory: 256 MiB, zero-filled lazily by the OS.
DEFAULT_MEM_SIZE = 1 << 28

_MASK32 = 0xFFFFFFFF


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
    """

    name = "golden"
    has_timing = False

    def __init__(self, cfg: Config, mem_size: int = DEFAULT_MEM_SIZE,
                 trace: bool | str | Path | None = None):
        if mem_size <= 0 or mem_size % 4096:
            raise ValueError(f"mem_size must be a positive multiple of 4096, not {mem_size}")
        self.cfg = cfg
        self.mem_size = int(mem_size)
        self.mem = np.zeros(self.mem_size, dtype=np.uint8)
        self.model = GoldenModel(cfg, self.mem)
        w0, w1 = regs.config_words(cfg)
        self._const = {
            regs.offset("ID"): regs.ID_MAGIC,
            regs.offset("HW_VERSION"): regs.HW_VERSION,
            regs.offset("CONFIG_SIG"): cfg.signature,
            regs.offset("CONFIG0"): w0,
            regs.offset("CONFIG1"): w1,
        }
        self._counter_offsets = {regs.offset(n.upper()): n for n, _ in regs.COUNTERS}
        self._insn_addr = 0
        self._insn_count = 0
        self._status = 0
        self._err_index = 0
        self._fetch_index = 0
        self._events: list[TraceEvent] = []  # instructions retired by the current/last run
        self._counters: dict[str, int] = {n: 0 for n, _ in regs.COUNTERS}
        self._detail: str | None = None
        self._closed = False
        self.tracing = bool(trace)
        self.trace_path = Path(trace) if isinstance(trace, (str, Path)) else None
        self.last_trace: list = []

    # ---------------------------------------------------------- registers
    def read32(self, offset: int) -> int:
        self._check_offset(offset)
        if offset in self._const:
            return self._const[offset]
        if offset == regs.offset("STATUS"):
            return self._status
        if offset == regs.offset("ERR_INDEX"):
            return self._err_index
        if offset == regs.offset("INSN_ADDR"):
            return self._insn_addr & _MASK32
        if offset == regs.offset("INSN_ADDR") + 4:
            return self._insn_addr >> 32
        if offset == regs.offset("INSN_COUNT"):
            return self._insn_count
        if offset == regs.offset("TOKENS"):
            live = self._live_tokens()
            return sum(min(live[q], 255) << (8 * i) for i, q in enumerate(QUEUES))
        if offset == regs.offset("FETCH_INDEX"):
            return self._fetch_index
        low = offset & ~7 if (offset & ~7) in self._counter_offsets else None
        if low is not None:
            value = self._counters[self._counter_offsets[low]]
            return (value >> 32) & _MASK32 if offset & 4 else value & _MASK32
        return 0  # unmapped and write-only registers read as 0

    def write32(self, offset: int, value: int) -> None:
        self._check_offset(offset)
        value &= _MASK32
        if offset == regs.offset("INSN_ADDR"):
            self._insn_addr = (self._insn_addr & ~_MASK32) | value
        elif offset == regs.offset("INSN_ADDR") + 4:
            self._insn_addr = (self._insn_addr & _MASK32) | (value << 32)
        elif offset == regs.offset("INSN_COUNT"):
            self._insn_count = value
        elif offset == regs.offset("CTRL"):
            if value & regs.CTRL_CLEAR:
                self._status = 0
                self._err_index = 0
                self._detail = None
            if value & regs.CTRL_START and not self._status & regs.STATUS_BUSY:
                self._start()
        # writes to read-only registers are ignored, as by the hardware

    @staticmethod
    def _check_offset(offset: int) -> None:
        if offset % 4 or not 0 <= offset < regs.MAP_BYTES:
            raise DeviceError(f"register offset must be a multiple of 4 in 0..0x{regs.MAP_BYTES:x},"
                              f" not 0x{offset:x}")

    # ---------------------------------------------------------------- run
    def _start(self) -> None:
        """Run the stream now (the model is synchronous) and set STATUS."""
        self._counters = {n: 0 for n, _ in regs.COUNTERS}
        self._fetch_index = 0
        self._detail = None
        self._events = []
        self._status = regs.STATUS_BUSY
        try:
            # The model decodes the whole stream before dispatching: a fetch
            # fault stops with nothing executed, anything else after it all.
            counters = self.model.run(self._insn_addr, self._insn_count,
                                      trace=self._events.append)
        except DeadlockError as exc:
            self._fetch_index = self._insn_count
            module = next(e for e in ENGINES if e in exc.stuck)
            self._fail(module, exc.stuck[module][0], ErrorCode.DEADLOCK, str(exc))
        except ExecutionError as exc:
            if exc.module == "fetch":
                self._fetch_index = exc.index or 0
            else:
                self._fetch_index = self._insn_count
            self._fail(exc.module, exc.index, exc.code, str(exc))
        else:
            self._fetch_index = self._insn_count
            self._set_counters(counters)
            self._status = regs.status_word(done=True)
        if self.tracing:
            from .. import trace as vtrace

            self.last_trace = vtrace.from_golden(self._events, self.cfg)
            if self.trace_path is not None:
                vtrace.append_trace(self.trace_path, self.last_trace)

    def _live_tokens(self) -> dict[str, int]:
        live = dict.fromkeys(QUEUES, 0)
        for event in self._events:
            for q in event.popped:
                live[q] -= 1
            for q in event.pushed:
                live[q] += 1
        return live

    def _fail(self, module: str, index: int | None, code: ErrorCode, detail: str) -> None:
        partial = Counters()  # what the engines retired before the fault
        for event in self._events:
            _count(partial, event, self.cfg)
        self._set_counters(partial)
        self._err_index = NO_INDEX if index is None else index
        self._detail = detail
        self._status = regs.status_word(error=True, module=module, code=code)

    def _set_counters(self, counters: Counters) -> None:
        values = counters.as_dict()
        for name, _ in regs.COUNTERS:
            self._counters[name] = 0 if name in regs.TIMING_COUNTERS else int(values[name])

    def last_error_detail(self) -> str | None:
        """The golden model's own message for the last ERROR, if any."""
        return self._detail

    # ------------------------------------------------------------- memory
    def _check_range(self, addr: int, nbytes: int) -> None:
        if addr < 0 or nbytes < 0 or addr + nbytes > self.mem_size:
            raise DeviceError(f"device memory access 0x{addr:x}..0x{addr + nbytes:x} lies outside "
                              f"the {self.mem_size}-byte device memory")

    def mem_write(self, addr: int, data: bytes | bytearray | memoryview) -> None:
        src = np.frombuffer(data, dtype=np.uint8)
        self._check_range(addr, src.size)
        self.mem[addr:addr + src.size] = src

    def mem_read(self, addr: int, nbytes: int) -> bytes:
        self._check_range(addr, nbytes)
        return self.mem[addr:addr + nbytes].tobytes()

    def close(self) -> None:
        self._closed = True


def _count(c: Counters, event: TraceEvent, cfg: Config) -> None:
    """Accumulate the counters of one retired instruction (used for a run that faults)."""
    insn = event.insn
    setattr(c, f"{event.module}_insns", getattr(c, f"{event.module}_insns") + 1)
    for q in event.pushed:
        c.tokens[q] += 1
    op = insn.opcode
    if op in (Opcode.LOAD, Opcode.STORE) and insn.x_size:
        n = insn.x_size * insn.y_size
        if op == Opcode.STORE:
            c.out_store_bytes += n * cfg.OUT_ELEM_BYTES
        else:
            name, size = {MemId.UOP: ("uop", cfg.UOP_ELEM_BYTES),
                          MemId.INP: ("inp", cfg.INP_ELEM_BYTES),
                          MemId.WGT: ("wgt", cfg.WGT_ELEM_BYTES),
                          MemId.ACC: ("acc", cfg.ACC_ELEM_BYTES),
                          MemId.ACC_8BIT: ("acc8", cfg.BATCH * cfg.BLOCK_OUT)}[insn.memory_type]
            setattr(c, f"{name}_load_bytes", getattr(c, f"{name}_load_bytes") + n * size)
    elif op in (Opcode.GEMM, Opcode.ALU) and insn.uop_end > insn.uop_bgn:
        n = (insn.uop_end - insn.uop_bgn) * insn.iter_out * insn.iter_in
        if op == Opcode.ALU:
            c.alu_uops += n
        elif not insn.reset_reg:
            c.gemm_uops += n


def open_transport(backend: str, cfg: Config, **options) -> GoldenTransport:
    """Backend plug-in entry point (``vta.open_device("golden", ...)``)."""
    return GoldenTransport(cfg, **options)

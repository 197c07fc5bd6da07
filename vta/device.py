"""The DeviceAPI: ``vta.open_device(backend, cfg)`` and the :class:`Device` it returns.

Backends are small plug-ins imported lazily by name, so the golden backend
works without cocotb or a simulator installed.  Each plug-in module offers
``open_transport(backend, cfg, **options) -> Transport``; the one host driver
(:class:`vta.driver.host.Driver`) does everything else for every backend.

========== ======================= ==========================================
backend    module                  what it is
========== ======================= ==========================================
golden     vta.backends.golden     register model + NumPy golden model
verilator  vta.backends.rtl        RTL simulation under Verilator (cocotb)
icarus     vta.backends.rtl        RTL simulation under Icarus Verilog
f1, f2     vta.backends.aws        AWS FPGA instance (PCIe BAR + card DMA)
f1-sim,    vta.backends.aws_sim    the f1 / f2 transport against the simulated
f2-sim                             AWS wrapper (hdl/aws) and shell models
========== ======================= ==========================================
"""

from __future__ import annotations

import difflib
import importlib
import logging
import os
from pathlib import Path
from typing import Any

import numpy as np

from .config import Config
from .driver.host import Buffer, Driver, RunStats
from .errors import DeviceError, ErrorCode, ExecutionError
from .isa import INSN_BYTES, MemId, Opcode, decode

#: Backend name -> module holding ``open_transport``.
BACKENDS: dict[str, str] = {
    "golden": "vta.backends.golden",
    "verilator": "vta.backends.rtl",
    "icarus": "vta.backends.rtl",
    "f1": "vta.backends.aws",
    "f2": "vta.backends.aws",
    "f1-sim": "vta.backends.aws_sim",
    "f2-sim": "vta.backends.aws_sim",
}

log = logging.getLogger(__name__)

#: Default seconds a run may take before :class:`~vta.errors.DeviceTimeoutError`.
DEFAULT_RUN_TIMEOUT = 600.0


def _as_config(cfg: Config | str | Path | None) -> Config:
    if cfg is None:
        return Config.load("default")
    if isinstance(cfg, Config):
        return cfg
    if isinstance(cfg, (str, Path)):
        return Config.load(cfg)
    raise TypeError(f"cfg must be a Config, a preset name or a path, not {type(cfg).__name__}")


# ------------------------------------------------------------------ options
#: Options every backend accepts.  Each is checked here by one rule for all backends;
#: it reaches a backend's transport only if the plug-in module lists it in ``OPTIONS``,
#: and is ignored by the others (where it has no meaning).
COMMON_OPTIONS: dict[str, str] = {
    "run_timeout": "seconds a run may take (default 600); every backend",
    "capture": "directory (or .vtaprog file) recording every run (vta.progfile); every backend",
    "mem_size": "device memory bytes, a power of two in 2**16..2**32 (default: golden 256 MiB, "
                "verilator 64 MiB, icarus 16 MiB); golden and simulators; f1/f2: the card's",
    "trace": "True or a file path: per-instruction trace (Device.last_trace); golden and "
             "simulators",
    "bus_error": "(addr, nbytes), whole 4 KiB pages answering every access with SLVERR "
                 "(fault injection); golden and simulators",
    "waves": "True or a file path: waveform of the session; simulators",
    "watchdog": "cycles without progress that stop a run (default 1,000,000; 0: off); "
                "simulators",
    "timeout": "seconds any request other than a run may take (default 120); simulators",
    "latency": "DRAM latency in cycles, or (read, write) (default 2); simulators",
    "stall": "DRAM stall probability per channel and cycle, 0..1 (default 0); simulators",
    "seed": "DRAM stall generator seed; simulators",
    "reorder": "True: the DRAM answers reads of different IDs out of order; simulators",
    "outstanding": "AR / AW requests the DRAM accepts at a time, 1..8 (default 8); simulators",
}


def check_option(name: str, value: Any) -> Any:
    """``value`` if it is valid for common option ``name``; ValueError/TypeError otherwise."""
    def integer(v: Any) -> bool:
        return isinstance(v, (int, np.integer)) and not isinstance(v, bool)

    def number(v: Any) -> bool:
        return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)

    if name == "mem_size":
        if not integer(value) or not 1 << 16 <= value <= 1 << 32 or value & (value - 1):
            raise ValueError(f"mem_size must be a power of two in 2**16..2**32, not {value!r}")
        return int(value)
    if name in ("watchdog", "seed"):
        if not integer(value) or value < 0:
            raise ValueError(f"{name} must be an integer >= 0, not {value!r}")
        return int(value)
    if name in ("run_timeout", "timeout"):
        if not number(value) or not value > 0:
            raise ValueError(f"{name} must be a positive number of seconds, not {value!r}")
        return float(value)
    if name == "latency":
        pair = value if isinstance(value, (tuple, list)) else (value, value)
        if len(pair) != 2 or not all(integer(v) and v >= 0 for v in pair):
            raise ValueError(f"latency must be cycles >= 0 or a (read, write) pair, not {value!r}")
        return value if integer(value) else (int(pair[0]), int(pair[1]))
    if name == "stall":
        if not number(value) or not 0 <= value <= 1:
            raise ValueError(f"stall must be a probability in 0..1, not {value!r}")
        return float(value)
    if name == "outstanding":
        if not integer(value) or not 1 <= value <= 8:
            raise ValueError(f"outstanding must be in 1..8, not {value!r}")
        return int(value)
    if name == "reorder":
        if not isinstance(value, bool):
            raise TypeError(f"reorder must be True or False, not {value!r}")
        return value
    if name == "bus_error":
        if (not isinstance(value, (tuple, list)) or len(value) != 2
                or not all(integer(v) and v >= 0 and v % 4096 == 0 for v in value)
                or not value[1]):
            raise ValueError(f"bus_error must be (addr, nbytes), both multiples of 4096 and "
                             f"nbytes > 0, not {value!r}")
        return (int(value[0]), int(value[1]))
    if name in ("trace", "waves"):
        if not isinstance(value, (bool, str, Path)) and value is not None:
            raise TypeError(f"{name} must be True, False or a file path, not {value!r}")
        if isinstance(value, (str, Path)) and not Path(value).parent.is_dir():
            raise ValueError(f"{name} file {value}: folder {Path(value).parent} does not exist")
        return value
    return value  # capture: checked where it is used


def _transport_options(backend: str, module: Any, options: dict[str, Any]) -> dict[str, Any]:
    """The options ``backend``'s plug-in takes; common ones checked, unknown ones refused."""
    own = getattr(module, "OPTIONS", None)
    own = frozenset(own) if own is not None else frozenset(options) - set(COMMON_OPTIONS)
    out = {}
    for name, value in options.items():
        if name in COMMON_OPTIONS:
            value = check_option(name, value)
        elif name not in own:
            valid = sorted({*COMMON_OPTIONS, *own})
            close = difflib.get_close_matches(name, valid, n=1)
            hint = f"did you mean {close[0]!r}?" if close else "valid: " + ", ".join(valid)
            raise TypeError(f"unknown option {name!r} for the {backend} backend; {hint}")
        if name in own:
            out[name] = value
        else:
            log.debug("option %s=%r has no meaning on the %s backend: ignored", name, value,
                      backend)
    return out


def option_applies(backend: str, name: str) -> bool:
    """Whether common option ``name`` has a meaning on ``backend`` (reaches its transport).

    :func:`open_device` accepts it either way and ignores it where this is False.
    """
    if name in ("run_timeout", "capture"):  # the Device's own, on every backend
        return True
    _, module = _load_plugin(backend)
    return name in (getattr(module, "OPTIONS", None) or ())


def _load_plugin(backend: str):
    if not isinstance(backend, str) or backend not in BACKENDS:
        raise ValueError(f"backend must be one of {', '.join(BACKENDS)}, not {backend!r}")
    module_name = BACKENDS[backend]
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise DeviceError(f"the {backend!r} backend is not available: importing {module_name} "
                          f"failed ({type(exc).__name__}: {exc})") from exc
    opener = getattr(module, "open_transport", None)
    if not callable(opener):
        raise DeviceError(f"the {backend!r} backend is not available: {module_name} has no "
                          "open_transport(backend, cfg, **options) function")
    return opener, module


def open_device(backend: str = "golden", cfg: Config | str | Path | None = None,
                **options: Any) -> Device:
    """Open a VTA device.

    Parameters
    ----------
    backend : str
        ``"golden"``, ``"verilator"``, ``"icarus"``, ``"f1"``, ``"f2"`` (on an AWS
        FPGA instance), ``"f1-sim"`` or ``"f2-sim"`` (the AWS wrappers simulated).
    cfg : Config, str or Path, optional
        The configuration (object, preset name or vta_config.json path);
        default preset ``"default"``.  The device must implement exactly this
        configuration (checked through its identification registers).
    **options
        The options of :data:`COMMON_OPTIONS` are accepted by every backend,
        checked by one rule, and ignored where they have no meaning (``waves``
        on golden, ``mem_size`` on a card); a backend's own options are listed
        in its plug-in's ``OPTIONS``.  An unknown option is a TypeError naming
        the closest valid one.  ``run_timeout`` (seconds, default 600) is the
        driver's default run timeout; ``capture`` (a directory, default
        ``$VTA_CAPTURE``) writes a program file of every run there
        (:mod:`vta.progfile`).

    Returns
    -------
    Device
        Use as a context manager, or call :meth:`Device.close`.
    """
    cfg = _as_config(cfg)
    opener, module = _load_plugin(backend)
    run_timeout = check_option("run_timeout", options.pop("run_timeout", DEFAULT_RUN_TIMEOUT))
    capture = options.pop("capture", None) or os.environ.get("VTA_CAPTURE") or None
    transport = opener(backend, cfg, **_transport_options(backend, module, options))
    try:
        driver = Driver(transport, cfg, explain=explain_fault)
    except BaseException:
        transport.close()
        raise
    return Device(driver, backend, run_timeout=run_timeout, capture=capture)


#: Fault codes a single instruction explains (the others depend on timing or on tokens).
EXPLAINED = frozenset({ErrorCode.BAD_OPCODE, ErrorCode.BAD_MEMORY_TYPE, ErrorCode.SRAM_RANGE,
                       ErrorCode.DRAM_RANGE, ErrorCode.BAD_ALU_OPCODE, ErrorCode.BAD_DEP_FLAG,
                       ErrorCode.STORE_PAD})
#: Instructions before a fault that :func:`explain_fault` reads back at most.
MAX_EXPLAIN = 1 << 16


def explain_fault(driver: Driver, insn_addr: int, insn_count: int, module: str,
                  index: int | None, code: ErrorCode) -> str | None:
    """The golden model's message for a fault the device reported only as a code.

    The driver's explainer (:class:`~vta.driver.host.Driver` ``explain``).  The
    faulting instruction is read back from device memory and checked by
    :meth:`vta.golden.GoldenModel.explain` on a scratch model whose micro-op
    buffer holds what the stream's earlier UOP loads put there (read from
    device memory now).  Streams longer than :data:`MAX_EXPLAIN` instructions
    before the fault are explained from the faulting instruction alone.
    Returns None unless the code is one of :data:`EXPLAINED` and the model
    finds the same fault (``module``, ``code``).
    """
    if code not in EXPLAINED:
        return None
    from .golden import GoldenModel

    cfg, t = driver.cfg, driver.transport
    model = GoldenModel(cfg, np.zeros(int(t.mem_size), dtype=np.uint8))
    try:
        if index is None:  # a fetch fault without an index: the stream's range
            model.fetch(insn_addr, insn_count)
            return None
        first = max(0, index + 1 - MAX_EXPLAIN)
        raw = t.mem_read(insn_addr + first * INSN_BYTES, (index + 1 - first) * INSN_BYTES)
    except ExecutionError as exc:
        return str(exc) if (exc.module, exc.code) == (module, code) else None
    except DeviceError:
        return None
    insns = [decode(raw[i:i + INSN_BYTES], cfg) for i in range(0, len(raw), INSN_BYTES)]
    for j, insn in enumerate(insns[:-1], start=first):
        if insn.opcode == Opcode.LOAD and insn.memory_type == MemId.UOP and insn.x_size:
            start = insn.dram_base * 4
            end = start + ((insn.y_size - 1) * insn.x_stride + insn.x_size) * 4
            if insn.y_size and end <= t.mem_size:
                model.mem[start:end] = np.frombuffer(t.mem_read(start, end - start),
                                                     dtype=np.uint8)
                model.explain(j, insn)
    err = model.explain(index, insns[-1])
    return str(err) if err is not None and (err.module, err.code) == (module, code) else None


class Device:
    """An open VTA device: memory management, data transfer and runs.

    Obtain one from :func:`open_device`.  Every method goes through the one
    host driver (:attr:`driver`).

    Attributes
    ----------
    backend : str
        Backend name.
    cfg : Config
        The device's configuration.
    run_timeout : float
        Default seconds a run may take.
    capture : str, Path or None
        Directory (or ``.vtaprog`` file) every run is recorded to as a program file.
    buffer_names : dict[int, str]
        Names given to :meth:`alloc`, by buffer address (program files use them).
    """

    def __init__(self, driver: Driver, backend: str, run_timeout: float = DEFAULT_RUN_TIMEOUT,
                 capture: str | Path | None = None):
        self.driver = driver
        self.backend = backend
        self.cfg = driver.cfg
        self.run_timeout = run_timeout
        self.capture = capture
        self.buffer_names: dict[int, str] = {}

    # ------------------------------------------------------------- memory
    def alloc(self, nbytes: int, name: str | None = None) -> Buffer:
        """Allocate ``nbytes`` of device memory (4 KiB aligned, never at address 0).

        ``name`` labels the buffer in captured program files.
        """
        buf = self.driver.alloc(nbytes)
        if name is not None:
            self.buffer_names[buf.addr] = str(name)
        return buf

    def free(self, buf: Buffer) -> None:
        """Free a buffer returned by :meth:`alloc`."""
        self.driver.free(buf)
        self.buffer_names.pop(buf.addr, None)

    def write(self, buf: Buffer, data: Any, offset: int = 0) -> None:
        """Copy bytes-like ``data`` or a NumPy array's raw bytes into ``buf`` at ``offset``."""
        if isinstance(data, np.ndarray):
            data = np.ascontiguousarray(data).reshape(-1).view(np.uint8)
        elif not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError(f"data must be bytes-like or a numpy array, not {type(data).__name__}")
        self.driver.write(buf, data, offset)

    def read(self, buf: Buffer, nbytes: int | None = None, offset: int = 0) -> np.ndarray:
        """Copy ``nbytes`` (default: to the end of ``buf``) from ``offset``, as a uint8 array."""
        raw = self.driver.read(buf, nbytes, offset)
        return np.frombuffer(bytearray(raw), dtype=np.uint8)

    # ---------------------------------------------------------------- run
    def run(self, insn_buf: Buffer | int, insn_count: int,
            timeout: float | None = None, capture: str | Path | None = None) -> RunStats:
        """Execute ``insn_count`` instructions stored at the start of ``insn_buf``.

        ``insn_buf`` may also be a raw device byte address.  Returns the run's
        :class:`~vta.driver.host.RunStats` (``stats.cycles`` is ``None`` on
        the golden backend).  ``capture`` (default: the device's) records the
        run as a program file: a ``.vtaprog`` path, or a directory that gets
        the next ``run-NNNN.vtaprog``; a run that fails is recorded too, its
        error noted in the file.
        """
        if isinstance(insn_buf, Buffer):
            self.driver.check_access(insn_buf, 0, insn_count * 16, "run")
            addr = insn_buf.addr
        else:
            addr = int(insn_buf)
        timeout = self.run_timeout if timeout is None else timeout
        capture = capture or self.capture
        log.debug("run: %d instructions at 0x%x on %s", insn_count, addr, self.backend)
        if not capture:
            return self._logged(self.driver.run(addr, insn_count, timeout))
        from . import progfile

        prog = progfile.capture(self, addr, insn_count)
        prog.notes.append(progfile.provenance(self))
        try:
            stats = self.driver.run(addr, insn_count, timeout)
        except Exception as exc:
            prog.notes.append(f"the run failed: {type(exc).__name__}: {exc}")
            prog.save(progfile.capture_path(capture))
            raise
        progfile.record_outputs(prog, self)
        path = prog.save(progfile.capture_path(capture))
        log.info("captured the run in %s", path)
        return self._logged(stats)

    @staticmethod
    def _logged(stats: RunStats) -> RunStats:
        if log.isEnabledFor(logging.DEBUG):  # (the counters are looked up only then)
            log.debug("run done: %d instructions retired, %s cycles, %.3f s",
                      stats.load_insns + stats.compute_insns + stats.store_insns,
                      "no" if stats.cycles is None else stats.cycles, stats.wall_time)
        return stats

    @property
    def last_trace(self) -> list | None:
        """:mod:`vta.trace` records of the last run, if the device was opened with ``trace``."""
        transport = self.driver.transport
        return list(transport.last_trace) if getattr(transport, "tracing", False) else None

    @property
    def mem_size(self) -> int:
        """Bytes of device memory (addresses 0 .. mem_size - 1; page 0 is never allocated)."""
        return int(self.driver.transport.mem_size)

    # -------------------------------------------------------------- close
    @property
    def closed(self) -> bool:
        return self.driver._closed

    def close(self) -> None:
        """Release the device (idempotent)."""
        self.driver.close()

    def __enter__(self) -> Device:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self.closed else "open"
        return f"<vta.Device {self.backend} {self.cfg.name} ({self.cfg.bitstream}), {state}>"

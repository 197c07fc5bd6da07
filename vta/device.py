"""The DeviceAPI: ``vta.open_device(backend, cfg)`` and the :class:`Device` it returns.

Backends are small plug-ins imported lazily by name, so the golden backend
works without cocotb or a simulator installed.  Each plug-in module offers
``open_transport(backend, cfg, **options) -> Transport``; the one host driver
(:class:`vta.driver.host.Driver`) does everything else for every backend.

========== ===================== ==========================================
backend    module                what it is
========== ===================== ==========================================
golden     vta.driver.golden     register model + NumPy golden model
verilator  vta.driver.rtl        RTL simulation under Verilator (cocotb)
icarus     vta.driver.rtl        RTL simulation under Icarus Verilog
f1, f2     vta.driver.aws        AWS FPGA instance (PCIe BAR + card DMA)
========== ===================== ==========================================
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import numpy as np

from .config import Config
from .driver.host import Buffer, Driver, RunStats
from .errors import DeviceError

#: Backend name -> module holding ``open_transport``.
BACKENDS: dict[str, str] = {
    "golden": "vta.driver.golden",
    "verilator": "vta.driver.rtl",
    "icarus": "vta.driver.rtl",
    "f1": "vta.driver.aws",
    "f2": "vta.driver.aws",
}

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
    return opener


def open_device(backend: str = "golden", cfg: Config | str | Path | None = None,
                **options: Any) -> Device:
    """Open a VTA device.

    Parameters
    ----------
    backend : str
        ``"golden"``, ``"verilator"``, ``"icarus"``, ``"f1"`` or ``"f2"``.
    cfg : Config, str or Path, optional
        The configuration (object, preset name or vta_config.json path);
        default preset ``"default"``.  The device must implement exactly this
        configuration (checked through its identification registers).
    **options
        ``run_timeout`` (seconds, default 600) is the driver's default run
        timeout; every other option goes to the backend's transport (for
        golden: ``mem_size``).

    Returns
    -------
    Device
        Use as a context manager, or call :meth:`Device.close`.
    """
    cfg = _as_config(cfg)
    opener = _load_plugin(backend)
    run_timeout = float(options.pop("run_timeout", DEFAULT_RUN_TIMEOUT))
    transport = opener(backend, cfg, **options)
    try:
        driver = Driver(transport, cfg)
    except BaseException:
        transport.close()
        raise
    return Device(driver, backend, run_timeout=run_timeout)


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
    """

    def __init__(self, driver: Driver, backend: str, run_timeout: float = DEFAULT_RUN_TIMEOUT):
        self.driver = driver
        self.backend = backend
        self.cfg = driver.cfg
        self.run_timeout = run_timeout

    # ------------------------------------------------------------- memory
    def alloc(self, nbytes: int) -> Buffer:
        """Allocate ``nbytes`` of device memory (4 KiB aligned, never at address 0)."""
        return self.driver.alloc(nbytes)

    def free(self, buf: Buffer) -> None:
        """Free a buffer returned by :meth:`alloc`."""
        self.driver.free(buf)

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
            timeout: float | None = None) -> RunStats:
        """Execute ``insn_count`` instructions stored at the start of ``insn_buf``.

        ``insn_buf`` may also be a raw device byte address.  Returns the run's
        :class:`~vta.driver.host.RunStats` (``stats.cycles`` is ``None`` on
        the golden backend).
        """
        if isinstance(insn_buf, Buffer):
            self.driver.check_access(insn_buf, 0, insn_count * 16, "run")
            addr = insn_buf.addr
        else:
            addr = int(insn_buf)
        return self.driver.run(addr, insn_count,
                               self.run_timeout if timeout is None else timeout)

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

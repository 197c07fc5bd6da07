"""The ``f1`` and ``f2`` backends: VTA on an AWS FPGA instance, over PCIe.

The custom logic (``hdl/aws``) puts VTA's registers on BAR0 (the shell's OCL port)
and card memory on BAR4 (the PCIS port); VTA device addresses are BAR4 offsets.

============ ===============================================================
registers    32-bit MMIO on BAR0: a mapping of the application PF's sysfs
             ``resource0`` file, or of the AWS SDK's ``fpga_pci_attach``
             (``libfpga_mgmt.so``, used when found or asked for: ``mmio="sdk"``)
memory, F1   the XDMA driver's ``/dev/xdma<N>_h2c_<ch>`` / ``_c2h_<ch>``
             character devices, ``pwrite`` / ``pread`` at the card address; BAR4
             when the driver is not loaded (or ``dma="bar4"``)
memory, F2   BAR4 mapped write-combining (``resource4_wc``): the Small Shell has
             no DMA engine (docs/aws.md, "F2 choices")
completion,  the wrapper's user interrupt 0 through the XDMA driver's
F1           ``/dev/xdma<N>_events_0`` (``poll`` until readable, then a 4-byte
             read that clears it); STATUS polled when the file is not there
completion,  STATUS polled with a back-off (10 us doubling to 10 ms): the Small
F2           Shell delivers user interrupts as MSI-X vectors only to a kernel
             driver of one's own (AWS's msix-interrupts example); none ships
============ ===============================================================

The slot's application PF is found as the AWS SDK finds it (an application PF
listed right before a management PF ``1d0f:1041`` in ``/sys/bus/pci/devices``), or
named with ``pci_address="0000:00:1d.0"``.  Opening checks, in order: the PCI IDs
(a cleared slot, another AFI), the wrapper's identification registers (the shell
it was built for, card memory ready), a scratch-register round trip, then the
driver checks VTA's own identification.  A read of all ones from a register that
can never hold all ones is the shell's timeout signature (the custom logic did not
answer an access within 8 us, or no AFI is loaded): :class:`ShellTimeoutError`
names the recovery command.

Where the files live is a :class:`HostPlatform`; tests give it a folder of
stand-in files, and :mod:`vta.backends.aws_sim` gives this same transport stand-ins
driven by the simulated wrapper.  Nothing here has run on real hardware.

Options (``vta.open_device("f2", cfg, **options)``): ``slot`` (default 0),
``pci_address``, ``mmio`` ("auto", "sysfs", "sdk"), ``dma`` ("auto", "xdma",
"bar4"; F1), ``channel`` (XDMA channel 0-3, default 0), ``completion`` ("auto": the
interrupt where the host offers it, else polling; "interrupt": the interrupt or an
error; "poll").
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import mmap
import os
import select
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from .. import regs
from ..aws import regs as clregs
from ..config import Config
from ..driver.transport import Transport
from ..errors import DeviceError

#: Options of :func:`vta.open_device` the f1 / f2 backends take (the card fixes the rest).
OPTIONS = frozenset({"slot", "pci_address", "dma", "channel", "platform", "name", "mmio",
                     "completion"})
#: The wrapper's completion interrupt: user interrupt 0 of the shell.
COMPLETION_IRQ = 0
#: The management PF that follows each slot's application PF (vendor, device).
MGMT_PF = (0x1D0F, 0x1041)
#: The application PF of a slot with no AFI loaded.
CLEARED_APP_PF = (0x1D0F, 0x1042)
#: Largest piece handed to one pwrite / pread of an XDMA queue.
DMA_CHUNK = 1 << 22
#: VTA registers that can never read all ones (their reserved bits are zero).
NEVER_ALL_ONES = frozenset({regs.offset("STATUS"), regs.offset("ID"), regs.offset("HW_VERSION"),
                            clregs.offset("CL_ID"), clregs.offset("CL_INFO")})


class ShellTimeoutError(DeviceError):
    """BAR0 read all ones: the shell timed the access out, or no AFI answers."""


def recovery_hint(slot: int) -> str:
    """The commands that recover a slot after a shell timeout."""
    return (f"reload the AFI: `sudo fpga-load-local-image -S {slot} -I <agfi-id> -F` (or "
            f"`vta aws load <agfi-id> --slot {slot} --force`); `sudo fpga-describe-local-image "
            f"-S {slot} -M` shows the shell's timeout counters")


# ---------------------------------------------------------------------- BAR access
class Bar(Protocol):
    """What the transport needs of a PCI BAR (and what every stand-in offers)."""

    size: int

    def read32(self, offset: int) -> int: ...
    def write32(self, offset: int, value: int) -> None: ...
    def read(self, offset: int, nbytes: int) -> bytes: ...
    def write(self, offset: int, data: bytes | bytearray | memoryview) -> None: ...
    def close(self) -> None: ...


class MappedBar:
    """A BAR reached through a memory mapping.

    Registers are read and written as single aligned 32-bit loads and stores
    (a NumPy ``uint32`` view of the mapping, as PCIe MMIO requires); bulk data is
    copied with one slice assignment, which the CPU turns into 64-byte
    write-combined bursts on a ``_wc`` mapping.

    Parameters
    ----------
    buffer : writable buffer
        The mapping (``mmap.mmap`` of a sysfs ``resourceN`` file, or the SDK's).
    size : int
        Bytes of the BAR.
    closer : callable, optional
        Called by :meth:`close` after the views are released.
    name : str
        For messages (the file or handle the mapping came from).
    """

    def __init__(self, buffer: Any, size: int, closer=None, name: str = "BAR"):
        self._buffer = buffer
        self._bytes = memoryview(buffer).cast("B")
        self._words = np.frombuffer(buffer, dtype="<u4", count=size // 4)
        self._closer = closer
        self.size = size
        self.name = name

    @classmethod
    def from_file(cls, path: Path) -> MappedBar:
        """Map a sysfs ``resourceN`` (or ``resourceN_wc``) file, or any stand-in file."""
        fd = os.open(path, os.O_RDWR | os.O_SYNC)
        try:
            size = os.fstat(fd).st_size
            if size <= 0:
                raise DeviceError(f"{path} is empty: not a PCI BAR resource")
            mapping = mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        except PermissionError:
            raise DeviceError(f"cannot map {path}: permission denied (run as root, or give "
                              "your user access to the FPGA's PCI resource files)") from None
        finally:
            os.close(fd)
        return cls(mapping, size, mapping.close, str(path))

    def _check(self, offset: int, nbytes: int, align: int = 1) -> None:
        if offset < 0 or offset + nbytes > self.size or offset % align:
            raise DeviceError(f"{self.name}: access of {nbytes} bytes at 0x{offset:x} must lie in "
                              f"0..0x{self.size:x}" + (f" and be {align}-byte aligned"
                                                       if align > 1 else ""))

    def read32(self, offset: int) -> int:
        self._check(offset, 4, 4)
        return int(self._words[offset >> 2])

    def write32(self, offset: int, value: int) -> None:
        self._check(offset, 4, 4)
        self._words[offset >> 2] = value & 0xFFFFFFFF

    def read(self, offset: int, nbytes: int) -> bytes:
        self._check(offset, nbytes)
        return bytes(self._bytes[offset:offset + nbytes])

    def write(self, offset: int, data: bytes | bytearray | memoryview) -> None:
        view = memoryview(data).cast("B")
        self._check(offset, view.nbytes)
        self._bytes[offset:offset + view.nbytes] = view

    def close(self) -> None:
        if self._buffer is None:
            return
        self._words = None
        self._bytes.release()
        self._buffer = None
        if self._closer is not None:
            self._closer()


class SdkPci:
    """The AWS SDK's ``fpga_pci`` C library (``libfpga_mgmt.so``) through ctypes.

    Only the calls of ``sdk/userspace/include/fpga_pci.h`` that map a BAR are used:
    ``fpga_pci_init``, ``fpga_pci_attach`` (``BURST_CAPABLE`` for a write-combining
    mapping), ``fpga_pci_get_address`` and ``fpga_pci_detach``; accesses then go
    through the same :class:`MappedBar` code as a sysfs mapping.
    """

    BURST_CAPABLE = 0x1
    APP_PF = 0

    def __init__(self, library: str | None = None):
        name = library or os.environ.get("VTA_FPGA_MGMT_LIB") or ctypes.util.find_library(
            "fpga_mgmt")
        if not name:
            raise DeviceError("the AWS SDK's libfpga_mgmt.so was not found (source "
                              "aws-fpga/sdk_setup.sh, or set VTA_FPGA_MGMT_LIB)")
        try:
            lib = ctypes.CDLL(name)
        except OSError as exc:
            raise DeviceError(f"cannot load the AWS SDK library {name}: {exc}") from None
        lib.fpga_pci_init.restype = ctypes.c_int
        lib.fpga_pci_attach.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int,
                                        ctypes.c_uint32, ctypes.POINTER(ctypes.c_int)]
        lib.fpga_pci_get_address.argtypes = [ctypes.c_int, ctypes.c_uint64, ctypes.c_uint64,
                                             ctypes.POINTER(ctypes.c_void_p)]
        lib.fpga_pci_detach.argtypes = [ctypes.c_int]
        if lib.fpga_pci_init() != 0:
            raise DeviceError(f"fpga_pci_init() failed in {name}")
        self.lib = lib
        self.name = name

    def attach(self, slot: int, bar: int, size: int, burst: bool) -> MappedBar:
        """Attach ``bar`` of ``slot``'s application PF and wrap its mapping."""
        handle = ctypes.c_int(-1)
        flags = self.BURST_CAPABLE if burst else 0
        if self.lib.fpga_pci_attach(slot, self.APP_PF, bar, flags, ctypes.byref(handle)) != 0:
            raise DeviceError(f"fpga_pci_attach(slot {slot}, BAR{bar}) failed")
        ptr = ctypes.c_void_p()
        if self.lib.fpga_pci_get_address(handle, 0, size // 4, ctypes.byref(ptr)) != 0:
            self.lib.fpga_pci_detach(handle)
            raise DeviceError(f"fpga_pci_get_address(slot {slot}, BAR{bar}) failed")
        buffer = (ctypes.c_char * size).from_address(ptr.value)
        return MappedBar(buffer, size, lambda: self.lib.fpga_pci_detach(handle),
                         f"slot {slot} BAR{bar} ({self.name})")


# ---------------------------------------------------------------------- DMA queues
class DmaQueue(Protocol):
    """What the transport needs of an XDMA queue (and what every stand-in offers)."""

    def pwrite(self, data: bytes | memoryview, address: int) -> int: ...
    def pread(self, nbytes: int, address: int) -> bytes: ...
    def close(self) -> None: ...


class XdmaQueue:
    """One XDMA character device: the file offset of ``pwrite`` / ``pread`` is the card address."""

    def __init__(self, path: Path, write: bool):
        try:
            self.fd = os.open(path, os.O_WRONLY if write else os.O_RDONLY)
        except OSError as exc:
            raise DeviceError(f"cannot open the XDMA queue {path}: {exc.strerror}") from None
        self.path = path

    def pwrite(self, data: bytes | memoryview, address: int) -> int:
        return os.pwrite(self.fd, data, address)

    def pread(self, nbytes: int, address: int) -> bytes:
        return os.pread(self.fd, nbytes, address)

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


# ---------------------------------------------------------------------- the host
class XdmaEvents:
    """One user interrupt through the XDMA driver: ``/dev/xdma<N>_events_<irq>``.

    The driver marks the file readable when the interrupt arrives; a 4-byte read
    returns the events since the last read and clears them (it would block until one
    arrives: it is only read after ``poll`` said so).  An interrupt that arrives while
    no process has the file open is lost, so it is opened with the transport.
    """

    def __init__(self, path: Path):
        self.path = path
        try:
            self.fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        except OSError as exc:
            raise DeviceError(f"cannot open {path}: {exc.strerror}") from None
        self.poller = select.poll()
        self.poller.register(self.fd, select.POLLIN)

    def wait(self, timeout: float) -> bool:
        """True when the interrupt arrived within ``timeout`` seconds (it is cleared)."""
        ms = max(0, min(int(timeout * 1000), 2**31 - 1))
        if not any(ev & select.POLLIN for _, ev in self.poller.poll(ms)):
            return False
        os.read(self.fd, 4)
        return True

    def close(self) -> None:
        os.close(self.fd)


@dataclass(frozen=True)
class PciFunction:
    """One PCI function as sysfs lists it."""

    address: str
    vendor: int
    device: int
    path: Path

    @property
    def ids(self) -> str:
        return f"{self.vendor:04x}:{self.device:04x}"


class HostPlatform:
    """Where the host's PCI functions, BARs and XDMA queues live.

    Parameters
    ----------
    sysfs : Path
        The sysfs root (``/sys``); tests pass a folder of stand-in files.
    dev : Path
        The device-file root (``/dev``).
    mmio : str
        ``"sysfs"`` (map ``resourceN`` files), ``"sdk"`` (the AWS SDK's
        ``fpga_pci``) or ``"auto"`` (the SDK when its library is found).
    """

    def __init__(self, sysfs: Path | str = "/sys", dev: Path | str = "/dev", mmio: str = "auto"):
        if mmio not in ("auto", "sysfs", "sdk"):
            raise ValueError(f"mmio must be 'auto', 'sysfs' or 'sdk', not {mmio!r}")
        self.sysfs = Path(sysfs)
        self.dev = Path(dev)
        self.sdk: SdkPci | None = None
        if mmio == "sdk" or (mmio == "auto" and ctypes.util.find_library("fpga_mgmt")):
            self.sdk = SdkPci()

    def _function(self, entry: Path) -> PciFunction | None:
        try:
            vendor = int((entry / "vendor").read_text().strip(), 16)
            device = int((entry / "device").read_text().strip(), 16)
        except (OSError, ValueError):
            return None
        return PciFunction(entry.name, vendor, device, entry)

    def slots(self) -> list[PciFunction]:
        """Application PFs of the FPGA slots, in slot order (as the AWS SDK numbers them)."""
        root = self.sysfs / "bus" / "pci" / "devices"
        if not root.is_dir():
            return []
        found: list[PciFunction] = []
        previous: PciFunction | None = None
        for entry in sorted(root.iterdir()):
            fn = self._function(entry)
            if fn is not None and (fn.vendor, fn.device) == MGMT_PF and previous is not None:
                found.append(previous)
                previous = None
                continue
            previous = fn
        return found

    def find(self, slot: int, pci_address: str | None) -> PciFunction:
        """The application PF of ``slot`` (or at ``pci_address``)."""
        if pci_address is not None:
            fn = self._function(self.sysfs / "bus" / "pci" / "devices" / pci_address)
            if fn is None:
                raise DeviceError(f"no PCI function {pci_address} in "
                                  f"{self.sysfs / 'bus/pci/devices'}")
            return fn
        found = self.slots()
        if not found:
            raise DeviceError(f"no AWS FPGA slot found in {self.sysfs / 'bus/pci/devices'} (no "
                              f"management PF {MGMT_PF[0]:04x}:{MGMT_PF[1]:04x}): the f1/f2 "
                              "backends run on an F1 or F2 instance only")
        if not 0 <= slot < len(found):
            raise DeviceError(f"slot must be in 0..{len(found) - 1} (this instance has "
                              f"{len(found)} FPGA slot(s)), not {slot}")
        return found[slot]

    def open_bar(self, fn: PciFunction, index: int, slot: int, wc: bool = False) -> MappedBar:
        """Map BAR ``index`` of ``fn`` (write-combining when ``wc`` and available)."""
        plain = fn.path / f"resource{index}"
        if not plain.exists():
            raise DeviceError(f"{fn.address} has no BAR{index} ({plain} does not exist)")
        if self.sdk is not None:
            return self.sdk.attach(slot, index, plain.stat().st_size, wc)
        path = fn.path / f"resource{index}_wc"
        return MappedBar.from_file(path if wc and path.exists() else plain)

    def xdma_number(self, fn: PciFunction) -> int | None:
        """N of the ``/dev/xdma<N>_*`` devices the XDMA driver made for ``fn`` (None: no driver)."""
        root = self.sysfs / "class" / "xdma"
        if not root.is_dir():
            return None
        for entry in sorted(root.iterdir()):
            name = entry.name
            if not (name.startswith("xdma") and name.endswith("_control")):
                continue
            with contextlib.suppress(OSError):
                if (entry / "device").resolve().name == fn.address:
                    return int(name[4:-len("_control")])
        return None

    def open_xdma(self, number: int, channel: int, write: bool) -> XdmaQueue:
        """The h2c (``write``) or c2h queue ``channel`` of XDMA device ``number``."""
        kind = "h2c" if write else "c2h"
        return XdmaQueue(self.dev / f"xdma{number}_{kind}_{channel}", write)

    def open_events(self, number: int, irq: int) -> XdmaEvents | None:
        """User interrupt ``irq`` of XDMA device ``number`` (None: the driver offers none)."""
        path = self.dev / f"xdma{number}_events_{irq}"
        return XdmaEvents(path) if path.exists() else None

    def close(self) -> None:
        """Nothing to release on a real host (each BAR and queue closes itself)."""


# ---------------------------------------------------------------------- the transport
class AwsTransport(Transport):
    """VTA on one FPGA slot of an F1 or F2 instance (see the module docstring).

    Parameters
    ----------
    shell : str
        ``"f1"`` or ``"f2"``: the shell the AFI was built for.
    cfg : Config
        The configuration (checked by the driver against the device).
    slot, pci_address, dma, channel
        See the module docstring.
    platform : HostPlatform or a stand-in
        Where BARs and DMA queues come from (default: this host).
    name : str
        Backend name in messages (default ``shell``).
    """

    has_timing = True

    def __init__(self, shell: str, cfg: Config, *, slot: int = 0, pci_address: str | None = None,
                 dma: str = "auto", channel: int = 0, platform: Any = None, name: str | None = None,
                 mmio: str = "auto", completion: str = "auto"):
        if shell not in clregs.SHELLS:
            raise ValueError(f"shell must be one of {', '.join(clregs.SHELLS)}, not {shell!r}")
        if dma not in ("auto", "xdma", "bar4"):
            raise ValueError(f"dma must be 'auto', 'xdma' or 'bar4', not {dma!r}")
        if not 0 <= channel <= 3:
            raise ValueError(f"channel must be an XDMA channel 0..3, not {channel!r}")
        if shell == "f2" and dma == "xdma":
            raise ValueError("dma='xdma' needs the F1 shell: the F2 Small Shell has no DMA "
                             "engine (card memory is reached through BAR4)")
        if completion not in ("auto", "interrupt", "poll"):
            raise ValueError(f"completion must be 'auto', 'interrupt' or 'poll', not "
                             f"{completion!r}")
        self.shell = clregs.SHELLS[shell]
        self.cfg = cfg
        self.slot = int(slot)
        self.name = name or shell
        self.platform = platform if platform is not None else HostPlatform(mmio=mmio)
        self.bar0: Any = None
        self.bar4: Any = None
        self.h2c: Any = None
        self.c2h: Any = None
        self.events: Any = None
        self._closed = False
        try:
            self.function = self.platform.find(self.slot, pci_address)
            self._check_ids()
            self.bar0 = self.platform.open_bar(self.function, 0, self.slot)
            self.mem_size = self._check_wrapper()
            number = None
            if self.shell.name == "f1" and dma != "bar4":
                number = self.platform.xdma_number(self.function)
                if number is None and dma == "xdma":
                    raise DeviceError(f"no XDMA device for {self.function.address}: load the "
                                      "AWS XDMA driver (aws-fpga sdk/linux_kernel_drivers/xdma) "
                                      "or use dma='bar4'")
            if number is not None:
                self.h2c = self.platform.open_xdma(number, channel, True)
                self.c2h = self.platform.open_xdma(number, channel, False)
                self.memory_path = f"XDMA /dev/xdma{number} channel {channel}"
            else:
                self.bar4 = self.platform.open_bar(self.function, 4, self.slot, wc=True)
                self.memory_path = "BAR4"
            self._open_completion(completion)
        except BaseException:
            self.close()
            raise

    # ------------------------------------------------------------ opening checks
    def _check_ids(self) -> None:
        fn = self.function
        where = f"{self.name} slot {self.slot} ({fn.address})"
        if (fn.vendor, fn.device) == CLEARED_APP_PF:
            raise DeviceError(f"{where} holds no AFI (PCI IDs {fn.ids}: a cleared slot); load "
                              f"one with `vta aws load <agfi-id> --slot {self.slot}`")
        if (fn.vendor, fn.device) != (clregs.PCI_VENDOR, self.shell.pci_device):
            others = [s.name for s in clregs.SHELLS.values()
                      if (fn.vendor, fn.device) == (clregs.PCI_VENDOR, s.pci_device)]
            what = (f"a VTA AFI built for the {others[0]} shell" if others
                    else "an AFI that is not VTA")
            raise DeviceError(f"{where} holds {what}: PCI IDs {fn.ids}, expected "
                              f"{clregs.PCI_VENDOR:04x}:{self.shell.pci_device:04x}")

    def _check_wrapper(self) -> int:
        """Identify the wrapper; returns the card-memory bytes VTA reaches."""
        magic = self.read32(clregs.offset("CL_ID"))
        where = f"{self.name} slot {self.slot}"
        if magic != clregs.CL_MAGIC:
            raise DeviceError(f"{where}: BAR0 0x{clregs.offset('CL_ID'):x} (CL_ID) reads "
                              f"0x{magic:08x}, expected 0x{clregs.CL_MAGIC:08x}: not the VTA "
                              "custom logic")
        info = self.read32(clregs.offset("CL_INFO"))
        shell_no, log_mem, ready = info & 0xFF, (info >> 8) & 0xFF, (info >> 16) & 1
        if shell_no != self.shell.number:
            names = {s.number: s.name for s in clregs.SHELLS.values()}
            raise DeviceError(f"{where}: the loaded AFI was built for the "
                              f"{names.get(shell_no, f'unknown shell #{shell_no}')} shell, not "
                              f"{self.shell.name}")
        if not ready:
            raise DeviceError(f"{where}: card memory is not ready (CL_INFO 0x{info:08x}: the DDR "
                              "controller has not finished training); try again in a moment")
        scratch = clregs.offset("SCRATCH")
        for pattern in (0xA5A5_5A5A, 0x5A5A_A5A5):
            self.write32(scratch, pattern)
            back = self.read32(scratch)
            if back != pattern:
                raise DeviceError(f"{where}: BAR0 scratch register wrote 0x{pattern:08x}, read "
                                  f"back 0x{back:08x}: register accesses do not arrive intact")
        return 1 << log_mem

    def _open_completion(self, completion: str) -> None:
        """The F1 XDMA driver's event file of the completion interrupt, where offered."""
        self.completion = "poll"
        if completion == "poll":
            return
        number = None
        if self.shell.name == "f1":
            number = self.platform.xdma_number(self.function)
        if number is not None:
            self.events = self.platform.open_events(number, COMPLETION_IRQ)
        if self.events is not None:
            self.completion = f"interrupt (/dev/xdma{number}_events_{COMPLETION_IRQ})"
        elif completion == "interrupt":
            why = ("the F2 Small Shell's interrupts reach only a kernel driver of one's own"
                   if self.shell.name == "f2" else
                   "the XDMA driver is not loaded" if number is None else
                   f"the XDMA driver offers no /dev/xdma{number}_events_{COMPLETION_IRQ}")
            raise DeviceError(f"{self.name} slot {self.slot}: no completion interrupt: {why}; "
                              "completion='poll' polls STATUS")

    def wait_idle(self, timeout: float) -> None:
        """Wait for the completion interrupt (F1 with the XDMA driver), at most ``timeout``
        seconds; an interrupt that finds VTA still busy (one left from before) is passed
        over.  Without the interrupt this returns at once and the driver polls STATUS."""
        if self.events is None:
            return
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return
            if self.events.wait(left) and not self.read32(regs.offset("STATUS")) & \
                    regs.STATUS_BUSY:
                return

    # ------------------------------------------------------------ registers
    def read32(self, offset: int) -> int:
        value = self.bar0.read32(offset)
        if value == clregs.TIMEOUT_WORD and offset in NEVER_ALL_ONES:
            raise ShellTimeoutError(
                f"{self.name} slot {self.slot}: BAR0 0x{offset:x} read 0xffffffff, the shell's "
                "timeout signature (the custom logic did not answer within 8 us, or no AFI "
                f"answers); {recovery_hint(self.slot)}")
        return value

    def write32(self, offset: int, value: int) -> None:
        self.bar0.write32(offset, value)

    # ------------------------------------------------------------ memory
    def _check_range(self, addr: int, nbytes: int) -> None:
        if addr < 0 or nbytes < 0 or addr + nbytes > self.mem_size:
            raise DeviceError(f"card memory access 0x{addr:x}..0x{addr + nbytes:x} lies outside "
                              f"the {self.mem_size}-byte card memory")

    def mem_write(self, addr: int, data: bytes | bytearray | memoryview) -> None:
        view = memoryview(data).cast("B")
        self._check_range(addr, view.nbytes)
        if self.h2c is None:
            self.bar4.write(addr, view)
            return
        done = 0
        while done < view.nbytes:
            n = self.h2c.pwrite(view[done:done + DMA_CHUNK], addr + done)
            if n <= 0:
                raise DeviceError(f"XDMA write at card address 0x{addr + done:x} moved no data")
            done += n

    def mem_read(self, addr: int, nbytes: int) -> bytes:
        self._check_range(addr, nbytes)
        if self.c2h is None:
            return self.bar4.read(addr, nbytes)
        out = bytearray()
        while len(out) < nbytes:
            piece = self.c2h.pread(min(nbytes - len(out), DMA_CHUNK), addr + len(out))
            if not piece:
                raise DeviceError(f"XDMA read at card address 0x{addr + len(out):x} returned "
                                  "no data")
            out += piece
        return bytes(out)

    # ------------------------------------------------------------ the rest
    @property
    def last_trace(self) -> list:
        """Per-instruction trace of the last run (simulated platforms with tracing on)."""
        return getattr(self.platform, "last_trace", [])

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for part in (self.events, self.h2c, self.c2h, self.bar4, self.bar0):
            if part is not None:
                with contextlib.suppress(Exception):
                    part.close()
        with contextlib.suppress(Exception):
            self.platform.close()


def open_transport(backend: str, cfg: Config, **options: Any) -> AwsTransport:
    """Backend plug-in entry point (``vta.open_device("f1" | "f2", ...)``)."""
    return AwsTransport(backend, cfg, **options)

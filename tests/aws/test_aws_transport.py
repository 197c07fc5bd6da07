"""The f1/f2 transport's host side against file-backed stand-ins for sysfs, BARs and XDMA.

A temporary folder plays ``/sys`` and ``/dev``: PCI functions with ``vendor`` /
``device`` files, ``resourceN`` files that the transport really maps (mmap, 32-bit
NumPy accesses), and XDMA "devices" that are regular files read and written with
``pread`` / ``pwrite`` at card addresses.  The BAR0 file holds the register values a
VTA wrapper would return, so the whole opening sequence -- slot discovery, PCI ID
checks, wrapper identification, scratch round trip, the driver's own identification
-- runs unchanged.  (tests/aws/test_aws_sim.py runs the same transport against the
simulated wrapper.)
"""

from __future__ import annotations

import os
import struct
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import vta
from vta import regs
from vta.aws import regs as clregs
from vta.backends.aws import AwsTransport, HostPlatform, MappedBar, ShellTimeoutError
from vta.driver.host import Driver
from vta.errors import DeviceError

CFG = vta.Config.load("aws")
MEM = 1 << 20  # card memory of the stand-in (CL_INFO reports 2**20)


def _bar0_words(shell: str, *, magic=clregs.CL_MAGIC, ready=1, log_mem=20) -> dict[int, int]:
    spec = clregs.SHELLS[shell]
    c0, c1 = regs.config_words(CFG)
    return {regs.offset("ID"): regs.ID_MAGIC, regs.offset("HW_VERSION"): regs.HW_VERSION,
            regs.offset("CONFIG_SIG"): CFG.signature, regs.offset("CONFIG0"): c0,
            regs.offset("CONFIG1"): c1, clregs.offset("CL_ID"): magic,
            clregs.offset("CL_INFO"): spec.number | log_mem << 8 | ready << 16}


def _function(root: Path, address: str, vendor: int, device: int, bar0=None,
              bar4: int = 0) -> Path:
    d = root / "sys" / "bus" / "pci" / "devices" / address
    d.mkdir(parents=True)
    (d / "vendor").write_text(f"0x{vendor:04x}\n")
    (d / "device").write_text(f"0x{device:04x}\n")
    if bar0 is not None:
        raw = bytearray(1 << 16)
        for off, value in bar0.items():
            struct.pack_into("<I", raw, off, value)
        (d / "resource0").write_bytes(bytes(raw))
    if bar4:
        with open(d / "resource4", "wb") as f:
            f.truncate(bar4)
    return d


def _host(tmp_path: Path, shell: str = "f2", device: int | None = None, xdma: bool = False,
          events: bool = False, **bar0) -> HostPlatform:
    """A host with one FPGA slot (application PF 0000:00:1d.0, management PF 00:1e.0)."""
    device = clregs.SHELLS[shell].pci_device if device is None else device
    _function(tmp_path, "0000:00:1d.0", 0x1D0F, device, _bar0_words(shell, **bar0), bar4=MEM)
    _function(tmp_path, "0000:00:1e.0", 0x1D0F, 0x1041)
    if xdma:
        (tmp_path / "dev").mkdir()
        card = tmp_path / "card.bin"
        with open(card, "wb") as f:
            f.truncate(MEM)
        for kind in ("h2c", "c2h"):  # both queues reach the same card memory
            os.link(card, tmp_path / "dev" / f"xdma3_{kind}_0")
        if events:  # the driver's user-interrupt file: a FIFO gives it poll()'s behaviour
            os.mkfifo(tmp_path / "dev" / "xdma3_events_0")
        ctl = tmp_path / "sys" / "class" / "xdma" / "xdma3_control"
        ctl.mkdir(parents=True)
        (ctl / "device").symlink_to(tmp_path / "sys" / "bus" / "pci" / "devices" / "0000:00:1d.0")
    return HostPlatform(tmp_path / "sys", tmp_path / "dev", mmio="sysfs")


def test_slots_are_numbered_as_the_sdk_numbers_them(tmp_path):
    for i, (app, mgmt) in enumerate([("0000:00:1b.0", "0000:00:1c.0"),
                                     ("0000:00:1d.0", "0000:00:1e.0")]):
        _function(tmp_path, app, 0x1D0F, 0xF000 + i)
        _function(tmp_path, mgmt, 0x1D0F, 0x1041)
    _function(tmp_path, "0000:00:03.0", 0x8086, 0x1234)  # something else on the bus
    host = HostPlatform(tmp_path / "sys", tmp_path / "dev", mmio="sysfs")
    assert [(f.address, f.device) for f in host.slots()] == [("0000:00:1b.0", 0xF000),
                                                             ("0000:00:1d.0", 0xF001)]
    assert host.find(1, None).address == "0000:00:1d.0"
    assert host.find(0, "0000:00:1d.0").device == 0xF001
    with pytest.raises(DeviceError, match=r"slot must be in 0\.\.1 \(this instance has 2 FPGA "
                                          r"slot\(s\)\), not 2"):
        host.find(2, None)


def test_no_fpga_says_where_the_backends_run(tmp_path):
    host = HostPlatform(tmp_path / "sys", tmp_path / "dev", mmio="sysfs")
    with pytest.raises(DeviceError, match="no AWS FPGA slot found .* the f1/f2 backends run on "
                                          "an F1 or F2 instance only"):
        AwsTransport("f2", CFG, platform=host)


def test_open_f2_maps_bar0_and_bar4_and_the_driver_identifies_vta(tmp_path):
    host = _host(tmp_path, "f2")
    t = AwsTransport("f2", CFG, platform=host)
    try:
        assert t.memory_path == "BAR4" and t.mem_size == MEM
        driver = Driver(t, CFG)  # VTA's own identification, over the mapped BAR0
        assert driver.read_reg("ID") == regs.ID_MAGIC
        # the scratch round trip went through the mapping into the file
        res0 = tmp_path / "sys/bus/pci/devices/0000:00:1d.0/resource0"
        t.bar0.close()
        t.bar0 = None
        scratch = struct.unpack_from("<I", res0.read_bytes(), clregs.offset("SCRATCH"))[0]
        assert scratch == 0x5A5AA5A5
        data = bytes(range(256)) * 3
        t.mem_write(0x1234, data)
        assert t.mem_read(0x1234, len(data)) == data
        t.bar4.close()
        t.bar4 = None
        res4 = (tmp_path / "sys/bus/pci/devices/0000:00:1d.0/resource4").read_bytes()
        assert res4[0x1234:0x1234 + len(data)] == data
        with pytest.raises(DeviceError, match=r"card memory access 0xfffff\.\.0x100001 lies "
                                              r"outside the 1048576-byte card memory"):
            t.mem_write(MEM - 1, b"ab")
    finally:
        t.close()


def test_open_f1_uses_the_xdma_queues_of_its_pci_function(tmp_path):
    host = _host(tmp_path, "f1", xdma=True)
    t = AwsTransport("f1", CFG, platform=host, channel=0)
    try:
        assert t.memory_path == "XDMA /dev/xdma3 channel 0"
        rng = np.random.default_rng(0)
        data = rng.integers(0, 256, 10000, dtype=np.uint8).tobytes()
        t.mem_write(0x3001, data)
        card = (tmp_path / "card.bin").read_bytes()
        assert card[0x3001:0x3001 + len(data)] == data  # pwrite's offset is the card address
        assert t.mem_read(0x3001, len(data)) == data
    finally:
        t.close()
    t = AwsTransport("f1", CFG, platform=host, dma="bar4")
    try:
        assert t.memory_path == "BAR4"
    finally:
        t.close()


def test_f1_without_the_xdma_driver(tmp_path):
    host = _host(tmp_path, "f1")
    with pytest.raises(DeviceError, match="no XDMA device for 0000:00:1d.0: load the AWS XDMA "
                                          "driver .* or use dma='bar4'"):
        AwsTransport("f1", CFG, platform=host, dma="xdma")
    t = AwsTransport("f1", CFG, platform=host)  # auto: BAR4
    assert t.memory_path == "BAR4"
    t.close()


def _waiter(t, timeout=60.0):
    """wait_idle in a thread; returns (thread, list that gets the return time)."""
    done: list[float] = []
    thread = threading.Thread(target=lambda: (t.wait_idle(timeout),
                                              done.append(time.monotonic())), daemon=True)
    thread.start()
    return thread, done


def test_f1_completion_by_interrupt(tmp_path):
    """F1 with the XDMA driver waits on /dev/xdma<N>_events_0: it blocks until the
    interrupt arrives, and passes over one that finds VTA still busy (one left from an
    earlier run, or pending from before the START)."""
    host = _host(tmp_path, "f1", xdma=True, events=True)
    t = AwsTransport("f1", CFG, platform=host)
    fifo = os.open(tmp_path / "dev" / "xdma3_events_0", os.O_WRONLY)  # the driver's side
    try:
        assert t.completion == "interrupt (/dev/xdma3_events_0)"
        status = regs.offset("STATUS")
        t.bar0.write32(status, regs.STATUS_BUSY)
        os.write(fifo, b"\x01\0\0\0")  # pending from before the START
        t.write32(regs.offset("CTRL"), regs.CTRL_START)
        thread, done = _waiter(t)
        thread.join(0.3)
        assert thread.is_alive()  # no interrupt yet: still waiting
        os.write(fifo, b"\x01\0\0\0")  # an interrupt while STATUS still says busy
        thread.join(0.3)
        assert thread.is_alive()
        t.bar0.write32(status, regs.STATUS_DONE)
        sent = time.monotonic()
        os.write(fifo, b"\x01\0\0\0")
        thread.join(10)
        assert not thread.is_alive() and done[0] >= sent
        # the driver's run: START (the stand-in "finishes" at once: its interrupt), the
        # wait, STATUS (done), the counters -- well within the run's timeout
        write32 = t.bar0.write32

        def finishes_at_start(offset, value):
            write32(offset, value)
            if offset == regs.offset("CTRL") and value & regs.CTRL_START:
                os.write(fifo, b"\x01\0\0\0")

        t.bar0.write32 = finishes_at_start
        start = time.monotonic()
        Driver(t, CFG).run(0x1000, 1, timeout=30)
        assert time.monotonic() - start < 10
    finally:
        os.close(fifo)
        t.close()


def test_completion_falls_back_to_polling(tmp_path):
    """Without the events file (or asked to poll) the transport does not wait: the driver
    polls STATUS.  F2 never has one; asking for the interrupt there says why not."""
    for kw, shell, events in [({}, "f1", False), ({"completion": "poll"}, "f1", True),
                              ({}, "f2", False)]:
        root = tmp_path / f"{shell}-{events}-{bool(kw)}"
        root.mkdir()
        host = _host(root, shell, xdma=shell == "f1", events=events)
        t = AwsTransport(shell, CFG, platform=host, **kw)
        try:
            assert t.completion == "poll" and t.events is None
            t.bar0.write32(regs.offset("STATUS"), regs.STATUS_BUSY)
            start = time.monotonic()
            t.wait_idle(30.0)
            assert time.monotonic() - start < 5
        finally:
            t.close()
    with pytest.raises(DeviceError, match="no completion interrupt: the F2 Small Shell's "
                                          "interrupts reach only a kernel driver of one's own"):
        AwsTransport("f2", CFG, platform=_host(tmp_path / "f2i", "f2"), completion="interrupt")
    with pytest.raises(DeviceError, match="the XDMA driver offers no /dev/xdma3_events_0"):
        AwsTransport("f1", CFG, platform=_host(tmp_path / "f1i", "f1", xdma=True),
                     completion="interrupt")


@pytest.mark.parametrize("device,message", [
    (0x1042, r"holds no AFI \(PCI IDs 1d0f:1042: a cleared slot\); load one with `vta aws load "
             r"<agfi-id> --slot 0`"),
    (0xF000, r"holds an AFI that is not VTA: PCI IDs 1d0f:f000, expected 1d0f:f07b"),
    (clregs.SHELLS["f1"].pci_device, r"holds a VTA AFI built for the f1 shell: PCI IDs "
                                     r"1d0f:f07a, expected 1d0f:f07b"),
])
def test_pci_ids_are_checked(tmp_path, device, message):
    host = _host(tmp_path, "f2", device=device)
    with pytest.raises(DeviceError, match=r"f2 slot 0 \(0000:00:1d\.0\) " + message):
        AwsTransport("f2", CFG, platform=host)


def test_all_ones_is_the_shell_timeout_signature(tmp_path):
    host = _host(tmp_path, "f2", magic=0xFFFFFFFF)
    with pytest.raises(ShellTimeoutError, match=r"BAR0 0x1000 read 0xffffffff, the shell's "
                                                r"timeout signature .* `sudo "
                                                r"fpga-load-local-image -S 0 -I <agfi-id> -F`"):
        AwsTransport("f2", CFG, platform=host)


@pytest.mark.parametrize("bar0,message", [
    ({"magic": 0x12345678}, r"CL_ID\) reads 0x12345678, expected 0x56544143: not the VTA "
                            r"custom logic"),
    ({"ready": 0}, r"card memory is not ready \(CL_INFO 0x00001402"),
])
def test_wrapper_identification_is_checked(tmp_path, bar0, message):
    host = _host(tmp_path, "f2", **bar0)
    with pytest.raises(DeviceError, match=message):
        AwsTransport("f2", CFG, platform=host)


def test_wrapper_built_for_the_other_shell(tmp_path):
    _function(tmp_path, "0000:00:1d.0", 0x1D0F, clregs.SHELLS["f2"].pci_device,
              _bar0_words("f1"), bar4=MEM)
    _function(tmp_path, "0000:00:1e.0", 0x1D0F, 0x1041)
    host = HostPlatform(tmp_path / "sys", tmp_path / "dev", mmio="sysfs")
    with pytest.raises(DeviceError, match="the loaded AFI was built for the f1 shell, not f2"):
        AwsTransport("f2", CFG, platform=host)


def test_mapped_bar_accesses(tmp_path):
    path = tmp_path / "resource0"
    path.write_bytes(bytes(range(256)) * 16)
    bar = MappedBar.from_file(path)
    try:
        assert bar.size == 4096
        assert bar.read32(4) == 0x07060504  # little endian, one aligned 32-bit load
        bar.write32(8, 0xDEADBEEF)
        assert bar.read(8, 4) == b"\xef\xbe\xad\xde"
        with pytest.raises(DeviceError, match=r"access of 4 bytes at 0x6 must lie in 0\.\.0x1000 "
                                              r"and be 4-byte aligned"):
            bar.read32(6)
        with pytest.raises(DeviceError, match=r"access of 8 bytes at 0xffc must lie in"):
            bar.write(0xFFC, b"12345678")
    finally:
        bar.close()
    assert path.read_bytes()[8:12] == b"\xef\xbe\xad\xde"


def test_option_errors():
    with pytest.raises(ValueError, match="shell must be one of f1, f2, not 'f3'"):
        AwsTransport("f3", CFG)
    with pytest.raises(ValueError, match="dma='xdma' needs the F1 shell"):
        AwsTransport("f2", CFG, dma="xdma")
    with pytest.raises(ValueError, match="channel must be an XDMA channel 0..3, not 4"):
        AwsTransport("f1", CFG, channel=4)
    with pytest.raises(ValueError, match="mmio must be 'auto', 'sysfs' or 'sdk', not 'x'"):
        HostPlatform(mmio="x")


STUB_SDK = r"""
/* A stand-in for the AWS SDK's libfpga_mgmt.so: the fpga_pci calls the transport
   makes (sdk/userspace/include/fpga_pci.h), mapping files named by environment
   variables instead of PCI BARs, and logging each call. */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static void *maps[16];
static size_t sizes[16];
static int used;

static void logline(const char *fmt, int a, int b, int c, unsigned d) {
    FILE *f = fopen(getenv("STUB_LOG"), "a");
    fprintf(f, fmt, a, b, c, d);
    fclose(f);
}

int fpga_pci_init(void) { return 0; }

int fpga_pci_attach(int slot, int pf, int bar, uint32_t flags, int *handle) {
    char name[32];
    snprintf(name, sizeof name, "STUB_BAR%d", bar);
    const char *path = getenv(name);
    if (!path) return -1;
    int fd = open(path, O_RDWR);
    struct stat st;
    fstat(fd, &st);
    maps[used] = mmap(0, st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    sizes[used] = st.st_size;
    close(fd);
    logline("attach slot=%d pf=%d bar=%d flags=%u\n", slot, pf, bar, flags);
    *handle = used++;
    return 0;
}

int fpga_pci_get_address(int handle, uint64_t offset, uint64_t dword_len, void **ptr) {
    if (offset + 4 * dword_len > sizes[handle]) return -1;
    *ptr = (char *)maps[handle] + offset;
    return 0;
}

int fpga_pci_detach(int handle) {
    munmap(maps[handle], sizes[handle]);
    logline("detach handle=%d%c%c%c\n", handle, ' ', ' ', 0);
    return 0;
}
"""


def test_sdk_mapping_through_libfpga_mgmt(tmp_path, monkeypatch):
    """mmio="sdk": BARs come from fpga_pci_attach / fpga_pci_get_address (a stand-in library
    compiled here), BAR4 attached BURST_CAPABLE; the accesses are the same as with sysfs."""
    import shutil
    import subprocess

    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler")
    src = tmp_path / "stub.c"
    src.write_text(STUB_SDK)
    lib = tmp_path / "libfpga_mgmt_stub.so"
    subprocess.run([cc, "-shared", "-fPIC", "-o", str(lib), str(src)], check=True)
    host = _host(tmp_path, "f2")
    dev = tmp_path / "sys" / "bus" / "pci" / "devices" / "0000:00:1d.0"
    monkeypatch.setenv("VTA_FPGA_MGMT_LIB", str(lib))
    monkeypatch.setenv("STUB_LOG", str(tmp_path / "calls.log"))
    monkeypatch.setenv("STUB_BAR0", str(dev / "resource0"))
    monkeypatch.setenv("STUB_BAR4", str(dev / "resource4"))
    sdk_host = HostPlatform(host.sysfs, host.dev, mmio="sdk")
    t = AwsTransport("f2", CFG, platform=sdk_host)
    try:
        assert Driver(t, CFG).read_reg("ID") == regs.ID_MAGIC
        t.mem_write(0x2000, b"through the SDK")
        assert t.mem_read(0x2000, 15) == b"through the SDK"
    finally:
        t.close()
    assert (dev / "resource4").read_bytes()[0x2000:0x200F] == b"through the SDK"
    calls = (tmp_path / "calls.log").read_text().splitlines()
    assert calls[:2] == ["attach slot=0 pf=0 bar=0 flags=0", "attach slot=0 pf=0 bar=4 flags=1"]
    assert sum(c.startswith("detach") for c in calls) == 2

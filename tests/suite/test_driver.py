"""The host driver, the golden transport and the DeviceAPI: protocol and error messages."""

from __future__ import annotations

import logging
import time
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

import vta
from vta import device as device_mod
from vta import regs
from vta.backends.golden import GoldenTransport
from vta.driver.host import PAGE_BYTES, Buffer, Driver, RunStats
from vta.errors import DeadlockError, DeviceError, DeviceTimeoutError, ErrorCode, ExecutionError
from vta.isa import GemmInsn, MemId, MemInsn, Opcode, encode_stream

DEFAULT = vta.Config.load("default")
TINY = vta.Config.load("tiny")
REPO = Path(__file__).resolve().parents[2]


def small_driver(pages: int = 16, cfg: vta.Config = DEFAULT) -> Driver:
    return Driver(GoldenTransport(cfg, mem_size=pages * PAGE_BYTES), cfg)


# ------------------------------------------------------------- allocator
def test_alloc_is_page_granular_and_never_at_zero():
    drv = small_driver()
    a = drv.alloc(1)
    b = drv.alloc(PAGE_BYTES + 1)
    c = drv.alloc(PAGE_BYTES)
    assert (a.addr, b.addr, c.addr) == (0x1000, 0x2000, 0x4000)
    assert (a.pages, b.pages, c.pages) == (1, 2, 1)
    assert all(buf.addr % PAGE_BYTES == 0 for buf in (a, b, c))


def test_alloc_reuses_freed_runs_first_fit_and_merges_neighbours():
    drv = small_driver()
    bufs = [drv.alloc(PAGE_BYTES) for _ in range(4)]  # pages 1..4
    drv.free(bufs[1])
    drv.free(bufs[2])  # pages 2..3 free, merged into one run
    two = drv.alloc(2 * PAGE_BYTES)
    assert two.addr == 0x2000
    drv.free(bufs[0])
    one = drv.alloc(100)  # first fit: page 1
    assert one.addr == 0x1000
    big = drv.alloc(3 * PAGE_BYTES)  # no freed run is large enough: after page 4
    assert big.addr == 0x5000


def test_alloc_exhaustion_says_requested_and_free():
    drv = small_driver(pages=8)  # pages 1..7 usable
    drv.alloc(3 * PAGE_BYTES)
    with pytest.raises(DeviceError, match=r"device memory exhausted: requested 20000 bytes "
                                          r"\(5 pages\), 16384 bytes \(4 pages\) free, largest "
                                          r"free run 4 pages, of 32768 bytes"):
        drv.alloc(20000)


@pytest.mark.parametrize("nbytes, exc, text", [
    (0, ValueError, "nbytes must be positive, not 0"),
    (-5, ValueError, "nbytes must be positive, not -5"),
    ("4", TypeError, "nbytes must be an integer, not '4'"),
])
def test_alloc_rejects_bad_sizes(nbytes, exc, text):
    with pytest.raises(exc, match=text):
        small_driver().alloc(nbytes)


def test_double_free_and_foreign_free():
    drv = small_driver()
    buf = drv.alloc(10)
    drv.free(buf)
    with pytest.raises(DeviceError, match=r"double free of buffer 0x1000 \(10 bytes\): it was "
                                          r"already freed"):
        drv.free(buf)
    with pytest.raises(DeviceError, match=r"free of buffer 0x7000 \(8 bytes\): it was never "
                                          r"allocated on this device"):
        drv.free(Buffer(0x7000, 8))


def test_a_buffer_of_another_device_is_named_so_not_a_double_free():
    a, b = small_driver(), small_driver()
    buf_a, buf_b = a.alloc(10), b.alloc(10)
    assert buf_a.addr == buf_b.addr  # both devices hand out their first page
    for op in (lambda: b.free(buf_a), lambda: b.write(buf_a, b"x")):
        with pytest.raises(DeviceError, match=r"of buffer 0x1000 \(10 bytes\): it belongs to "
                                              r"another device, not this golden device "
                                              r"\(default\)"):
            op()
    a.free(buf_a)
    with pytest.raises(DeviceError, match="belongs to another device"):
        b.free(buf_a)  # freed on A: still not B's, and not a double free on B
    b.free(buf_b)


def test_access_outside_a_buffer_names_buffer_offset_and_length():
    drv = small_driver()
    buf = drv.alloc(100)
    drv.write(buf, b"x" * 100)
    with pytest.raises(DeviceError, match=r"write outside buffer 0x1000 \(100 bytes\): offset 96, "
                                          r"length 8 \(bytes 96\.\.104 of 0\.\.100\)"):
        drv.write(buf, b"12345678", offset=96)
    with pytest.raises(DeviceError, match=r"read outside buffer 0x1000 \(100 bytes\): offset -1, "
                                          r"length 4"):
        drv.read(buf, 4, offset=-1)
    drv.free(buf)
    with pytest.raises(DeviceError, match=r"read of buffer 0x1000 \(100 bytes\): the buffer is "
                                          r"not allocated"):
        drv.read(buf, 1)


def test_device_write_read_roundtrip_numpy_and_bytes():
    with vta.open_device("golden", "tiny") as dev:
        buf = dev.alloc(64)
        arr = np.arange(-8, 8, dtype=np.int32)
        dev.write(buf, arr)
        dev.write(buf, b"\x01\x02", offset=62)
        out = dev.read(buf)
        assert out.dtype == np.uint8 and out.shape == (64,)
        assert np.array_equal(out[:64].view(np.int32)[:15], arr[:15])
        assert out[62:].tolist() == [1, 2]
        assert dev.read(buf, 4, offset=4).view(np.int32)[0] == -7
        with pytest.raises(TypeError, match="data must be bytes-like or a numpy array, not list"):
            dev.write(buf, [1, 2])
    assert dev.closed
    with pytest.raises(DeviceError, match="the device is closed"):
        dev.alloc(1)


# -------------------------------------------------------- identification
def test_identification_mismatch_lists_every_differing_key():
    with pytest.raises(DeviceError) as info:
        Driver(GoldenTransport(TINY, mem_size=1 << 20), DEFAULT)
    text = str(info.value)
    assert "golden device was built for a different configuration than requested (default)" in text
    for diff in ("LOG_BLOCK: device 2, requested 4",
                 "LOG_UOP_BUFF_SIZE: device 10, requested 15",
                 "LOG_INP_BUFF_SIZE: device 9, requested 15",
                 "LOG_WGT_BUFF_SIZE: device 10, requested 18",
                 "LOG_ACC_BUFF_SIZE: device 11, requested 17"):
        assert diff in text
    assert "LOG_BATCH" not in text  # equal keys are not listed


def test_identification_bus_width_mismatch():
    aws = vta.Config.load("aws")
    with pytest.raises(DeviceError, match="LOG_BUS_WIDTH: device 9, requested 6$"):
        Driver(GoldenTransport(aws, mem_size=1 << 20), DEFAULT)


class _Patched(GoldenTransport):
    """A golden transport whose registers can be overridden."""

    def __init__(self, cfg, overrides=None, **kw):
        super().__init__(cfg, **kw)
        self.overrides = dict(overrides or {})

    def read32(self, offset):
        if offset in self.overrides:
            return self.overrides[offset]
        return super().read32(offset)


def test_identification_rejects_non_vta_and_wrong_isa():
    with pytest.raises(DeviceError, match="golden device is not a VTA: ID register reads "
                                          "0xdeadbeef, expected 0x56544101"):
        Driver(_Patched(DEFAULT, {regs.offset("ID"): 0xDEADBEEF}, mem_size=1 << 20), DEFAULT)
    with pytest.raises(DeviceError, match=r"implements ISA version 0\.0\.1, this driver needs "
                                          r"0\.0\.2"):
        Driver(_Patched(DEFAULT, {regs.offset("HW_VERSION"): 1}, mem_size=1 << 20), DEFAULT)
    with pytest.raises(DeviceError, match="CONFIG_SIG: device 0x00000001, requested 0x"):
        Driver(_Patched(DEFAULT, {regs.offset("CONFIG_SIG"): 1}, mem_size=1 << 20), DEFAULT)


def test_golden_register_file_identification_values():
    t = GoldenTransport(DEFAULT, mem_size=1 << 20)
    assert t.read32(regs.offset("ID")) == regs.ID_MAGIC
    assert t.read32(regs.offset("HW_VERSION")) == 0x000002
    assert t.read32(regs.offset("CONFIG_SIG")) == DEFAULT.signature
    assert (t.read32(regs.offset("CONFIG0")), t.read32(regs.offset("CONFIG1"))) == \
        regs.config_words(DEFAULT)
    assert t.read32(regs.offset("STATUS")) == 0
    t.write32(regs.offset("INSN_ADDR"), 0x1234)
    t.write32(regs.offset("INSN_ADDR") + 4, 0x5)
    assert t.read32(regs.offset("INSN_ADDR")) == 0x1234
    assert t.read32(regs.offset("INSN_ADDR") + 4) == 0x5
    with pytest.raises(DeviceError, match="register offset must be a multiple of 4"):
        t.read32(0x3)


# ---------------------------------------------------------------- timeout
class _Stuck(GoldenTransport):
    """A device that never finishes: STATUS stays BUSY after START."""

    def write32(self, offset, value):
        if offset == regs.offset("CTRL") and value & regs.CTRL_START:
            self._status = regs.STATUS_BUSY
            self._fetch_index = 3
            self.model.tokens["l2g"] = 2
            self._counters["load_insns"] = 5
            return
        super().write32(offset, value)


def test_timeout_names_elapsed_time_and_snapshot():
    drv = Driver(_Stuck(DEFAULT, mem_size=1 << 20), DEFAULT)
    buf = drv.alloc(64)
    with pytest.raises(DeviceTimeoutError, match=(
            r"run of 4 instructions at 0x1000 did not finish: device still busy after "
            r"0\.0[0-9]+ s \(timeout 0\.05 s\); FETCH_INDEX=3, tokens l2g=2 g2l=0 g2s=0 s2g=0, "
            r"retired load=5 compute=0 store=0, STATUS=0x00000001")):
        drv.run(buf.addr, 4, timeout=0.05)
    with pytest.raises(DeviceError, match="cannot start a run: the device is busy"):
        drv.run(buf.addr, 4, timeout=0.05)


def test_golden_stops_a_huge_gemm_at_run_timeout_and_stays_usable():
    """A legal GEMM of 2**41 micro-ops: DeviceTimeoutError after about run_timeout seconds,
    memory bounded; the device is idle afterwards and runs the next program."""
    with vta.open_device("golden", DEFAULT, mem_size=1 << 22, run_timeout=1.0) as dev:
        huge = GemmInsn(opcode=Opcode.GEMM, uop_end=DEFAULT.UOP_BUFF_DEPTH,
                        iter_out=(1 << 14) - 1, iter_in=(1 << 14) - 1)
        buf, n = _stream(dev, [MemInsn(opcode=Opcode.LOAD, memory_type=MemId.INP,
                                       push_next_dep=1),
                               huge.replace(pop_prev_dep=1), GemmInsn(opcode=Opcode.FINISH)])
        tracemalloc.start()
        start = time.monotonic()
        try:
            with pytest.raises(DeviceTimeoutError, match=(
                    r"^run of 3 instructions at 0x1000 did not finish: the golden model was "
                    r"stopped after 1\.[0-9]{3} s \(timeout 1\.0 s\) in instruction 1 "
                    r"\(compute\); FETCH_INDEX=3, tokens l2g=1 g2l=0 g2s=0 s2g=0, retired "
                    r"load=1 compute=0 store=0\. The device is idle again")):
                dev.run(buf, n)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert time.monotonic() - start < 3.0
        assert peak < 64 << 20, f"peak {peak >> 20} MiB"
        assert dev.driver.read_reg("STATUS") == 0
        assert dev.driver.read_reg64("LOAD_INSNS") == 1
        small, m = _stream(dev, [huge.replace(iter_out=2, iter_in=3, uop_end=4),
                                 GemmInsn(opcode=Opcode.FINISH)])
        stats = dev.run(small, m)
        assert stats.gemm_uops == 24 and stats.compute_insns == 2


def test_golden_register_protocol_without_wait_idle_runs_at_the_next_access():
    """A caller that writes START and polls STATUS (no wait_idle) still sees the run done."""
    t = GoldenTransport(DEFAULT, mem_size=1 << 20)
    t.mem_write(0x1000, encode_stream([GemmInsn(opcode=Opcode.FINISH)], DEFAULT))
    t.write32(regs.offset("INSN_ADDR"), 0x1000)
    t.write32(regs.offset("INSN_COUNT"), 1)
    t.write32(regs.offset("CTRL"), regs.CTRL_START)
    assert t.read32(regs.offset("STATUS")) == regs.status_word(done=True)
    assert t.read32(regs.offset("COMPUTE_INSNS")) == 1


# ------------------------------------------------- run: stats and errors
def _stream(dev, insns):
    raw = encode_stream(insns, dev.cfg)
    buf = dev.alloc(len(raw))
    dev.write(buf, raw)
    return buf, len(insns)


def test_run_reads_every_counter_and_no_timing_on_golden(device):
    cfg = device.cfg
    data = device.alloc(4 * cfg.ACC_ELEM_BYTES)
    buf, n = _stream(device, [
        MemInsn(opcode=Opcode.LOAD, memory_type=MemId.ACC,
                dram_base=data.addr // cfg.ACC_ELEM_BYTES, y_size=2, x_size=2, x_stride=2),
        GemmInsn(opcode=Opcode.FINISH),
    ])
    try:
        stats = device.run(buf, n)
    finally:
        device.free(buf)
        device.free(data)
    assert isinstance(stats, RunStats)
    assert list(stats.counters) == [name for name, _ in regs.COUNTERS]
    assert stats.acc_load_bytes == 4 * cfg.ACC_ELEM_BYTES
    assert stats.compute_insns == 2 and stats.load_insns == 0 and stats.store_insns == 0
    assert stats.insn_count == 2
    if device.backend == "golden":
        assert stats.cycles is None and stats.compute_busy is None
    else:
        assert stats.cycles > 0
    with pytest.raises(AttributeError, match="RunStats has no counter 'bogus'"):
        stats.bogus  # noqa: B018


def test_error_status_decodes_module_index_and_code(device):
    depth = device.cfg.INP_BUFF_DEPTH
    buf, n = _stream(device, [
        MemInsn(opcode=Opcode.LOAD, memory_type=MemId.INP, sram_base=depth - 1, dram_base=0x100,
                y_size=1, x_size=2, x_stride=2),
        GemmInsn(opcode=Opcode.FINISH),
    ])
    try:
        with pytest.raises(ExecutionError, match=(
                rf"run of 2 instructions at 0x{buf.addr:x} stopped with SRAM_RANGE in the load "
                r"module at instruction 0")) as info:
            device.run(buf, n)
    finally:
        device.free(buf)
    err = info.value
    assert (err.module, err.index, err.code) == ("load", 0, ErrorCode.SRAM_RANGE)
    # the model's own message, on the RTL too (the driver re-checks the instruction host-side)
    assert str(err).endswith(f": instruction 0 (load): LOAD INP writes SRAM entries {depth - 1}.."
                             f"{depth}, beyond the {depth}-entry INP buffer"), str(err)


def test_error_status_deadlock(device):
    buf, n = _stream(device, [
        MemInsn(opcode=Opcode.LOAD, memory_type=MemId.UOP, pop_prev_dep=1),  # waits on l2g
        GemmInsn(opcode=Opcode.FINISH),
    ])
    try:
        with pytest.raises(DeadlockError, match=(
                r"stopped with DEADLOCK in the compute module at instruction 0.*tokens l2g=0 "
                r"g2l=0 g2s=0 s2g=0")) as info:
            device.run(buf, n)
    finally:
        device.free(buf)
    assert info.value.code == ErrorCode.DEADLOCK
    assert info.value.stuck == {"compute": (0, "")}


def test_deadlock_snapshot_reports_live_tokens_and_retired_counts(device):
    buf, n = _stream(device, [
        MemInsn(opcode=Opcode.LOAD, memory_type=MemId.INP, push_next_dep=1),  # l2g + 1
        MemInsn(opcode=Opcode.LOAD, memory_type=MemId.UOP, pop_next_dep=1),  # s2g: never comes
        GemmInsn(opcode=Opcode.FINISH),
    ])
    try:
        with pytest.raises(DeadlockError, match=(
                r"DEADLOCK in the compute module at instruction 1.*FETCH_INDEX=3, tokens l2g=1 "
                r"g2l=0 g2s=0 s2g=0, retired load=1 compute=0 store=0")):
            device.run(buf, n)
    finally:
        device.free(buf)
    assert device.driver.read_counters()["l2g_tokens"] == 1


def test_error_status_no_finish_has_no_index(device):
    buf, n = _stream(device, [MemInsn(opcode=Opcode.LOAD, memory_type=MemId.UOP)])
    try:
        with pytest.raises(ExecutionError, match="stopped with NO_FINISH in the compute module "
                                                 "at no instruction") as info:
            device.run(buf, n)
    finally:
        device.free(buf)
    assert info.value.index is None and info.value.code == ErrorCode.NO_FINISH


def test_error_status_fetch_fault(device):
    buf, n = _stream(device, [GemmInsn(opcode=Opcode.FINISH)])
    device.write(buf, bytes([7] + [0] * 15))  # opcode 7: undefined
    try:
        with pytest.raises(ExecutionError, match="stopped with BAD_OPCODE in the fetch module at "
                                                 "instruction 0") as info:
            device.run(buf, n)
    finally:
        device.free(buf)
    assert info.value.module == "fetch"
    assert device.driver.read_reg("FETCH_INDEX") == 0


def test_run_checks_the_instruction_buffer(device):
    buf = device.alloc(32)
    try:
        with pytest.raises(DeviceError, match=rf"run outside buffer 0x{buf.addr:x} \(32 bytes\): "
                                              r"offset 0, length 48"):
            device.run(buf, 3)
    finally:
        device.free(buf)


def test_run_refuses_a_misaligned_instruction_address(device):
    """The RTL ignores INSN_ADDR bits 3:0 (the golden model would not): the driver refuses."""
    buf, n = _stream(device, [GemmInsn(opcode=Opcode.FINISH), GemmInsn(opcode=Opcode.FINISH)])
    try:
        with pytest.raises(ValueError, match=rf"insn_addr must be a multiple of 16 \(instructions "
                                             rf"are 16-byte aligned\), not 0x{buf.addr + 8:x}"):
            device.run(buf.addr + 8, 1)
        assert device.run(buf.addr + 16, 1).compute_insns == 1
    finally:
        device.free(buf)


# ------------------------------------------------------------ open_device
def test_open_device_unknown_backend_lists_valid_names():
    with pytest.raises(ValueError, match="backend must be one of golden, verilator, icarus, f1, "
                                         "f2, f1-sim, f2-sim, not 'fpga'"):
        vta.open_device("fpga")


def test_open_device_unavailable_backend_says_why(monkeypatch):
    monkeypatch.setitem(device_mod.BACKENDS, "f1", "vta.driver._no_such_module")
    with pytest.raises(DeviceError, match=r"the 'f1' backend is not available: importing "
                                          r"vta\.driver\._no_such_module failed "
                                          r"\(ModuleNotFoundError: No module named"):
        vta.open_device("f1")


def test_open_device_defaults_and_repr():
    with vta.open_device("golden", mem_size=1 << 20) as dev:
        assert dev.cfg == DEFAULT and dev.backend == "golden"
        assert repr(dev) == "<vta.Device golden default (1x16_i8w8a32_15_15_18_17), open>"
    with pytest.raises(TypeError, match="cfg must be a Config, a preset name or a path, not int"):
        vta.open_device("golden", 3)


def test_common_options_are_accepted_by_every_backend_and_checked_by_one_rule():
    from vta import device as vdev
    from vta.backends import aws, golden, rtl

    sim_only = {"watchdog": 0, "waves": True, "latency": (3, 4), "stall": 0.25, "seed": 3,
                "timeout": 10, "reorder": True, "outstanding": 2}
    with vta.open_device("golden", "tiny", mem_size=1 << 20, **sim_only) as dev:
        assert dev.mem_size == 1 << 20  # the simulator-only options are ignored here
    assert vdev._transport_options("icarus", rtl, {**sim_only, "mem_size": 1 << 20}) == {
        **sim_only, "timeout": 10.0, "stall": 0.25, "mem_size": 1 << 20}
    # a card has its own memory and no DRAM model: those options are ignored, its own pass
    assert vdev._transport_options("f2", aws, {**sim_only, "mem_size": 1 << 20, "slot": 1}) == {
        "slot": 1}
    for module in (golden, rtl, aws):  # one rule, whatever the backend
        with pytest.raises(ValueError, match=r"mem_size must be a power of two in "
                                             r"2\*\*16..2\*\*32, not 3145728"):
            vdev._transport_options("x", module, {"mem_size": 3 << 20})
        with pytest.raises(ValueError, match="bus_error must be \\(addr, nbytes\\), both "
                                             "multiples of 4096"):
            vdev._transport_options("x", module, {"bus_error": (4096, 100)})
    with pytest.raises(TypeError, match="unknown option 'watchdg' for the golden backend; did "
                                        "you mean 'watchdog'\\?"):
        vta.open_device("golden", "tiny", watchdg=0)
    with pytest.raises(ValueError, match="run_timeout must be a positive number of seconds"):
        vta.open_device("golden", "tiny", run_timeout=0)


def test_runstats_total_sums_and_keeps_none():
    a = RunStats({"cycles": None, "gemm_uops": 3}, 10, 0.5)
    b = RunStats({"cycles": None, "gemm_uops": 4}, 5, 0.25)
    total = RunStats.total([a, b])
    assert total.cycles is None and total.gemm_uops == 7
    assert (total.insn_count, total.wall_time, total.runs) == (15, 0.75, 2)
    assert RunStats.total([]) is None


# ------------------------------------------------------------------ docs
def test_registers_doc_is_generated_from_the_register_map():
    committed = (REPO / "docs" / "registers.md").read_text()
    assert committed == regs.render_markdown(), (
        "docs/registers.md is stale: regenerate it from vta.regs.render_markdown()")



def test_device_run_logs_its_counters_at_debug_only(caplog):
    """`Device.run` reports what retired at DEBUG (the counters are read only when that is
    logged), and nothing at INFO."""
    with vta.open_device("golden", TINY, mem_size=1 << 16) as dev:
        buf = dev.alloc(64)
        dev.write(buf, encode_stream([MemInsn(opcode=Opcode.LOAD, memory_type=MemId.INP),
                                      GemmInsn(opcode=Opcode.FINISH)], TINY))
        caplog.set_level(logging.INFO, logger="vta.device")
        dev.run(buf, 2)
        assert not [r for r in caplog.records if "run done" in r.getMessage()]
        caplog.set_level(logging.DEBUG, logger="vta.device")
        stats = dev.run(buf, 2)
    done = [r.getMessage() for r in caplog.records if "run done" in r.getMessage()]
    assert stats.load_insns == 1 and stats.compute_insns == 1
    assert len(done) == 1 and done[0].startswith("run done: 2 instructions retired, no cycles")


def test_counters_are_read_as_64_bit_words():
    """The driver joins each counter's two register words (high word above bit 31), and
    reports the timing counters as None on the golden backend, whose transport reads them 0."""
    with vta.open_device("golden", TINY, mem_size=1 << 16) as dev:
        dev.driver.transport._counters.update(gemm_uops=5 << 32 | 7, store_insns=1 << 63)
        read = dev.driver.read_counters()
    assert read["gemm_uops"] == 5 << 32 | 7 and read["store_insns"] == 1 << 63
    assert read["cycles"] is None and read["load_stall"] is None
    assert list(read) == [name for name, _ in regs.COUNTERS]

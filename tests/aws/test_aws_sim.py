"""The AWS wrappers (hdl/aws) with the shell-port models, reached through the f1/f2 transport.

Each case opens ``f1-sim`` / ``f2-sim``: :class:`vta.backends.aws.AwsTransport` (the
code the f1/f2 backends run on an instance) over stand-ins driven by the simulated
wrapper.  The default run covers F1 under Verilator (default preset: a
64-bit VTA bus, large loads) and F2 under Icarus (tiny preset); the other two pairings
are ``slow``.  The program suite itself runs through the wrappers with
``pytest -m slow tests/suite/test_runtime.py tests/suite/test_ops.py`` (tests/conftest.py).
"""

from __future__ import annotations

import numpy as np
import pytest

from vta import ops, regs
from vta.aws import regs as clregs
from vta.backends.aws import ShellTimeoutError
from vta.progfile.handbuilt import build_matmul

pytestmark = pytest.mark.sim  # every test here runs a simulator

CASES = [pytest.param("f1", "verilator", "default", id="f1-verilator"),
         pytest.param("f2", "icarus", "tiny", id="f2-icarus"),
         pytest.param("f1", "icarus", "tiny", id="f1-icarus", marks=pytest.mark.slow),
         pytest.param("f2", "verilator", "default", id="f2-verilator", marks=pytest.mark.slow)]
#: matmul (m, k, n) per preset for the runs below: long enough to overlap host traffic
MATMUL = {"tiny": (16, 64, 16), "default": (32, 512, 32)}
#: a short one
SMALL = {"tiny": (8, 32, 8), "default": (16, 64, 16)}


def _parts(dev):
    """(transport, simulator process) of a simulated AWS device."""
    t = dev.driver.transport
    return t, t.platform.sim


@pytest.mark.parametrize("shell,sim,preset", CASES)
def test_wrapper_identifies_itself(aws_device, shell, sim, preset):
    dev = aws_device(shell, sim, preset)
    t, s = _parts(dev)
    spec = clregs.SHELLS[shell]
    assert (t.function.vendor, t.function.device) == (clregs.PCI_VENDOR, spec.pci_device)
    # both ID words as the wrapper drives them: what the build's cl_id_defines.vh declares
    # (the manifest's IDs, tests/aws/test_aws_hdk.py parses that file as AWS's scripts do)
    info = s.info()
    assert (info["cl_id0"], info["cl_id1"]) == clregs.pci_ids(shell)
    assert info["cl_id1"] >> 16 and info["cl_id1"] & 0xFFFF  # AFI_Manifest: non-zero
    assert t.read32(clregs.offset("CL_ID")) == clregs.CL_MAGIC
    info = t.read32(clregs.offset("CL_INFO"))
    assert info & 0xFF == spec.number and (info >> 16) & 1 == 1
    assert 1 << ((info >> 8) & 0xFF) == t.mem_size == s.mem_size
    t.write32(clregs.offset("SCRATCH"), 0x1234_5678)
    assert t.read32(clregs.offset("SCRATCH")) == 0x1234_5678
    # outside both windows: DECERR and the documented filler; VTA's window is VTA's
    value, resp = s.read32(0x2000), s._call({"op": "read32", "offset": 0x2000})[0]["resp"]
    assert value == clregs.UNMAPPED and resp == 0b11
    assert t.read32(regs.offset("ID")) == regs.ID_MAGIC
    assert t.memory_path == ("XDMA /dev/xdma0 channel 0" if shell == "f1" else "BAR4")


@pytest.mark.parametrize("shell,sim,preset", CASES)
def test_host_memory_path_matches_card_memory(aws_device, shell, sim, preset):
    """Transport writes land in card memory byte for byte (and reads return it), at any
    alignment and across 4 KiB pages; checked against the DRAM model's backdoor."""
    dev = aws_device(shell, sim, preset)
    t, s = _parts(dev)
    rng = np.random.default_rng(7)
    for addr, n in [(0x10000, 64), (0x10041, 1), (0x1103F, 130), (0x11FF0, 40), (0x13001, 9000)]:
        data = rng.integers(0, 256, n, dtype=np.uint8).tobytes()
        t.mem_write(addr, data)
        assert s.mem_read(addr, n) == data, f"write at 0x{addr:x} ({n} bytes)"
        other = rng.integers(0, 256, n, dtype=np.uint8).tobytes()
        s.mem_write(addr, other)
        assert t.mem_read(addr, n) == other, f"read at 0x{addr:x} ({n} bytes)"
    # the bytes around a partial write are kept
    s.mem_write(0x20000, bytes(range(128)))
    t.mem_write(0x20003, b"\xAA\xBB")
    assert s.mem_read(0x20000, 8) == bytes([0, 1, 2, 0xAA, 0xBB, 5, 6, 7])
    if shell == "f1":  # BAR4 MMIO (PCIS ID 0x20) reaches the same memory as XDMA
        s.pcis_write(0x21000, b"mmio", 0x20, 1)
        assert t.mem_read(0x21000, 4) == b"mmio"


@pytest.mark.parametrize("shell,sim,preset", CASES)
def test_dense_layer_through_the_wrapper(aws_device, shell, sim, preset):
    dev = aws_device(shell, sim, preset)
    t, s = _parts(dev)
    rng = np.random.default_rng(3)
    x = rng.integers(-128, 128, (12, 40), dtype=np.int8)
    w = rng.integers(-128, 128, (20, 40), dtype=np.int8)
    irqs = t.read32(clregs.offset("IRQ_COUNT"))
    y, stats = ops.dense(dev, x, w, shift=8, relu=True, return_stats=True)
    acc = x.astype(np.int64) @ w.astype(np.int64).T
    np.testing.assert_array_equal(y, np.maximum(acc >> 8, 0).astype(np.int8))
    assert stats.cycles > 0
    # one completion interrupt per run, each acknowledged by the shell model
    assert t.read32(clregs.offset("IRQ_COUNT")) - irqs == stats.runs
    assert s.info()["irq_seen"] == t.read32(clregs.offset("IRQ_COUNT"))


def _start_matmul(dev, m, k, n, seed):
    """Place a matmul in card memory and start it without waiting; returns (prog, a, w)."""
    t, _ = _parts(dev)
    prog = build_matmul(dev.cfg, m, k, n, base=0x100000)
    rng = np.random.default_rng(seed)
    a = rng.integers(-128, 128, (m, k), dtype=np.int8)
    w = rng.integers(-128, 128, (n, k), dtype=np.int8)
    mem = np.zeros(prog.end, dtype=np.uint8)
    prog.write(mem, a, w)
    t.mem_write(prog.inp_addr, mem[prog.inp_addr:prog.end])
    t.write32(regs.offset("CTRL"), regs.CTRL_CLEAR)
    t.write32(regs.offset("INSN_ADDR"), prog.insn_addr)
    t.write32(regs.offset("INSN_ADDR") + 4, 0)
    t.write32(regs.offset("INSN_COUNT"), prog.insn_count)
    t.write32(regs.offset("CTRL"), regs.CTRL_START)
    return prog, a, w


def _result(dev, prog):
    t, _ = _parts(dev)
    raw = np.frombuffer(t.mem_read(prog.out_addr, prog.m * prog.n), dtype=np.uint8)
    mem = np.zeros(prog.out_addr + raw.size, dtype=np.uint8)
    mem[prog.out_addr:] = raw
    return prog.read_result(mem)


@pytest.mark.parametrize("shell,sim,preset", CASES)
def test_host_accesses_during_a_run_meet_the_8us_rule(aws_device, shell, sim, preset):
    """PCIS reads and writes issued while VTA streams card memory complete within the
    shell's 8 us (the model times every request); the run's result is still right."""
    dev = aws_device(shell, sim, preset)
    t, s = _parts(dev)
    prog, a, w = _start_matmul(dev, *MATMUL[preset], seed=11)
    rng = np.random.default_rng(5)
    before = s.info()
    for i in range(6):  # host traffic while the run is in flight
        data = rng.integers(0, 256, 2048, dtype=np.uint8).tobytes()
        s.pcis_write(0x40000 + i * 4096, data, 0x20, 1)
        assert s.pcis_read(0x40000 + i * 4096, 2048, 0x20, 1) == data
    during = s.info()
    busy = s.read32(regs.offset("STATUS")) & regs.STATUS_BUSY  # without waiting for the end
    assert busy, "the run ended before the host traffic: the test no longer overlaps them"
    assert during["dram_read_beats"] - before["dram_read_beats"] > 6 * 32
    status = t.read32(regs.offset("STATUS"))  # the host's poll: runs to the end
    assert status & regs.STATUS_DONE, f"STATUS 0x{status:08x}"
    np.testing.assert_array_equal(_result(dev, prog), prog.expected(a, w))
    limit = clregs.SHELLS[shell].timeout_cycles
    assert 0 < s.info()["pc_max_wait"] < limit // 2, (
        f"a PCIS request took {s.info()['pc_max_wait']} cycles (limit {limit})")


@pytest.mark.parametrize("shell,sim,preset", CASES)
def test_register_writes_wait_for_host_writes_to_land(aws_device, shell, sim, preset):
    """A register write (START, say) that follows host writes to card memory is taken only
    once they are in card memory: with a 300-cycle write latency, it waits for them."""
    dev = aws_device(shell, sim, preset, latency=(2, 300))
    t, s = _parts(dev)
    s.pcis_post(0x50000, bytes(range(200)), 0x20, 1)  # in flight while the next request runs
    before = s.info()["cycle"]
    t.write32(clregs.offset("SCRATCH"), 0x600D)
    waited = s.info()["cycle"] - before
    s.pcis_wait()
    assert waited >= 300, f"the register write completed after {waited} cycles"
    assert t.read32(clregs.offset("SCRATCH")) == 0x600D
    assert t.mem_read(0x50000, 200) == bytes(range(200))
    before = s.info()["cycle"]
    t.write32(clregs.offset("SCRATCH"), 1)  # nothing in flight: no wait
    assert s.info()["cycle"] - before < 100


@pytest.mark.parametrize("shell,sim,preset", CASES)
def test_unanswered_access_reads_all_ones_and_names_the_recovery(aws_device, shell, sim, preset):
    """With the custom logic held in reset the shell model times BAR0 accesses out
    (all ones); the transport reports the timeout with the reload command; released,
    the device works again."""
    dev = aws_device(shell, sim, preset)
    t, s = _parts(dev)
    timeouts = s.info()["ocl_timeouts"]
    s.hold(True)
    try:
        with pytest.raises(ShellTimeoutError, match=r"BAR0 0x4 read 0xffffffff, the shell's "
                           r"timeout signature.*fpga-load-local-image -S 0 -I <agfi-id> -F"):
            t.read32(regs.offset("STATUS"))
        assert s.info()["ocl_timeouts"] == timeouts + 1
    finally:
        s.hold(False)
    assert t.read32(regs.offset("ID")) == regs.ID_MAGIC
    assert dev.driver.identify()["ID"] == regs.ID_MAGIC


@pytest.mark.parametrize("shell,sim,preset", CASES)
def test_reset_and_flr_with_traffic_in_flight(aws_device, shell, sim, preset):
    """A reset (rst_main_n) or a function-level reset in the middle of a run stops it;
    the FLR is acknowledged; the next run is correct and the memory saw no broken burst."""
    dev = aws_device(shell, sim, preset)
    t, s = _parts(dev)
    for how in ("reset", "flr"):
        _start_matmul(dev, *MATMUL[preset], seed=1)
        s.pcis_read(0x40000, 4096, 0x20, 1)  # lets the run get going
        assert s.read32(regs.offset("STATUS")) & regs.STATUS_BUSY
        if how == "reset":
            s.hold(True)
            s.hold(False)
        else:
            assert s.flr() is not None, "cl_sh_flr_done never rose"
        assert not t.read32(regs.offset("STATUS")) & regs.STATUS_BUSY
        prog, a, w = _start_matmul(dev, *SMALL[preset], seed=2)
        assert t.read32(regs.offset("STATUS")) & regs.STATUS_DONE
        np.testing.assert_array_equal(_result(dev, prog), prog.expected(a, w))
        assert s.info()["dram_protocol_errors"] == 0


@pytest.mark.parametrize("shell,sim,preset", [
    pytest.param("f2", "icarus", "tiny", id="f2-icarus"),
    pytest.param("f1", "verilator", "default", id="f1-verilator", marks=pytest.mark.slow)])
def test_stalls_on_every_channel(aws_device, shell, sim, preset):
    """Random stalls on every card-memory channel and on the host's PCIS master."""
    dev = aws_device(shell, sim, preset, stall=0.3, pcis_stall=0.3, seed=9)
    t, s = _parts(dev)
    rng = np.random.default_rng(9)
    data = rng.integers(0, 256, 5000, dtype=np.uint8).tobytes()
    t.mem_write(0x30003, data)
    assert t.mem_read(0x30003, 5000) == data
    x = rng.integers(-128, 128, (8, 24), dtype=np.int8)
    w = rng.integers(-128, 128, (8, 24), dtype=np.int8)
    y = ops.dense(dev, x, w, shift=6)
    acc = x.astype(np.int64) @ w.astype(np.int64).T
    np.testing.assert_array_equal(y, (acc >> 6).astype(np.int8))
    assert s.info()["pc_late"] == 0


@pytest.mark.slow
def test_aws32_preset_through_the_f2_wrapper(aws_device):
    """The F2 preset with a 32x32 GEMM core (1,024 MACs per cycle): dense layers of several
    shapes through the F2 wrapper under Verilator, checked against NumPy.  (Random programs
    against the golden model: tests/sim/test_differential.py, slow case f2-sim-aws32.)"""
    dev = aws_device("f2", "verilator", "aws32")
    rng = np.random.default_rng(32)
    for m, k, n in [(1, 32, 32), (64, 256, 96), (33, 100, 70)]:
        x = rng.integers(-128, 128, (m, k), dtype=np.int8)
        w = rng.integers(-128, 128, (n, k), dtype=np.int8)
        bias = rng.integers(-5000, 5000, n, dtype=np.int32)
        y = ops.dense(dev, x, w, bias=bias, shift=9, relu=True)
        acc = x.astype(np.int64) @ w.astype(np.int64).T + bias
        np.testing.assert_array_equal(y, np.maximum(acc >> 9, 0).astype(np.int8),
                                      err_msg=f"dense {m}x{k} @ ({n}x{k})^T")


@pytest.mark.parametrize("shell,sim,preset", CASES)
def test_completion_by_interrupt(aws_device, shell, sim, preset):
    """F1 waits for the wrapper's user interrupt 0 (the XDMA events stand-in counts the
    requests the shell model took): one per run; F2 polls STATUS."""
    dev = aws_device(shell, sim, preset)
    t, _ = _parts(dev)
    if shell == "f2":
        assert t.completion == "poll" and t.events is None
        return
    assert t.completion == "interrupt (/dev/xdma0_events_0)"
    before = t.events.delivered
    for seed in (1, 2):
        prog, a, w = _start_matmul(dev, *SMALL[preset], seed=seed)
        t.wait_idle(60.0)
        assert t.events.delivered == before + seed  # the wait ended on the interrupt
        assert t.read32(regs.offset("STATUS")) & regs.STATUS_DONE
        np.testing.assert_array_equal(_result(dev, prog), prog.expected(a, w))

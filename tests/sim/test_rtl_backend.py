"""The ``verilator`` and ``icarus`` backends: transport, harness, errors, watchdog, crashes.

Program results are checked against the golden backend (the same driver code
path, the same bytes).  The program suites (tests/suite/test_runtime.py,
tests/suite/test_ops.py) run on the simulators with ``--backend verilator
--backend icarus``; this file covers what only a simulated device has.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import needs
import numpy as np
import pytest

import vta
from vta import trace as vtrace
from vta.errors import DeadlockError, DeviceError, DeviceTimeoutError, ErrorCode, ExecutionError
from vta.isa import AluInsn, GemmInsn, MemId, MemInsn, Opcode, Uop, encode, encode_uop
from vta.progfile.handbuilt import build_matmul

SIMS = ("icarus", "verilator")


def _require(sim: str) -> None:
    needs.simulator(sim)


@pytest.fixture(scope="module")
def tiny():
    """One tiny-preset device per simulator for the module (plus a golden twin)."""
    opened = {}

    def get(sim: str):
        if sim not in opened:
            _require(sim)
            dev = vta.open_device(sim, "tiny")
            gold = vta.open_device("golden", "tiny", mem_size=dev.driver.transport.mem_size)
            opened[sim] = (dev, gold)
        return opened[sim]

    yield get
    for dev, gold in opened.values():
        dev.close()
        gold.close()


def _put(dev, data: bytes, extra: int = 0):
    buf = dev.alloc(len(data) + extra)
    dev.write(buf, data)
    return buf


# ------------------------------------------------------------------ memory
@pytest.mark.parametrize("sim", SIMS)
def test_backdoor_unaligned_round_trips(tiny, sim):
    """Host writes and reads at every alignment, against a byte-array model."""
    dev, _ = tiny(sim)
    rng = np.random.default_rng(5)
    buf = dev.alloc(3 * 4096)
    model = bytearray(3 * 4096)
    dev.write(buf, bytes(model))
    for _ in range(40):
        off = int(rng.integers(0, len(model) - 1))
        n = int(rng.integers(1, min(300, len(model) - off) + 1))
        data = rng.integers(0, 256, n, dtype=np.uint8).tobytes()
        dev.write(buf, data, offset=off)
        model[off:off + n] = data
        off2 = int(rng.integers(0, len(model) - 1))
        n2 = int(rng.integers(1, len(model) - off2 + 1))
        got = dev.read(buf, n2, offset=off2).tobytes()
        assert got == bytes(model[off2:off2 + n2]), f"read of {n2} bytes at offset {off2}"
    dev.free(buf)


def test_memory_range_errors(tiny):
    dev, _ = tiny("icarus")
    t = dev.driver.transport
    with pytest.raises(DeviceError, match="lies outside the 16777216-byte device memory"):
        t.mem_read(t.mem_size - 4, 8)
    with pytest.raises(DeviceError, match="register offset must be a multiple of 4"):
        t.read32(0x102)


# ------------------------------------------------------------------ runs
def _matmul(dev, rng, m=16, k=32, n=16):
    cfg = dev.cfg
    prog = build_matmul(cfg, m, k, n)
    a = rng.integers(-128, 128, (m, k), dtype=np.int8)
    w = rng.integers(-128, 128, (n, k), dtype=np.int8)
    mem = np.zeros(prog.end, dtype=np.uint8)
    prog.write(mem, a, w)
    return prog, mem, prog.expected(a, w)


@pytest.mark.parametrize("sim", SIMS)
def test_matmul_matches_numpy_and_counts_cycles(tiny, sim):
    dev, gold = tiny(sim)
    rng = np.random.default_rng(1)
    prog, mem, want = _matmul(dev, rng)
    buf = dev.alloc(prog.end)
    assert buf.addr == 4096  # build_matmul places everything from one page on
    dev.write(buf, mem[4096:].tobytes())
    stats = dev.run(prog.insn_addr, prog.insn_count)
    raw = dev.read(buf, prog.end - 4096).tobytes()
    full = np.zeros(prog.end, dtype=np.uint8)
    full[4096:] = np.frombuffer(raw, dtype=np.uint8)
    np.testing.assert_array_equal(prog.read_result(full), want)
    assert stats.cycles > 0 and stats.wall_time > 0
    assert stats.load_busy is not None and stats.compute_busy > 0
    assert stats.gemm_uops * dev.cfg.BLOCK ** 2 == 16 * 32 * 16
    assert dev.driver.transport.info()["dram_protocol_errors"] == 0
    dev.free(buf)


@pytest.mark.parametrize("sim", SIMS)
def test_counters_are_read_in_one_request(tiny, sim, monkeypatch):
    """After a run the driver reads the 44 counter words in one request to the harness
    (Transport.read32_many), and they are what the registers give one read at a time."""
    from vta import regs

    dev, _ = tiny(sim)
    prog, mem, _ = _matmul(dev, np.random.default_rng(2), 4, 8, 4)
    buf = _put(dev, mem[4096:].tobytes())
    transport = dev.driver.transport
    sent = []
    call = transport._call
    monkeypatch.setattr(transport, "_call", lambda req, *a, **k: (sent.append(req["op"]),
                                                                  call(req, *a, **k))[1])
    stats = dev.run(prog.insn_addr, prog.insn_count)
    dev.free(buf)
    assert sent.count("read32_many") == 1 and sent[-1] == "read32_many", sent
    one_by_one = {name: dev.driver.read_reg64(name.upper()) for name, _ in regs.COUNTERS}
    assert stats.counters == one_by_one
    assert stats.gemm_uops * dev.cfg.BLOCK ** 2 == 4 * 8 * 4 and stats.cycles > 0
    ids = [regs.offset(name) for name in ("ID", "HW_VERSION", "STATUS")]
    assert transport.read32_many(ids) == [transport.read32(o) for o in ids]
    sent.clear()
    with pytest.raises(DeviceError, match="register offset must be a multiple of 4"):
        transport.read32_many([ids[0], 0x3])
    assert sent == []  # refused before anything reached the simulator
    assert transport.read32_many([]) == []


def test_latency_and_stalls_change_cycles_not_results():
    """DRAM latency and random stalls (plusargs, same build) slow the run, never change it."""
    _require("icarus")
    results = {}
    for opts in ({}, {"latency": (9, 5), "stall": 0.4, "seed": 7}):
        with vta.open_device("icarus", "tiny", **opts) as dev:
            prog, mem, want = _matmul(dev, np.random.default_rng(2))
            buf = dev.alloc(prog.end)
            dev.write(buf, mem[4096:].tobytes())
            stats = dev.run(prog.insn_addr, prog.insn_count)
            out = dev.read(buf).tobytes()
            assert dev.driver.transport.info()["dram_protocol_errors"] == 0
            results[bool(opts)] = (stats.cycles, out)
    assert results[True][1] == results[False][1]
    assert results[True][0] > results[False][0]


# ------------------------------------------------------------------ faults
def _fault_programs(cfg, mem_size: int):
    """(name, stream bytes, uop bytes) per fault, each stopping at a known instruction."""
    nop_c = MemInsn(opcode=Opcode.LOAD, memory_type=MemId.UOP)
    fin = GemmInsn(opcode=Opcode.FINISH)
    uload = MemInsn(opcode=Opcode.LOAD, memory_type=MemId.UOP, sram_base=0, dram_base=0,
                    y_size=1, x_size=1, x_stride=1)  # dram_base patched to the uop buffer

    def s(*insns):
        return b"".join(encode(i, cfg) for i in insns)

    return [
        ("bad_opcode", s(nop_c, nop_c) + (6).to_bytes(16, "little") + s(fin)),
        ("dram_range", s(nop_c, MemInsn(opcode=Opcode.LOAD, memory_type=MemId.INP,
                                        dram_base=mem_size // cfg.INP_ELEM_BYTES - 1, y_size=1,
                                        x_size=2, x_stride=2), fin)),
        ("sram_range", s(MemInsn(opcode=Opcode.LOAD, memory_type=MemId.INP,
                                 sram_base=cfg.INP_BUFF_DEPTH - 1, dram_base=1, y_size=1,
                                 x_size=2, x_stride=2), fin)),
        ("bad_alu_opcode", s(uload, AluInsn(opcode=Opcode.ALU, alu_opcode=6, uop_bgn=0,
                                            uop_end=1, iter_out=1, iter_in=1), fin)),
        ("store_pad", s(MemInsn(opcode=Opcode.STORE, memory_type=MemId.OUT, y_size=1, x_size=1,
                                x_stride=1, y_pad_0=1), fin)),
        ("bad_dep_flag", s(MemInsn(opcode=Opcode.LOAD, memory_type=MemId.INP, pop_prev_dep=1),
                           fin)),
        ("deadlock", s(nop_c, MemInsn(opcode=Opcode.LOAD, memory_type=MemId.UOP,
                                      pop_prev_dep=1), fin)),
        ("no_finish", s(nop_c, nop_c)),
    ]


def _outcome(dev, insn_buf, count):
    try:
        dev.run(insn_buf, count, timeout=120)
    except DeadlockError as exc:
        return ("DEADLOCK", exc.code, sorted(exc.stuck))
    except ExecutionError as exc:
        # the model's message, which the driver gives the RTL's codes too
        detail = None if exc.index is None else str(exc).split(f"at instruction {exc.index}: ")[-1]
        return (type(exc).__name__, exc.code, exc.module, exc.index, detail)
    return ("done",)


@pytest.mark.parametrize("sim", SIMS)
def test_faults_reported_like_the_golden_model(tiny, sim):
    """Each fault of decision 7: same error class, ErrorCode, module and instruction index."""
    dev, gold = tiny(sim)
    assert dev.driver.transport.mem_size == gold.driver.transport.mem_size
    uops = encode_uop(Uop(dst_idx=0, src_idx=0), dev.cfg)
    seen = set()
    for name, stream in _fault_programs(dev.cfg, dev.driver.transport.mem_size):
        outcomes = []
        for d in (gold, dev):
            ubuf = _put(d, uops)
            raw = bytearray(stream)
            # point the micro-op loads (dram_base 0, x_size 1) at this device's uop buffer
            for i in range(0, len(raw), 16):
                insn = vta.isa.decode(bytes(raw[i:i + 16]), d.cfg)
                if (insn.opcode == Opcode.LOAD and insn.memory_type == MemId.UOP
                        and insn.x_size == 1):
                    raw[i:i + 16] = encode(insn.replace(dram_base=ubuf.addr // 4), d.cfg)
            ibuf = _put(d, bytes(raw))
            outcomes.append(_outcome(d, ibuf, len(raw) // 16))
            d.free(ibuf)
            d.free(ubuf)
        want, got = outcomes
        assert want[0] != "done", f"{name}: the golden model accepted the fault program"
        assert got == want, f"{name}: golden reports {want}, {sim} reports {got}"
        seen.add(want[1])
    assert {ErrorCode.BAD_OPCODE, ErrorCode.DRAM_RANGE, ErrorCode.SRAM_RANGE,
            ErrorCode.BAD_ALU_OPCODE, ErrorCode.STORE_PAD, ErrorCode.BAD_DEP_FLAG,
            ErrorCode.DEADLOCK, ErrorCode.NO_FINISH} <= seen
    # the device is usable after every fault
    rng = np.random.default_rng(3)
    prog, mem, want_out = _matmul(dev, rng, 4, 8, 4)
    buf = _put(dev, mem[4096:].tobytes())
    dev.run(prog.insn_addr, prog.insn_count)
    dev.free(buf)


# ------------------------------------------------------------------ bus errors, traffic at a fault
sys.path.insert(0, str(Path(__file__).resolve().parent / "rtl"))
import rtl_programs  # noqa: E402  (tests/sim/rtl: programs shared with the module tests)

SPAN = 20 * 4096  # rtl_programs keep their addresses below this


def _run_prog(dev, prog, span: int = SPAN):
    """Write ``prog``'s image (pages 1..span) raw, run it; (outcome, memory of the span)."""
    image = prog.image(dev.cfg, span)
    dev.driver.transport.mem_write(4096, image[4096:].tobytes())
    try:
        dev.run(prog.insn_addr, prog.insn_count, timeout=120)
        outcome = ("done",)
    except ExecutionError as exc:
        outcome = (exc.module, exc.code, exc.index, exc.address)
    return outcome, np.frombuffer(dev.driver.transport.mem_read(0, span), dtype=np.uint8)


@pytest.mark.parametrize("sim", SIMS)
def test_bus_errors_reported_like_the_golden_model(sim):
    """SLVERR on every DRAM stream (fetch, INP, WGT, UOP, ACC, ACC_8BIT, OUT): same engine,
    instruction, code and burst address (ERR_ADDR) as the golden model, same memory."""
    _require(sim)
    cfg = vta.Config.load("tiny")
    progs = rtl_programs.bus_errors(cfg)
    window = progs[0].bus_error
    opts = {"bus_error": (window[0], window[1] - window[0])}
    with vta.open_device(sim, cfg, **opts) as dev, vta.open_device(
            "golden", cfg, mem_size=dev.driver.transport.mem_size, **opts) as gold:
        seen = set()
        for prog in [rtl_programs.zero_fill(cfg), *progs]:
            (want, want_mem), (got, got_mem) = _run_prog(gold, prog), _run_prog(dev, prog)
            assert got == want, f"{prog.name}: golden reports {want}, {sim} reports {got}"
            diff = np.flatnonzero(got_mem != want_mem)
            assert diff.size == 0, f"{prog.name}: memory differs at 0x{diff[0]:x}"
            seen.add(want[0])
        assert seen == {"done", "fetch", "load", "compute", "store"}
        try:
            gold.run(progs[0].insn_addr, progs[0].insn_count)
        except ExecutionError as exc:
            assert f"error response to the DRAM burst at 0x{window[0]:x}" in str(exc)


def test_reordered_responses_and_few_outstanding_requests_change_nothing():
    """The DRAM answers reads of different streams out of order, accepts 2 requests at a
    time and stalls: the design steers every beat by its ID; results equal the golden model's."""
    _require("icarus")
    cfg = vta.Config.load("tiny")
    opts = {"reorder": True, "outstanding": 2, "stall": 0.3, "seed": 5}
    with vta.open_device("icarus", cfg, **opts) as dev, vta.open_device(
            "golden", cfg, mem_size=dev.driver.transport.mem_size) as gold:
        for prog in (rtl_programs.zero_fill(cfg),
                     rtl_programs.mixed(cfg, np.random.default_rng(12)),
                     rtl_programs.matmul(cfg, np.random.default_rng(13), 8, 8, 8)):
            (want, want_mem), (got, got_mem) = _run_prog(gold, prog), _run_prog(dev, prog)
            assert got == want == ("done",), prog.name
            diff = np.flatnonzero(got_mem != want_mem)
            assert diff.size == 0, f"{prog.name}: memory differs at 0x{diff[0]:x}"
        assert dev.driver.transport.info()["dram_protocol_errors"] == 0


@pytest.mark.parametrize("scenario", ["reads", "writes"])
def test_fault_with_traffic_in_flight_then_next_run(scenario):
    """A fault while the DRAM still owes read data ("reads": a slow ACC load) or write beats
    ("writes": a STORE on a stalling bus); CLEAR; the bus drains; the next run (every kind of
    instruction) is exact and the DRAM model saw no AXI rule broken."""
    from vta import regs

    _require("icarus")
    cfg = vta.Config.load("tiny")
    nop_c = MemInsn(opcode=Opcode.LOAD, memory_type=MemId.UOP)
    store = MemInsn(opcode=Opcode.STORE, memory_type=MemId.OUT, sram_base=0,
                    dram_base=0x10000 // cfg.OUT_ELEM_BYTES, y_size=1, x_size=cfg.OUT_BUFF_DEPTH,
                    x_stride=cfg.OUT_BUFF_DEPTH)
    if scenario == "reads":  # ACC data 1500 cycles away; the store engine faults after a
        # long STORE, long after the ACC load asked for its data
        opts = {"latency": (1500, 2), "watchdog": 20000}
        insns = [MemInsn(opcode=Opcode.LOAD, memory_type=MemId.ACC, sram_base=100,
                         dram_base=0x11000 // cfg.ACC_ELEM_BYTES, y_size=1, x_size=1,
                         x_stride=1),
                 nop_c, store, MemInsn(opcode=Opcode.STORE, memory_type=MemId.OUT, x_size=1,
                                       y_size=1, x_pad_0=1)]
        want = ("store", ErrorCode.STORE_PAD, 3, None)
    else:  # W mostly not ready; compute faults while the STORE's beats wait
        opts = {"stall": 0.9, "seed": 3, "latency": (2, 3000), "watchdog": 20000}
        insns = [store, GemmInsn(opcode=Opcode.GEMM, reset_reg=1, uop_bgn=0, uop_end=1,
                                 iter_out=100, iter_in=1),
                 AluInsn(opcode=Opcode.ALU, alu_opcode=6, uop_bgn=0, uop_end=1, iter_out=1,
                         iter_in=1)]
        want = ("compute", ErrorCode.BAD_ALU_OPCODE, 2, None)
    prog_a = rtl_programs.Program("a", insns=[*insns, GemmInsn(opcode=Opcode.FINISH)],
                                  insn_addr=0x12000)
    with vta.open_device("icarus", cfg, **opts) as dev, vta.open_device(
            "golden", cfg, mem_size=dev.driver.transport.mem_size) as gold:
        t = dev.driver.transport
        for d in (gold, dev):
            assert _run_prog(d, rtl_programs.zero_fill(cfg))[0] == ("done",)
        assert _run_prog(dev, prog_a)[0] == want
        _run_prog(gold, prog_a)
        assert t.info()["dram_busy"], "run A must stop with DRAM traffic in flight"
        t.write32(regs.offset("CTRL"), regs.CTRL_CLEAR)
        start = t.info()["cycle"]
        for _ in range(3000):  # let the bus drain with the device cleared and idle
            if not t.info()["dram_busy"]:
                break
            dev.driver.read_reg("STATUS")
        else:
            pytest.fail(f"the DRAM still has transactions in flight {t.info()['cycle'] - start} "
                        "cycles after CLEAR (a burst left unfinished)")
        assert t.info()["cycle"] - start > 20
        prog_b = rtl_programs.mixed(cfg, np.random.default_rng(11))
        (want_b, want_mem), (got_b, got_mem) = _run_prog(gold, prog_b), _run_prog(dev, prog_b)
        assert got_b == want_b == ("done",)
        diff = np.flatnonzero(got_mem[:0x10000] != want_mem[:0x10000])
        assert diff.size == 0, f"run B: memory differs at 0x{diff[0]:x}"
        assert t.info()["dram_protocol_errors"] == 0


# ------------------------------------------------------------------ hangs and crashes
def test_watchdog_reports_each_engine_and_resets():
    """A DRAM that never answers: the watchdog stops the run and names where each engine was."""
    from vta.backends.rtl import WatchdogError

    _require("icarus")
    with vta.open_device("icarus", "tiny", stall=1.0, watchdog=3000) as dev:
        prog = build_matmul(dev.cfg, 4, 8, 4)
        buf = dev.alloc(prog.end)
        start = time.perf_counter()
        with pytest.raises(WatchdogError) as info:
            dev.run(prog.insn_addr, prog.insn_count, timeout=60)
        assert time.perf_counter() - start < 30
        text = str(info.value)
        assert "nothing retired, dispatched or moved on the DRAM bus for 3000 cycles" in text
        for part in ("load ", "compute ", "store ", "tokens l2g=0 g2l=0 g2s=0 s2g=0",
                     "FETCH_INDEX=0", "the device was reset"):
            assert part in text, f"{part!r} missing from: {text}"
        report = info.value.report
        assert set(report["engines"]) == {"load", "compute", "store"}
        assert report["idle_cycles"] >= 3000
        # reset: idle again, a new run can start (and hangs the same way)
        assert not dev.driver.read_reg("STATUS") & 1
        with pytest.raises(WatchdogError):
            dev.run(prog.insn_addr, prog.insn_count, timeout=60)
        dev.free(buf)


def _long_gemm(dev, uops: int, iter_out: int, iter_in: int):
    """A reset GEMM over ``uops`` resident micro-ops, ``iter_out x iter_in`` times: no DRAM
    traffic and nothing retired for as many cycles as micro-ops."""
    cfg = dev.cfg
    kernel = b"".join(encode_uop(Uop(dst_idx=i % cfg.ACC_BUFF_DEPTH), cfg) for i in range(uops))
    insns = [MemInsn(opcode=Opcode.LOAD, memory_type=MemId.UOP, sram_base=0, dram_base=0,
                     y_size=1, x_size=uops, x_stride=uops),
             GemmInsn(opcode=Opcode.GEMM, reset_reg=1, uop_bgn=0, uop_end=uops,
                      iter_out=iter_out, iter_in=iter_in),
             AluInsn(opcode=Opcode.ALU, alu_opcode=2, use_imm=1, uop_bgn=0, uop_end=1,
                     iter_out=iter_out, iter_in=1),
             GemmInsn(opcode=Opcode.FINISH)]
    ubuf = _put(dev, kernel)
    insns[0] = insns[0].replace(dram_base=ubuf.addr // 4)
    ibuf = _put(dev, b"".join(encode(i, cfg) for i in insns))
    try:
        return dev.run(ibuf, len(insns), timeout=300)
    finally:
        dev.free(ibuf)
        dev.free(ubuf)


def test_watchdog_counts_micro_ops():
    """A legal GEMM longer than the watchdog (no retire, dispatch or DRAM beat meanwhile)
    runs to the end: executing micro-ops is progress."""
    _require("icarus")
    with vta.open_device("icarus", "tiny", watchdog=2000) as dev, \
            vta.open_device("golden", "tiny") as gold:
        stats = [_long_gemm(d, 8, 1000, 1) for d in (dev, gold)]
    assert stats[0].alu_uops == stats[1].alu_uops == 1000
    assert stats[0].cycles > 8000


def test_default_watchdog_lets_a_million_micro_op_gemm_finish(tiny):
    """The issue's case: GEMM uop_end=256 iter_out=64 iter_in=64 (1,048,576 micro-ops, over a
    million cycles) on Verilator with the default watchdog of 1,000,000 cycles."""
    dev, _ = tiny("verilator")
    assert dev.driver.transport.watchdog == 1_000_000
    stats = _long_gemm(dev, 256, 64, 64)
    assert stats.cycles > 1_048_576 and stats.compute_insns == 4


def test_wall_clock_timeout_kills_the_simulator():
    """With the watchdog off, a hung run ends at the host timeout: process killed, clear errors."""
    _require("icarus")
    dev = vta.open_device("icarus", "tiny", stall=1.0, watchdog=0)
    proc = dev.driver.transport._proc
    prog = build_matmul(dev.cfg, 4, 8, 4)
    dev.alloc(prog.end)
    with pytest.raises(DeviceTimeoutError,
                       match=r"did not answer run request within 2 s; it was killed") as info:
        dev.run(prog.insn_addr, prog.insn_count, timeout=2)
    assert proc.poll() is not None, "the simulator process must be gone"
    with pytest.raises(DeviceError, match="simulator is not running .*killed after"):
        dev.driver.read_reg("STATUS")
    dev.close()
    _check_saved_log(str(info.value), dev.driver.transport.workdir)


def _check_saved_log(message: str, workdir: Path) -> None:
    """The session folder is gone; the log named in ``message`` outlives it (build cache)."""
    from vta.hdltools.build import cache_root

    assert not workdir.exists(), "the session folder of a dead simulator is removed at close"
    import re

    log = Path(re.search(r"(/\S+\.log)\)", message).group(1))
    assert log.parent == cache_root() / "logs" and log.stat().st_size > 0, message
    log.unlink()


@pytest.mark.parametrize("sim", SIMS)
def test_crashed_simulator_becomes_an_exception(sim):
    _require(sim)
    dev = vta.open_device(sim, "tiny")
    t = dev.driver.transport
    os.killpg(t._proc.pid, signal.SIGKILL)
    t._proc.wait(timeout=10)
    with pytest.raises(DeviceError, match=rf"the {sim} simulator exited \(code -9\) during "
                                          r"read32 request") as info:
        dev.driver.read_reg("STATUS")
    with pytest.raises(DeviceError, match="simulator is not running"):
        dev.driver.read_reg("STATUS")
    dev.close()
    _check_saved_log(str(info.value), t.workdir)


def test_session_folders_of_dead_processes_are_swept(tmp_path, monkeypatch):
    """A host process killed outright leaves its $TMPDIR/vta-* folder; the next session
    removes it (its owner is gone), and leaves folders of live owners and kept waveforms."""
    import tempfile

    from vta.backends import rtl

    _require("icarus")
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale, live, kept = (tmp_path / f"vta-icarus-{n}" for n in ("stale", "live", "kept"))
    for folder, pid in ((stale, dead.pid), (live, os.getpid()), (kept, dead.pid)):
        folder.mkdir()
        (folder / rtl.OWNER_FILE).write_text(str(pid))
    (kept / rtl.KEEP_FILE).write_text("")
    with vta.open_device("icarus", "tiny") as dev:
        assert dev.driver.transport.workdir.parent == tmp_path
        assert not stale.exists() and live.exists() and kept.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["vta-icarus-kept", "vta-icarus-live"]


@pytest.mark.parametrize("sim", SIMS)
def test_close_ends_the_process(sim):
    _require(sim)
    dev = vta.open_device(sim, "tiny")
    t = dev.driver.transport
    proc = t._proc
    workdir = t.workdir
    assert proc.poll() is None
    dev.close()
    assert proc.poll() is not None
    assert not workdir.exists()
    with pytest.raises(DeviceError, match="the device is closed"):
        dev.alloc(16)


def test_config_mismatch_is_refused():
    """The simulator identifies its configuration through the registers like hardware."""
    _require("icarus")
    from vta.backends import rtl

    t = rtl.RTLTransport("icarus", vta.Config.load("tiny"))
    try:
        with pytest.raises(DeviceError, match="built for a different configuration"):
            vta.driver.host.Driver(t, vta.Config.load("default"))
    finally:
        t.close()


def test_bad_options():
    with pytest.raises(ValueError, match="stall must be a probability in 0..1, not 2"):
        vta.open_device("icarus", "tiny", stall=2)
    with pytest.raises(ValueError, match="mem_size must be a power of two"):
        vta.open_device("icarus", "tiny", mem_size=3 << 20)


# ------------------------------------------------------------------ trace and waves
def test_trace_file_matches_the_golden_trace(tmp_path):
    """The RTL monitor's trace, in the shared format, equals the golden trace up to cycles."""
    _require("icarus")
    path = tmp_path / "rtl.trace"
    rng = np.random.default_rng(4)
    with vta.open_device("icarus", "tiny", trace=path) as dev, \
            vta.open_device("golden", "tiny", trace=True) as gold:
        prog, mem, _ = _matmul(dev, rng, 8, 16, 8)
        for d in (dev, gold):
            buf = _put(d, mem[4096:].tobytes())
            d.run(prog.insn_addr, prog.insn_count)
            d.free(buf)
        golden_records = gold.driver.transport.last_trace
    text = path.read_text()
    assert text.startswith(vtrace.HEADER)
    rtl_records = vtrace.read_trace(path)
    assert len(rtl_records) == prog.insn_count
    assert all(r.cycle is not None for r in rtl_records)
    cycles = [r.cycle for r in rtl_records]
    assert cycles == sorted(cycles)
    assert vtrace.normalise(rtl_records) == vtrace.normalise(golden_records)
    # a golden trace written in the same format reads back the same
    gpath = tmp_path / "golden.trace"
    gpath.write_text(vtrace.format_trace(golden_records))
    assert vtrace.read_trace(gpath) == golden_records
    assert all(line.split("\t")[0] == "-" for line in gpath.read_text().splitlines()[1:])


@pytest.mark.parametrize("sim", [
    "icarus", pytest.param("verilator", marks=pytest.mark.slow)])  # verilator: its own build
def test_waves_on_request(tmp_path, sim):
    _require(sim)
    path = tmp_path / "session.fst"
    with vta.open_device(sim, "tiny", waves=path) as dev:
        prog, mem, _ = _matmul(dev, np.random.default_rng(6), 4, 8, 4)
        buf = _put(dev, mem[4096:].tobytes())
        dev.run(prog.insn_addr, prog.insn_count)
        dev.free(buf)
    assert path.exists() and path.stat().st_size > 1000
    assert path.read_bytes()[0] == 0  # an FST file opens with its header block (type 0)


# ------------------------------------------------------------------ packaging
WHEEL_SCRIPT = r'''
import sys
import numpy as np
import vta
from vta.progfile.handbuilt import build_matmul
from vta.hdltools.build import hdl_dir, sim_dir
print("vta from", vta.__file__)
print("hdl", hdl_dir(), "sim", sim_dir())
for path in (vta.__file__, hdl_dir(), sim_dir()):
    assert str(path).startswith(sys.prefix), f"{path} is not inside the fresh venv {sys.prefix}"
with vta.open_device("icarus", "tiny") as dev:
    prog = build_matmul(dev.cfg, 8, 16, 8)
    rng = np.random.default_rng(0)
    a = rng.integers(-128, 128, (8, 16), dtype=np.int8)
    w = rng.integers(-128, 128, (8, 16), dtype=np.int8)
    mem = np.zeros(prog.end, dtype=np.uint8)
    prog.write(mem, a, w)
    buf = dev.alloc(prog.end - 4096)
    dev.write(buf, mem[4096:])
    stats = dev.run(prog.insn_addr, prog.insn_count)
    mem[4096:] = dev.read(buf)
    assert np.array_equal(prog.read_result(mem), prog.expected(a, w))
    print("OK cycles", stats.cycles)
'''


def test_wheel_installs_and_runs_outside_the_source_tree(tmp_path):
    """Build the wheel, install it into a fresh venv, run a program on Icarus from elsewhere."""
    import importlib.util
    import subprocess
    import sys
    import sysconfig
    from pathlib import Path

    _require("icarus")
    repo = Path(__file__).resolve().parents[2]
    dist = tmp_path / "dist"
    cmd = [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(dist), str(repo)]
    if importlib.util.find_spec("hatchling") is not None:
        cmd.insert(5, "--no-build-isolation")
    subprocess.run(cmd, check=True, timeout=300)
    wheel = next(dist.glob("vta-*.whl"))
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    py = venv / "bin" / "python"
    subprocess.run([str(py), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)],
                   check=True, timeout=300)
    # dependencies (numpy, cocotb, ...) come from this environment; vta itself only from the
    # wheel (a path added by a .pth file does not run that folder's own .pth files, so an
    # editable install of vta there stays invisible)
    site = Path(subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()"
                                "['purelib'])"], check=True, capture_output=True, text=True,
                               timeout=60).stdout.strip())
    deps = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    (site / "zz_test_deps.pth").write_text("\n".join(sorted(deps)) + "\n")
    work = tmp_path / "elsewhere"
    work.mkdir()
    (work / "check.py").write_text(WHEEL_SCRIPT)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["VTA_CACHE_DIR"] = str(tmp_path / "cache")
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    out = subprocess.run([str(py), "check.py"], cwd=work, env=env, capture_output=True,
                         text=True, timeout=600)
    assert out.returncode == 0, f"stdout:\n{out.stdout[-3000:]}\nstderr:\n{out.stderr[-3000:]}"
    assert "OK cycles" in out.stdout
    assert str(venv) in out.stdout


# ------------------------------------------------------------------ trace format
def test_trace_format_round_trip_and_errors():
    cfg = vta.Config.load("default")
    insn = MemInsn(opcode=Opcode.LOAD, memory_type=MemId.INP, dram_base=16, y_size=1, x_size=2,
                   x_stride=2, pop_next_dep=1, push_next_dep=1)
    raw = int.from_bytes(encode(insn, cfg), "little")
    rec = vtrace.record(1042, "load", 3, raw, cfg)
    assert rec.popped == ("g2l",) and rec.pushed == ("l2g",)
    line = rec.line()
    assert line.split("\t")[:3] == ["1042", "load", "3"]
    assert line.endswith("\tpop=g2l push=l2g")
    assert vtrace.parse_line(line) == rec
    assert vtrace.parse_line("# comment") is None and vtrace.parse_line("  ") is None
    with pytest.raises(ValueError, match="trace line must have 6 tab-separated columns, not 2"):
        vtrace.parse_line("1\tload")
    with pytest.raises(ValueError, match="module must be one of load, compute, store, not 'x'"):
        vtrace.record(0, "x", 0, raw, cfg)
    with pytest.raises(ValueError, match="beyond the 1-instruction stream"):
        vtrace.from_monitor(["5 load 4 retire"], encode(insn, cfg), cfg)
    assert vtrace.from_monitor(["5 load 0 start", "7 fetch 0 dispatch"], b"", cfg) == []

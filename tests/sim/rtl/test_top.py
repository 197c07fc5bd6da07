"""vta_top end to end: programs through the AXI4-Lite port against cocotbext-axi's AxiRam.

The DRAM is cocotbext-axi's AxiRam (an independent AXI model) with random
backpressure and idle cycles on all five channels.  Each program runs through
the driver's register protocol; afterwards the whole device memory, STATUS,
ERR_INDEX and every functional counter must equal the golden model's.
"""

from __future__ import annotations

import os

import cocotb
import numpy as np
import pytest
import rtl_programs
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, RisingEdge, with_timeout
from compare import assert_same
from rtl_common import (
    build_and_run,
    cfg_from_env,
    check_identification,
    read64,
    sim_params,
    stall_axi,
    top_params,
)

from vta import regs

MEM_SIZE = 1 << 20
TIMEOUT_US = int(os.environ.get("VTA_TIMEOUT_US", "2000"))
#: what a hung run reports: name -> (instance, register)
STATE = {
    "fetch": ("fetch", "state_reg"),
    "fetched": ("fetch", "dispatched_reg"),
    "load": ("load", "state_reg"),
    "compute": ("compute", "state_reg"),
    "store": ("store", "state_reg"),
    "rd_owed": ("dma_rd", "owed_reg"),
    "rd_active": ("dma_rd", "sp_active_reg"),
    "busy": ("regs", "busy_reg"),
    "pending": ("regs", "pending_reg"),
    "wr_owed": ("dma_wr", "b_owed_reg"),
    "wr_active": ("dma_wr", "active_reg"),
    "w_rem": ("dma_wr", "w_rem_reg"),
    "error": ("regs", "error_reg"),
}


async def run_program(dut, axil, insn_addr, count, timeout_us=TIMEOUT_US):
    """CLEAR, then a run by the driver's protocol; (STATUS, ERR_INDEX, {counter: value})."""
    await axil.write_dword(regs.offset("CTRL"), regs.CTRL_CLEAR)
    await axil.write_dword(regs.offset("INSN_ADDR"), insn_addr & 0xFFFFFFFF)
    await axil.write_dword(regs.offset("INSN_ADDR") + 4, insn_addr >> 32)
    await axil.write_dword(regs.offset("INSN_COUNT"), count)
    await axil.write_dword(regs.offset("CTRL"), regs.CTRL_START)
    if not dut.irq.value:
        try:
            await with_timeout(RisingEdge(dut.irq), timeout_us, "us")
        except Exception:
            state = {n: int(getattr(dut, m).__getattr__(r).value) for n, (m, r) in STATE.items()}
            raise AssertionError(f"no irq within {timeout_us} us; state {state}") from None
    status = await axil.read_dword(regs.offset("STATUS"))
    index = await axil.read_dword(regs.offset("ERR_INDEX"))
    counters = {name: await read64(axil, name.upper()) for name, _ in regs.COUNTERS}
    return status, index, counters


async def setup(dut):
    import logging

    from cocotbext.axi import AxiBus, AxiLiteBus, AxiLiteMaster, AxiRam

    cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
    logging.getLogger("cocotb.vta_top").setLevel(logging.WARNING)
    axil = AxiLiteMaster(AxiLiteBus.from_prefix(dut, "s_axil"), dut.clk, dut.rst)
    ram = AxiRam(AxiBus.from_prefix(dut, "m_axi"), dut.clk, dut.rst, size=MEM_SIZE)
    stall_axi(ram, 7 * int(os.environ.get("VTA_SEED", "1")))
    dut.rst.value = 1
    await ClockCycles(dut.clk, 5)
    dut.rst.value = 0
    await ClockCycles(dut.clk, 2)
    return axil, ram


def check(name, want, ram, status, index, counters, span: int = MEM_SIZE) -> None:
    """A run's STATUS, ERR_INDEX, counters and memory below ``span`` against golden ``want``."""
    if want.module == "none":
        assert status == regs.status_word(done=True), (
            f"{name}: STATUS expected DONE (0x2), got 0x{status:x} (code "
            f"{status >> 8 & 0xFF}, module {status >> 4 & 0xF}, index {index})"
        )
        for counter, value in want.counters.items():
            assert counters[counter] == value, (
                f"{name}: counter {counter} expected {value}, got {counters[counter]}"
            )
    else:
        expected = regs.status_word(error=True, module=want.module, code=want.code)
        assert (status, index) == (expected, want.index), (
            f"{name}: expected STATUS 0x{expected:x} ERR_INDEX {want.index}, "
            f"got 0x{status:x} {index}"
        )
    got = np.frombuffer(ram.read(0, span), dtype=np.uint8)
    assert_same(got, want.mem[:span], f"{name}: device memory", base=0)
    assert counters["cycles"] > 0


async def run_and_check(dut, axil, ram, cfg, model, prog):
    """``prog`` on the device and on the golden ``model`` (the scratchpads persist in both)."""
    ram.write(0, bytes(MEM_SIZE))
    ram.write(0, prog.image(cfg, MEM_SIZE).tobytes())
    result = await run_program(dut, axil, prog.insn_addr, prog.insn_count)
    check(prog.name, rtl_programs.golden_run(cfg, prog, MEM_SIZE, model), ram, *result)
    dut._log.info("%s: %d cycles", prog.name, result[2]["cycles"])


@cocotb.test()
async def identification(dut):
    """ID, HW_VERSION, CONFIG_SIG, CONFIG0/1 identify the configuration."""
    axil, _ = await setup(dut)
    await check_identification(axil, cfg_from_env())


def program_suite(cfg):
    """Zero-fill, matmuls, the mixed and forwarding programs: memory and counters exact."""
    return rtl_programs.suite(cfg, np.random.default_rng(int(os.environ.get("VTA_SEED", "1"))))


def fault_programs(cfg):
    """Zero-fill, then every fault of decision 7: STATUS module/code and ERR_INDEX exact."""
    return [rtl_programs.zero_fill(cfg), *rtl_programs.faults(cfg, MEM_SIZE)]


PROGRAMS = {"suite": program_suite, "faults": fault_programs}


@cocotb.test()
@cocotb.parametrize(kind=list(PROGRAMS))
async def programs(dut, kind):
    """Each program against the golden model, one after the other on one device."""
    from vta.golden import GoldenModel

    cfg = cfg_from_env()
    axil, ram = await setup(dut)
    model = GoldenModel(cfg, 1 << 12)
    for prog in PROGRAMS[kind](cfg):
        await run_and_check(dut, axil, ram, cfg, model, prog)


@pytest.mark.parametrize("simulator, preset", sim_params(("tiny", "default", "aws"), ("tiny",)))
def test_top(simulator, preset):
    build_and_run(simulator, preset, "vta_top", "test_top", parameters=top_params(preset, MEM_SIZE))

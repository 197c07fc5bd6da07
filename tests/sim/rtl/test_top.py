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
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, RisingEdge, with_timeout
from rtl_common import build_and_run, cfg_from_env, sim_params, stall_axi_ram, top_params

MEM_SIZE = 1 << 20


async def reset(dut):
    dut.rst.value = 1
    await ClockCycles(dut.clk, 5)
    dut.rst.value = 0
    await ClockCycles(dut.clk, 2)


TIMEOUT_US = int(os.environ.get("VTA_TIMEOUT_US", "2000"))


async def run_program(dut, axil, regs, insn_addr, count, timeout_us=TIMEOUT_US):
    await axil.write_dword(regs.offset("CTRL"), regs.CTRL_CLEAR)
    await axil.write_dword(regs.offset("INSN_ADDR"), insn_addr & 0xFFFFFFFF)
    await axil.write_dword(regs.offset("INSN_ADDR") + 4, insn_addr >> 32)
    await axil.write_dword(regs.offset("INSN_COUNT"), count)
    await axil.write_dword(regs.offset("CTRL"), regs.CTRL_START)
    if not dut.irq.value:
        try:
            await with_timeout(RisingEdge(dut.irq), timeout_us, "us")
        except Exception:
            state = {
                n: int(getattr(dut, m).__getattr__(r).value)
                for n, (m, r) in {
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
                }.items()
            }
            raise AssertionError(f"no irq within {timeout_us} us; state {state}") from None
    status = await axil.read_dword(regs.offset("STATUS"))
    index = await axil.read_dword(regs.offset("ERR_INDEX"))
    counters = {}
    for name, _ in regs.COUNTERS:
        lo = await axil.read_dword(regs.offset(name.upper()))
        hi = await axil.read_dword(regs.offset(name.upper()) + 4)
        counters[name] = lo | hi << 32
    return status, index, counters


async def setup(dut):
    import logging

    from cocotbext.axi import AxiBus, AxiLiteBus, AxiLiteMaster, AxiRam

    cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
    logging.getLogger("cocotb.vta_top").setLevel(logging.WARNING)
    axil = AxiLiteMaster(AxiLiteBus.from_prefix(dut, "s_axil"), dut.clk, dut.rst)
    ram = AxiRam(AxiBus.from_prefix(dut, "m_axi"), dut.clk, dut.rst, size=MEM_SIZE)
    stall_axi_ram(ram, seed=int(os.environ.get("VTA_SEED", "1")))
    await reset(dut)
    return axil, ram


_MODELS = {}


def check(dut, cfg, prog, ram, status, index, counters):
    from rtl_programs import golden_run

    from vta import regs
    from vta.golden import GoldenModel

    model = _MODELS.setdefault(id(dut), GoldenModel(cfg, 1 << 12))
    want = golden_run(cfg, prog, MEM_SIZE, model)
    got_mem = np.frombuffer(ram.read(0, MEM_SIZE), dtype=np.uint8)
    if want.module == "none":
        assert status == regs.status_word(done=True), (
            f"{prog.name}: STATUS expected DONE (0x2), got 0x{status:x} (code "
            f"{status >> 8 & 0xFF}, module {status >> 4 & 0xF}, index {index})"
        )
        for name, value in want.counters.items():
            assert counters[name] == value, (
                f"{prog.name}: counter {name} expected {value}, got {counters[name]}"
            )
    else:
        expected = regs.status_word(error=True, module=want.module, code=want.code)
        assert (status, index) == (expected, want.index), (
            f"{prog.name}: expected STATUS 0x{expected:x} ERR_INDEX {want.index}, "
            f"got 0x{status:x} {index}"
        )
    diff = np.flatnonzero(got_mem != want.mem)
    assert diff.size == 0, (
        f"{prog.name}: device memory differs at {diff.size} bytes, first 0x{diff[0]:x}: "
        f"expected {want.mem[diff[0]]} got {got_mem[diff[0]]}"
    )
    assert counters["cycles"] > 0


async def run_and_check(dut, axil, ram, cfg, prog):
    from vta import regs

    ram.write(0, bytes(MEM_SIZE))
    ram.write(0, prog.image(cfg, MEM_SIZE).tobytes())
    status, index, counters = await run_program(dut, axil, regs, prog.insn_addr, prog.insn_count)
    check(dut, cfg, prog, ram, status, index, counters)
    dut._log.info("%s: %d cycles", prog.name, counters["cycles"])


@cocotb.test()
async def identification(dut):
    """ID, HW_VERSION, CONFIG_SIG, CONFIG0/1 identify the configuration."""
    from vta import regs

    cfg = cfg_from_env()
    axil, _ = await setup(dut)
    assert await axil.read_dword(regs.offset("ID")) == regs.ID_MAGIC
    assert await axil.read_dword(regs.offset("HW_VERSION")) == regs.HW_VERSION
    assert await axil.read_dword(regs.offset("CONFIG_SIG")) == cfg.signature
    w0, w1 = regs.config_words(cfg)
    assert await axil.read_dword(regs.offset("CONFIG0")) == w0
    assert await axil.read_dword(regs.offset("CONFIG1")) == w1


@cocotb.test()
async def programs(dut):
    """matmul and the mixed program: memory and counters equal the golden model's."""
    from rtl_programs import forwarding, matmul, mixed, zero_fill

    cfg = cfg_from_env()
    rng = np.random.default_rng(int(os.environ.get("VTA_SEED", "1")))
    axil, ram = await setup(dut)
    b, blk = cfg.BATCH, cfg.BLOCK
    await run_and_check(dut, axil, ram, cfg, zero_fill(cfg))
    await run_and_check(dut, axil, ram, cfg, matmul(cfg, rng, 2 * b, 2 * blk, 3 * blk))
    await run_and_check(dut, axil, ram, cfg, mixed(cfg, rng))
    await run_and_check(dut, axil, ram, cfg, forwarding(cfg, rng))
    await run_and_check(dut, axil, ram, cfg, matmul(cfg, rng, 3 * b, 2 * blk, 2 * blk, shift=None))


@cocotb.test()
async def faults(dut):
    """Every fault of decision 7: STATUS module/code and ERR_INDEX as the golden model."""
    from rtl_programs import faults as fault_programs

    cfg = cfg_from_env()
    axil, ram = await setup(dut)
    for prog in fault_programs(cfg, MEM_SIZE):
        await run_and_check(dut, axil, ram, cfg, prog)


@pytest.mark.parametrize("simulator, preset", sim_params(("tiny", "default", "aws"), ("tiny",)))
def test_top(simulator, preset):
    build_and_run(simulator, preset, "vta_top", "test_top", parameters=top_params(preset, MEM_SIZE))

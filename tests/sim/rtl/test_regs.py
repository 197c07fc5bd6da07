"""vta_regs: the AXI4-Lite register file against vta/regs.py.

cocotbext-axi's AxiLiteMaster drives the port with random idle cycles on
AW/W/AR and backpressure on B/R.  Checked: identification, INSN_ADDR/COUNT
read-write with byte strobes, START -> BUSY and the start pulse only once the
DMA is quiet, run_done -> DONE and irq, the first fault latched into STATUS and
ERR_INDEX with halt, START ignored while busy, CLEAR, counters (cleared at
START, adding their lanes while busy), TOKENS / FETCH_INDEX pass-through,
unmapped and write-only registers reading 0.
"""

from __future__ import annotations

import cocotb
import pytest
from cocotb.triggers import ClockCycles, FallingEdge, RisingEdge
from rtl_common import (
    build_and_run,
    cfg_from_env,
    check_identification,
    read64,
    sim_params,
    stall_axi,
    start_clock_reset,
)


@cocotb.test()
async def register_map(dut):
    import logging

    from cocotbext.axi import AxiLiteBus, AxiLiteMaster

    from vta import regs

    cfg = cfg_from_env()
    ncnt = len(regs.COUNTERS)
    for name in (
        "start_ok",
        "run_done",
        "err_valid",
        "err_module",
        "err_code",
        "err_index",
        "tokens",
        "fetch_index",
        "cnt_inc",
    ):
        getattr(dut, name).value = 0
    axil = AxiLiteMaster(AxiLiteBus.from_prefix(dut, "s_axil"), dut.clk, dut.rst)
    logging.getLogger("cocotb").setLevel(logging.WARNING)
    stall_axi(axil, 100, 0.4)
    await start_clock_reset(dut)
    rd = axil.read_dword
    wr = axil.write_dword

    await check_identification(axil, cfg)
    # read-write registers, strobes
    await wr(regs.offset("INSN_ADDR"), 0x12345670)
    await wr(regs.offset("INSN_ADDR") + 4, 0xCAFE)
    await wr(regs.offset("INSN_COUNT"), 77)
    await axil.write(regs.offset("INSN_COUNT") + 1, b"\x01")  # byte lane 1 only
    assert await rd(regs.offset("INSN_ADDR")) == 0x12345670
    assert await rd(regs.offset("INSN_ADDR") + 4) == 0xCAFE
    assert await rd(regs.offset("INSN_COUNT")) == 77 | 0x100
    assert int(dut.insn_addr.value) == 0xCAFE12345670
    # read-only and unmapped
    await wr(regs.offset("ID"), 0)
    assert await rd(regs.offset("ID")) == regs.ID_MAGIC
    assert await rd(regs.offset("CTRL")) == 0
    assert await rd(0x0FC) == 0 and await rd(0x100) == 0 and await rd(0xFF0) == 0
    dut.tokens.value = 0x04030201
    dut.fetch_index.value = 1234
    assert await rd(regs.offset("TOKENS")) == 0x04030201
    assert await rd(regs.offset("FETCH_INDEX")) == 1234

    # run 1: START waits for start_ok, counters add their lanes while busy
    starts = []

    async def watch_start():
        while True:
            await RisingEdge(dut.clk)
            if int(dut.start.value):
                starts.append(1)

    cocotb.start_soon(watch_start())
    incs = [(k * 3 + 1) for k in range(ncnt)]
    await FallingEdge(dut.clk)
    dut.cnt_inc.value = sum(v << (32 * k) for k, v in enumerate(incs))
    await wr(regs.offset("CTRL"), regs.CTRL_START)
    assert await rd(regs.offset("STATUS")) == regs.STATUS_BUSY
    assert int(dut.halt.value) == 1 and int(dut.run.value) == 0 and not starts
    await FallingEdge(dut.clk)
    dut.start_ok.value = 1
    await ClockCycles(dut.clk, 3)
    assert len(starts) == 1 and int(dut.run.value) == 1 and int(dut.halt.value) == 0
    await wr(regs.offset("CTRL"), regs.CTRL_START | regs.CTRL_CLEAR)  # ignored while busy
    assert len(starts) == 1
    await FallingEdge(dut.clk)
    dut.run_done.value = 1
    await FallingEdge(dut.clk)
    dut.run_done.value = 0
    dut.cnt_inc.value = 0
    assert int(dut.irq.value) == 1
    assert await rd(regs.offset("STATUS")) == regs.status_word(done=True)
    cycles = await read64(axil, "CYCLES")
    assert cycles > 4
    for k, (name, _) in enumerate(regs.COUNTERS):
        got = await read64(axil, name.upper())
        assert got == incs[k] * cycles, f"{name}: expected {incs[k] * cycles}, got {got}"
    # run 2: the first fault wins and halts; CLEAR clears it
    await wr(regs.offset("CTRL"), regs.CTRL_START)
    await ClockCycles(dut.clk, 2)
    assert await rd(regs.offset(regs.COUNTERS[3][0].upper())) == 0  # cleared by START
    await FallingEdge(dut.clk)
    dut.err_valid.value = 1
    dut.err_module.value = 3
    dut.err_code.value = 5
    dut.err_index.value = 4242
    dut.run_done.value = 1
    await FallingEdge(dut.clk)
    dut.err_module.value = 2
    dut.err_code.value = 9
    await FallingEdge(dut.clk)
    dut.err_valid.value = 0
    dut.run_done.value = 0
    assert int(dut.halt.value) == 1 and int(dut.irq.value) == 1
    assert await rd(regs.offset("STATUS")) == regs.status_word(error=True, module="compute", code=5)
    assert await rd(regs.offset("ERR_INDEX")) == 4242
    await wr(regs.offset("CTRL"), regs.CTRL_CLEAR)
    assert await rd(regs.offset("STATUS")) == 0
    assert await rd(regs.offset("ERR_INDEX")) == 0
    assert int(dut.irq.value) == 0


@pytest.mark.parametrize("simulator, preset", sim_params())
def test_regs(simulator, preset):
    import vta
    from vta import regs
    from vta.hdltools import hdlgen

    params = {
        k: v
        for k, v in hdlgen.top_parameters(vta.Config.load(preset)).items()
        if k.startswith("LOG_") or k == "CONFIG_SIG"
    }
    params["NUM_COUNTERS"] = len(regs.COUNTERS)
    build_and_run(simulator, preset, "vta_regs", "test_regs", parameters=params)

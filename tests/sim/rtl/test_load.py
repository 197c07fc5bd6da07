"""vta_load: INP/WGT 2-D loads with padding and strides, tokens and faults.

The engine runs on its own DMA streams against cocotbext-axi's AxiRam (random
stalls on every channel).  Each random LOAD's SRAM contents are checked
against the padding formula of vta-reference 3.2 (zeros for pads, SRAM rows
contiguous); pop_next waits for a g2l token (the engine stalls meanwhile),
push_next pushes l2g at retire; byte counts at retire; faults: *_prev flags
(BAD_DEP_FLAG, before the token is taken), SRAM_RANGE, DRAM_RANGE, a full
l2g queue (TOKEN_OVERFLOW).
"""

from __future__ import annotations

import logging
import random

import cocotb
import pytest
from cocotb.triggers import ClockCycles, FallingEdge, RisingEdge
from rtl_common import (
    WRAPPERS,
    TokenSource,
    build_and_run,
    cfg_from_env,
    expected_load,
    insn_word,
    send_cmd,
    sim_params,
    stall_axi_ram,
    start_clock_reset,
    wait_retire,
)

MEM = 1 << 20


async def read_sram(dut, port, start, count, elem_bytes):
    out = []
    for i in range(count + 1):
        await FallingEdge(dut.clk)
        if i < count:
            getattr(dut, f"{port}_raddr").value = start + i
        if i:
            out.append(int(getattr(dut, f"{port}_rdata").value).to_bytes(elem_bytes, "little"))
        await RisingEdge(dut.clk)
    return out


@cocotb.test()
async def loads(dut):
    from cocotbext.axi import AxiBus, AxiRam

    from vta.errors import ErrorCode
    from vta.isa import MemId, MemInsn, Opcode

    cfg = cfg_from_env()
    for s in ("run", "halt", "cmd_valid", "l2g_full", "inp_raddr", "wgt_raddr"):
        getattr(dut, s).value = 0
    ram = AxiRam(AxiBus.from_prefix(dut, "m_axi"), dut.clk, dut.rst, size=MEM)
    logging.getLogger("cocotb").setLevel(logging.WARNING)
    stall_axi_ram(ram, seed=5)
    rng = random.Random(21)
    mem = bytes(rng.getrandbits(8) for _ in range(MEM))
    ram.write(0, mem)
    tokens = TokenSource(dut, "g2l_nonempty", "g2l_pop")
    await start_clock_reset(dut)
    cocotb.start_soon(tokens.run())
    dut.run.value = 1

    types = {
        MemId.INP: ("inp", cfg.INP_ELEM_BYTES, cfg.INP_BUFF_DEPTH),
        MemId.WGT: ("wgt", cfg.WGT_ELEM_BYTES, cfg.WGT_BUFF_DEPTH),
    }
    for index in range(24):
        mt = rng.choice([MemId.INP, MemId.WGT])
        port, eb, depth = types[mt]
        while True:
            p = [rng.randint(0, 2) for _ in range(4)]
            x, y = rng.randint(1, 5), rng.randint(0 if index % 7 == 3 else 1, 4)
            xt, yt = p[2] + x + p[3], p[0] + y + p[1]
            if xt * yt <= depth:
                break
        stride = rng.choice([x, x + rng.randint(0, 4), max(1, x - 1)])
        insn = MemInsn(
            opcode=Opcode.LOAD,
            memory_type=mt,
            sram_base=rng.randint(0, depth - xt * yt),
            dram_base=rng.randint(0, MEM // eb - (y + 1) * (stride + x) - 1),
            y_size=y,
            x_size=x,
            x_stride=stride,
            y_pad_0=p[0],
            y_pad_1=p[1],
            x_pad_0=p[2],
            x_pad_1=p[3],
            pop_next_dep=rng.randint(0, 1),
            push_next_dep=rng.randint(0, 1),
        )
        cocotb.start_soon(send_cmd(dut, insn_word(insn, cfg), index))
        if insn.pop_next_dep:
            stalled = 0
            for _ in range(rng.randint(3, 20)):
                await RisingEdge(dut.clk)
                stalled += int(dut.stall.value)
            assert stalled > 0, "the engine must stall while g2l is empty"
            tokens.give()
        kind, seen = await wait_retire(dut, watch=("l2g_push", "inp_bytes", "wgt_bytes", "index"))
        assert kind == "retire", f"instruction {index}: unexpected fault {seen}"
        assert seen["index"] == index and seen["l2g_push"] == insn.push_next_dep
        assert seen[f"{port}_bytes"] == x * y * eb
        want = expected_load(mem, insn, eb)
        got = await read_sram(dut, port, insn.sram_base, len(want), eb)
        assert got == want, f"instruction {index} ({insn}): SRAM differs"
    assert tokens.count == 0

    # faults
    async def fault(insn, code, index):
        cocotb.start_soon(send_cmd(dut, insn_word(insn, cfg), index))
        kind, seen = await wait_retire(dut)
        assert (kind, seen) == ("err", {"err_code": int(code), "index": index}), (insn, seen)
        dut.halt.value = 1
        await ClockCycles(dut.clk, 3)
        while not int(dut.rd_idle.value):
            await RisingEdge(dut.clk)
        dut.halt.value = 0

    await fault(
        MemInsn(
            opcode=Opcode.LOAD,
            memory_type=MemId.INP,
            x_size=1,
            y_size=1,
            pop_prev_dep=1,
            pop_next_dep=1,
        ),
        ErrorCode.BAD_DEP_FLAG,
        100,
    )
    await fault(
        MemInsn(opcode=Opcode.LOAD, memory_type=MemId.WGT, x_size=1, y_size=1, push_prev_dep=1),
        ErrorCode.BAD_DEP_FLAG,
        101,
    )
    await fault(
        MemInsn(
            opcode=Opcode.LOAD,
            memory_type=MemId.INP,
            sram_base=cfg.INP_BUFF_DEPTH - 3,
            x_size=2,
            y_size=1,
            x_stride=2,
            y_pad_1=1,
        ),
        ErrorCode.SRAM_RANGE,
        102,
    )
    await fault(
        MemInsn(
            opcode=Opcode.LOAD,
            memory_type=MemId.WGT,
            dram_base=MEM // cfg.WGT_ELEM_BYTES - 1,
            x_size=2,
            y_size=1,
            x_stride=2,
        ),
        ErrorCode.DRAM_RANGE,
        103,
    )
    dut.l2g_full.value = 1
    await fault(
        MemInsn(opcode=Opcode.LOAD, memory_type=MemId.INP, x_size=1, y_size=1, push_next_dep=1),
        ErrorCode.TOKEN_OVERFLOW,
        104,
    )


@pytest.mark.parametrize(
    "simulator, preset", sim_params(("tiny", "default", "aws"), ("tiny",), slow=("default", "aws"))
)
def test_load(simulator, preset):
    import vta

    cfg = vta.Config.load(preset)
    params = {
        k: getattr(cfg, k)
        for k in (
            "LOG_INP_WIDTH",
            "LOG_WGT_WIDTH",
            "LOG_BATCH",
            "LOG_BLOCK",
            "LOG_INP_BUFF_SIZE",
            "LOG_WGT_BUFF_SIZE",
            "LOG_BUS_WIDTH",
        )
    }
    params["MEM_SIZE"] = MEM
    build_and_run(
        simulator,
        preset,
        "tb_load",
        "test_load",
        sources=[WRAPPERS / "tb_load.v"],
        parameters=params,
    )

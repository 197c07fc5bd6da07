"""vta_store: strided 2-D stores from OUT, tokens and faults, against cocotbext-axi's AxiRam.

OUT is preloaded with random elements through the wrapper's write port; each
random STORE (rows starting and ending mid-beat, strides larger, equal or
smaller than the row) must leave DRAM exactly as the formula of vta-reference
3.5 says (later rows win where rows overlap) and touch nothing else; AxiRam
stalls every channel.  pop_prev waits for g2s (the engine stalls), push_prev
pushes s2g at retire, x_size 0 is a no-op; faults: *_next flags, memory type,
pads, SRAM and DRAM range, full s2g queue.
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
    insn_word,
    send_cmd,
    sim_params,
    stall_axi_ram,
    start_clock_reset,
    wait_retire,
)

MEM = 1 << 18


@cocotb.test()
async def stores(dut):
    from cocotbext.axi import AxiBus, AxiRam

    from vta.errors import ErrorCode
    from vta.isa import MemId, MemInsn, Opcode

    cfg = cfg_from_env()
    eb, depth = cfg.OUT_ELEM_BYTES, cfg.OUT_BUFF_DEPTH
    for s in ("run", "halt", "cmd_valid", "s2g_full", "out_we"):
        getattr(dut, s).value = 0
    ram = AxiRam(AxiBus.from_prefix(dut, "m_axi"), dut.clk, dut.rst, size=MEM)
    logging.getLogger("cocotb").setLevel(logging.WARNING)
    stall_axi_ram(ram, seed=8)
    rng = random.Random(33)
    model = bytearray(rng.getrandbits(8) for _ in range(MEM))
    ram.write(0, bytes(model))
    tokens = TokenSource(dut, "g2s_nonempty", "g2s_pop")
    await start_clock_reset(dut)
    cocotb.start_soon(tokens.run())
    out = [rng.getrandbits(8 * eb).to_bytes(eb, "little") for _ in range(depth)]
    for i, v in enumerate(out):
        await FallingEdge(dut.clk)
        dut.out_we.value = 1
        dut.out_waddr.value = i
        dut.out_wdata.value = int.from_bytes(v, "little")
    await FallingEdge(dut.clk)
    dut.out_we.value = 0
    dut.run.value = 1

    for index in range(20):
        x, y = rng.randint(1, 6), rng.randint(1 if index % 6 else 0, 4)
        stride = rng.choice([x, x + rng.randint(1, 3), max(1, x - 2)])
        insn = MemInsn(
            opcode=Opcode.STORE,
            memory_type=MemId.OUT,
            sram_base=rng.randint(0, depth - x * y),
            dram_base=rng.randint(0, MEM // eb - (y + 1) * (stride + x) - 1),
            y_size=y,
            x_size=x,
            x_stride=stride,
            pop_prev_dep=rng.randint(0, 1),
            push_prev_dep=rng.randint(0, 1),
        )
        for r in range(y):
            for c in range(x):
                a = (insn.dram_base + r * stride + c) * eb
                model[a : a + eb] = out[insn.sram_base + r * x + c]
        cocotb.start_soon(send_cmd(dut, insn_word(insn, cfg), index))
        if insn.pop_prev_dep:
            stalled = 0
            for _ in range(rng.randint(3, 12)):
                await RisingEdge(dut.clk)
                stalled += int(dut.stall.value)
            assert stalled > 0
            tokens.give()
        kind, seen = await wait_retire(dut, watch=("s2g_push", "out_bytes", "index", "wr_idle"))
        assert kind == "retire", f"instruction {index}: unexpected fault {seen}"
        assert seen["index"] == index and seen["s2g_push"] == insn.push_prev_dep
        assert seen["out_bytes"] == x * y * eb and seen["wr_idle"] == 1
        got = ram.read(0, MEM)
        if got != bytes(model):
            first = next(i for i in range(MEM) if got[i] != model[i])
            raise AssertionError(f"instruction {index} ({insn}): DRAM differs from 0x{first:x}")

    async def fault(insn, code, index):
        cocotb.start_soon(send_cmd(dut, insn_word(insn, cfg), index))
        kind, seen = await wait_retire(dut)
        assert (kind, seen) == ("err", {"err_code": int(code), "index": index}), (insn, seen)
        dut.halt.value = 1
        await ClockCycles(dut.clk, 3)
        dut.halt.value = 0
        assert ram.read(0, MEM) == bytes(model), "a faulting STORE wrote memory"

    def st(**kw):
        return MemInsn(
            opcode=Opcode.STORE,
            **{"memory_type": MemId.OUT, "x_size": 1, "y_size": 1, "x_stride": 1, **kw},
        )

    await fault(st(pop_next_dep=1), ErrorCode.BAD_DEP_FLAG, 50)
    await fault(st(push_next_dep=1), ErrorCode.BAD_DEP_FLAG, 51)
    await fault(st(memory_type=MemId.ACC), ErrorCode.BAD_MEMORY_TYPE, 52)
    await fault(st(y_pad_1=1), ErrorCode.STORE_PAD, 53)
    await fault(st(x_pad_0=2), ErrorCode.STORE_PAD, 54)
    await fault(st(sram_base=depth - 1, x_size=2, x_stride=2), ErrorCode.SRAM_RANGE, 55)
    await fault(st(dram_base=MEM // eb - 1, x_size=2, x_stride=2), ErrorCode.DRAM_RANGE, 56)
    dut.s2g_full.value = 1
    await fault(st(push_prev_dep=1, x_size=0), ErrorCode.TOKEN_OVERFLOW, 57)
    dut.s2g_full.value = 0
    # memory type is not checked on a no-op
    cocotb.start_soon(send_cmd(dut, insn_word(st(memory_type=0, x_size=0), cfg), 58))
    kind, _ = await wait_retire(dut)
    assert kind == "retire"


@pytest.mark.parametrize(
    "simulator, preset", sim_params(("tiny", "default", "aws"), ("tiny",), slow=("default", "aws"))
)
def test_store(simulator, preset):
    import vta

    cfg = vta.Config.load(preset)
    params = {
        k: getattr(cfg, k)
        for k in ("LOG_INP_WIDTH", "LOG_BATCH", "LOG_BLOCK", "LOG_ACC_BUFF_SIZE", "LOG_BUS_WIDTH")
    }
    params["MEM_SIZE"] = MEM
    build_and_run(
        simulator,
        preset,
        "tb_store",
        "test_store",
        sources=[WRAPPERS / "tb_store.v"],
        parameters=params,
    )

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

import random

import cocotb
import pytest
from compare import assert_same
from rtl_common import (
    cfg_from_env,
    expect_fault,
    issue,
    run_wrapper,
    sim_params,
    start_engine,
    write_port,
)
from rtl_programs import store

from vta.errors import ErrorCode
from vta.isa import MemId

MEM = 1 << 18


def fault_cases(cfg) -> list[tuple]:
    """(instruction, its fault, input held high meanwhile)."""
    eb, depth = cfg.OUT_ELEM_BYTES, cfg.OUT_BUFF_DEPTH
    return [
        (store(0, pop_next_dep=1), ErrorCode.BAD_DEP_FLAG, None),
        (store(0, push_next_dep=1), ErrorCode.BAD_DEP_FLAG, None),
        (store(0, memory_type=MemId.ACC), ErrorCode.BAD_MEMORY_TYPE, None),
        (store(0, y_pad_1=1), ErrorCode.STORE_PAD, None),
        (store(0, x_pad_0=2), ErrorCode.STORE_PAD, None),
        (store(0, 2, sram_base=depth - 1), ErrorCode.SRAM_RANGE, None),
        (store(MEM // eb - 1, 2), ErrorCode.DRAM_RANGE, None),
        (store(0, 0, x_stride=1, push_prev_dep=1), ErrorCode.TOKEN_OVERFLOW, "s2g_full"),
    ]


@cocotb.test()
async def stores(dut):
    cfg = cfg_from_env()
    eb, depth = cfg.OUT_ELEM_BYTES, cfg.OUT_BUFF_DEPTH
    ram, tokens = await start_engine(dut, MEM, stall_seed=8, tokens=("g2s",),
                                     inputs=("run", "halt", "cmd_valid", "s2g_full", "out_we"))
    g2s = tokens["g2s"]
    rng = random.Random(33)
    model = bytearray(rng.getrandbits(8) for _ in range(MEM))
    ram.write(0, bytes(model))
    out = [rng.getrandbits(8 * eb).to_bytes(eb, "little") for _ in range(depth)]
    await write_port(dut, "out", [int.from_bytes(v, "little") for v in out])
    dut.run.value = 1

    for index in range(20):
        x, y = rng.randint(1, 6), rng.randint(1 if index % 6 else 0, 4)
        stride = rng.choice([x, x + rng.randint(1, 3), max(1, x - 2)])
        sram = rng.randint(0, depth - x * y)
        dram = rng.randint(0, MEM // eb - (y + 1) * (stride + x) - 1)
        insn = store(dram, x, y, x_stride=stride, sram_base=sram, pop_prev_dep=rng.randint(0, 1),
                     push_prev_dep=rng.randint(0, 1))
        for r in range(y):
            for c in range(x):
                a = (insn.dram_base + r * stride + c) * eb
                model[a : a + eb] = out[insn.sram_base + r * x + c]
        token = (g2s, rng.randint(3, 12)) if insn.pop_prev_dep else None
        kind, seen = await issue(dut, cfg, insn, index, token=token,
                                 watch=("s2g_push", "out_bytes", "index", "wr_idle"))
        assert kind == "retire", f"instruction {index}: unexpected fault {seen}"
        assert seen["index"] == index and seen["s2g_push"] == insn.push_prev_dep
        assert seen["out_bytes"] == x * y * eb and seen["wr_idle"] == 1
        assert_same(ram.read(0, MEM), bytes(model), f"instruction {index} ({insn}): DRAM", base=0)

    for n, (insn, code, hold) in enumerate(fault_cases(cfg)):
        await expect_fault(dut, cfg, insn, code, 50 + n, idle="wr_idle", hold=hold)
        assert_same(ram.read(0, MEM), bytes(model), f"DRAM after the faulting {insn}", base=0)
    # memory type is not checked on a no-op
    kind, _ = await issue(dut, cfg, store(0, 0, x_stride=1, memory_type=0), 58)
    assert kind == "retire"


@pytest.mark.parametrize(
    "simulator, preset", sim_params(("tiny", "default", "aws"), ("tiny",), slow=("default", "aws"))
)
def test_store(simulator, preset):
    run_wrapper(simulator, preset, "store", MEM)

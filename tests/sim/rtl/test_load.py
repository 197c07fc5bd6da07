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

import random

import cocotb
import pytest
from compare import assert_same
from rtl_common import (
    cfg_from_env,
    expect_fault,
    expected_load,
    issue,
    read_port,
    run_wrapper,
    sim_params,
    start_engine,
)
from rtl_programs import load

from vta.errors import ErrorCode
from vta.isa import MemId

MEM = 1 << 20


def fault_cases(cfg) -> list[tuple]:
    """(instruction, its fault, input held high meanwhile)."""
    return [
        (load(MemId.INP, 0, pop_prev_dep=1, pop_next_dep=1), ErrorCode.BAD_DEP_FLAG, None),
        (load(MemId.WGT, 0, push_prev_dep=1), ErrorCode.BAD_DEP_FLAG, None),
        (load(MemId.INP, 0, 2, sram_base=cfg.INP_BUFF_DEPTH - 3, y_pad_1=1),
         ErrorCode.SRAM_RANGE, None),
        (load(MemId.WGT, MEM // cfg.WGT_ELEM_BYTES - 1, 2), ErrorCode.DRAM_RANGE, None),
        (load(MemId.INP, 0, push_next_dep=1), ErrorCode.TOKEN_OVERFLOW, "l2g_full"),
    ]


@cocotb.test()
async def loads(dut):
    cfg = cfg_from_env()
    ram, tokens = await start_engine(dut, MEM, stall_seed=5, tokens=("g2l",),
                                     inputs=("run", "halt", "cmd_valid", "l2g_full", "inp_raddr",
                                             "wgt_raddr"))
    g2l = tokens["g2l"]
    rng = random.Random(21)
    mem = bytes(rng.getrandbits(8) for _ in range(MEM))
    ram.write(0, mem)
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
        sram = rng.randint(0, depth - xt * yt)
        dram = rng.randint(0, MEM // eb - (y + 1) * (stride + x) - 1)
        insn = load(mt, dram, x, y, x_stride=stride, sram_base=sram, y_pad_0=p[0], y_pad_1=p[1],
                    x_pad_0=p[2], x_pad_1=p[3], pop_next_dep=rng.randint(0, 1),
                    push_next_dep=rng.randint(0, 1))
        token = (g2l, rng.randint(3, 20)) if insn.pop_next_dep else None
        kind, seen = await issue(dut, cfg, insn, index, token=token,
                                 watch=("l2g_push", "inp_bytes", "wgt_bytes", "index"))
        assert kind == "retire", f"instruction {index}: unexpected fault {seen}"
        assert seen["index"] == index and seen["l2g_push"] == insn.push_next_dep
        assert seen[f"{port}_bytes"] == x * y * eb
        want = expected_load(mem, insn, eb)
        got = await read_port(dut, port, insn.sram_base, len(want), eb)
        assert_same(got, want, f"instruction {index} ({insn}): {port.upper()} entries")
    assert g2l.count == 0

    for n, (insn, code, hold) in enumerate(fault_cases(cfg)):
        await expect_fault(dut, cfg, insn, code, 100 + n, hold=hold)


@pytest.mark.parametrize(
    "simulator, preset", sim_params(("tiny", "default", "aws"), ("tiny",), slow=("default", "aws"))
)
def test_load(simulator, preset):
    run_wrapper(simulator, preset, "load", MEM)

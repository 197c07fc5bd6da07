"""vta_gemm: the pipelined BATCH x BLOCK x BLOCK multiply-add array against NumPy.

One operand pair enters per cycle, with random gaps (in_valid low); each
result must appear exactly LATENCY cycles after its operands and hold
through the gaps that follow (the stages load only on valid data).  The
pipelined use of the array inside vta_compute_pipe (one micro-op per cycle,
read-after-write forwarding on ACC) is checked by test_compute.py.
"""

from __future__ import annotations

import cocotb
import numpy as np
import pytest
from cocotb.triggers import ClockCycles, FallingEdge
from rtl_common import build_and_run, cfg_from_env, pack_lanes, sim_params, unpack_lanes

LATENCY = 3


@cocotb.test()
async def dot_products(dut):
    from cocotb.clock import Clock

    cfg = cfg_from_env()
    b, blk = cfg.BATCH, cfg.BLOCK
    rng = np.random.default_rng(3)
    dut.in_valid.value = 0
    cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
    await ClockCycles(dut.clk, 3)
    # expected sum of the pair applied before each rising edge (None: a gap)
    sent: list[list[int] | None] = []
    for trial in range(200 + LATENCY + 1):
        await FallingEdge(dut.clk)
        check(dut, sent, b * blk)
        if trial == 0:
            inp, wgt = np.full((b, blk), -128), np.full((blk, blk), -128)
        elif trial == 1:
            inp, wgt = np.full((b, blk), 127), np.full((blk, blk), -128)
        else:
            inp = rng.integers(-128, 128, size=(b, blk))
            wgt = rng.integers(-128, 128, size=(blk, blk))
        valid = trial < 2 or (trial < 200 and rng.random() < 0.7)
        dut.in_valid.value = int(valid)
        dut.inp.value = pack_lanes(inp.reshape(-1), 8)
        dut.wgt.value = pack_lanes(wgt.reshape(-1), 8)
        want = (inp.astype(np.int64) @ wgt.astype(np.int64).T).reshape(-1).tolist()
        sent.append(want if valid else None)


def check(dut, sent, lanes):
    """Mid-cycle: the newest result out is that of the newest valid pair LATENCY edges old."""
    results = [w for w in sent[: max(0, len(sent) - LATENCY + 1)] if w is not None]
    if not results:
        return
    got = unpack_lanes(int(dut.sum.value), lanes, 32)
    assert got == results[-1], (
        f"{len(sent)} pairs in: expected {results[-1]}, got {got}"
    )


@pytest.mark.parametrize("simulator, preset", sim_params())
def test_gemm(simulator, preset):
    import vta

    cfg = vta.Config.load(preset)
    build_and_run(
        simulator,
        preset,
        "vta_gemm",
        "test_gemm",
        parameters={"LOG_BATCH": cfg.LOG_BATCH, "LOG_BLOCK": cfg.LOG_BLOCK},
    )

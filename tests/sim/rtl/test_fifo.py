"""vta_fifo (the command queues): order, occupancy and full/empty under random stalls.

Built with 8-entry memory so the full case is hit often; the command queues
use the same module with 512 entries.
"""

from __future__ import annotations

import random

import cocotb
import pytest
from cocotb.triggers import FallingEdge, RisingEdge
from rtl_common import build_and_run, sim_params, start_clock_reset

LOG_DEPTH = 3


@cocotb.test()
async def fifo_order(dut):
    dut.in_valid.value = 0
    dut.out_ready.value = 0
    dut.clear.value = 0
    await start_clock_reset(dut)
    rng = random.Random(5)
    sent, model = 0, []
    received = 0
    for cycle in range(4000):
        await FallingEdge(dut.clk)
        assert int(dut.count.value) == len(model), (
            f"cycle {cycle}: count {int(dut.count.value)} vs {len(model)}"
        )
        phase = (cycle // 500) % 3  # producer faster, consumer faster, balanced
        in_valid = rng.random() < (0.9, 0.3, 0.6)[phase]
        out_ready = rng.random() < (0.3, 0.9, 0.6)[phase]
        dut.in_valid.value = in_valid
        dut.in_data.value = sent
        dut.out_ready.value = out_ready
        await RisingEdge(dut.clk)
        if in_valid and int(dut.in_ready.value):
            model.append(sent)
            sent += 1
        if out_ready and int(dut.out_valid.value):
            got = int(dut.out_data.value)
            assert got == model[0], f"expected entry {model[0]}, got {got}"
            model.pop(0)
            received += 1
        assert len(model) <= (1 << LOG_DEPTH) + 1
    assert received > 1000


@pytest.mark.parametrize("simulator, preset", sim_params(("tiny",), ("tiny",)))
def test_fifo(simulator, preset):
    build_and_run(
        simulator,
        preset,
        "vta_fifo",
        "test_fifo",
        parameters={"WIDTH": 160, "LOG_DEPTH": LOG_DEPTH},
    )

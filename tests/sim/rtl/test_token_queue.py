"""vta_token_queue: a counter of capacity TOKEN_QUEUE_DEPTH (512) against a Python model.

Random push/pop traffic (pops only while nonempty, as the engines do), runs up
to the capacity and back, simultaneous push and pop at full and at empty,
and a push at full without a pop (ignored: the producer reports
TOKEN_OVERFLOW itself from `full`).  `clear` empties the queue.
"""

from __future__ import annotations

import random

import cocotb
import pytest
from cocotb.triggers import FallingEdge, RisingEdge
from rtl_common import build_and_run, sim_params, start_clock_reset


@cocotb.test()
async def tokens(dut):
    from vta.config import TOKEN_QUEUE_DEPTH

    depth = TOKEN_QUEUE_DEPTH

    dut.push.value = 0
    dut.pop.value = 0
    dut.clear.value = 0
    await start_clock_reset(dut)
    rng = random.Random(11)
    count = 0

    async def step(push, pop, clear=0):
        nonlocal count
        await FallingEdge(dut.clk)
        assert int(dut.count.value) == count, f"count: expected {count}, got {int(dut.count.value)}"
        assert int(dut.nonempty.value) == (count > 0)
        assert int(dut.full.value) == (count == depth)
        pop = pop and count > 0
        dut.push.value = push
        dut.pop.value = pop
        dut.clear.value = clear
        await RisingEdge(dut.clk)
        if clear:
            count = 0
        else:
            count += (push and (count < depth or pop)) - pop

    # fill to capacity, try one more, push+pop at full, drain
    for _ in range(depth):
        await step(1, 0)
    await step(1, 0)  # push at full without pop: ignored
    await step(1, 1)  # push and pop at full: unchanged
    for _ in range(depth):
        await step(0, 1)
    await step(0, 1)  # pop at empty: nothing
    await step(1, 1)  # push and pop at empty: the pop is not taken
    for _ in range(3000):
        await step(rng.random() < 0.55, rng.random() < 0.5, clear=rng.random() < 0.002)
    await step(0, 0, clear=1)
    await step(0, 0)


@pytest.mark.parametrize("simulator, preset", sim_params(("tiny",), ("tiny",)))
def test_token_queue(simulator, preset):
    from vta.config import TOKEN_QUEUE_DEPTH

    build_and_run(
        simulator,
        preset,
        "vta_token_queue",
        "test_token_queue",
        parameters={"DEPTH": TOKEN_QUEUE_DEPTH},
    )

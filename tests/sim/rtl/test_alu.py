"""vta_alu: every ALU opcode on random and edge-case int32 lanes against NumPy.

MIN/MAX, ADD and SHR are combinational units, each counting only with its enable
(``r`` is zero when none is on); MUL is registered (its result one clock edge
after the operands given with ``mul_en``, zero in other cycles).

SHR follows decision 3 (a total function of the signed shift amount); the
expected values are computed here from that definition, independently of the
golden model's implementation.
"""

from __future__ import annotations

import cocotb
import numpy as np
import pytest
from cocotb.clock import Clock
from cocotb.triggers import FallingEdge, Timer
from rtl_common import build_and_run, cfg_from_env, pack_lanes, sim_params, unpack_lanes

EDGE = [0, 1, -1, 31, 32, 33, -31, -32, -33, 2**31 - 1, -(2**31), 100, -100, 255, -256]


def expected(op: int, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a = a.astype(np.int64)
    b = b.astype(np.int64)
    wrap = lambda v: ((v + 2**31) % 2**32) - 2**31  # noqa: E731
    if op == 0:
        return np.minimum(a, b)
    if op == 1:
        return np.maximum(a, b)
    if op == 2:
        return wrap(a + b)
    if op == 4:
        return wrap(a * b)
    out = np.empty_like(a)
    for n, (x, y) in enumerate(zip(a, b, strict=True)):
        if 0 <= y <= 31:
            out[n] = x >> y
        elif y >= 32:
            out[n] = x >> 31
        elif y >= -31:
            out[n] = wrap(x << -y)
        else:
            out[n] = 0
    return out


@cocotb.test()
async def alu_ops(dut):
    """Every opcode on 60 operand sets, only its unit enabled.

    MIN, MAX, ADD and SHR on ``r`` at once; MUL on ``mul_r`` one clock edge
    after ``mul_en`` (zero the cycle after), ``r`` zero meanwhile.
    """
    cfg = cfg_from_env()
    lanes = cfg.BATCH * cfg.BLOCK_OUT
    rng = np.random.default_rng(7)
    cocotb.start_soon(Clock(dut.clk, 2, unit="ns").start())
    dut.mul_en.value = 0
    await FallingEdge(dut.clk)
    for trial in range(60):
        for op in range(5):
            if trial % 3 == 0:
                a = rng.choice(EDGE, size=lanes)
                b = rng.choice(EDGE, size=lanes)
            elif trial % 3 == 1:
                a = rng.integers(-(2**31), 2**31, size=lanes)
                b = rng.integers(-40, 40, size=lanes)
            else:
                a = rng.integers(-(2**31), 2**31, size=lanes)
                b = rng.integers(-(2**31), 2**31, size=lanes)
            dut.a.value = pack_lanes(a, 32)
            dut.b.value = pack_lanes(b, 32)
            dut.mm_on.value = int(op in (0, 1))
            dut.max.value = int(op == 1)
            dut.add_on.value = int(op == 2)
            dut.shr_on.value = int(op == 3)
            dut.mul_en.value = int(op == 4)
            want = expected(op, a, b).tolist()
            if op == 4:
                before = str(dut.mul_r.value)  # X before the first MUL on Icarus
                await Timer(1, unit="ps")
                # registered: nothing changes before the clock edge
                assert str(dut.mul_r.value) == before, "MUL result before the clock edge"
                await FallingEdge(dut.clk)
                dut.mul_en.value = 0
                # the next operands do not change the result without mul_en
                dut.a.value = pack_lanes(b, 32)
                await Timer(1, unit="ps")
                got = unpack_lanes(int(dut.mul_r.value), lanes, 32)
                assert int(dut.r.value) == 0, "a unit's result reaches r without its enable"
                await FallingEdge(dut.clk)
                assert int(dut.mul_r.value) == 0, "a product without mul_en the cycle before"
            else:
                await Timer(1, unit="ps")
                got = unpack_lanes(int(dut.r.value), lanes, 32)
            assert got == want, (
                f"op {op}: a={a.tolist()} b={b.tolist()}: expected {want}, got {got}"
            )


@pytest.mark.parametrize("simulator, preset", sim_params())
def test_alu(simulator, preset):
    import vta

    cfg = vta.Config.load(preset)
    build_and_run(
        simulator, preset, "vta_alu", "test_alu", parameters={"LANES": cfg.BATCH * cfg.BLOCK_OUT}
    )

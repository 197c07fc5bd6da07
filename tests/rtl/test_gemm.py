"""vta_gemm: the BATCH x BLOCK x BLOCK multiply-add array against NumPy (out = inp . wgt^T).

The pipelined use of the array inside vta_compute (one micro-op per cycle,
read-after-write forwarding on ACC) is checked by test_compute.py.
"""

from __future__ import annotations

import cocotb
import numpy as np
import pytest
from cocotb.triggers import Timer
from rtl_common import build_and_run, cfg_from_env, pack_lanes, sim_params, unpack_lanes


@cocotb.test()
async def dot_products(dut):
    cfg = cfg_from_env()
    b, blk = cfg.BATCH, cfg.BLOCK
    rng = np.random.default_rng(3)
    for trial in range(100):
        if trial == 0:
            inp = np.full((b, blk), -128)
            wgt = np.full((blk, blk), -128)
        elif trial == 1:
            inp = np.full((b, blk), 127)
            wgt = np.full((blk, blk), -128)
        else:
            inp = rng.integers(-128, 128, size=(b, blk))
            wgt = rng.integers(-128, 128, size=(blk, blk))
        dut.inp.value = pack_lanes(inp.reshape(-1), 8)
        dut.wgt.value = pack_lanes(wgt.reshape(-1), 8)
        await Timer(1, unit="ns")
        got = unpack_lanes(int(dut.sum.value), b * blk, 32)
        want = (inp.astype(np.int64) @ wgt.astype(np.int64).T).reshape(-1).tolist()
        assert got == want, f"trial {trial}: expected {want}, got {got}"


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

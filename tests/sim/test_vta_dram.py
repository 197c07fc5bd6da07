"""vta_dram (sim/vta_dram.v) against cocotbext-axi's independent AXI4 master.

The cocotb testbench and its pytest runner live in this one file.  The DRAM
model is driven by cocotbext-axi's ``AxiMaster`` (not by our own design), with
random bursts of every size, unaligned starts and narrow strobes, under
latency and random-stall settings, and checked against a Python byte array.
The backdoor ($readmemh / $writememh through a file) is checked both ways
against AXI traffic, and its throughput is measured.
"""

from __future__ import annotations

import os
import random
import time
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
LOG_MEM_BYTES = 20

# ------------------------------------------------------------------ testbench
try:
    import cocotb
    from cocotb.clock import Clock
    from cocotb.triggers import ReadOnly, RisingEdge, with_timeout
except ImportError:  # pragma: no cover - the runner below skips
    cocotb = None

if cocotb is not None:

    async def _setup(dut):
        from cocotbext.axi import AxiBus, AxiMaster

        Clock(dut.clk, 10, unit="ns").start()
        dut.rst.value = 1
        dut.bd_req.value = 0
        dut.bd_op.value = 0
        dut.bd_word.value = 0
        dut.bd_count.value = 0
        for _ in range(4):
            await RisingEdge(dut.clk)
        dut.rst.value = 0
        await RisingEdge(dut.clk)
        return AxiMaster(AxiBus.from_prefix(dut, "s_axi"), dut.clk, dut.rst)

    async def _backdoor(dut, op: int, word: int, count: int) -> None:
        dut.bd_op.value = op
        dut.bd_word.value = word
        dut.bd_count.value = count
        req = (int(dut.bd_ack.value) + 1) & 0xFF
        dut.bd_req.value = req
        while True:
            await RisingEdge(dut.clk)
            await ReadOnly()
            if int(dut.bd_ack.value) == req:
                break
        await RisingEdge(dut.clk)

    def _bd_file() -> Path:
        return Path(os.environ["DRAM_TEST_BD_FILE"])

    async def bd_write(dut, wbytes: int, word: int, data: bytes) -> None:
        n = len(data) // wbytes
        words = [data[i * wbytes:(i + 1) * wbytes][::-1].hex() for i in range(n)]
        _bd_file().write_text("\n".join(words) + "\n")
        await _backdoor(dut, 1, word, n)

    async def bd_read(dut, wbytes: int, word: int, count: int) -> bytes:
        await _backdoor(dut, 2, word, count)
        out = bytearray()
        for line in _bd_file().read_text().splitlines():
            line = line.strip()
            if not line or line.startswith(("//", "@")):
                continue
            out += bytes.fromhex(line.lower().replace("x", "0").replace("z", "0"))[::-1]
        return bytes(out)

    @cocotb.test()
    async def random_bursts(dut):
        """Random AXI writes and reads (all sizes, unaligned) against a byte-array model."""
        axi = await _setup(dut)
        wbytes = len(dut.s_axi_wstrb)
        rng = random.Random(int(os.environ.get("DRAM_TEST_SEED", "1")))
        span = 1 << 16
        model = bytearray(span)
        for _ in range(60):
            addr = rng.randrange(0, span - 1024)
            length = rng.choice([1, 3, wbytes, 2 * wbytes + 5, rng.randrange(1, 1024)])
            if rng.random() < 0.5:
                data = bytes(rng.randrange(256) for _ in range(length))
                size = rng.choice([None, 0]) if length < 16 else None
                await with_timeout(axi.write(addr, data, size=size), 100, "us")
                model[addr:addr + length] = data
            else:
                got = (await with_timeout(axi.read(addr, length), 100, "us")).data
                assert got == bytes(model[addr:addr + length]), \
                    f"read 0x{addr:x}+{length}: expected {model[addr:addr + length].hex()}, " \
                    f"got {got.hex()}"
        # everything once more, in one pass
        got = (await axi.read(0, span)).data
        assert got == bytes(model), "final sweep differs"
        assert int(dut.protocol_errors.value) == 0

    @cocotb.test()
    async def backdoor_both_ways(dut):
        """Backdoor writes are seen by AXI reads; AXI writes are seen by backdoor reads."""
        axi = await _setup(dut)
        wbytes = len(dut.s_axi_wstrb)
        rng = random.Random(2)
        data = bytes(rng.randrange(256) for _ in range(64 * wbytes))
        await bd_write(dut, wbytes, 8, data)
        got = (await axi.read(8 * wbytes, len(data))).data
        assert got == data
        payload = bytes(rng.randrange(256) for _ in range(5 * wbytes + 3))
        await axi.write(100 * wbytes + 1, payload)
        back = await bd_read(dut, wbytes, 100, 7)
        assert back[1:1 + len(payload)] == payload
        assert back[0] == 0, "never-written memory must read as zero"
        # throughput of the backdoor, reported in the log
        big = bytes(rng.randrange(256) for _ in range(1 << 18))
        start = time.perf_counter()
        await bd_write(dut, wbytes, 0, big)
        mid = time.perf_counter()
        again = await bd_read(dut, wbytes, 0, len(big) // wbytes)
        end = time.perf_counter()
        assert again == big
        dut._log.info("backdoor: write %.1f MB/s, read %.1f MB/s (naive Python hex codec)",
                      len(big) / (mid - start) / 1e6, len(big) / (end - mid) / 1e6)

    @cocotb.test()
    async def out_of_range_decerr(dut):
        """Accesses beyond the memory answer DECERR; reads return zeros."""
        from cocotbext.axi import AxiResp

        axi = await _setup(dut)
        top = 1 << LOG_MEM_BYTES
        resp = await axi.write(top, b"\x55" * 16)
        assert resp.resp == AxiResp.DECERR
        rd = await axi.read(top, 16)
        assert rd.resp == AxiResp.DECERR and rd.data == bytes(16)
        ok = await axi.read(top - 16, 16)
        assert ok.resp == AxiResp.OKAY


# -------------------------------------------------------------------- runner
SIMS = ["icarus", "verilator"]
CASES = [  # (data width, read latency, write latency, stall /256)
    (64, 0, 0, 0),
    (64, 7, 3, 96),
    (512, 2, 2, 64),
]


@pytest.mark.parametrize("sim", SIMS)
@pytest.mark.parametrize("width,rlat,wlat,stall", CASES)
def test_vta_dram(sim, width, rlat, wlat, stall, tmp_path):
    pytest.importorskip("cocotb")
    pytest.importorskip("cocotbext.axi")
    from vta.sim import build as simbuild

    try:
        simbuild.simulator_version(sim)
    except simbuild.SimulatorError as exc:
        pytest.skip(str(exc))
    b = simbuild.build(sim, "vta_dram", [simbuild.sim_dir() / "vta_dram.v"],
                       parameters={"DATA_WIDTH": width, "LOG_MEM_BYTES": LOG_MEM_BYTES})
    bd = tmp_path / "bd.hex"
    simbuild.run(b, "test_vta_dram", test_dir=tmp_path, python_path=[HERE],
                 plusargs=[f"+DRAM_RLAT={rlat}", f"+DRAM_WLAT={wlat}", f"+DRAM_STALL={stall}",
                           f"+DRAM_BD_FILE={bd}"],
                 extra_env={"DRAM_TEST_BD_FILE": str(bd), "DRAM_TEST_SEED": str(rlat + stall)})

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

import needs
import pytest

HERE = Path(__file__).resolve().parent
LOG_MEM_BYTES = 20

# ------------------------------------------------------------------ testbench
try:
    import cocotb
    from cocotb.clock import Clock
    from cocotb.triggers import FallingEdge, ReadOnly, RisingEdge, with_timeout
except ImportError:  # pragma: no cover - the runner below skips
    cocotb = None

if cocotb is not None:

    async def _setup(dut, master: bool = True):
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
        return AxiMaster(AxiBus.from_prefix(dut, "s_axi"), dut.clk, dut.rst) if master else None

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


    @cocotb.test()
    async def error_window_slverr(dut):
        """+DRAM_ERR_ADDR/BYTES: beats in the window answer SLVERR; reads 0, writes dropped."""
        from cocotbext.axi import AxiResp

        axi = await _setup(dut)
        lo = int(os.environ["DRAM_TEST_ERR_ADDR"])
        await axi.write(lo - 16, b"\x11" * 16)
        assert (await axi.write(lo, b"\x22" * 16)).resp == AxiResp.SLVERR
        before = await axi.read(lo - 16, 16)
        assert before.resp == AxiResp.OKAY and before.data == b"\x11" * 16
        inside = await axi.read(lo, 16)
        assert inside.resp == AxiResp.SLVERR and inside.data == bytes(16)
        wbytes = len(dut.s_axi_wstrb)
        assert (await bd_read(dut, wbytes, lo // wbytes, 1)) == bytes(wbytes), "write not dropped"
        assert int(dut.protocol_errors.value) == 0

    async def _send(dut, ch: str, **payload):
        """From a falling edge: show a request on ``ch`` until its handshake, then drop VALID."""
        for name, value in payload.items():
            getattr(dut, f"s_axi_{ch}{name}").value = value
        getattr(dut, f"s_axi_{ch}valid").value = 1
        while True:
            ready = int(getattr(dut, f"s_axi_{ch}ready").value)  # for the coming edge
            await RisingEdge(dut.clk)
            await FallingEdge(dut.clk)
            if ready:
                break
        getattr(dut, f"s_axi_{ch}valid").value = 0

    @cocotb.test()
    async def master_rules(dut):
        """VALID dropped or payload changed before READY, on AR, AW and W, is counted."""
        await _setup(dut, master=False)
        for sig in ("arvalid", "awvalid", "wvalid", "rready", "bready"):
            getattr(dut, f"s_axi_{sig}").value = 0
        for ch in ("ar", "aw"):
            getattr(dut, f"s_axi_{ch}len").value = 0
            getattr(dut, f"s_axi_{ch}size").value = 3
            getattr(dut, f"s_axi_{ch}burst").value = 1
            getattr(dut, f"s_axi_{ch}id").value = 0
        dut.s_axi_wstrb.value = 0
        dut.s_axi_wlast.value = 1
        dut.s_axi_wdata.value = 0

        async def cycles(n):
            """Wait n rising edges; protocol_errors after them (returns at the falling edge)."""
            for _ in range(n):
                await RisingEdge(dut.clk)
            await ReadOnly()
            value = int(dut.protocol_errors.value)
            await FallingEdge(dut.clk)
            return value

        async def waiting(ch, change):
            """Show a request that cannot be taken, hold it, then break the rule."""
            getattr(dut, f"s_axi_{ch}valid").value = 1
            before = await cycles(3)
            assert not int(getattr(dut, f"s_axi_{ch}ready").value), f"{ch} was taken"
            change()
            after = await cycles(2)
            assert after == before + 1, f"{ch}: protocol_errors {before} -> {after}"
            getattr(dut, f"s_axi_{ch}valid").value = 0  # dropped while waiting
            dropped = await cycles(2)
            assert dropped == after + 1, f"{ch} VALID drop: protocol_errors {after} -> {dropped}"

        assert await cycles(1) == 0
        # AR: one request fills +DRAM_OUTSTANDING=1 (long latency, RREADY low); the next waits
        await _send(dut, "ar", addr=0)
        dut.s_axi_araddr.value = 64
        await waiting("ar", lambda: setattr(dut.s_axi_araddr, "value", 128))
        # W before any AW: WREADY stays low
        dut.s_axi_wdata.value = 1
        await waiting("w", lambda: setattr(dut.s_axi_wdata, "value", 2))
        # AW: one moves to the write slot, one fills the limit (no W beats); the next waits
        await _send(dut, "aw", addr=0)
        await _send(dut, "aw", addr=64)
        dut.s_axi_awaddr.value = 128
        await waiting("aw", lambda: setattr(dut.s_axi_awid, "value", 1))


    @cocotb.test()
    async def reordered_reads(dut):
        """+DRAM_REORDER=1: bursts of different IDs overtake each other, data stays exact."""
        axi = await _setup(dut)
        rng = random.Random(5)
        data = bytes(rng.randrange(256) for _ in range(8192))
        await axi.write(0, data)
        order, issued = [], []

        async def watch():
            while True:
                await RisingEdge(dut.clk)
                if int(dut.s_axi_arvalid.value) and int(dut.s_axi_arready.value):
                    issued.append(int(dut.s_axi_arid.value))
                if (int(dut.s_axi_rvalid.value) and int(dut.s_axi_rready.value)
                        and int(dut.s_axi_rlast.value)):
                    order.append(int(dut.s_axi_rid.value))

        cocotb.start_soon(watch())
        reads = [(rng.randrange(0, 8000), rng.randrange(1, 64)) for _ in range(40)]
        tasks = [cocotb.start_soon(axi.read(a, n)) for a, n in reads]
        for (a, n), t in zip(reads, tasks, strict=True):
            assert (await t).data == data[a:a + n], f"read 0x{a:x}+{n}"
        assert order != issued, "no burst was answered out of request order"
        assert int(dut.protocol_errors.value) == 0


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

    needs.simulator(sim)
    _run(sim, width, tmp_path, "random_bursts,backdoor_both_ways,out_of_range_decerr,"
         "error_window_slverr", [f"+DRAM_RLAT={rlat}", f"+DRAM_WLAT={wlat}",
                                 f"+DRAM_STALL={stall}"], seed=rlat + stall)


ERR_ADDR = 0x80000


def _run(sim, width, tmp_path, tests, plusargs, seed=1):
    pytest.importorskip("cocotb")
    pytest.importorskip("cocotbext.axi")
    from vta.hdltools import build as simbuild

    needs.simulator(sim)
    b = simbuild.build(sim, "vta_dram", [simbuild.sim_dir() / "vta_dram.v"],
                       parameters={"DATA_WIDTH": width, "LOG_MEM_BYTES": LOG_MEM_BYTES})
    bd = tmp_path / "bd.hex"
    simbuild.run(b, "test_vta_dram", test_dir=tmp_path, python_path=[HERE], testcase=tests,
                 plusargs=[*plusargs, f"+DRAM_BD_FILE={bd}", f"+DRAM_ERR_ADDR={ERR_ADDR}",
                           "+DRAM_ERR_BYTES=4096"],
                 extra_env={"DRAM_TEST_BD_FILE": str(bd), "DRAM_TEST_SEED": str(seed),
                            "DRAM_TEST_ERR_ADDR": str(ERR_ADDR)})


@pytest.mark.parametrize("sim", SIMS)
def test_vta_dram_checks_the_master(sim, tmp_path):
    """Stability checks (+DRAM_OUTSTANDING=1 makes requests wait) and reordered responses."""
    _run(sim, 64, tmp_path, "master_rules", ["+DRAM_RLAT=200", "+DRAM_OUTSTANDING=1"])
    _run(sim, 64, tmp_path, "reordered_reads", ["+DRAM_RLAT=20", "+DRAM_REORDER=1"])

"""The DMA layer (vta_dma_rd + vta_dma_rd_port + vta_dma_wr) against cocotbext-axi's AxiRam.

AxiRam is an independent AXI4 slave model; it stalls every channel at random
(idle cycles and backpressure), and the element consumers and the write-data
producer stall at random too.  Two element streams run concurrently, one with
elements narrower than the bus and one wider, over requests that start and
end mid-beat, cross 4 KiB pages and exceed 256 beats.  Checked: every element
equals the RAM bytes at its address, every write lands exactly under its
strobes, and every burst on AR/AW is INCR, full-width, at most 256 beats and
inside one 4 KiB page.  A second test halts reads in flight (see ``dma_halt``).
"""

from __future__ import annotations

import os
import random

import cocotb
import pytest
from cocotb.triggers import ClockCycles, FallingEdge, RisingEdge
from compare import assert_same
from rtl_common import (
    WRAPPERS,
    build_and_run,
    handshake,
    random_pause,
    sim_params,
    start_engine,
)

MEM = 1 << 18


def _bus(preset):
    import vta

    return vta.Config.load(preset).LOG_BUS_WIDTH


async def burst_monitor(dut, prefix, log_bus_bytes, errors):
    ch = {
        n: getattr(dut, f"m_axi_{prefix}{n}")
        for n in ("valid", "ready", "addr", "len", "size", "burst")
    }
    while True:
        await RisingEdge(dut.clk)
        if int(ch["valid"].value) and int(ch["ready"].value):
            addr, beats = int(ch["addr"].value), int(ch["len"].value) + 1
            if (
                int(ch["burst"].value) != 1
                or int(ch["size"].value) != log_bus_bytes
                or addr % (1 << log_bus_bytes)
                or addr % 4096 + (beats << log_bus_bytes) > 4096
            ):
                errors.append(f"{prefix} burst addr 0x{addr:x} beats {beats}")


async def read_stream(dut, port, log_e, reqs, ram_bytes, rng, errors):
    pending = []

    async def issue():
        for addr, n in reqs:
            while rng.random() < 0.3:
                await FallingEdge(dut.clk)
            await handshake(dut, f"{port}_req_valid", f"{port}_req_ready",
                            **{f"{port}_req_addr": addr, f"{port}_req_n": n})
            pending.extend(
                ram_bytes[addr + i * (1 << log_e) : addr + (i + 1) * (1 << log_e)] for i in range(n)
            )

    cocotb.start_soon(issue())
    total = sum(n for _, n in reqs)
    got = 0
    ready = getattr(dut, f"{port}_elem_ready")
    while got < total:
        await FallingEdge(dut.clk)
        ready.value = int(rng.random() < 0.7)
        await RisingEdge(dut.clk)
        if int(ready.value) and int(getattr(dut, f"{port}_elem_valid").value):
            data = int(getattr(dut, f"{port}_elem_data").value).to_bytes(1 << log_e, "little")
            want = pending[got]
            if data != want:
                errors.append(f"{port} element {got}: expected {want.hex()} got {data.hex()}")
                return
            got += 1


async def start_with_ram(dut, rng, stall_seed):
    """Inputs idle, an AxiRam of random bytes stalling every channel at random, reset done."""
    ram, _ = await start_engine(dut, MEM, stall_seed,
                                inputs=("halt", "p0_req_valid", "p1_req_valid", "p0_elem_ready",
                                        "p1_elem_ready", "wr_req_valid", "wr_valid"))
    init = bytes(rng.getrandbits(8) for _ in range(MEM))
    ram.write(0, init)
    return ram, init


@cocotb.test()
async def dma(dut):
    log_bb = int(os.environ["VTA_LOG_BUS"]) - 3
    log_e = (int(os.environ["VTA_LOG_E0"]), int(os.environ["VTA_LOG_E1"]))
    rng = random.Random(9)
    ram, init = await start_with_ram(dut, rng, stall_seed=3)
    errors = []
    cocotb.start_soon(burst_monitor(dut, "ar", log_bb, errors))
    cocotb.start_soon(burst_monitor(dut, "aw", log_bb, errors))

    # reads: two concurrent streams
    def requests(le, count):
        out = [(4096 - (3 << le), 7), ((1 << 16) - (1 << le), 1)]  # page crossings
        out.append((8192, (300 << log_bb) >> le if le < log_bb else 300))  # > 256 beats
        for _ in range(count):
            n = rng.randint(1, 40)
            out.append((rng.randrange(0, (MEM >> le) - n) << le, n))
        return out

    r0 = cocotb.start_soon(
        read_stream(dut, "p0", log_e[0], requests(log_e[0], 12), init, random.Random(1), errors)
    )
    r1 = cocotb.start_soon(
        read_stream(dut, "p1", log_e[1], requests(log_e[1], 8), init, random.Random(2), errors)
    )
    await r0
    await r1
    assert not errors, errors[:5]

    # writes with random strobes
    model = bytearray(init)
    bb = 1 << log_bb
    # page crossing, > 256 beats, ending exactly at a page end, exactly 256 beats
    wreqs = [(4096 - 2 * bb, 5), (12288, 300), (8192 - 3 * bb, 3), (16384, 256)] + [
        (rng.randrange(0, MEM // bb - 40) * bb, rng.randint(1, 40)) for _ in range(10)
    ]
    beats = []
    for addr, n in wreqs:
        for i in range(n):
            data = rng.getrandbits(8 * bb)
            strb = rng.getrandbits(bb)
            beats.append((data, strb))
            for j in range(bb):
                if strb >> j & 1:
                    model[addr + i * bb + j] = (data >> (8 * j)) & 0xFF

    async def issue_writes():
        for addr, n in wreqs:
            await handshake(dut, "wr_req_valid", "wr_req_ready", wr_req_addr=addr, wr_req_beats=n)

    cocotb.start_soon(issue_writes())
    sent = 0
    pause = random_pause(4, 0.4)
    while sent < len(beats):
        await FallingEdge(dut.clk)
        valid = not next(pause)
        dut.wr_valid.value = int(valid)
        dut.wr_data.value, dut.wr_strb.value = beats[sent]
        await RisingEdge(dut.clk)
        if valid and int(dut.wr_ready.value):
            sent += 1
    await FallingEdge(dut.clk)
    dut.wr_valid.value = 0
    for _ in range(2000):
        await RisingEdge(dut.clk)
        if int(dut.wr_idle.value) and int(dut.rd_idle.value):
            break
    assert int(dut.wr_idle.value), "write responses did not all return"
    assert_same(ram.read(0, MEM), bytes(model), "DRAM after the writes", base=0)
    assert not errors, errors[:5]
    await ClockCycles(dut.clk, 2)


@cocotb.test()
async def dma_halt(dut):
    """A halt with long reads in flight on both streams, AR and R stalled at random.

    Checked: the elements handed over before the halt are the right ones; none is
    handed over after the halt's first cycle; the engine drains every beat still
    owed (``rd_idle``) while halted; and after the halt is released, new reads on
    both streams get exactly their own data, none of the stopped reads' beats.
    """
    log_bb = int(os.environ["VTA_LOG_BUS"]) - 3
    log_e = (int(os.environ["VTA_LOG_E0"]), int(os.environ["VTA_LOG_E1"]))
    rng = random.Random(11)
    _, init = await start_with_ram(dut, rng, stall_seed=5)

    ports = ("p0", "p1")
    streams = list(zip(ports, log_e, strict=True))
    # 640 beats each: several bursts per stream still owed when the halt comes
    reqs = {port: (0x4000 * (i + 1), (640 << log_bb) >> le) for i, (port, le) in enumerate(streams)}
    await FallingEdge(dut.clk)
    for port in ports:
        addr, n = reqs[port]
        getattr(dut, f"{port}_req_valid").value = 1
        getattr(dut, f"{port}_req_addr").value = addr
        getattr(dut, f"{port}_req_n").value = n
    taken = set()
    while len(taken) < 2:
        await RisingEdge(dut.clk)
        for port in ports:
            if int(getattr(dut, f"{port}_req_ready").value):
                taken.add(port)
        await FallingEdge(dut.clk)
        for port in taken:
            getattr(dut, f"{port}_req_valid").value = 0

    got = {port: 0 for port in ports}
    after_first = {port: 0 for port in ports}  # elements handed over after the halt's first cycle
    halt_edges = 0
    for _ in range(5000):
        await FallingEdge(dut.clk)
        if got["p0"] >= 16 and got["p1"] >= 2:
            dut.halt.value = 1
        for port in ports:
            getattr(dut, f"{port}_elem_ready").value = int(rng.random() < 0.7)
        await RisingEdge(dut.clk)
        halted = int(dut.halt.value)
        halt_edges += halted
        for port, le in streams:
            if int(getattr(dut, f"{port}_elem_ready").value) and int(
                getattr(dut, f"{port}_elem_valid").value
            ):
                addr = reqs[port][0] + (got[port] << le)
                want = init[addr : addr + (1 << le)]
                data = int(getattr(dut, f"{port}_elem_data").value).to_bytes(1 << le, "little")
                assert data == want, f"{port} element {got[port]} before the halt is wrong"
                got[port] += 1
                if halt_edges > 1:
                    after_first[port] += 1
        if halted and int(dut.rd_idle.value):
            break
    else:
        raise AssertionError(f"rd_idle stayed low for {halt_edges} halted cycles: beats still owed")
    assert got["p0"] < reqs["p0"][1] and got["p1"] < reqs["p1"][1], (
        f"the halt came after the reads ended ({got}): the test stops nothing"
    )
    assert after_first == {"p0": 0, "p1": 0}, f"elements handed over while halted: {after_first}"

    await FallingEdge(dut.clk)
    dut.halt.value = 0
    for port in ports:
        getattr(dut, f"{port}_elem_ready").value = 0
    errors = []
    fresh = []
    for i, (port, le) in enumerate(streams):
        small = [(0x30000 + (i << 12), 5), (rng.randrange(0, (MEM >> le) - 40) << le, 37)]
        stream = read_stream(dut, port, le, small, init, random.Random(20 + i), errors)
        fresh.append(cocotb.start_soon(stream))
    for task in fresh:
        await task
    assert not errors, errors[:5]


@pytest.mark.parametrize(
    "simulator, preset", sim_params(("tiny", "default", "aws"), ("tiny",), slow=("default", "aws"))
)
def test_dma(simulator, preset):
    log_bus = _bus(preset)
    log_bb = log_bus - 3
    e0, e1 = max(2, log_bb - 1), log_bb + 2
    build_and_run(
        simulator,
        preset,
        "tb_dma",
        "test_dma",
        sources=[WRAPPERS / "tb_dma.v"],
        parameters={"LOG_BUS_WIDTH": log_bus, "LOG_E0": e0, "LOG_E1": e1},
        extra_env={"VTA_LOG_BUS": str(log_bus), "VTA_LOG_E0": str(e0), "VTA_LOG_E1": str(e1)},
    )

"""Fairness of the DMA read arbiter (vta_dma_rd): no client starves.

Three clients on one read engine.  The AR channel is the bottleneck (the
slave takes an address only every fourth cycle, as a busy interconnect
would) while read data comes back at once, so clients 0 and 1, each
streaming one-beat requests back to back, have a burst ready at every
address slot.  Client 2 asks for one beat in the middle of that.

Round robin bounds its wait: from the cycle its request is taken, the
bursts of other clients that go out before its own are at most the one in
the AR register (or the one on the channel that cycle), one more loaded in
the two cycles its burst takes to be ready, and one of each other client
(N - 1): N + 1 in all.  A
fixed-priority arbiter (or one that forgets whom it served last) serves
client 0 or 1 at every slot and client 2 only when both streams are over:
the bound fails by dozens of bursts.  Every client also gets exactly its
beats, in order, each with the data of its address.
"""

from __future__ import annotations

import itertools

import cocotb
import pytest
from cocotb.triggers import FallingEdge, ReadOnly, RisingEdge
from rtl_common import build_and_run, start_clock_reset

N = 3
ADDR_W = 32
BEATS_W = 48
AR_PERIOD = 4  # the slave takes an address every AR_PERIOD cycles
STREAM = 40  # one-beat requests each of clients 0 and 1 stream


def beat_data(addr: int, log_bus_bytes: int) -> int:
    """What the slave returns for the beat at ``addr`` (distinct per address)."""
    word = addr >> log_bus_bytes
    return (word * 0x9E3779B1 + 0x1234567) & ((8 << log_bus_bytes) - 1)


@cocotb.test()
async def arbiter_fairness(dut):
    import os

    log_bus = int(os.environ["VTA_LOG_BUS"])
    lbb = log_bus - 3
    dut.halt.value = 0
    dut.req_valid.value = 0
    dut.req_addr.value = 0
    dut.req_beats.value = 0
    dut.rd_ready.value = (1 << N) - 1
    dut.m_axi_arready.value = 0
    dut.m_axi_rvalid.value = 0
    dut.m_axi_rid.value = 0
    dut.m_axi_rdata.value = 0
    dut.m_axi_rresp.value = 0
    dut.m_axi_rlast.value = 0
    await start_clock_reset(dut)

    # per client: its requests (byte address, beats); the cycle each is taken
    reqs = {
        0: [(0x10000 + (i << lbb), 1) for i in range(STREAM)],
        1: [(0x20000 + (i << lbb), 1) for i in range(STREAM)],
        2: [(0x30000, 1)],
    }
    start_at = {0: 0, 1: 0, 2: 12}  # client 2 asks once the streams run
    # every clock edge's handshakes, in order: ("take", client) and ("ar", id)
    events: list[tuple[str, int]] = []
    got: dict[int, list[int]] = {c: [] for c in range(N)}
    cycle = 0

    async def monitor():
        nonlocal cycle
        while True:
            await RisingEdge(dut.clk)
            cycle += 1
            valid, ready = int(dut.req_valid.value), int(dut.req_ready.value)
            events.extend(("take", c) for c in range(N) if valid >> c & ready >> c & 1)
            if int(dut.m_axi_arvalid.value) and int(dut.m_axi_arready.value):
                events.append(("ar", int(dut.m_axi_arid.value)))

    async def requesters():
        nxt = {c: 0 for c in range(N)}
        while True:
            await FallingEdge(dut.clk)
            valid = addr = beats = 0
            for c in range(N):
                if cycle >= start_at[c] and nxt[c] < len(reqs[c]):
                    a, n = reqs[c][nxt[c]]
                    valid |= 1 << c
                    addr |= a << (c * ADDR_W)
                    beats |= n << (c * BEATS_W)
            dut.req_valid.value = valid
            dut.req_addr.value = addr
            dut.req_beats.value = beats
            await RisingEdge(dut.clk)
            ready = int(dut.req_ready.value)
            for c in range(N):
                if valid >> c & ready >> c & 1:
                    nxt[c] += 1

    async def slave():
        pending: list[tuple[int, int, int]] = []  # (id, addr, beats left)
        while True:
            await FallingEdge(dut.clk)
            dut.m_axi_arready.value = int(cycle % AR_PERIOD == 0)
            if pending:
                rid, a, left = pending[0]
                dut.m_axi_rvalid.value = 1
                dut.m_axi_rid.value = rid
                dut.m_axi_rdata.value = beat_data(a, lbb)
                dut.m_axi_rlast.value = int(left == 1)
            else:
                dut.m_axi_rvalid.value = 0
            await RisingEdge(dut.clk)
            if int(dut.m_axi_arvalid.value) and int(dut.m_axi_arready.value):
                a, n = int(dut.m_axi_araddr.value), int(dut.m_axi_arlen.value) + 1
                pending.append((int(dut.m_axi_arid.value), a, n))
            if pending and int(dut.m_axi_rvalid.value) and int(dut.m_axi_rready.value):
                rid, a, left = pending[0]
                pending[0] = (rid, a + (1 << lbb), left - 1)
                if left == 1:
                    pending.pop(0)

    async def clients():
        while True:
            await RisingEdge(dut.clk)
            await ReadOnly()
            valid = int(dut.rd_valid.value)
            for c in range(N):
                if valid >> c & 1:
                    got[c].append(int(dut.rd_data.value))

    for co in (monitor(), requesters(), slave(), clients()):
        cocotb.start_soon(co)
    total = sum(len(r) for r in reqs.values())
    for _ in range(40 * total):
        await RisingEdge(dut.clk)
        if sum(len(g) for g in got.values()) == total:
            break

    for c in range(N):
        want = [beat_data(a, lbb) for a, n in reqs[c] for _ in range(n)]
        assert got[c] == want, f"client {c}: {len(got[c])} beats, expected {len(want)} in order"
    # client 2's wait, in bursts of the others on AR from the edge its request was taken
    t2 = events.index(("take", 2))
    own = events.index(("ar", 2))
    others = sum(1 for kind, rid in events[t2:own] if kind == "ar")
    assert others <= N + 1, (
        f"client 2 waited {others} bursts of other clients (round robin allows {N + 1}): starved"
    )
    # and the streams alternate: neither gets two slots in a row while both have bursts ready
    seq = [rid for kind, rid in events if kind == "ar" and rid != 2]
    run = max(len(list(g)) for _, g in itertools.groupby(seq[: 2 * STREAM - 4]))
    assert run <= 1, f"clients 0 and 1 not served in turn: {seq[:24]}"


# Icarus builds this one module in a second; the Verilator build (about a minute) is slow-only
@pytest.mark.parametrize(
    "simulator, preset",
    [pytest.param("icarus", "tiny", id="icarus-tiny"),
     pytest.param("verilator", "tiny", id="verilator-tiny", marks=pytest.mark.slow)],
)
def test_dma_arbiter(simulator, preset):
    import vta

    log_bus = vta.Config.load(preset).LOG_BUS_WIDTH
    build_and_run(
        simulator,
        preset,
        "vta_dma_rd",
        "test_dma_arbiter",
        parameters={
            "N": N,
            "ADDR_WIDTH": ADDR_W,
            "ID_WIDTH": 4,
            "LOG_BUS_WIDTH": log_bus,
            "BEATS_WIDTH": BEATS_W,
        },
        extra_env={"VTA_LOG_BUS": str(log_bus)},
    )

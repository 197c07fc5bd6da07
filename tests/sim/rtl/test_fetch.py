"""vta_fetch: stream read and dispatch (vta-reference 3.8) into the three command queues.

A random stream of every opcode / memory-type combination (plus raw random
bits in the other fields) is read from cocotbext-axi's AxiRam with random
stalls; the queue consumers stall at random, and for a while one consumer
stops entirely so its queue fills (fetch must keep the shared read channel
free and resume).  Each queue must receive exactly its instructions, in
order, tagged with their stream index; isa.dispatch_engine is the
reference.  Faults: undefined opcode (BAD_OPCODE at its index, nothing after
it dispatched) and a stream beyond MEM_SIZE (DRAM_RANGE, index 0xFFFFFFFF).
"""

from __future__ import annotations

import random

import cocotb
import pytest
from cocotb.triggers import ClockCycles, FallingEdge, RisingEdge
from compare import assert_same
from rtl_common import cfg_from_env, run_wrapper, sim_params, start_engine, wait_high

MEM = 1 << 18


def random_insn(rng, cfg, bad_ok=False):
    from vta.isa import decode_word

    word = rng.getrandbits(128) & ~0x7
    op = rng.choice([0, 0, 0, 1, 2, 3, 4] + ([5, 6, 7] if bad_ok else []))
    word |= op
    if op == 0:
        word = (word & ~(0x7 << 7)) | (rng.randint(0, 7) << 7)
    return word, decode_word(word, cfg)


async def start_run(dut, addr, count):
    await FallingEdge(dut.clk)
    dut.insn_addr.value = addr
    dut.insn_count.value = count
    dut.start.value = 1
    await FallingEdge(dut.clk)
    dut.start.value = 0


@cocotb.test()
async def dispatch(dut):
    from vta.errors import ErrorCode
    from vta.isa import dispatch_engine

    cfg = cfg_from_env()
    ram, _ = await start_engine(dut, MEM, stall_seed=12,
                                inputs=("start", "halt", "ld_ready", "cmp_ready", "st_ready",
                                        "insn_addr", "insn_count"))
    rng = random.Random(44)

    count = 1400
    words, want = [], {"load": [], "compute": [], "store": []}
    for i in range(count):
        w, insn = random_insn(rng, cfg)
        words.append(w)
        want[dispatch_engine(insn)].append((i, w))
    base = 0x2000
    ram.write(base, b"".join(w.to_bytes(16, "little") for w in words))
    got = {"load": [], "compute": [], "store": []}
    names = {"load": "ld", "compute": "cmp", "store": "st"}

    async def consume(engine, stop_window):
        n = names[engine]
        crng = random.Random(hash(engine) & 0xFFFF)
        cycle = 0
        while True:
            await FallingEdge(dut.clk)
            cycle += 1
            ready = crng.random() < 0.6 and not (stop_window[0] <= cycle < stop_window[1])
            getattr(dut, f"{n}_ready").value = int(ready)
            await RisingEdge(dut.clk)
            if ready and int(getattr(dut, f"{n}_valid").value):
                data = int(getattr(dut, f"{n}_data").value)
                got[engine].append((data >> 128, data & ((1 << 128) - 1)))

    cocotb.start_soon(consume("load", (0, 0)))
    cocotb.start_soon(consume("compute", (100, 2500)))  # the compute queue fills up
    cocotb.start_soon(consume("store", (0, 0)))
    await start_run(dut, base, count)
    for _ in range(200000):
        await RisingEdge(dut.clk)
        if int(dut.done.value) and sum(map(len, got.values())) == count:
            break
    assert int(dut.err.value) == 0
    for engine in want:
        assert_same(got[engine], want[engine], f"{engine} queue (index, instruction)")
    assert int(dut.dispatched.value) == count

    async def expect_fault(addr, n, code, index):
        await start_run(dut, addr, n)
        for _ in range(20000):
            await RisingEdge(dut.clk)
            if int(dut.err.value):
                break
        assert (int(dut.err_code.value), int(dut.err_index.value)) == (int(code), index)
        await FallingEdge(dut.clk)
        dut.halt.value = 1
        await ClockCycles(dut.clk, 2)
        await wait_high(dut, "rd_idle", f"fault {code!r} at {index} halted")
        dut.halt.value = 0

    # undefined opcode at index 37: the 37 before it are dispatched, nothing after
    bad = [random_insn(rng, cfg)[0] for _ in range(60)]
    bad[37] = (bad[37] & ~0x7) | 6
    ram.write(base, b"".join(w.to_bytes(16, "little") for w in bad))
    for v in got.values():
        v.clear()
    await expect_fault(base, 60, ErrorCode.BAD_OPCODE, 37)
    await ClockCycles(dut.clk, 50)
    assert sorted(i for v in got.values() for i, _ in v) == list(range(37))

    # a run after the fault dispatches its own instructions only (nothing left from the
    # faulted stream in the read port or the register slice)
    after = [random_insn(rng, cfg)[0] for _ in range(24)]
    ram.write(base + 0x4000, b"".join(w.to_bytes(16, "little") for w in after))
    for v in got.values():
        v.clear()
    await start_run(dut, base + 0x4000, len(after))
    for _ in range(20000):
        await RisingEdge(dut.clk)
        if int(dut.done.value) and sum(map(len, got.values())) >= len(after):
            break
    await ClockCycles(dut.clk, 20)
    assert int(dut.err.value) == 0
    assert sorted(pair for v in got.values() for pair in v) == list(enumerate(after))
    await expect_fault(MEM - 32, 3, ErrorCode.DRAM_RANGE, 0xFFFFFFFF)


@pytest.mark.parametrize(
    "simulator, preset, log_bus",
    [pytest.param(*p.values, None, id=p.id, marks=p.marks)
     for p in sim_params(("tiny", "default", "aws"), ("tiny",), slow=("default", "aws"))]
    # the 512-bit bus of the aws preset (instructions through fetch's register slice) on the
    # tiny preset's fields, in the default run
    + [pytest.param("icarus", "tiny", 9, id="icarus-tiny-bus512")],
)
def test_fetch(simulator, preset, log_bus):
    run_wrapper(simulator, preset, "fetch", MEM, **({"LOG_BUS_WIDTH": log_bus} if log_bus else {}))

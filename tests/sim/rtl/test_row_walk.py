"""vta_row_walk: the range checks and row requests of a LOAD or STORE, alone.

Random 2-D blocks (sizes, strides smaller, equal and larger than a row, pads,
bases near the ends of the scratchpad and of device memory, every memory type
of the configuration) go through the phases a parent gives them: a few `size`
cycles, two `check` cycles, then `run`.  Expected values come from formulas of
vta-reference 3.2 / 3.5 and the golden model's checks, written here in Python:

* elems = x_size * y_size;
* sram_bad exactly when sram_base + area exceeds the depth (area with the pads
  for PADS=1), dram_bad exactly when the end of the last row, in bytes,
  exceeds MEM_SIZE (dram_base for an empty block);
* `checked` low in the first check cycle and high in the second;
* requests: one per row, (dram_base + r * x_stride) * element bytes, x_size
  elements each, or a single one of x_size * y_size when the rows are
  contiguous (one row, or x_stride == x_size); nothing after the last.

req_ready is stressed with random idle/backpressure patterns, and the parent
pauses `run` now and then.  Traffic in flight: a walk is abandoned in the
middle (a halted engine leaves `run`) or hit by `rst`, and the next block must
start cleanly from its own first row.
"""

from __future__ import annotations

import json
import os
import random

import cocotb
import pytest
from cocotb.triggers import FallingEdge, RisingEdge
from rtl_common import build_and_run, random_pause, start_clock_reset


def expected(cfg: dict, f: dict) -> dict:
    """Checks and requests of block ``f`` (fields and the memory type index ``m``)."""
    eb = 1 << cfg["log_elem_bytes"][f["m"]]
    depth = 1 << cfg["log_depth"][f["m"]]
    x, y = f["x_size"], f["y_size"]
    if cfg["pads"]:
        area = (f["x_pad_0"] + x + f["x_pad_1"]) * (f["y_pad_0"] + y + f["y_pad_1"])
    else:
        area = x * y
    end = f["dram_base"] + (y - 1) * f["x_stride"] + x if y else f["dram_base"]
    if y == 1 or f["x_stride"] == x:
        reqs = [(f["dram_base"] * eb, x * y)] if y else []
    else:
        reqs = [((f["dram_base"] + r * f["x_stride"]) * eb, x) for r in range(y)]
    return {"elems": x * y, "sram_bad": f["sram_base"] + area > depth,
            "dram_bad": end * eb > cfg["mem_size"], "reqs": reqs}


def random_block(rng: random.Random, cfg: dict) -> dict:
    m = rng.randrange(len(cfg["log_elem_bytes"]))
    eb = 1 << cfg["log_elem_bytes"][m]
    depth = 1 << cfg["log_depth"][m]
    mem_elems = cfg["mem_size"] // eb
    x = rng.choice([1, 2, 3, rng.randint(1, 12), rng.randint(1, 0xFFFF)])
    y = rng.choice([0, 1, 1, 2, 3, rng.randint(1, 6), rng.randint(1, 0xFFFF)])
    stride = rng.choice([x, x, x + rng.randint(1, 5), max(0, x - rng.randint(1, 3)),
                         rng.randint(0, 0xFFFF)])
    pads = [rng.choice([0, 0, 1, rng.randint(0, 15)]) for _ in range(4)] if cfg["pads"] else [0] * 4
    area = (pads[2] + x + pads[3]) * (pads[0] + y + pads[1])
    # bases near the ends, so the checks are decided by a few entries / elements
    sram_base = rng.choice([0, rng.randrange(depth), max(0, depth - area + rng.randint(-2, 2)),
                            rng.randrange(1 << 16)]) % (1 << 16)
    span = (y - 1) * stride + x if y else 0
    dram_base = rng.choice([rng.randrange(max(1, mem_elems // 2)),
                            max(0, mem_elems - span + rng.randint(-2, 2)),
                            rng.randrange(1 << 32)]) % (1 << 32)
    return {"m": m, "sram_base": sram_base, "dram_base": dram_base, "x_size": x,
            "y_size": y, "x_stride": stride, "y_pad_0": pads[0], "y_pad_1": pads[1],
            "x_pad_0": pads[2], "x_pad_1": pads[3]}


def small_block(rng: random.Random, cfg: dict) -> dict:
    """A block that passes both checks and has a few rows (for traffic in flight)."""
    while True:
        f = random_block(rng, cfg)
        f.update(x_size=rng.randint(1, 4), y_size=rng.randint(3, 6),
                 x_stride=rng.randint(5, 9), sram_base=0, dram_base=rng.randint(0, 999))
        want = expected(cfg, f)
        if not (want["sram_bad"] or want["dram_bad"]):
            return f


class Walk:
    def __init__(self, dut, cfg: dict, rng: random.Random):
        self.dut, self.cfg, self.rng = dut, cfg, rng
        self.ready = random_pause(rng.randrange(1 << 30), busy=0.4)

    def fields(self, f: dict):
        dut = self.dut
        dut.sel.value = 1 << f["m"]
        for name in ("sram_base", "dram_base", "y_size", "x_size", "x_stride"):
            getattr(dut, name).value = f[name]
        if self.cfg["pads"]:
            dut.x_total.value = f["x_pad_0"] + f["x_size"] + f["x_pad_1"]
            dut.y_total.value = f["y_pad_0"] + f["y_size"] + f["y_pad_1"]
        else:
            dut.x_total.value = f["x_size"]
            dut.y_total.value = f["y_size"]

    async def phases(self, f: dict) -> dict:
        """size and check; the verdict, checked against the formulas."""
        dut = self.dut
        want = expected(self.cfg, f)
        await FallingEdge(dut.clk)
        self.fields(f)
        dut.size.value = 1
        for _ in range(self.rng.randint(1, 3)):
            await RisingEdge(dut.clk)
        await FallingEdge(dut.clk)
        dut.size.value = 0
        dut.check.value = 1
        assert int(dut.checked.value) == 0, "checked in the first check cycle"
        await RisingEdge(dut.clk)
        await FallingEdge(dut.clk)
        got = {"checked": int(dut.checked.value), "elems": int(dut.elems.value),
               "sram_bad": bool(int(dut.sram_bad.value)),
               "dram_bad": bool(int(dut.dram_bad.value))}
        assert got == {"checked": 1, "elems": want["elems"], "sram_bad": want["sram_bad"],
                       "dram_bad": want["dram_bad"]}, f"block {f}: expected {want}, got {got}"
        await RisingEdge(dut.clk)
        await FallingEdge(dut.clk)
        dut.check.value = 0
        return want

    async def run(self, f: dict, want: dict, stop_after: int | None = None):
        """Requests with backpressure and pauses, against ``want``; ``stop_after``
        requests, then the parent leaves run (or, without it, every request and a
        few quiet cycles more)."""
        dut = self.dut
        reqs = want["reqs"] if stop_after is None else want["reqs"][:stop_after]
        got = []
        quiet = 0
        first = True  # (phases() returns at a falling edge)
        while len(got) < len(reqs) or (stop_after is None and quiet < 6):
            if not first:
                await FallingEdge(dut.clk)
            first = False
            pause = self.rng.random() < 0.1
            dut.run.value = 0 if pause else 1
            dut.req_ready.value = 0 if next(self.ready) else 1
            await RisingEdge(dut.clk)
            if int(dut.req_valid.value):
                assert not pause, "a request while the parent was not running"
                if int(dut.req_ready.value):
                    got.append((int(dut.req_addr.value), int(dut.req_n.value)))
                    assert len(got) <= len(reqs), (
                        f"block {f}: request after the last: {got[len(reqs):]}")
            elif len(got) >= len(reqs):
                quiet += 1
        await FallingEdge(dut.clk)
        dut.run.value = 0
        assert got == reqs, f"block {f}: requests expected {reqs[:8]}..., got {got[:8]}..."


@cocotb.test()
async def row_walk(dut):
    cfg = json.loads(os.environ["VTA_WALK"])
    rng = random.Random(cfg["seed"])
    for s in ("size", "check", "run", "req_ready", "sel", "sram_base", "dram_base", "y_size",
              "x_size", "x_stride", "x_total", "y_total"):
        getattr(dut, s).value = 0
    await start_clock_reset(dut)
    walk = Walk(dut, cfg, rng)
    kinds = set()
    for n in range(400):
        f = random_block(rng, cfg)
        want = await walk.phases(f)
        kinds.add(("sram", want["sram_bad"]))
        kinds.add(("dram", want["dram_bad"]))
        if want["sram_bad"] or want["dram_bad"] or not want["reqs"] or len(want["reqs"]) > 64:
            continue
        kinds.add("merged" if len(want["reqs"]) == 1 else "rows")
        if n % 5 == 4 and len(want["reqs"]) > 1:
            # traffic in flight: the parent halts (leaves run) after some rows, or rst
            await walk.run(f, want, stop_after=rng.randrange(1, len(want["reqs"])))
            if n % 2:
                dut.rst.value = 1
                await RisingEdge(dut.clk)
                await FallingEdge(dut.clk)
                dut.rst.value = 0
                kinds.add("reset")
                assert int(dut.checked.value) == 0
            # after a reset nothing goes out, even with run held high
            for _ in range(3):
                dut.run.value = int(n % 2)
                dut.req_ready.value = 1
                await RisingEdge(dut.clk)
                assert not (n % 2 and int(dut.req_valid.value)), "a request after rst"
            await FallingEdge(dut.clk)
            dut.run.value = 0
            kinds.add("abandoned")
            f = small_block(rng, cfg)
            want = await walk.phases(f)
        await walk.run(f, want)
    want_kinds = {("sram", True), ("sram", False), ("dram", True), ("dram", False), "merged",
                  "rows", "abandoned", "reset"}
    assert want_kinds <= kinds, f"never exercised: {want_kinds - kinds}"


# configurations: the store's (one type, no pads), the load engine's (INP, WGT), the compute
# engine's (UOP, ACC, ACC_8BIT) on tiny and on aws (big WGT elements, 64-bit addresses, a
# device memory that is not a power of two)
CONFIGS = {
    "store": dict(log_elem_bytes=[4], log_depth=[11], pads=0, mem_size=1 << 28, addr_width=32),
    "load": dict(log_elem_bytes=[4, 8], log_depth=[11, 10], pads=1, mem_size=1 << 20,
                 addr_width=32),
    "compute": dict(log_elem_bytes=[2, 4, 2], log_depth=[10, 11, 11], pads=1,
                    mem_size=(1 << 20) + 0x3000, addr_width=32),
    "aws": dict(log_elem_bytes=[5, 10], log_depth=[11, 9], pads=1, mem_size=(1 << 36) - 4096,
                addr_width=64),
}


# Icarus runs every configuration (seconds each); Verilator builds (about 40 s each) the load
# engine's by default and aws's with the slow marker
PARAMS = [pytest.param("icarus", name, id=f"icarus-{name}") for name in CONFIGS] + [
    pytest.param("verilator", "load", id="verilator-load"),
    pytest.param("verilator", "aws", id="verilator-aws", marks=pytest.mark.slow),
]


@pytest.mark.parametrize("simulator, name", PARAMS)
def test_row_walk(simulator, name):
    cfg = dict(CONFIGS[name], seed=sum(map(ord, name)))

    def packed(values):
        return sum(v << (8 * m) for m, v in enumerate(values))

    params = {"ADDR_WIDTH": cfg["addr_width"], "MEM_SIZE": cfg["mem_size"],
              "N": len(cfg["log_elem_bytes"]), "LOG_ELEM_BYTES": packed(cfg["log_elem_bytes"]),
              "LOG_DEPTH": packed(cfg["log_depth"]), "PADS": cfg["pads"]}
    build_and_run(simulator, "default", "vta_row_walk", "test_row_walk", parameters=params,
                  extra_env={"VTA_WALK": json.dumps(cfg)})

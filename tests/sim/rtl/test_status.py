"""vta_status: run end, the fault report, deadlock, counters and TOKENS against a Python model.

The model is written from the contract (docs/rtl-interface.md, "Run protocol"): DONE
once fetch is done, every queue empty, every engine idle and FINISH retired;
NO_FINISH when drained without it; the first fault of a cycle by priority
(fetch, load, compute, store, read bus error, write bus error, deadlock,
NO_FINISH), reported from a register a cycle later; a read bus error belongs to
the engine of its client (0 fetch, 1-2 load, 3-5 compute), a fetch bus error
names the first instruction of the failing burst; DEADLOCK after the engines
look stuck for 8 cycles in a row while the run goes; each counter's increment
from the engine signal regs.COUNTERS names; TOKENS saturated at 255.

Stimulus comes in episodes (random traffic, engines stuck, everything drained,
faults of every kind and their combinations); `start` and `rst` hit the module
in the middle of them (a deadlock being counted, a fault being reported), and
every cycle's outputs are compared with the model.  Two directed cases pin the
latencies without the model: DEADLOCK is reported on the 9th cycle after the
engines got stuck, a fault the cycle after it happened.
"""

from __future__ import annotations

import os
import random

import cocotb
import pytest
from cocotb.triggers import FallingEdge, RisingEdge
from rtl_common import build_and_run, start_clock_reset

from vta import regs
from vta.config import TOKEN_QUEUE_DEPTH
from vta.errors import ErrorCode

MOD = {name: i for i, name in enumerate(regs.MODULES)}
ENGINES = ("load", "compute", "store")
DEAD_CYCLES = 8  # cycles in a row the engines must look stuck

#: counter -> the input whose value it adds each cycle (None: the cycle counter, 1)
COUNTER_INPUTS = {
    "cycles": None,
    "load_busy": "load_busy", "load_stall": "load_stall",
    "compute_busy": "compute_busy", "compute_stall": "compute_stall",
    "store_busy": "store_busy", "store_stall": "store_stall",
    "uop_load_bytes": "compute_uop_bytes", "inp_load_bytes": "load_inp_bytes",
    "wgt_load_bytes": "load_wgt_bytes", "acc_load_bytes": "compute_acc_bytes",
    "acc8_load_bytes": "compute_acc8_bytes", "out_store_bytes": "store_out_bytes",
    "gemm_uops": "compute_gemm_uops", "alu_uops": "compute_alu_uops",
    "load_insns": "load_retire", "compute_insns": "compute_retire",
    "store_insns": "store_retire",
    "l2g_tokens": "l2g_push", "g2l_tokens": "g2l_push", "g2s_tokens": "g2s_push",
    "s2g_tokens": "s2g_push",
}


class Model:
    """vta_status as the contract describes it: registers updated once per clock."""

    def __init__(self, addr_width: int):
        self.aw = addr_width
        self.finish_seen = self.drained = self.dead = False
        self.dead_cnt = 0
        self.err = None  # (module, code, index or None, addr, fetch bus) or None

    @staticmethod
    def free(i, eng):
        q = {"load": "ldq_count", "compute": "cmpq_count", "store": "stq_count"}[eng]
        return bool(i[f"{eng}_idle"]) and i[q] == 0

    def fault(self, i):
        """The fault of this cycle's inputs and registers, first by priority, or None."""
        for mod in ("fetch", *ENGINES):
            if i[f"{mod}_err"]:
                index = i["fetch_err_index"] if mod == "fetch" else i[f"{mod}_index"]
                return (MOD[mod], i[f"{mod}_err_code"], index, 0, False)
        if i["rd_bus_err"]:
            client = i["rd_bus_err_client"]
            if client == 0:
                return (MOD["fetch"], ErrorCode.BUS_ERROR, None, i["rd_bus_err_addr"], True)
            eng = "load" if client <= 2 else "compute"
            return (MOD[eng], ErrorCode.BUS_ERROR, i[f"{eng}_index"], i["rd_bus_err_addr"],
                    False)
        if i["wr_bus_err"]:
            return (MOD["store"], ErrorCode.BUS_ERROR, i["store_index"], i["wr_bus_err_addr"],
                    False)
        if self.dead_cnt == DEAD_CYCLES - 1:
            eng = next((e for e in ENGINES if i[f"{e}_stall"]), "store")
            return (MOD[eng], ErrorCode.DEADLOCK, i[f"{eng}_index"], 0, False)
        if self.drained and not self.finish_seen:
            return (MOD["compute"], ErrorCode.NO_FINISH, 0xFFFFFFFF, 0, False)
        return None

    def step(self, i):
        """One clock edge with inputs ``i``."""
        frees = [self.free(i, e) for e in ENGINES]
        stalls = [bool(i[f"{e}_stall"]) for e in ENGINES]
        waiting = all(s or f for s, f in zip(stalls, frees, strict=True))
        dead_now = bool(i["fetch_quiet"]) and waiting and any(stalls)
        err = self.fault(i)
        dead_cnt = min(self.dead_cnt + 1, DEAD_CYCLES - 1) if self.dead and i["run"] else 0
        self.finish_seen = self.finish_seen or bool(i["compute_finish"])
        self.drained = bool(i["fetch_done"]) and all(frees)
        self.dead, self.dead_cnt, self.err = dead_now, dead_cnt, err
        if i["rst"] or i["start"]:
            self.finish_seen = self.drained = self.dead = False
            self.dead_cnt = 0
            self.err = None

    def outputs(self, i) -> dict:
        """Outputs this cycle (registers as they are, inputs ``i``)."""
        out = {"run_done": int(self.drained and self.finish_seen),
               "start_ok": int(i["rd_idle"] and i["wr_idle"]),
               "err_valid": int(self.err is not None)}
        if self.err is not None:
            module, code, index, addr, fetch_bus = self.err
            if fetch_bus:
                base = i["insn_addr"] & ~0xF
                index = ((addr - base) >> 4) & 0xFFFFFFFF if addr > base else 0
            out.update(err_module=module, err_code=int(code), err_index=index, err_addr=addr)
        sat = [min(i[f"{q}_count"], 255) for q in ("l2g", "g2l", "g2s", "s2g")]
        out["tokens"] = sat[0] | sat[1] << 8 | sat[2] << 16 | sat[3] << 24
        inc = 0
        for k, (name, _) in enumerate(regs.COUNTERS):
            src = COUNTER_INPUTS[name]
            inc |= (1 if src is None else i[src]) << (32 * k)
        out["cnt_inc"] = inc
        return out


class Stimulus:
    """Random inputs in episodes that reach every branch of the module."""

    def __init__(self, rng: random.Random, addr_width: int, id_width: int, qw: int):
        self.rng, self.aw, self.idw, self.qw = rng, addr_width, id_width, qw
        self.mode, self.left = "random", 0
        self.base = 0

    def _episode(self):
        r = self.rng
        self.mode = r.choice(["random", "random", "stuck", "stuck", "drained", "faults",
                              "almost_stuck"])
        self.left = r.randint(3, 25)
        self.finish = r.random() < 0.5
        self.base = r.getrandbits(min(self.aw, 40)) & ~0xF if r.random() < 0.8 else self.base

    def next(self) -> dict:
        r = self.rng
        if self.left == 0:
            self._episode()
        self.left -= 1
        tcw = TOKEN_QUEUE_DEPTH.bit_length()
        i = {"rst": int(r.random() < 0.01), "start": int(r.random() < 0.03),
             "run": int(r.random() < 0.95), "insn_addr": self.base | r.getrandbits(4),
             "rd_idle": r.getrandbits(1), "wr_idle": r.getrandbits(1)}
        for q in ("l2g", "g2l", "g2s", "s2g"):
            i[f"{q}_count"] = r.choice([0, 1, 254, 255, 256, r.randrange(1 << tcw)]) % (
                TOKEN_QUEUE_DEPTH + 1)
            i[f"{q}_push"] = r.getrandbits(1)
        for name in ("load_inp_bytes", "load_wgt_bytes", "compute_uop_bytes",
                     "compute_acc_bytes", "compute_acc8_bytes", "store_out_bytes",
                     "compute_gemm_uops", "compute_alu_uops"):
            i[name] = r.getrandbits(32) if r.random() < 0.3 else 0
        for e in ENGINES:
            i[f"{e}_index"] = r.getrandbits(32)
            i[f"{e}_err_code"] = r.randint(1, 11)
            i[f"{e}_retire"] = r.getrandbits(1)
            i[f"{e}_busy"] = r.getrandbits(1)
        i["compute_finish"] = int(r.random() < 0.05)
        i["fetch_err_index"] = r.getrandbits(32)
        i["fetch_err_code"] = r.randint(1, 11)
        i["rd_bus_err_client"] = r.randrange(6)
        i["rd_bus_err_addr"] = (self.base + r.randint(-64, 4096)) % (1 << self.aw)
        i["wr_bus_err_addr"] = r.getrandbits(self.aw)
        mode = self.mode
        quiet = {"stuck": 1, "almost_stuck": 1, "drained": 1}.get(mode, r.getrandbits(1))
        i["fetch_quiet"] = quiet
        i["fetch_done"] = 1 if mode == "drained" else r.getrandbits(1)
        for e, q in zip(ENGINES, ("ldq_count", "cmpq_count", "stq_count"), strict=True):
            if mode in ("stuck", "almost_stuck", "drained"):
                stall = mode != "drained" and r.random() < 0.6
                i[f"{e}_stall"] = int(stall)
                i[f"{e}_idle"] = int(not stall)
                i[q] = 0
            else:
                i[f"{e}_stall"] = r.getrandbits(1)
                i[f"{e}_idle"] = r.getrandbits(1)
                i[q] = r.choice([0, 0, 1, r.randrange(1 << self.qw)])
        if mode == "stuck" and not any(i[f"{e}_stall"] for e in ENGINES):
            i[f"{r.choice(ENGINES)}_stall"] = 1
        if mode == "almost_stuck":
            # one engine is busy (or a queue holds an instruction) now and then
            if r.random() < 0.3:
                e = r.choice(ENGINES)
                i[f"{e}_stall"] = 0
                i[f"{e}_idle"] = 0
        if mode == "drained":
            i["compute_finish"] = int(self.finish and r.random() < 0.2)
        p = 0.25 if mode == "faults" else 0.01
        for name in ("fetch_err", "load_err", "compute_err", "store_err", "rd_bus_err",
                     "wr_bus_err"):
            i[name] = int(r.random() < p)
        return i


def apply(dut, i: dict):
    for name, value in i.items():
        getattr(dut, name).value = value


def check(dut, want: dict, cycle: int):
    for name, value in want.items():
        got = int(getattr(dut, name).value)
        assert got == value, f"cycle {cycle}: {name} expected 0x{value:x}, got 0x{got:x}"


def quiet_inputs(stim: Stimulus) -> dict:
    """Inputs of a running design with nothing to report (engines busy)."""
    i = stim.next()
    i.update(rst=0, start=0, run=1, fetch_quiet=0, fetch_done=0, compute_finish=0)
    for name in ("fetch_err", "load_err", "compute_err", "store_err", "rd_bus_err",
                 "wr_bus_err"):
        i[name] = 0
    for e in ENGINES:
        i[f"{e}_stall"], i[f"{e}_idle"] = 0, 0
    return i


@cocotb.test()
async def status(dut):
    aw, idw, lqd = (int(os.environ[k]) for k in ("VTA_ADDR_W", "VTA_ID_W", "VTA_LQD"))
    rng = random.Random(aw * 131 + idw)
    stim = Stimulus(rng, aw, idw, lqd + 2)
    model = Model(aw)
    i = quiet_inputs(stim)
    i["rst"] = 1
    apply(dut, i)
    await start_clock_reset(dut)
    model.step(i)

    # directed: stuck engines give DEADLOCK on the 9th cycle, naming the first stuck one
    i = quiet_inputs(stim)
    i.update(fetch_quiet=1, ldq_count=0, cmpq_count=0, stq_count=0, load_idle=1,
             compute_stall=1, store_stall=1)
    await FallingEdge(dut.clk)
    apply(dut, i)
    for cycle in range(1, 10):
        await RisingEdge(dut.clk)
        model.step(i)
        await FallingEdge(dut.clk)
        if cycle < 9:
            assert int(dut.err_valid.value) == 0, f"DEADLOCK reported after {cycle} cycles"
    assert (int(dut.err_valid.value), int(dut.err_code.value), int(dut.err_module.value),
            int(dut.err_index.value)) == (1, ErrorCode.DEADLOCK, MOD["compute"],
                                          i["compute_index"])
    # the engines move again: the deadlock count drains (two cycles)
    for _ in range(3):
        i = quiet_inputs(stim)
        apply(dut, i)
        await RisingEdge(dut.clk)
        model.step(i)
        await FallingEdge(dut.clk)
        check(dut, model.outputs(i), -1)
    assert int(dut.err_valid.value) == 0
    # directed: a fault is reported the cycle after it, and only then
    i = quiet_inputs(stim)
    i.update(store_err=1, store_err_code=int(ErrorCode.STORE_PAD))
    apply(dut, i)
    await RisingEdge(dut.clk)
    model.step(i)
    i2 = quiet_inputs(stim)
    await FallingEdge(dut.clk)
    apply(dut, i2)
    assert (int(dut.err_valid.value), int(dut.err_code.value), int(dut.err_module.value),
            int(dut.err_index.value)) == (1, ErrorCode.STORE_PAD, MOD["store"],
                                          i["store_index"])
    await RisingEdge(dut.clk)
    model.step(i2)
    await FallingEdge(dut.clk)
    assert int(dut.err_valid.value) == 0

    # random episodes, every cycle against the model
    seen = set()
    for cycle in range(6000):
        i = stim.next()
        apply(dut, i)
        if model.dead_cnt and (i["start"] or i["rst"]):
            seen.add("cleared while counting")
        await RisingEdge(dut.clk)
        model.step(i)
        await FallingEdge(dut.clk)
        check(dut, model.outputs(i), cycle)
        if model.err is not None:
            seen.add((model.err[0], int(model.err[1])))
    want = {(MOD["fetch"], int(ErrorCode.BUS_ERROR)), (MOD["load"], int(ErrorCode.BUS_ERROR)),
            (MOD["compute"], int(ErrorCode.BUS_ERROR)), (MOD["store"], int(ErrorCode.BUS_ERROR)),
            (MOD["load"], int(ErrorCode.DEADLOCK)), (MOD["compute"], int(ErrorCode.DEADLOCK)),
            (MOD["store"], int(ErrorCode.DEADLOCK)), (MOD["compute"], int(ErrorCode.NO_FINISH)),
            "cleared while counting"}
    assert want <= seen, f"never exercised: {sorted(want - seen, key=str)}"


# (ADDR_WIDTH, ID_WIDTH, LOG_QUEUE_DEPTH): the design's, 64-bit addresses with more IDs,
# the fewest IDs and short queues.  Icarus runs all three by default (a few seconds each);
# Verilator's further builds (about 40 s each) run with the slow marker.
CONFIGS = ((32, 4, 9), (64, 6, 9), (32, 3, 2))


PARAMS = [
    pytest.param(sim, aw, idw, lqd, id=f"{sim}-a{aw}-id{idw}-q{lqd}",
                 marks=(pytest.mark.slow,) if sim == "verilator" and n else ())
    for sim in ("verilator", "icarus")
    for n, (aw, idw, lqd) in enumerate(CONFIGS)
]


@pytest.mark.parametrize("simulator, aw, idw, lqd", PARAMS)
def test_status(simulator, aw, idw, lqd):
    build_and_run(
        simulator,
        "tiny",
        "vta_status",
        "test_status",
        parameters={"ADDR_WIDTH": aw, "ID_WIDTH": idw, "LOG_QUEUE_DEPTH": lqd},
        extra_env={"VTA_ADDR_W": str(aw), "VTA_ID_W": str(idw), "VTA_LQD": str(lqd)},
    )

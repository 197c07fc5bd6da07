"""vta_top after a fault with DRAM traffic in flight, and on DRAM bus errors.

The DRAM is cocotbext-axi's AxiRam with random stalls on all five channels; on
top of them the test can hold the R and W channels completely.  A monitor
checks the AXI4 rules the master must keep on every cycle (VALID stays high and
the payload stays stable until READY, a burst gets exactly AxLEN + 1 W beats).

In-flight tests: run A leaves read data (an INP load) and write data (a STORE)
owed by the bus when another engine faults; the device is then cleared (or
started again) while the bus still owes those beats, the bus is released, and
run B (the mixed program) must give the golden model's result: no stale beat of run A
may reach run B, and run A's write bursts must complete with their payload
unchanged.

Bus errors: AxiRam answers SLVERR in one 4 KiB page; every engine's access to
it must stop the run with BUS_ERROR, the engine, the instruction index and the
burst address the golden model predicts for the same page.
"""

from __future__ import annotations

import os

import cocotb
import numpy as np
import pytest
from cocotb.triggers import ClockCycles, Event, RisingEdge, with_timeout
from rtl_common import build_and_run, cfg_from_env, read64, sim_params, top_params
from rtl_programs import FINISH, Program, alu, gemm, golden_run, load, store, zero_fill
from test_top import MEM_SIZE, check, run_program, setup

from vta import regs
from vta.errors import ErrorCode
from vta.golden import GoldenModel
from vta.isa import MemId

A_BASE = MEM_SIZE // 2  # run A's instructions and data; run B stays below


# ------------------------------------------------------------------ bus rules
class AxiChecker:
    """Master-side AXI4 rules, checked every cycle on AR, AW and W; beats owed per channel."""

    CHANNELS = {
        "ar": ("id", "addr", "len", "size", "burst"),
        "aw": ("id", "addr", "len", "size", "burst"),
        "w": ("data", "strb", "last"),
    }

    def __init__(self, dut):
        self.dut = dut
        self.errors: list[str] = []
        self.r_owed = 0  # read beats requested and not yet returned
        self.w_owed = 0  # write beats announced on AW and not yet sent
        self.b_owed = 0  # bursts without a write response
        self.burst_beats: list[int] = []  # beats of each announced burst not yet matched
        self.w_lasts: list[int] = []  # WLAST of each W beat not yet matched to a burst

    def _sig(self, ch, name):
        return getattr(self.dut, f"m_axi_{ch}{name}")

    async def run(self):
        dut = self.dut
        held = {}
        while True:
            await RisingEdge(dut.clk)
            for ch, fields in self.CHANNELS.items():
                valid = int(self._sig(ch, "valid").value)
                ready = int(self._sig(ch, "ready").value)
                payload = tuple(str(self._sig(ch, f).value) for f in fields) if valid else ()
                if ch in held:
                    if not valid:
                        self.errors.append(f"{ch.upper()}VALID dropped before READY")
                    elif payload != held[ch]:
                        self.errors.append(f"{ch.upper()} payload changed under VALID: "
                                           f"{held[ch]} -> {payload}")
                held.pop(ch, None)
                if valid and not ready:
                    held[ch] = payload
                if valid and ready:
                    self._handshake(ch, [int(v, 2) for v in payload])
            if int(dut.m_axi_rvalid.value) and int(dut.m_axi_rready.value):
                self.r_owed -= 1
            if int(dut.m_axi_bvalid.value) and int(dut.m_axi_bready.value):
                self.b_owed -= 1

    def _handshake(self, ch, payload):
        if ch == "ar":
            self.r_owed += payload[2] + 1
        elif ch == "aw":
            self.w_owed += payload[2] + 1
            self.b_owed += 1
            self.burst_beats.append(payload[2] + 1)
        else:  # W may run ahead of its AW; WLAST is checked once the burst is known
            self.w_owed -= 1
            self.w_lasts.append(payload[2])
        while self.burst_beats and len(self.w_lasts) >= self.burst_beats[0]:
            n = self.burst_beats.pop(0)
            got, self.w_lasts = self.w_lasts[:n], self.w_lasts[n:]
            if got != [0] * (n - 1) + [1]:
                self.errors.append(f"WLAST pattern {got} for a {n}-beat burst")

    def quiet(self) -> bool:
        return self.r_owed == 0 and self.w_owed == 0 and self.b_owed == 0


class Hold:
    """Pause generator for an AxiRam channel: its random stalls, or held completely."""

    def __init__(self, base):
        self.base = base
        self.on = False

    def __iter__(self):
        return self

    def __next__(self):
        stall = next(self.base)
        return True if self.on else stall


def hold_writes(ram) -> Hold:
    """Wrap the W pause generator of ``ram`` (set by stall_axi) in a Hold."""
    ch = ram.write_if.w_channel
    hold = Hold(ch._pause_generator)
    ch.set_pause_generator(hold)
    return hold


def gate_reads(ram, lo: int, hi: int) -> Event:
    """Hold R at the first beat read from [lo, hi) until the returned Event is set.

    AxiRam answers bursts in order, so every later burst waits too.
    """
    gate = Event()
    read = ram.read_if._read

    async def gated(address, length):
        if lo <= address < hi and not gate.is_set():
            await gate.wait()
        return await read(address, length)

    ram.read_if._read = gated
    return gate


# ------------------------------------------------------------------ programs
def run_a(cfg, scenario: str):
    """Run A: leaves DRAM traffic owed when it faults.

    "reads": compute loads one ACC element (R held at its data: exactly what
    the ACC port holds, so on a design that lets it through nothing else
    stalls the next start) while the store engine writes three long blocks,
    then faults (STORE_PAD).  "writes": load loads INP (R held at its data),
    store writes a block (W held from the start), compute runs a long GEMM,
    then faults (BAD_ALU_OPCODE).  SRAM entries used are above what run B
    uses.  Returns (program, held read range, expected (module, code, index),
    STORE destinations as (address, bytes)).
    """
    inp_addr, acc_addr, out_addr, insn_addr = (A_BASE + 0x1000 * k for k in (0, 1, 2, 8))
    out_e, n16 = cfg.OUT_ELEM_BYTES, 16
    if scenario == "reads":
        n_out = min(cfg.OUT_BUFF_DEPTH, 64 * cfg.BUS_BYTES // out_e)
        stores = [store((out_addr + k * 0x1000) // out_e, n_out) for k in range(3)]
        insns = [load(MemId.ACC, acc_addr // cfg.ACC_ELEM_BYTES,
                      sram_base=cfg.ACC_BUFF_DEPTH - n16),
                 *stores, store(0, x_stride=0, x_pad_0=1)]
        held, want = (acc_addr, acc_addr + 0x1000), ("store", ErrorCode.STORE_PAD, 4)
    else:
        stores = [store(out_addr // out_e, max(8, 4 * cfg.BUS_BYTES // out_e))]
        insns = [load(MemId.INP, inp_addr // cfg.INP_ELEM_BYTES, n16 // 2, 2,
                      sram_base=cfg.INP_BUFF_DEPTH - n16),
                 *stores,
                 # micro-op 0 is resident from zero_fill: a reset GEMM over ACC entry 0, many
                 # times
                 gemm((0, 1), 1500, reset_reg=1),
                 alu(6, (0, 1))]
        held, want = (inp_addr, inp_addr + 0x1000), ("compute", ErrorCode.BAD_ALU_OPCODE, 3)
    rng = np.random.default_rng(5)
    writes = [(inp_addr, rng.integers(0, 256, size=0x1000, dtype=np.uint8).tobytes()),
              (acc_addr, rng.integers(0, 256, size=0x1000, dtype=np.uint8).tobytes())]
    prog = Program(f"in_flight_{scenario}", writes=writes, insns=[*insns, FINISH],
                   insn_addr=insn_addr)
    dests = [(s.dram_base * out_e, s.x_size * out_e) for s in stores]
    return prog, held, want, dests


async def start_checked(dut, cfg):
    """The device after zero_fill, an AxiChecker on its bus, the golden model beside it."""
    axil, ram = await setup(dut)
    checker = AxiChecker(dut)
    cocotb.start_soon(checker.run())
    model = GoldenModel(cfg, 1 << 12)
    prog = zero_fill(cfg)
    ram.write(0, prog.image(cfg, MEM_SIZE).tobytes())
    result = await run_program(dut, axil, prog.insn_addr, prog.insn_count)
    check(prog.name, golden_run(cfg, prog, MEM_SIZE, model), ram, *result)
    assert checker.quiet(), checker.errors[:5]
    return axil, ram, checker, model


@cocotb.test()
@cocotb.parametrize(scenario=["reads", "writes"], restart=["clear", "start"])
async def in_flight(dut, scenario: str, restart: str):
    """Run A faults with DRAM traffic owed, then run B (the mixed program): B is exact.

    ``scenario`` "reads": R owed (wide and narrow ports); "writes": R and W owed, and
    run A's W bursts must complete with their payload unchanged.  ``restart``
    "clear": CLEAR while the bus still owes beats, release the bus, run B;
    "start": START run B while the bus owes beats (the device must stay BUSY and
    wait), then release.
    """
    from rtl_programs import mixed

    cfg = cfg_from_env()
    axil, ram, checker, model = await start_checked(dut, cfg)
    hold_w = hold_writes(ram)

    # run A
    prog_a, held, (module, code, fault_index), dests = run_a(cfg, scenario)
    ram.write(A_BASE, prog_a.image(cfg, MEM_SIZE)[A_BASE:].tobytes())
    before = [ram.read(a, n) for a, n in dests]
    hold_w.on = scenario == "writes"
    gate = gate_reads(ram, *held)
    status, index, _ = await run_program(dut, axil, prog_a.insn_addr, prog_a.insn_count)
    want = regs.status_word(error=True, module=module, code=code)
    assert (status, index) == (want, fault_index), (
        f"run A: STATUS 0x{status:x} ERR_INDEX {index}, expected 0x{want:x} {fault_index}")
    assert checker.r_owed > 0 and (scenario == "reads" or checker.w_owed > 0), (
        f"run A must fault with traffic in flight: {checker.r_owed} R beats and "
        f"{checker.w_owed} W beats owed")
    golden_a = golden_run(cfg, prog_a, MEM_SIZE, model)  # golden: every STORE before the fault

    # run B below A_BASE (run A's leftovers stay above)
    prog_b = mixed(cfg, np.random.default_rng(7))
    ram.write(0, prog_b.image(cfg, MEM_SIZE)[:A_BASE].tobytes())
    want_b = golden_run(cfg, prog_b, MEM_SIZE, model)
    if restart == "clear":
        await axil.write_dword(regs.offset("CTRL"), regs.CTRL_CLEAR)
        await ClockCycles(dut.clk, 50)
        status = await axil.read_dword(regs.offset("STATUS"))
        assert status == 0, f"after CLEAR: STATUS 0x{status:x}, expected 0"
        gate.set()
        hold_w.on = False
        result = await run_program(dut, axil, prog_b.insn_addr, prog_b.insn_count)
    else:
        task = cocotb.start_soon(run_program(dut, axil, prog_b.insn_addr, prog_b.insn_count))
        await ClockCycles(dut.clk, 300)
        status = await axil.read_dword(regs.offset("STATUS"))
        assert status == regs.STATUS_BUSY, f"START while the bus drains: STATUS 0x{status:x}"
        gate.set()
        hold_w.on = False
        result = await task
    check("run B", want_b, ram, *result, span=A_BASE)

    # run A's bursts completed by the rules; each STORE byte is old or what it stored
    await with_timeout(_until_quiet(dut, checker), 200, "us")
    assert not checker.errors, checker.errors[:5]
    for (addr, n), old in zip(dests, before, strict=True):
        new = golden_a.mem[addr:addr + n].tobytes()
        after = ram.read(addr, n)
        bad = [i for i in range(n) if after[i] not in (old[i], new[i])]
        assert not bad, f"run A's STORE at 0x{addr:x} holds foreign bytes at offsets {bad[:8]}"


async def _until_quiet(dut, checker):
    while not checker.quiet():
        await RisingEdge(dut.clk)


def inject_bus_error(ram, window):
    """AxiRam answers SLVERR for every beat in [lo, hi) (None: no window)."""
    read, write = type(ram.read_if)._read, type(ram.write_if)._write
    lo, hi = window or (0, 0)

    async def bad_read(address, length):
        if lo <= address < hi:
            raise OSError(f"bus error at 0x{address:x}")
        return await read(ram.read_if, address, length)

    async def bad_write(address, data):
        if lo <= address < hi:
            raise OSError(f"bus error at 0x{address:x}")
        return await write(ram.write_if, address, data)

    ram.read_if._read = bad_read
    ram.write_if._write = bad_write


@cocotb.test()
async def bus_errors(dut):
    """SLVERR on each DRAM stream: BUS_ERROR with module, index and ERR_ADDR as golden."""
    import logging

    from rtl_programs import bus_errors as bus_programs

    cfg = cfg_from_env()
    axil, ram, checker, model = await start_checked(dut, cfg)
    logging.getLogger("cocotb.vta_top.m_axi").setLevel(logging.ERROR)  # "operation failed"
    for prog in bus_programs(cfg):
        inject_bus_error(ram, prog.bus_error)
        ram.write(0, prog.image(cfg, MEM_SIZE).tobytes())
        result = await run_program(dut, axil, prog.insn_addr, prog.insn_count)
        addr = await read64(axil, "ERR_ADDR")
        want = golden_run(cfg, prog, MEM_SIZE, model)
        assert addr == want.address, (
            f"{prog.name}: ERR_ADDR expected 0x{want.address:x}, got 0x{addr:x}")
        await with_timeout(_until_quiet(dut, checker), 200, "us")
        check(prog.name, want, ram, *result)
    assert not checker.errors, checker.errors[:5]


@pytest.mark.parametrize(
    "simulator, preset", sim_params(("tiny", "default"), ("tiny",), slow=("default",))
)
def test_top_faults(simulator, preset):
    build_and_run(simulator, preset, "vta_top", "test_top_faults",
                  parameters=top_params(preset, MEM_SIZE),
                  extra_env={"VTA_SEED": os.environ.get("VTA_SEED", "1")})

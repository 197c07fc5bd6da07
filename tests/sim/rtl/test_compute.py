"""vta_compute: UOP/ACC/ACC_8BIT loads, GEMM and ALU through the pipeline, against the golden model.

INP and WGT are preloaded through the wrapper; the engine loads micro-ops and
accumulators itself from cocotbext-axi's AxiRam (random stalls).  Every case
starts from a reset engine whose ACC and OUT entries 0..63 are zeroed as the
golden model has them, and ends comparing OUT 0..63 with the model's; where the
case computed accumulators, again after SHR by 8, 16 and 24, so all 32 bits of
each ACC lane are checked.  The cases:

* ``random_program``: random GEMM and ALU instructions whose micro-op kernels hit
  the same ACC entry one and two micro-ops apart (the read-after-write hazards the
  pipeline forwards around), padded ACC and ACC_8BIT loads, every token flag.
* ``mul``: MUL, whose result is written a cycle later than the others' (the engine
  leaves a cycle free after each MUL micro-op): dependent chains (each micro-op's
  dst the next one's src or dst), immediates, loops that move source and
  destination, non-MUL instructions and a GEMM reading its results.
* ``one_uop_per_cycle``: a 256-micro-op GEMM takes at most one cycle per micro-op
  plus a small fixed overhead.
* ``faults``: ALU opcode, memory type, uop_end, micro-op index + loop offsets
  beyond each buffer, device memory, a full g2s queue, the first with MUL
  micro-ops in flight; the range check's cache of a micro-op range's largest
  fields (a UOP load into the range invalidates it, a nest reusing it is checked
  with its maxima); no fault writes OUT.
* ``reset_during_mul``: a one-cycle reset with MUL micro-ops in flight empties
  the pipeline at once, and the engine is exact after it.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import cocotb
import numpy as np
import pytest
from cocotb.triggers import ClockCycles, FallingEdge, RisingEdge
from compare import assert_same
from rtl_common import (
    cfg_from_env,
    expect_fault,
    insn_word,
    issue,
    read_port,
    run_wrapper,
    send_cmd,
    sim_params,
    start_engine,
    wait_high,
    write_port,
)
from rtl_programs import ADD, FINISH, MAX, MIN, MUL, SHR, Kernels, alu, gemm, load, uop_bytes

from vta.errors import ErrorCode
from vta.isa import MemId, MemInsn, Opcode, Uop, encode_stream

MEM = 1 << 20
UOP_ADDR, ACC_ADDR, ACC8_ADDR, INSN_ADDR = 0x1000, 0x4000, 0x20000, 0x40000
ZERO_UOP_ADDR = UOP_ADDR + 0x1000  # one micro-op of all zeros
EDGE_UOP_ADDR = UOP_ADDR + 0x2000  # dst 1, then dst at the ACC buffer's last entry
ODD_ADDR = 0x10000  # odd accumulators for the MUL program
N = 64  # ACC and OUT entries the cases use and compare
#: no instruction of the cases takes a tenth of this (the 256-micro-op GEMM about 270): a
#: hung engine fails each case after it, not after wait_retire's default of 200,000
RETIRE_CYCLES = 20000
ALL = (0, 1)  # micro-op 0 over entries 0..N-1 (with factor 1 on the outer loop)
ADD_ZERO_ALL = alu(ADD, ALL, N, use_imm=1, imm=0, dst_factor_out=1)
MUL_ALL = alu(MUL, ALL, N, use_imm=1, imm=3, dst_factor_out=1, src_factor_out=1)


# ------------------------------------------------------------------ programs
@dataclass
class Layout:
    """The micro-op kernels of the cases, one after the other from UOP entry 0."""

    kernels: Kernels
    gemm: list  # random GEMM kernels into ACC 48..55, some micro-ops repeating the dst before
    alu: list  # random ALU kernels over ACC 0..47
    fast: tuple  # dst 48 + j, src j, wgt j for j < 4
    chain: tuple  # MUL: each micro-op's dst the next one's src or dst
    one: tuple
    square: tuple


def layout(rng: random.Random) -> Layout:
    k = Kernels()
    gk = []
    for _ in range(4):
        body, dst = [], rng.randint(0, 7)
        for _ in range(rng.randint(1, 5)):
            if rng.random() < 0.5:
                dst = rng.randint(0, 7)  # else: same dst as the micro-op before
            body.append(Uop(48 + dst, rng.randint(0, 15), rng.randint(0, 7)))
        gk.append(k.add(body))
    ak = [k.add([Uop(rng.randint(0, 47), rng.randint(0, 47)) for _ in range(3)])
          for _ in range(4)]
    fast = k.add([Uop(48 + j, j, j) for j in range(4)])
    chain = k.add([Uop(1, 2), Uop(2, 1), Uop(2, 2), Uop(1, 2), Uop(5, 1)])
    return Layout(k, gk, ak, fast, chain, k.add([Uop(6, 7)]), k.add([Uop(8, 8)]))


def random_nests(cfg, rng: random.Random, lay: Layout) -> list:
    """Padded ACC and ACC_8BIT loads, then random GEMM and ALU nests; every token flag."""
    insns = [
        lay.kernels.load(UOP_ADDR, pop_prev_dep=1),
        load(MemId.ACC, ACC_ADDR // cfg.ACC_ELEM_BYTES + 1, 5, 3, x_stride=9, y_pad_0=1,
             y_pad_1=1, x_pad_0=1, x_pad_1=1, pop_next_dep=1, push_prev_dep=1),
        load(MemId.ACC_8BIT, ACC8_ADDR // (cfg.BATCH * cfg.BLOCK_OUT) + 2, 4, 3, x_stride=5,
             sram_base=35, push_next_dep=1),
        gemm(lay.fast, 2, reset_reg=1, dst_factor_out=4),
    ]
    for _ in range(6):
        kernel = rng.choice(lay.gemm)
        io, ii = rng.randint(1, 3), rng.randint(1, 3)
        insns.append(gemm(kernel, io, ii, dst_factor_out=rng.choice([0, 1, 2]),
                          dst_factor_in=rng.choice([0, 1]), src_factor_out=rng.randint(0, 3),
                          src_factor_in=rng.randint(0, 2), wgt_factor_out=rng.randint(0, 2),
                          wgt_factor_in=rng.randint(0, 1)))
    for _ in range(8):
        kernel = rng.choice(lay.alu)
        op = rng.randint(0, 4)
        insns.append(alu(op, kernel, use_imm=rng.randint(0, 1),
                         imm=rng.choice([-33, -7, 0, 2, 5, 31, 40]) if op == SHR
                         else rng.randint(-500, 500),
                         iter_out=rng.randint(1, 2), iter_in=rng.randint(1, 2),
                         dst_factor_out=rng.randint(0, 3), dst_factor_in=rng.randint(0, 2),
                         src_factor_out=rng.randint(0, 3), src_factor_in=rng.randint(0, 2)))
    return insns


def mul_program(cfg, lay: Layout) -> list[list]:
    """MUL against forwarding and the issue gap, in two parts.

    Each part starts from odd accumulators (ACC 0..15 loaded from ODD_ADDR): products
    of odd numbers stay odd, so a stale or misplaced operand cannot vanish into
    trailing zeros.
    """
    odd = load(MemId.ACC, ODD_ADDR // cfg.ACC_ELEM_BYTES, 16)
    return [[
        odd,
        # a dependent chain, repeated over both loops (dst reused every iteration)
        alu(MUL, lay.chain, 2, 2),
        # with the immediate: one dst multiplied back to back, wrapping
        alu(MUL, lay.one, 5, use_imm=1, imm=-3),
        alu(MUL, lay.one, 3, 2, use_imm=1, imm=12345),
        # sources and destinations moving with the loops (some read the entry before)
        alu(MUL, lay.one, 3, 2, dst_factor_in=1, src_factor_out=1),
        alu(MUL, lay.one, 4, dst_factor_out=1, src_factor_out=1),
        # squares (src = dst), back to back
        alu(MUL, lay.square, 4),
    ], [
        odd,
        # non-MUL instructions right before and after MULs, reading their results
        alu(MUL, lay.chain),
        alu(ADD, lay.chain, 2),
        alu(MUL, lay.chain),
        alu(SHR, lay.chain, use_imm=1, imm=3),
        alu(MUL, lay.chain),
        alu(MAX, lay.chain, 1, 2),
        # MULs into the GEMM kernel's accumulators (dst 48..51), then a GEMM onto them
        alu(MUL, lay.fast, use_imm=1, imm=-7),
        alu(MUL, lay.fast),
        gemm(lay.fast),
    ]]


def fault_steps(cfg) -> list[tuple]:
    """The ``faults`` case in order: (instruction, its fault or None, input held high)."""
    acc = cfg.ACC_BUFF_DEPTH
    # the range check caches a micro-op range's largest fields: reset GEMMs over UOP entry
    # `top` (only the destination is checked; they write ACC zeros, no OUT)
    top = cfg.UOP_BUFF_DEPTH - 1

    def uop(k):  # micro-op k of EDGE_UOP_ADDR into entry `top`
        return load(MemId.UOP, EDGE_UOP_ADDR // 4 + k, sram_base=top)

    def resets(n):  # dst, dst + 1, ... dst + n - 1
        return gemm((top, top + 1), n, reset_reg=1, dst_factor_out=1)

    return [
        (alu(5, ALL), ErrorCode.BAD_ALU_OPCODE, None),  # MUL_ALL's micro-ops still in flight
        (MemInsn(opcode=Opcode.LOAD, memory_type=MemId.OUT, x_size=1, y_size=1),
         ErrorCode.BAD_MEMORY_TYPE, None),
        (MemInsn(opcode=Opcode.LOAD, memory_type=7), ErrorCode.BAD_MEMORY_TYPE, None),
        (gemm((0, cfg.UOP_BUFF_DEPTH + 1)), ErrorCode.SRAM_RANGE, None),
        (gemm(ALL, 3, dst_factor_out=acc - 1), ErrorCode.SRAM_RANGE, None),
        (gemm(ALL, 1, 3, wgt_factor_in=cfg.WGT_BUFF_DEPTH // 2), ErrorCode.SRAM_RANGE, None),
        (alu(MIN, ALL, 1, 3, src_factor_in=acc - 1), ErrorCode.SRAM_RANGE, None),
        (load(MemId.ACC, MEM // cfg.ACC_ELEM_BYTES), ErrorCode.DRAM_RANGE, None),
        (FINISH.replace(push_next_dep=1), ErrorCode.TOKEN_OVERFLOW, "g2s_full"),
        (uop(0), None, None),
        (resets(2), None, None),  # dst 1, 2: scanned and cached
        (uop(1), None, None),  # dst acc - 1 into the cached range
        (resets(2), ErrorCode.SRAM_RANGE, None),  # acc: the cache must be stale
        (resets(1), None, None),  # scanned again: acc - 1 alone is in range
        (resets(2), ErrorCode.SRAM_RANGE, None),  # the cached range: acc
    ]


# ------------------------------------------------------------------ the testbench
class Bench:
    """The engine, reset and zeroed, with the golden model beside it in the same state."""

    def __init__(self, dut, cfg, tokens, model, rng: random.Random):
        self.dut, self.cfg, self.tokens, self.model, self.rng = dut, cfg, tokens, model, rng
        self.lay = layout(rng)
        self.index = 0

    @classmethod
    async def start(cls, dut) -> Bench:
        cfg = cfg_from_env()
        ram, tokens = await start_engine(
            dut, MEM, stall_seed=17, tokens=("l2g", "s2g"),
            inputs=("run", "halt", "cmd_valid", "g2l_full", "g2s_full", "inp_we", "wgt_we",
                    "out_raddr"))
        nrng = np.random.default_rng(77)
        lanes = cfg.BATCH * cfg.BLOCK_OUT
        mem = np.zeros(MEM, dtype=np.uint8)
        mem[ACC_ADDR : ACC_ADDR + N * lanes * 4] = nrng.integers(
            -3000, 3000, N * lanes, dtype=np.int32).view(np.uint8)
        mem[ACC8_ADDR : ACC8_ADDR + N * lanes] = nrng.integers(0, 256, N * lanes, dtype=np.uint8)
        mem[ODD_ADDR : ODD_ADDR + 16 * lanes * 4] = (
            nrng.integers(-(2**31), 2**31, 16 * lanes, dtype=np.int64).astype(np.int32) | 1
        ).view(np.uint8)
        bench = cls(dut, cfg, tokens, None, random.Random(77))
        for addr, data in ((UOP_ADDR, bench.lay.kernels.image(cfg)),
                           (ZERO_UOP_ADDR, uop_bytes([Uop()], cfg)),
                           (EDGE_UOP_ADDR, uop_bytes([Uop(1), Uop(cfg.ACC_BUFF_DEPTH - 1)], cfg))):
            mem[addr : addr + len(data)] = np.frombuffer(data, dtype=np.uint8)
        ram.write(0, mem.tobytes())
        # INP and WGT through the wrapper's write ports; the golden model gets the same
        from vta.golden import GoldenModel

        bench.model = model = GoldenModel(cfg, mem)
        inp = nrng.integers(-128, 128, size=(32, cfg.BATCH, cfg.BLOCK_IN), dtype=np.int8)
        wgt = nrng.integers(-128, 128, size=(16, cfg.BLOCK_OUT, cfg.BLOCK_IN), dtype=np.int8)
        model.sp.inp[:32] = inp
        model.sp.wgt[:16] = wgt
        model.sp.acc[:N] = 0
        model.sp.out[:N] = 0
        await write_port(dut, "inp", [int.from_bytes(e.tobytes(), "little") for e in inp])
        await write_port(dut, "wgt", [int.from_bytes(e.tobytes(), "little") for e in wgt])
        dut.run.value = 1
        # ACC and OUT 0..N-1 zeroed as the model has them (reset, then ALU ADD 0 writes OUT)
        await bench.execute([load(MemId.UOP, ZERO_UOP_ADDR // 4),
                             gemm(ALL, N, reset_reg=1, dst_factor_out=1), ADD_ZERO_ALL],
                            golden=False)
        return bench

    def acc_load(self) -> MemInsn:
        """ACC 0..N-1 from random accumulators."""
        return load(MemId.ACC, ACC_ADDR // self.cfg.ACC_ELEM_BYTES, N)

    async def execute(self, program, golden: bool = True) -> None:
        """Each instruction must retire with its own index and token pushes; then the model."""
        for insn in program:
            kind, seen = await issue(self.dut, self.cfg, insn, self.index,
                                     watch=("g2l_push", "g2s_push", "index"),
                                     max_cycles=RETIRE_CYCLES)
            assert kind == "retire", f"instruction {self.index} {insn}: fault {seen}"
            assert seen == {"g2l_push": insn.push_prev_dep, "g2s_push": insn.push_next_dep,
                            "index": self.index}
            self.index += 1
        if golden:
            self.golden(program)

    def golden(self, program) -> None:
        """Run ``program`` on the model (its token flags are checked on the engine)."""
        flagless = [i.replace(pop_prev_dep=0, pop_next_dep=0, push_prev_dep=0, push_next_dep=0)
                    for i in program]
        stream = encode_stream([*flagless, FINISH], self.cfg)
        self.model.mem[INSN_ADDR : INSN_ADDR + len(stream)] = np.frombuffer(stream, np.uint8)
        self.model.run(INSN_ADDR, len(program) + 1)

    async def fault(self, insn, code, hold: str | None = None) -> None:
        await expect_fault(self.dut, self.cfg, insn, code, self.index, hold=hold)
        self.index += 1

    async def compare(self, what: str) -> None:
        """OUT 0..N-1 against the model's."""
        got = await read_port(self.dut, "out", 0, N, self.cfg.BATCH * self.cfg.BLOCK_OUT)
        assert_same(got, self.model.sp.out[:N].view(np.uint8).reshape(N, -1), f"{what}: OUT")

    async def compare_all_bits(self, what: str) -> None:
        """OUT now and after SHR by 8, 16 and 24: every bit of ACC 0..N-1 (UOP 0 reloaded)."""
        await self.compare(what)
        await self.execute([load(MemId.UOP, ZERO_UOP_ADDR // 4)])
        for shift in (8, 16, 24):
            await self.execute([alu(SHR, ALL, N, use_imm=1, imm=8, dst_factor_out=1,
                                    src_factor_out=1)])
            await self.compare(f"{what}, then SHR {shift}")


# ------------------------------------------------------------------ the cases
@cocotb.test()
async def random_program(dut):
    bench = await Bench.start(dut)
    l2g, s2g = bench.tokens["l2g"], bench.tokens["s2g"]
    l2g.give(1)
    s2g.give(1)
    await bench.execute(random_nests(bench.cfg, bench.rng, bench.lay))
    assert l2g.popped == 1 and s2g.popped == 1, (l2g.popped, s2g.popped)
    await bench.compare_all_bits("random program")


@cocotb.test()
async def mul(dut):
    bench = await Bench.start(dut)
    await bench.execute([bench.lay.kernels.load(UOP_ADDR), bench.acc_load()])
    first, second = mul_program(bench.cfg, bench.lay)
    await bench.execute(first)
    await bench.compare("MUL program, part 1")
    await bench.execute(second)
    await bench.compare_all_bits("MUL program, part 2")


@cocotb.test()
async def one_uop_per_cycle(dut):
    bench = await Bench.start(dut)
    await bench.execute([bench.lay.kernels.load(UOP_ADDR)])
    big = gemm(bench.lay.fast, 16, 4)  # 4 micro-ops x 64 iterations
    cocotb.start_soon(send_cmd(dut, insn_word(big, bench.cfg), bench.index))
    await wait_high(dut, "evt_start", "a 256-micro-op GEMM sent")
    for _ in range(256 + 16):
        await RisingEdge(dut.clk)
        if int(dut.evt_retire.value):
            assert int(dut.gemm_uops.value) == 256
            break
    else:
        raise AssertionError("256 micro-ops took more than 256 + 16 cycles")
    bench.index += 1
    bench.golden([big])
    await bench.compare_all_bits("256-micro-op GEMM")


@cocotb.test()
async def faults(dut):
    bench = await Bench.start(dut)
    # every entry times 3: MUL micro-ops are in flight when the next instruction faults
    # (and the engine is halted); they complete
    await bench.execute([bench.acc_load(), MUL_ALL])
    for insn, code, hold in fault_steps(bench.cfg):
        if code is None:
            await bench.execute([insn])
        else:
            await bench.fault(insn, code, hold)
    await bench.compare("after the faults")  # they wrote nothing


@cocotb.test()
async def reset_during_mul(dut):
    bench = await Bench.start(dut)
    await bench.execute([bench.acc_load()])
    # one MUL micro-op at D or at E in every cycle: two offsets
    for offset in (20, 21):
        cocotb.start_soon(send_cmd(dut, insn_word(MUL_ALL, bench.cfg), bench.index))
        await wait_high(dut, "evt_start", f"a MUL sent to be reset {offset} cycles in")
        await ClockCycles(dut.clk, offset)
        await FallingEdge(dut.clk)
        dut.rst.value = 1
        await FallingEdge(dut.clk)
        dut.rst.value = 0
        assert int(dut.idle.value), f"reset {offset} cycles into a MUL: still busy after it"
        bench.index += 1
    await bench.execute([bench.acc_load(), ADD_ZERO_ALL])
    await bench.compare("after a reset")


@pytest.mark.parametrize("simulator, preset", sim_params(("tiny", "default", "aws"), ("tiny",)))
def test_compute(simulator, preset):
    run_wrapper(simulator, preset, "compute", MEM)

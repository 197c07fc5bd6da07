"""vta_compute: UOP/ACC/ACC_8BIT loads, GEMM and ALU through the pipeline, against the golden model.

INP and WGT are preloaded through the wrapper; the engine loads micro-ops and
accumulators itself from cocotbext-axi's AxiRam (random stalls).  Random GEMM
and ALU instructions use micro-op kernels that hit the same ACC entry one and
two micro-ops apart (the read-after-write hazards the pipeline forwards
around).  MUL, whose result is written a cycle later than the others (the
engine leaves a cycle free after each MUL micro-op), runs dependent chains
(each micro-op's dst the next one's src or dst), immediates, loops that move
source and destination, and non-MUL instructions and a GEMM reading its
results; a fault and a one-cycle reset come with MUL micro-ops in flight.
The OUT scratchpad is compared with the golden model's after the program
and the MUL program, and again after SHR 8, 16 and 24 over every touched entry so all 32
bits of each ACC lane are checked.  A 256-micro-op GEMM must take at most one
cycle per micro-op plus a small fixed overhead.  Faults: ALU opcode, memory
type, uop_end and micro-op index + loop offsets beyond their buffers.
"""

from __future__ import annotations

import logging
import random

import cocotb
import numpy as np
import pytest
from cocotb.triggers import ClockCycles, FallingEdge, RisingEdge
from rtl_common import (
    WRAPPERS,
    TokenSource,
    build_and_run,
    cfg_from_env,
    insn_word,
    send_cmd,
    sim_params,
    stall_axi_ram,
    start_clock_reset,
    wait_retire,
)

MEM = 1 << 20
UOP_ADDR, ACC_ADDR, ACC8_ADDR, INSN_ADDR = 0x1000, 0x4000, 0x20000, 0x40000
ODD_ADDR = 0x10000  # odd accumulators for the MUL program


def build_program(cfg, rng):
    from vta.isa import AluInsn, GemmInsn, MemId, MemInsn, Opcode, Uop

    uops, insns = [], []

    def kernel(body):
        start = len(uops)
        uops.extend(body)
        return start, len(uops)

    gk = []
    for _ in range(4):
        body, dst = [], rng.randint(0, 7)
        for _ in range(rng.randint(1, 5)):
            if rng.random() < 0.5:
                dst = rng.randint(0, 7)  # else: same dst as the micro-op before
            body.append(
                Uop(dst_idx=48 + dst, src_idx=rng.randint(0, 15), wgt_idx=rng.randint(0, 7))
            )
        gk.append(kernel(body))
    ak = [
        kernel([Uop(dst_idx=rng.randint(0, 47), src_idx=rng.randint(0, 47)) for _ in range(3)])
        for _ in range(4)
    ]
    fast = kernel([Uop(dst_idx=48 + j, src_idx=j, wgt_idx=j) for j in range(4)])
    # MUL kernels (mul_program): a dependent chain, each micro-op's dst the next one's
    # src or dst; and single micro-ops for loops
    mul_chain = kernel(
        [
            Uop(dst_idx=1, src_idx=2),
            Uop(dst_idx=2, src_idx=1),
            Uop(dst_idx=2, src_idx=2),
            Uop(dst_idx=1, src_idx=2),
            Uop(dst_idx=5, src_idx=1),
        ]
    )
    mul_one = kernel([Uop(dst_idx=6, src_idx=7)])
    mul_square = kernel([Uop(dst_idx=8, src_idx=8)])
    insns.append(
        MemInsn(
            opcode=Opcode.LOAD,
            memory_type=MemId.UOP,
            dram_base=UOP_ADDR // 4,
            y_size=1,
            x_size=len(uops),
            x_stride=len(uops),
            pop_prev_dep=1,
        )
    )
    insns.append(
        MemInsn(
            opcode=Opcode.LOAD,
            memory_type=MemId.ACC,
            sram_base=0,
            dram_base=ACC_ADDR // cfg.ACC_ELEM_BYTES + 1,
            y_size=3,
            x_size=5,
            x_stride=9,
            y_pad_0=1,
            y_pad_1=1,
            x_pad_0=1,
            x_pad_1=1,
            pop_next_dep=1,
            push_prev_dep=1,
        )
    )
    insns.append(
        MemInsn(
            opcode=Opcode.LOAD,
            memory_type=MemId.ACC_8BIT,
            sram_base=35,
            dram_base=ACC8_ADDR // (cfg.BATCH * cfg.BLOCK_OUT) + 2,
            y_size=3,
            x_size=4,
            x_stride=5,
            push_next_dep=1,
        )
    )
    insns.append(
        GemmInsn(
            opcode=Opcode.GEMM,
            reset_reg=1,
            uop_bgn=fast[0],
            uop_end=fast[1],
            iter_out=2,
            iter_in=1,
            dst_factor_out=4,
        )
    )
    for _ in range(6):
        bgn, end = rng.choice(gk)
        io, ii = rng.randint(1, 3), rng.randint(1, 3)
        insns.append(
            GemmInsn(
                opcode=Opcode.GEMM,
                uop_bgn=bgn,
                uop_end=end,
                iter_out=io,
                iter_in=ii,
                dst_factor_out=rng.choice([0, 1, 2]),
                dst_factor_in=rng.choice([0, 1]),
                src_factor_out=rng.randint(0, 3),
                src_factor_in=rng.randint(0, 2),
                wgt_factor_out=rng.randint(0, 2),
                wgt_factor_in=rng.randint(0, 1),
            )
        )
    for _ in range(8):
        bgn, end = rng.choice(ak)
        op = rng.randint(0, 4)
        insns.append(
            AluInsn(
                opcode=Opcode.ALU,
                alu_opcode=op,
                use_imm=rng.randint(0, 1),
                imm=rng.choice([-33, -7, 0, 2, 5, 31, 40]) if op == 3 else rng.randint(-500, 500),
                uop_bgn=bgn,
                uop_end=end,
                iter_out=rng.randint(1, 2),
                iter_in=rng.randint(1, 2),
                dst_factor_out=rng.randint(0, 3),
                dst_factor_in=rng.randint(0, 2),
                src_factor_out=rng.randint(0, 3),
                src_factor_in=rng.randint(0, 2),
            )
        )
    return uops, insns, fast, (mul_chain, mul_one, mul_square)


def mul_program(cfg, chain, one, square, fast):
    """MUL (written a cycle later than other results) against forwarding and the issue gap.

    Two parts, each from odd accumulators (ACC 0..15 loaded from ODD_ADDR): products of odd
    numbers stay odd, so a stale or misplaced operand cannot vanish into trailing zeros.
    """
    from vta.isa import AluInsn, GemmInsn, MemId, MemInsn, Opcode

    def alu(op, kernel, **fields):
        return AluInsn(opcode=Opcode.ALU, alu_opcode=op, uop_bgn=kernel[0], uop_end=kernel[1],
                       **{"iter_out": 1, "iter_in": 1, **fields})

    odd = MemInsn(opcode=Opcode.LOAD, memory_type=MemId.ACC,
                  dram_base=ODD_ADDR // cfg.ACC_ELEM_BYTES, y_size=1, x_size=16, x_stride=16)
    mul, add, shr, mx = 4, 2, 3, 1
    return [
        odd,
        # a dependent chain, repeated over both loops (dst reused every iteration)
        alu(mul, chain, iter_out=2, iter_in=2),
        # with the immediate: one dst multiplied back to back, wrapping
        alu(mul, one, use_imm=1, imm=-3, iter_out=5),
        alu(mul, one, use_imm=1, imm=12345, iter_out=3, iter_in=2),
        # sources and destinations moving with the loops (some read the entry before)
        alu(mul, one, iter_out=3, iter_in=2, dst_factor_in=1, src_factor_out=1),
        alu(mul, one, iter_out=4, dst_factor_out=1, src_factor_out=1),
        # squares (src = dst), back to back
        alu(mul, square, iter_out=4),
    ], [
        odd,
        # non-MUL instructions right before and after MULs, reading their results
        alu(mul, chain),
        alu(add, chain, iter_out=2),
        alu(mul, chain),
        alu(shr, chain, use_imm=1, imm=3),
        alu(mul, chain),
        alu(mx, chain, iter_in=2),
        # MULs into the GEMM kernel's accumulators (dst 48..51), then a GEMM onto them
        alu(mul, fast, use_imm=1, imm=-7),
        alu(mul, fast),
        GemmInsn(opcode=Opcode.GEMM, uop_bgn=fast[0], uop_end=fast[1], iter_out=1, iter_in=1),
    ]


def shr_program(cfg, k):
    from vta.isa import AluInsn, Opcode

    # micro-op 0 of the fast kernel is dst 48, src 0; use an explicit offset loop from 0
    return [
        AluInsn(
            opcode=Opcode.ALU,
            alu_opcode=3,
            use_imm=1,
            imm=k,
            uop_bgn=0,
            uop_end=1,
            iter_out=64,
            iter_in=1,
            dst_factor_out=1,
            src_factor_out=1,
        )
    ]


@cocotb.test()
async def compute(dut):
    from cocotbext.axi import AxiBus, AxiRam

    from vta.errors import ErrorCode
    from vta.golden import GoldenModel
    from vta.isa import AluInsn, GemmInsn, MemId, MemInsn, Opcode, Uop, encode_stream, encode_uop

    cfg = cfg_from_env()
    for s in ("run", "halt", "cmd_valid", "g2l_full", "g2s_full", "inp_we", "wgt_we", "out_raddr"):
        getattr(dut, s).value = 0
    ram = AxiRam(AxiBus.from_prefix(dut, "m_axi"), dut.clk, dut.rst, size=MEM)
    logging.getLogger("cocotb").setLevel(logging.WARNING)
    stall_axi_ram(ram, seed=17)
    rng = random.Random(77)
    nrng = np.random.default_rng(77)
    l2g = TokenSource(dut, "l2g_nonempty", "l2g_pop")
    s2g = TokenSource(dut, "s2g_nonempty", "s2g_pop")
    await start_clock_reset(dut)
    cocotb.start_soon(l2g.run())
    cocotb.start_soon(s2g.run())

    # memory image, INP/WGT preload; the golden model gets the same
    mem = np.zeros(MEM, dtype=np.uint8)
    lanes = cfg.BATCH * cfg.BLOCK_OUT
    mem[ACC_ADDR : ACC_ADDR + 64 * lanes * 4] = nrng.integers(
        -3000, 3000, 64 * lanes, dtype=np.int32
    ).view(np.uint8)
    mem[ACC8_ADDR : ACC8_ADDR + 64 * lanes] = nrng.integers(0, 256, 64 * lanes, dtype=np.uint8)
    mem[ODD_ADDR : ODD_ADDR + 16 * lanes * 4] = (
        nrng.integers(-(2**31), 2**31, 16 * lanes, dtype=np.int64).astype(np.int32) | 1
    ).view(np.uint8)
    uops, insns, fast, mul_kernels = build_program(cfg, rng)
    uop_bytes = b"".join(encode_uop(u, cfg) for u in uops)
    mem[UOP_ADDR : UOP_ADDR + len(uop_bytes)] = np.frombuffer(uop_bytes, dtype=np.uint8)
    model = GoldenModel(cfg, mem.copy())
    inp = nrng.integers(-128, 128, size=(32, cfg.BATCH, cfg.BLOCK_IN), dtype=np.int8)
    wgt = nrng.integers(-128, 128, size=(16, cfg.BLOCK_OUT, cfg.BLOCK_IN), dtype=np.int8)
    model.sp.inp[:32] = inp
    model.sp.wgt[:16] = wgt
    model.sp.acc[:64] = 0
    model.sp.out[:64] = 0
    ram.write(0, mem.tobytes())
    for i in range(32):
        await FallingEdge(dut.clk)
        dut.inp_we.value, dut.inp_waddr.value = 1, i
        dut.inp_wdata.value = int.from_bytes(inp[i].tobytes(), "little")
    dut.inp_we.value = 0
    for i in range(16):
        await FallingEdge(dut.clk)
        dut.wgt_we.value, dut.wgt_waddr.value = 1, i
        dut.wgt_wdata.value = int.from_bytes(wgt[i].tobytes(), "little")
    await FallingEdge(dut.clk)
    dut.wgt_we.value = 0
    dut.run.value = 1

    index = 0

    async def execute(program, golden=True):
        nonlocal index
        for insn in program:
            cocotb.start_soon(send_cmd(dut, insn_word(insn, cfg), index))
            kind, seen = await wait_retire(dut, watch=("g2l_push", "g2s_push", "index"))
            assert kind == "retire", f"instruction {index} {insn}: fault {seen}"
            assert seen == {
                "g2l_push": insn.push_prev_dep,
                "g2s_push": insn.push_next_dep,
                "index": index,
            }
            index += 1
        if golden:
            flagless = [
                i.replace(pop_prev_dep=0, pop_next_dep=0, push_prev_dep=0, push_next_dep=0)
                for i in program
            ]  # tokens checked above
            stream = encode_stream([*flagless, GemmInsn(opcode=Opcode.FINISH)], cfg)
            model.mem[INSN_ADDR : INSN_ADDR + len(stream)] = np.frombuffer(stream, dtype=np.uint8)
            model.run(INSN_ADDR, len(program) + 1)

    async def compare(what):
        for i in range(65):
            await FallingEdge(dut.clk)
            if i < 64:
                dut.out_raddr.value = i
            if i:
                got = int(dut.out_rdata.value).to_bytes(lanes, "little")
                want = model.sp.out[i - 1].tobytes()
                assert got == want, f"{what}: OUT[{i - 1}] expected {want.hex()} got {got.hex()}"
            await RisingEdge(dut.clk)

    # zero ACC/OUT 0..63 as the model has them (reset, then ALU ADD 0 writes OUT)
    add_zero_all = AluInsn(opcode=Opcode.ALU, alu_opcode=2, use_imm=1, imm=0, uop_bgn=0,
                           uop_end=1, iter_out=64, iter_in=1, dst_factor_out=1)
    zero_uop = [Uop()]
    zu = encode_uop(zero_uop[0], cfg)
    ram.write(UOP_ADDR + 4096, zu)
    await execute(
        [
            MemInsn(
                opcode=Opcode.LOAD,
                memory_type=MemId.UOP,
                sram_base=0,
                dram_base=(UOP_ADDR + 4096) // 4,
                y_size=1,
                x_size=1,
                x_stride=1,
            ),
            GemmInsn(
                opcode=Opcode.GEMM,
                reset_reg=1,
                uop_bgn=0,
                uop_end=1,
                iter_out=64,
                iter_in=1,
                dst_factor_out=1,
            ),
            add_zero_all,
        ],
        golden=False,
    )
    l2g.give(1)
    s2g.give(1)
    await execute(insns)
    assert l2g.popped == 1 and s2g.popped == 1
    await compare("program")
    for part, program in enumerate(mul_program(cfg, *mul_kernels, fast)):
        await execute(program)
        await compare(f"MUL program, part {part + 1}")

    # one micro-op per cycle: 4 micro-ops x 64 iterations
    cocotb.start_soon(
        send_cmd(
            dut,
            insn_word(
                GemmInsn(
                    opcode=Opcode.GEMM, uop_bgn=fast[0], uop_end=fast[1], iter_out=16, iter_in=4
                ),
                cfg,
            ),
            index,
        )
    )
    while not int(dut.evt_start.value):
        await RisingEdge(dut.clk)
    cycles = 0
    while True:
        await RisingEdge(dut.clk)
        cycles += 1
        if int(dut.evt_retire.value):
            assert int(dut.gemm_uops.value) == 256
            break
    assert cycles <= 256 + 16, f"256 micro-ops took {cycles} cycles"
    stream = encode_stream(
        [
            GemmInsn(opcode=Opcode.GEMM, uop_bgn=fast[0], uop_end=fast[1], iter_out=16, iter_in=4),
            GemmInsn(opcode=Opcode.FINISH),
        ],
        cfg,
    )
    model.mem[INSN_ADDR : INSN_ADDR + len(stream)] = np.frombuffer(stream, dtype=np.uint8)
    model.run(INSN_ADDR, 2)
    index += 1

    # every bit of the accumulators, 8 at a time (micro-op 0 of the program is re-loaded)
    await execute(
        [
            MemInsn(
                opcode=Opcode.LOAD,
                memory_type=MemId.UOP,
                sram_base=0,
                dram_base=(UOP_ADDR + 4096) // 4,
                y_size=1,
                x_size=1,
                x_stride=1,
            )
        ]
    )
    for _ in range(3):
        await execute(shr_program(cfg, 8))
        await compare("after SHR 8")

    # faults
    async def fault(insn, code):
        nonlocal index
        cocotb.start_soon(send_cmd(dut, insn_word(insn, cfg), index))
        kind, seen = await wait_retire(dut)
        assert (kind, seen) == ("err", {"err_code": int(code), "index": index}), (insn, seen)
        dut.halt.value = 1
        await ClockCycles(dut.clk, 3)
        while not int(dut.rd_idle.value):
            await RisingEdge(dut.clk)
        dut.halt.value = 0
        index += 1

    # every entry times 3: MUL micro-ops are in flight when the next instruction faults
    # (and the engine is halted); they complete
    mul_all = AluInsn(opcode=Opcode.ALU, alu_opcode=4, use_imm=1, imm=3, uop_bgn=0, uop_end=1,
                      iter_out=64, iter_in=1, dst_factor_out=1, src_factor_out=1)
    await execute([mul_all])
    await fault(
        AluInsn(opcode=Opcode.ALU, alu_opcode=5, uop_bgn=0, uop_end=1, iter_out=1, iter_in=1),
        ErrorCode.BAD_ALU_OPCODE,
    )
    await fault(
        MemInsn(opcode=Opcode.LOAD, memory_type=MemId.OUT, x_size=1, y_size=1),
        ErrorCode.BAD_MEMORY_TYPE,
    )
    await fault(MemInsn(opcode=Opcode.LOAD, memory_type=7, x_size=0), ErrorCode.BAD_MEMORY_TYPE)
    await fault(
        GemmInsn(
            opcode=Opcode.GEMM, uop_bgn=0, uop_end=cfg.UOP_BUFF_DEPTH + 1, iter_out=1, iter_in=1
        ),
        ErrorCode.SRAM_RANGE,
    )
    await fault(
        GemmInsn(
            opcode=Opcode.GEMM,
            uop_bgn=0,
            uop_end=1,
            iter_out=3,
            iter_in=1,
            dst_factor_out=cfg.ACC_BUFF_DEPTH - 1,
        ),
        ErrorCode.SRAM_RANGE,
    )
    await fault(
        GemmInsn(
            opcode=Opcode.GEMM,
            uop_bgn=0,
            uop_end=1,
            iter_out=1,
            iter_in=3,
            wgt_factor_in=cfg.WGT_BUFF_DEPTH // 2,
        ),
        ErrorCode.SRAM_RANGE,
    )
    await fault(
        AluInsn(
            opcode=Opcode.ALU,
            alu_opcode=0,
            uop_bgn=0,
            uop_end=1,
            iter_out=1,
            iter_in=3,
            src_factor_in=cfg.ACC_BUFF_DEPTH - 1,
        ),
        ErrorCode.SRAM_RANGE,
    )
    await fault(
        MemInsn(
            opcode=Opcode.LOAD,
            memory_type=MemId.ACC,
            x_size=1,
            y_size=1,
            dram_base=MEM // cfg.ACC_ELEM_BYTES,
        ),
        ErrorCode.DRAM_RANGE,
    )
    dut.g2s_full.value = 1
    await fault(GemmInsn(opcode=Opcode.FINISH, push_next_dep=1), ErrorCode.TOKEN_OVERFLOW)
    dut.g2s_full.value = 0

    # the range check's cache of a micro-op range's largest fields: a UOP load into the range
    # invalidates it, and a nest that reuses a cached range is checked with its maxima
    # (reset GEMMs: only the destination is checked; they write ACC zeros, no OUT)
    top, edge = cfg.UOP_BUFF_DEPTH - 1, cfg.ACC_BUFF_DEPTH - 1
    ram.write(UOP_ADDR + 8192, encode_uop(Uop(dst_idx=1), cfg) + encode_uop(Uop(dst_idx=edge), cfg))

    def load_uop(k):
        return MemInsn(opcode=Opcode.LOAD, memory_type=MemId.UOP, sram_base=top,
                       dram_base=(UOP_ADDR + 8192) // 4 + k, y_size=1, x_size=1, x_stride=1)

    def reset_nest(n):
        return GemmInsn(opcode=Opcode.GEMM, reset_reg=1, uop_bgn=top, uop_end=top + 1,
                        iter_out=n, iter_in=1, dst_factor_out=1)

    model.mem[UOP_ADDR + 8192 : UOP_ADDR + 8200] = np.frombuffer(
        ram.read(UOP_ADDR + 8192, 8), dtype=np.uint8)
    await execute([load_uop(0), reset_nest(2), load_uop(1)])  # dst 1, 2 scanned; then edge
    await fault(reset_nest(2), ErrorCode.SRAM_RANGE)  # edge + 1: the cache must be stale
    await execute([reset_nest(1)])  # scanned again: edge alone is in range
    await fault(reset_nest(2), ErrorCode.SRAM_RANGE)  # the cached range: edge + 1
    # the faults wrote nothing: OUT still equals the model
    await compare("after faults")

    # a one-cycle reset with MUL micro-ops in flight (one at D or at E in every cycle: two
    # offsets): the pipeline is empty at once, and the engine is exact again after it
    for offset in (20, 21):
        cocotb.start_soon(send_cmd(dut, insn_word(mul_all, cfg), index))
        while not int(dut.evt_start.value):
            await RisingEdge(dut.clk)
        await ClockCycles(dut.clk, offset)
        await FallingEdge(dut.clk)
        dut.rst.value = 1
        await FallingEdge(dut.clk)
        dut.rst.value = 0
        assert int(dut.idle.value), f"reset {offset} cycles into a MUL: still busy after it"
        index += 1
    await execute(
        [
            MemInsn(
                opcode=Opcode.LOAD,
                memory_type=MemId.ACC,
                dram_base=ACC_ADDR // cfg.ACC_ELEM_BYTES,
                y_size=1,
                x_size=64,
                x_stride=64,
            ),
            add_zero_all,
        ]
    )
    await compare("after a reset")


@pytest.mark.parametrize("simulator, preset", sim_params(("tiny", "default", "aws"), ("tiny",)))
def test_compute(simulator, preset):
    import vta

    cfg = vta.Config.load(preset)
    params = {
        k: getattr(cfg, k)
        for k in (
            "LOG_INP_WIDTH",
            "LOG_WGT_WIDTH",
            "LOG_ACC_WIDTH",
            "LOG_BATCH",
            "LOG_BLOCK",
            "LOG_UOP_BUFF_SIZE",
            "LOG_INP_BUFF_SIZE",
            "LOG_WGT_BUFF_SIZE",
            "LOG_ACC_BUFF_SIZE",
            "LOG_BUS_WIDTH",
        )
    }
    params["MEM_SIZE"] = MEM
    build_and_run(
        simulator,
        preset,
        "tb_compute",
        "test_compute",
        sources=[WRAPPERS / "tb_compute.v"],
        parameters=params,
    )

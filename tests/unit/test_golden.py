"""Golden model: every instruction kind, padding, ALU edge cases, tokens, errors.

Expectations are NumPy formulas written here, independent of the model.  Every test runs on
both models, the specification (``SpecModel``, the ``spec`` parameter) and the fast model
(``GoldenModel``, ``fast``); tests/unit/test_golden_fast.py compares the two on whole
programs.
"""

from __future__ import annotations

import time
import tracemalloc

import numpy as np
import pytest

import vta
from vta import golden
from vta.config import TOKEN_QUEUE_DEPTH, Config
from vta.errors import ErrorCode
from vta.golden import GoldenModel, SpecModel
from vta.isa import (
    AluInsn,
    AluOp,
    GemmInsn,
    MemId,
    MemInsn,
    Opcode,
    Uop,
    encode_stream,
    encode_uop,
)
from vta.progfile.handbuilt import build_matmul

DEFAULT = Config.load("default")
TINY = Config.load("tiny")
#: TINY with a batch of 2: input rows and accumulators hold two vectors
TINY_B2 = Config(**{**TINY.to_dict(), "LOG_BATCH": 1})
FINISH = GemmInsn(opcode=Opcode.FINISH)
#: The model class the running test uses (set by the ``model_class`` fixture).
MODEL: type = GoldenModel


@pytest.fixture(autouse=True, params=[GoldenModel, SpecModel], ids=["fast", "spec"])
def model_class(request):
    """Every test runs once on each model."""
    global MODEL
    MODEL = request.param
    yield request.param
    MODEL = GoldenModel


class Rig:
    """A golden model plus a bump allocator for operands and the stream."""

    def __init__(self, cfg: Config = DEFAULT, mem_bytes: int = 1 << 22):
        self.cfg = cfg
        self.model = MODEL(cfg, mem_bytes)
        self.next = 0x1000

    def place(self, data: np.ndarray | bytes) -> int:
        raw = np.frombuffer(bytes(data) if isinstance(data, bytes) else data.tobytes(), np.uint8)
        addr = self.next
        self.model.mem[addr:addr + raw.size] = raw
        self.next = (addr + raw.size + 0xFFF) // 0x1000 * 0x1000 + 0x1000
        return addr

    def uops(self, uops: list[Uop]) -> int:
        return self.place(b"".join(encode_uop(u, self.cfg) for u in uops))

    def run(self, insns, **kw):
        addr = self.place(encode_stream(insns, self.cfg))
        return self.model.run(addr, len(insns), **kw)

    def read(self, addr: int, nbytes: int) -> np.ndarray:
        return self.model.mem[addr:addr + nbytes].copy()


def load(mem_id, sram, dram, y, x, stride, **kw) -> MemInsn:
    return MemInsn(opcode=Opcode.LOAD, memory_type=mem_id, sram_base=sram, dram_base=dram,
                   y_size=y, x_size=x, x_stride=stride, **kw)


def store(sram, dram, y, x, stride, **kw) -> MemInsn:
    return MemInsn(opcode=Opcode.STORE, memory_type=MemId.OUT, sram_base=sram, dram_base=dram,
                   y_size=y, x_size=x, x_stride=stride, **kw)


def alu(op, bgn, end, iter_out=1, iter_in=1, dfo=0, dfi=0, sfo=0, sfi=0, imm=None, **kw):
    return AluInsn(opcode=Opcode.ALU, alu_opcode=op, uop_bgn=bgn, uop_end=end,
                   iter_out=iter_out, iter_in=iter_in, dst_factor_out=dfo, dst_factor_in=dfi,
                   src_factor_out=sfo, src_factor_in=sfi, use_imm=int(imm is not None),
                   imm=0 if imm is None else imm, **kw)


def rand(rng, shape, lo, hi, dtype):
    return rng.integers(lo, hi, shape, dtype=np.int64).astype(dtype)


# ----------------------------------------------------------------------- loads
@pytest.mark.parametrize("pads", [(0, 0, 0, 0), (2, 0, 0, 0), (0, 2, 0, 0), (0, 0, 2, 0),
                                  (0, 0, 0, 2), (1, 1, 1, 1), (3, 0, 0, 5)],
                         ids=["none", "y0", "y1", "x0", "x1", "all", "mixed"])
@pytest.mark.parametrize("mem", ["INP", "WGT", "ACC"])
def test_load_2d_with_padding(mem, pads):
    rng = np.random.default_rng(7)
    cfg = DEFAULT
    y0, y1, x0, x1 = pads
    ysz, xsz, stride = 3, 4, 6
    dtype = np.int32 if mem == "ACC" else np.int8
    elem = {"INP": (cfg.BATCH, cfg.BLOCK_IN), "WGT": (cfg.BLOCK_OUT, cfg.BLOCK_IN),
            "ACC": (cfg.BATCH, cfg.BLOCK_OUT)}[mem]
    dram = rand(rng, (ysz, stride, *elem), -100, 100, dtype)  # rows of `stride` elements
    rig = Rig()
    addr = rig.place(dram)
    eb = cfg.elem_bytes_of(mem)
    base = 5
    sram = getattr(rig.model.sp, mem.lower())
    sram[...] = junk = rand(rng, sram.shape, 1, 100, dtype)  # what the pads must overwrite
    counters = rig.run([load(MemId[mem], base, addr // eb, ysz, xsz, stride, y_pad_0=y0,
                             y_pad_1=y1, x_pad_0=x0, x_pad_1=x1), FINISH])
    expected = np.zeros((y0 + ysz + y1, x0 + xsz + x1, *elem), dtype)
    expected[y0:y0 + ysz, x0:x0 + xsz] = dram[:, :xsz]
    n = expected.shape[0] * expected.shape[1]
    np.testing.assert_array_equal(sram[base:base + n], expected.reshape(n, *elem))
    np.testing.assert_array_equal(sram[:base], junk[:base])
    np.testing.assert_array_equal(sram[base + n:], junk[base + n:])
    assert getattr(counters, f"{mem.lower()}_load_bytes") == ysz * xsz * eb


def test_load_uop_with_padding_writes_zero_micro_ops():
    rig = Rig()
    uops = np.arange(1, 7, dtype=np.uint32) * 0x01010101
    addr = rig.place(uops)
    rig.run([load(MemId.UOP, 10, addr // 4, 2, 3, 3, x_pad_0=1, y_pad_1=1), FINISH])
    expected = np.array([0, 1, 2, 3, 0, 4, 5, 6, 0, 0, 0, 0], np.uint32) * 0x01010101
    np.testing.assert_array_equal(rig.model.sp.uop[10:22], expected)


def test_acc_8bit_load_sign_extends_and_strides_in_16_byte_elements():
    rng = np.random.default_rng(3)
    rig = Rig()
    data = rand(rng, (2, 5, 1, 16), -128, 128, np.int8)
    addr = rig.place(data)
    counters = rig.run([load(MemId.ACC_8BIT, 0, addr // 16, 2, 3, 5, x_pad_1=1), FINISH])
    expected = np.zeros((2, 4, 1, 16), np.int32)
    expected[:, :3] = data[:, :3]
    np.testing.assert_array_equal(rig.model.sp.acc[:8], expected.reshape(8, 1, 16))
    assert counters.acc8_load_bytes == 2 * 3 * 16


def test_x_size_zero_is_a_sync_no_op():
    rig = Rig()
    counters = rig.run([load(MemId.INP, 0, 0, 5, 0, 0, push_next_dep=1),
                        MemInsn(opcode=Opcode.LOAD, memory_type=MemId.UOP, pop_prev_dep=1),
                        FINISH])
    assert counters.inp_load_bytes == 0 and counters.tokens["l2g"] == 1
    assert not rig.model.sp.inp.any()


# ------------------------------------------------------------- GEMM and STORE
def test_gemm_loop_nest_matches_numpy_and_store_writes_out():
    """Two-level nest with all six factors, reset, then accumulate; OUT holds low 8 bits."""
    rng = np.random.default_rng(11)
    cfg = DEFAULT
    rig = Rig()
    inp = rand(rng, (64, 1, 16), -128, 128, np.int8)
    wgt = rand(rng, (32, 16, 16), -128, 128, np.int8)
    a_inp, a_wgt = rig.place(inp), rig.place(wgt)
    uops = [Uop(0, 0, 0), Uop(1, 3, 2), Uop(5, 1, 7)]
    a_uop = rig.uops(uops)
    io, ii = 3, 4
    f = dict(dst_factor_out=8, dst_factor_in=0, src_factor_out=16, src_factor_in=2,
             wgt_factor_out=1, wgt_factor_in=5)
    gemm = GemmInsn(opcode=Opcode.GEMM, uop_bgn=0, uop_end=3, iter_out=io, iter_in=ii, **f)
    reset = GemmInsn(opcode=Opcode.GEMM, reset_reg=1, uop_bgn=0, uop_end=3, iter_out=io,
                     iter_in=ii, **f)
    a_out = rig.place(bytes(64 * 16))
    counters = rig.run([
        load(MemId.UOP, 0, a_uop // 4, 1, 3, 3),
        load(MemId.INP, 0, a_inp // 16, 1, 64, 64),
        load(MemId.WGT, 0, a_wgt // 256, 1, 32, 32, push_next_dep=1),
        reset.replace(pop_prev_dep=1), gemm,
        GemmInsn(opcode=Opcode.GEMM, uop_bgn=0, uop_end=1, iter_out=1, iter_in=1, push_next_dep=1),
        store(0, a_out // 16, 4, 8, 8, pop_prev_dep=1), FINISH])
    acc = np.zeros((cfg.ACC_BUFF_DEPTH, 1, 16), np.int64)
    for run in range(2):  # the last GEMM repeats micro-op 0 once
        for o in range(io if run == 0 else 1):
            for i in range(ii if run == 0 else 1):
                for u in (uops if run == 0 else uops[:1]):
                    d = u.dst_idx + o * f["dst_factor_out"] + i * f["dst_factor_in"]
                    s = u.src_idx + o * f["src_factor_out"] + i * f["src_factor_in"]
                    w = u.wgt_idx + o * f["wgt_factor_out"] + i * f["wgt_factor_in"]
                    acc[d] += inp[s].astype(np.int64) @ wgt[w].astype(np.int64).T
    acc32 = acc.astype(np.int32)
    np.testing.assert_array_equal(rig.model.sp.acc, acc32)
    np.testing.assert_array_equal(rig.read(a_out, 32 * 16).view(np.int8).reshape(32, 1, 16),
                                  acc32[:32].astype(np.int8))
    assert counters.gemm_uops == io * ii * 3 + 1
    assert counters.out_store_bytes == 32 * 16


def test_gemm_accumulation_wraps_at_32_bits():
    rig = Rig(TINY)
    rig.model.sp.acc[0] = 2**31 - 10
    rig.model.sp.inp[0] = 127
    rig.model.sp.wgt[0] = 127
    rig.model.sp.uop[0] = int.from_bytes(encode_uop(Uop(0, 0, 0), TINY), "little")
    rig.run([GemmInsn(opcode=Opcode.GEMM, uop_bgn=0, uop_end=1, iter_out=1, iter_in=1), FINISH])
    want = np.int64(2**31 - 10) + 4 * 127 * 127
    assert (rig.model.sp.acc[0] == np.int32(want - 2**32)).all()


def test_reduction_beyond_float32_exactness_is_still_exact():
    """K = 80 reduction steps x 16 lanes of large products of one sign: sums beyond 2**24,
    odd on the way, which float32 cannot hold (the fast model must sum in float64)."""
    rng = np.random.default_rng(2)
    rig = Rig()
    sp = rig.model.sp
    sp.inp[:80] = rng.choice([127, 125, 123], sp.inp[:80].shape)
    sp.wgt[:80] = rng.choice([127, 126, 121], sp.wgt[:80].shape)
    sp.uop[0] = 0
    rig.run([GemmInsn(opcode=Opcode.GEMM, uop_bgn=0, uop_end=1, iter_out=80, iter_in=1,
                      src_factor_out=1, wgt_factor_out=1), FINISH])
    want = np.einsum("kbi,koi->bo", sp.inp[:80].astype(np.int64), sp.wgt[:80].astype(np.int64))
    assert want.min() > 2**24 and (want % 2).any()
    np.testing.assert_array_equal(sp.acc[0], want)


def test_store_reads_out_not_acc():
    """Decision 2: an ACC load does not write OUT, so the store sees stale (zero) OUT."""
    rig = Rig()
    acc = np.arange(16, dtype=np.int32).reshape(1, 1, 16) + 1
    a_acc, a_out = rig.place(acc), rig.place(bytes(64))
    rig.run([load(MemId.ACC, 0, a_acc // 64, 1, 1, 1, push_next_dep=1),
             store(0, a_out // 16, 1, 1, 1, pop_prev_dep=1), FINISH])
    assert not rig.read(a_out, 16).any()
    # ...and an ALU op between them (SHR 0, as TVM emits) makes it visible
    rig.model.sp.uop[0] = 0
    rig.run([load(MemId.ACC, 0, a_acc // 64, 1, 1, 1),
             alu(AluOp.SHR, 0, 1, imm=0, push_next_dep=1),
             store(0, a_out // 16, 1, 1, 1, pop_prev_dep=1), FINISH])
    np.testing.assert_array_equal(rig.read(a_out, 16).view(np.int8), acc.reshape(16))


def test_store_2d_strided_rows():
    rig = Rig(TINY)
    rig.model.sp.out[:6] = np.arange(24, dtype=np.int8).reshape(6, 1, 4)
    a_out = rig.place(bytes(4 * 20))
    rig.run([store(0, a_out // 4, 2, 3, 5), FINISH])
    got = rig.read(a_out, 4 * 10).view(np.int8).reshape(2, 5, 4)
    np.testing.assert_array_equal(got[:, :3], np.arange(24, dtype=np.int8).reshape(2, 3, 4))
    assert not got[:, 3:].any()


# ------------------------------------------------------------------------ ALU
def run_alu(op, a, b=None, imm=None):
    """ALU over 8 ACC entries: dst 0..7 with src 8..15 (or an immediate)."""
    rig = Rig(TINY)
    sp = rig.model.sp
    sp.acc[:8] = a.reshape(8, 1, 4)
    if b is not None:
        sp.acc[8:16] = b.reshape(8, 1, 4)
    sp.uop[0] = int.from_bytes(encode_uop(Uop(0, 8, 0), TINY), "little")
    counters = rig.run([alu(op, 0, 1, iter_out=2, iter_in=4, dfo=4, dfi=1, sfo=4, sfi=1,
                            imm=imm), FINISH])
    assert counters.alu_uops == 8
    return sp.acc[:8].reshape(-1).astype(np.int64), sp.out[:8].reshape(-1)


EDGE = np.array([0, 1, -1, 7, -8, 100, -100, 2**31 - 1, -2**31, 12345678, -12345678, 255,
                 -256, 2**30, -2**30, 3, 5, -7, 42, -42, 99, 1000, -1000, 65535, -65536, 17,
                 -17, 2**16, -2**16, 123, -123, 0], dtype=np.int64)


def wrap32(x):
    return ((np.asarray(x, np.int64) + 2**31) % 2**32) - 2**31


def shr_reference(x, y):
    """Decision 3, written out case by case."""
    out = []
    shape = np.broadcast(x, y).shape
    for xv, yv in zip(np.broadcast_to(x, shape), np.broadcast_to(y, shape), strict=True):
        xv, yv = int(xv), int(yv)
        if 0 <= yv <= 31:
            out.append(xv >> yv)
        elif yv >= 32:
            out.append(xv >> 31)
        elif -31 <= yv <= -1:
            out.append(int(wrap32(xv << -yv)))
        else:
            out.append(0)
    return np.array(out, np.int64)


@pytest.mark.parametrize("imm", [0, 1, 5, 15, 16, 31, 32, 33, 1000, -1, -4, -16, -31, -32,
                                 -33, -32768, 32767])
def test_shr_immediate_is_total(imm):
    got, out = run_alu(AluOp.SHR, EDGE, imm=imm)
    np.testing.assert_array_equal(got, shr_reference(EDGE, imm))
    np.testing.assert_array_equal(out, got.astype(np.int8))


def test_shr_tensor_source_uses_each_lane():
    shifts = np.array([0, 1, 31, 32, 40, -1, -31, -32, -40, 4, -4, 16, -16, 2, 8, 3] * 2)
    got, _ = run_alu(AluOp.SHR, EDGE, b=shifts)
    np.testing.assert_array_equal(got, shr_reference(EDGE, shifts))


@pytest.mark.parametrize("op, formula", [
    (AluOp.MIN, np.minimum), (AluOp.MAX, np.maximum),
    (AluOp.ADD, lambda a, b: wrap32(a + b)), (AluOp.MUL, lambda a, b: wrap32(a * b)),
])
def test_alu_binary_ops_tensor_and_immediate(op, formula):
    rng = np.random.default_rng(int(op))
    b = rng.integers(-2**31, 2**31, 32)
    got, out = run_alu(op, EDGE, b=b)
    np.testing.assert_array_equal(got, formula(EDGE, b))
    np.testing.assert_array_equal(out, got.astype(np.int8))
    for imm in (-32768, -3, 0, 7, 32767):
        got, _ = run_alu(op, EDGE, imm=imm)
        np.testing.assert_array_equal(got, formula(EDGE, np.int64(imm)))


def test_alu_read_after_write_inside_one_instruction_is_serial():
    """dst i+1 reads src i, which the same instruction wrote one step earlier."""
    rig = Rig(TINY)
    sp = rig.model.sp
    sp.acc[:10] = 1
    sp.uop[0] = int.from_bytes(encode_uop(Uop(1, 0, 0), TINY), "little")
    rig.run([alu(AluOp.ADD, 0, 1, iter_in=9, dfi=1, sfi=1), FINISH])
    # serially: acc[k] = acc[k] + acc[k-1] gives 1, 2, 3, ..., 10
    np.testing.assert_array_equal(sp.acc[:10, 0, 0], np.arange(1, 11))
    # the same entry twice with an immediate applies twice
    sp.uop[1] = int.from_bytes(encode_uop(Uop(3, 0, 0), TINY), "little")
    rig.run([alu(AluOp.ADD, 1, 2, iter_in=3, imm=5), FINISH])
    assert sp.acc[3, 0, 0] == 4 + 15


def test_empty_nests_do_nothing():
    rig = Rig(TINY)
    rig.model.sp.acc[:] = 9
    c = rig.run([alu(AluOp.ADD, 3, 3, iter_in=4, imm=1),
                 alu(AluOp.ADD, 0, 1, iter_out=0, imm=1),
                 GemmInsn(opcode=Opcode.GEMM, uop_bgn=0, uop_end=2, iter_out=1, iter_in=0),
                 FINISH])
    assert (rig.model.sp.acc == 9).all() and c.alu_uops == 0 and c.gemm_uops == 0


# -------------------------------------------------------------- dependencies
@pytest.mark.parametrize("cfg, shape, caps", [
    (DEFAULT, (64, 48, 80), {}), (TINY, (36, 20, 40), {}), (DEFAULT, (256, 256, 256), {}),
    (DEFAULT, (256, 256, 256), {"col_blocks": 4, "row_blocks": 32}),
    (TINY, (36, 20, 40), {"col_blocks": 3, "row_blocks": 5}),
], ids=["default", "tiny", "default-256", "default-256-chunked", "tiny-chunked"])
def test_overlapped_tiled_matmul(cfg, shape, caps):
    """Load, compute and store overlap (double-buffered tiles ordered only by tokens)."""
    m, k, n = shape
    rng = np.random.default_rng(5)
    a = rand(rng, (m, k), -128, 128, np.int8)
    w = rand(rng, (n, k), -128, 128, np.int8)
    prog = build_matmul(cfg, m, k, n, shift=6, **caps)
    model = MODEL(cfg, prog.end)
    prog.write(model.mem, a, w)
    order = []
    counters = model.run(prog.insn_addr, prog.insn_count, trace=order.append)
    acc = wrap32(a.astype(np.int64) @ w.astype(np.int64).T)
    np.testing.assert_array_equal(prog.read_result(model.mem),
                                  np.clip(acc >> 6, 0, 127).astype(np.int8))
    assert counters.gemm_uops * cfg.BLOCK_IN * cfg.BLOCK_OUT * cfg.BATCH == m * k * n
    # overlap: the load engine ran ahead of the compute engine's first GEMM...
    engines = [e.module for e in order]
    first_gemm = next(i for i, e in enumerate(order) if e.insn.opcode == Opcode.GEMM
                      and not e.insn.reset_reg)
    assert engines[:first_gemm].count("load") >= 2
    # ...and every token pushed was popped
    pushed = sum(len(e.pushed) for e in order)
    popped = sum(len(e.popped) for e in order)
    assert pushed == popped == sum(counters.tokens.values())


def test_tokens_not_stream_order_decide_execution_order():
    """A STORE listed before the ALU op that produces its data still sees that data,
    because it pops the ALU's g2s token; a serial interpreter would store stale zeros."""
    rig = Rig(TINY)
    sp = rig.model.sp
    sp.acc[0] = np.array([[1, -2, 3, -4]], np.int32)
    sp.uop[0] = 0
    a_out = rig.place(bytes(4))
    rig.run([store(0, a_out // 4, 1, 1, 1, pop_prev_dep=1),
             alu(AluOp.ADD, 0, 1, imm=10, push_next_dep=1), FINISH])
    np.testing.assert_array_equal(rig.read(a_out, 4).view(np.int8), [11, 8, 13, 6])


def test_deadlock_names_each_stuck_engine():
    rig = Rig()
    with pytest.raises(vta.DeadlockError) as info:
        rig.run([load(MemId.INP, 0, 0, 0, 0, 0, pop_next_dep=1),
                 MemInsn(opcode=Opcode.STORE, pop_prev_dep=1), FINISH])
    assert str(info.value) == ("deadlock: load at instruction 0 waits on g2l (empty); "
                               "store at instruction 1 waits on g2s (empty)")
    assert info.value.stuck == {"load": (0, "g2l"), "store": (1, "g2s")}
    assert info.value.code == ErrorCode.DEADLOCK


def test_compute_stuck_behind_finish_order_is_a_deadlock():
    rig = Rig()
    with pytest.raises(vta.DeadlockError, match="compute at instruction 0 waits on l2g"):
        rig.run([MemInsn(opcode=Opcode.LOAD, memory_type=MemId.UOP, pop_prev_dep=1), FINISH])


@pytest.mark.parametrize("insn, engine, flag", [
    (load(MemId.INP, 0, 0, 0, 0, 0, pop_prev_dep=1), "load", "pop_prev_dep"),
    (load(MemId.WGT, 0, 0, 0, 0, 0, push_prev_dep=1), "load", "push_prev_dep"),
    (MemInsn(opcode=Opcode.STORE, pop_next_dep=1), "store", "pop_next_dep"),
    (MemInsn(opcode=Opcode.STORE, push_next_dep=1), "store", "push_next_dep"),
])
def test_flags_used_by_the_wrong_engine(insn, engine, flag):
    rig = Rig()
    with pytest.raises(vta.ExecutionError) as info:
        rig.run([insn, FINISH])
    prev_next = "previous" if "prev" in flag else "next"
    assert str(info.value) == (f"instruction 0 ({engine}): {flag} is set, but the {engine} "
                               f"engine has no {prev_next} stage")
    assert (info.value.module, info.value.index, info.value.field) == (engine, 0, flag)
    assert info.value.code == ErrorCode.BAD_DEP_FLAG


# -------------------------------------------------------------------- errors
def expect_fault(insns, message, module, index, field, code, cfg=DEFAULT, setup=None):
    rig = Rig(cfg)
    if setup:
        setup(rig)
    with pytest.raises(vta.ExecutionError) as info:
        rig.run(insns)
    err = info.value
    assert str(err) == message
    assert (err.module, err.index, err.field, err.code) == (module, index, field, code)


def test_undefined_opcode():
    rig = Rig()
    addr = rig.place(encode_stream([FINISH], DEFAULT) + (6).to_bytes(16, "little"))
    with pytest.raises(vta.ExecutionError) as info:
        rig.model.run(addr, 2)
    assert str(info.value) == "instruction 1 (fetch): undefined opcode 6"
    assert info.value.code == ErrorCode.BAD_OPCODE and info.value.module == "fetch"


@pytest.mark.parametrize("mem, what", [(6, "undefined"), (7, "undefined"),
                                       (MemId.OUT, "OUT cannot be loaded")])
def test_bad_load_memory_type(mem, what):
    expect_fault([FINISH, load(mem, 0, 0, 1, 1, 1)],
                 f"instruction 1 (compute): LOAD memory_type {int(mem)} ({what})",
                 "compute", 1, "memory_type", ErrorCode.BAD_MEMORY_TYPE)


def test_store_memory_type_and_pads():
    expect_fault([MemInsn(opcode=Opcode.STORE, memory_type=MemId.ACC, x_size=1, y_size=1), FINISH],
                 "instruction 0 (store): STORE memory_type must be OUT (4), not 3",
                 "store", 0, "memory_type", ErrorCode.BAD_MEMORY_TYPE)
    expect_fault([store(0, 0, 1, 1, 1, x_pad_1=2), FINISH],
                 "instruction 0 (store): STORE x_pad_1 must be 0, not 2",
                 "store", 0, "x_pad_1", ErrorCode.STORE_PAD)


def test_sram_ranges():
    expect_fault([load(MemId.INP, 2040, 0x100, 2, 4, 4, x_pad_0=1), FINISH],
                 "instruction 0 (load): LOAD INP writes SRAM entries 2040..2049, beyond the "
                 "2048-entry INP buffer", "load", 0, "sram_base", ErrorCode.SRAM_RANGE)
    expect_fault([FINISH, store(2047, 0x100, 1, 2, 2)],
                 "instruction 1 (store): STORE reads SRAM entries 2047..2048, beyond the "
                 "2048-entry OUT buffer", "store", 1, "sram_base", ErrorCode.SRAM_RANGE)
    expect_fault([GemmInsn(opcode=Opcode.GEMM, uop_bgn=0, uop_end=8193, iter_out=1, iter_in=1)],
                 "instruction 0 (compute): GEMM uop_end 8193 is beyond the 8192-entry micro-op "
                 "buffer", "compute", 0, "uop_end", ErrorCode.SRAM_RANGE)


def set_uop(dst, src, wgt):
    def setup(rig):
        rig.model.sp.uop[0] = int.from_bytes(encode_uop(Uop(dst, src, wgt), rig.cfg), "little")
    return setup


@pytest.mark.parametrize("insn, field, top, buf, depth", [
    (GemmInsn(opcode=Opcode.GEMM, uop_end=1, iter_out=3, iter_in=2, dst_factor_out=1000,
              dst_factor_in=1), "dst_idx", 2101, "ACC", 2048),
    (GemmInsn(opcode=Opcode.GEMM, uop_end=1, iter_out=2, iter_in=1, src_factor_out=2040),
     "src_idx", 2050, "INP", 2048),
    (GemmInsn(opcode=Opcode.GEMM, uop_end=1, iter_out=1, iter_in=2, wgt_factor_in=1020),
     "wgt_idx", 1040, "WGT", 1024),
    # exactly one past the last entry: the first index out of range
    (GemmInsn(opcode=Opcode.GEMM, uop_end=1, iter_out=2, iter_in=1, dst_factor_out=1948),
     "dst_idx", 2048, "ACC", 2048),
    (GemmInsn(opcode=Opcode.GEMM, uop_end=1, iter_out=1, iter_in=2, src_factor_in=2038),
     "src_idx", 2048, "INP", 2048),
    (GemmInsn(opcode=Opcode.GEMM, uop_end=1, iter_out=2, iter_in=1, wgt_factor_out=1004),
     "wgt_idx", 1024, "WGT", 1024),
])
def test_gemm_index_out_of_range(insn, field, top, buf, depth):
    expect_fault([insn, FINISH], f"instruction 0 (compute): GEMM {field} reaches {top} (micro-op "
                 f"field plus loop offsets), beyond the {depth}-entry {buf} buffer",
                 "compute", 0, field, ErrorCode.SRAM_RANGE, setup=set_uop(100, 10, 20))


def test_alu_index_and_opcode_errors():
    expect_fault([alu(AluOp.ADD, 0, 1, iter_in=2, sfi=2040)],
                 "instruction 0 (compute): ALU src_idx reaches 2050 (micro-op field plus loop "
                 "offsets), beyond the 2048-entry ACC buffer", "compute", 0, "src_idx",
                 ErrorCode.SRAM_RANGE, setup=set_uop(0, 10, 0))
    expect_fault([alu(5, 0, 1)], "instruction 0 (compute): undefined ALU opcode 5",
                 "compute", 0, "alu_opcode", ErrorCode.BAD_ALU_OPCODE)


def test_dram_outside_device_memory():
    size = 1 << 22
    expect_fault([load(MemId.WGT, 0, (size - 512) // 256, 2, 1, 2), FINISH],
                 f"instruction 0 (load): DRAM access 0x{size - 512:x}..0x{size + 256:x} "
                 f"(dram_base {(size - 512) // 256}, y_size 2, x_stride 2) lies outside device "
                 f"memory (0x{size:x} bytes)", "load", 0, "dram_base", ErrorCode.DRAM_RANGE)
    expect_fault([store(0, size // 16, 1, 1, 1), FINISH],
                 f"instruction 0 (store): DRAM access 0x{size:x}..0x{size + 16:x} (dram_base "
                 f"{size // 16}, y_size 1, x_stride 1) lies outside device memory "
                 f"(0x{size:x} bytes)", "store", 0, "dram_base", ErrorCode.DRAM_RANGE)
    rig = Rig()
    with pytest.raises(vta.ExecutionError, match="fetch: instructions at 0x3ffff0..0x400010 lie "
                       "outside device memory") as info:
        rig.model.run((1 << 22) - 16, 2)
    assert info.value.code == ErrorCode.DRAM_RANGE


def test_bus_error_window_names_the_failing_burst():
    """Memory answering with an error response (``bus_error``, whole pages): a row that
    starts inside the window fails at its first bus word, one entering it from below at the
    window's first byte; a STORE meeting it writes none of its rows; the fetch names the
    first instruction of the failing burst."""
    window = (0x8000, 0x9000)
    rig = Rig(TINY, 1 << 16)  # 8-byte bus words
    rig.model.bus_error = window
    rig.model.sp.out[:4] = 5
    e = TINY.INP_ELEM_BYTES
    for insn, module, addr, what in [
        (load(MemId.INP, 0, 0x800C // e, 1, 2, 2), "load", 0x8008, "bytes 0x800c..0x8014"),
        (load(MemId.INP, 0, 0x7FFC // e, 1, 2, 2), "load", 0x8000, "bytes 0x7ffc..0x8004"),
        (load(MemId.INP, 0, 0x7FF0 // e, 2, 2, 6), "load", 0x8008, "bytes 0x8008..0x8010"),
        (store(0, 0x7FE0 // e, 2, 2, 8), "store", 0x8000, "bytes 0x8000..0x8008")]:
        with pytest.raises(vta.ExecutionError) as info:
            rig.run([insn, FINISH])
        err = info.value
        assert str(err) == (f"instruction 0 ({module}): bus error: the memory answered the DRAM "
                            f"burst at 0x{addr:x} with an error response (dram_base "
                            f"{insn.dram_base}: {what}; error window 0x8000..0x9000)")
        assert (err.module, err.index, err.field, err.code, err.address) == (
            module, 0, "dram_base", ErrorCode.BUS_ERROR, addr)
    assert not rig.model.mem[0x7FE0:0x8000].any()  # the STORE's first row is not written
    rig.model.mem[0x7FE0:0x8020] = np.frombuffer(encode_stream([FINISH] * 4, TINY), np.uint8)
    with pytest.raises(vta.ExecutionError, match=r"^instruction 2 \(fetch\): bus error: the "
                       r"memory answered the DRAM burst at 0x8000 .*\(instructions: bytes "
                       r"0x7fe0..0x8020;") as info:
        rig.model.run(0x7FE0, 4)
    assert (info.value.module, info.value.index, info.value.address) == ("fetch", 2, 0x8000)


def test_token_overflow():
    insns = [load(MemId.INP, 0, 0, 0, 0, 0, push_next_dep=1)] * (TOKEN_QUEUE_DEPTH + 1)
    expect_fault(insns + [FINISH],
                 f"instruction {TOKEN_QUEUE_DEPTH} (load): push_next_dep overflows token queue "
                 f"l2g (capacity {TOKEN_QUEUE_DEPTH})", "load", TOKEN_QUEUE_DEPTH,
                 "push_next_dep", ErrorCode.TOKEN_OVERFLOW)


def test_missing_finish():
    rig = Rig()
    with pytest.raises(vta.ExecutionError, match="the stream of 1 instructions has no FINISH; the "
                       "device would never report done") as info:
        rig.run([load(MemId.INP, 0, 0, 0, 0, 0)])
    assert info.value.code == ErrorCode.NO_FINISH


def test_scratchpads_persist_across_runs_and_plans_track_micro_ops():
    """A cached GEMM plan must not survive a change of the micro-ops it was built from."""
    rig = Rig(TINY)
    sp = rig.model.sp
    sp.inp[:2] = np.array([[1, 2, 3, 4]], np.int8), np.array([[5, 6, 7, 8]], np.int8)
    sp.wgt[0] = np.eye(4, dtype=np.int8)
    gemm = GemmInsn(opcode=Opcode.GEMM, uop_bgn=0, uop_end=1, iter_out=1, iter_in=1)
    for src, want in ((0, [1, 2, 3, 4]), (1, [6, 8, 10, 12])):
        sp.uop[0] = int.from_bytes(encode_uop(Uop(0, src, 0), TINY), "little")
        rig.run([gemm, FINISH])
        np.testing.assert_array_equal(sp.acc[0, 0], want)


# ------------------------------------------------- large nests and deadlines
def test_deadline_stops_a_huge_nest_in_bounded_memory():
    """2**41 micro-ops: the model stops at the deadline, inside the nest, without growing."""
    rig = Rig()
    huge = GemmInsn(opcode=Opcode.GEMM, uop_bgn=0, uop_end=DEFAULT.UOP_BUFF_DEPTH,
                    iter_out=(1 << 14) - 1, iter_in=(1 << 14) - 1)
    tracemalloc.start()
    start = time.monotonic()
    try:
        with pytest.raises(golden.RunTimeoutError) as info:
            rig.run([load(MemId.INP, 0, 0, 0, 0, 0, push_next_dep=1),
                     huge.replace(pop_prev_dep=1), FINISH], deadline=start + 0.5)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert 0.5 <= time.monotonic() - start < 2.5
    assert peak < 64 << 20, f"peak {peak >> 20} MiB"
    assert (info.value.module, info.value.index) == ("compute", 1)
    assert str(info.value) == ("instruction 1 (compute): the run passed its deadline inside "
                               "its loop nest")
    c = rig.model.counters  # what retired before: the LOAD, not the GEMM
    assert (c.load_insns, c.compute_insns, c.gemm_uops, c.tokens["l2g"]) == (1, 0, 0, 1)
    assert rig.model.tokens == {"l2g": 1, "g2l": 0, "g2s": 0, "s2g": 0}


def test_deadline_is_checked_between_instructions():
    rig = Rig()
    with pytest.raises(golden.RunTimeoutError, match=r"^instruction 0 \(load\): the run passed "
                       r"its deadline$"):
        rig.run([load(MemId.INP, 0, 0, 0, 0, 0), FINISH], deadline=time.monotonic() - 1)
    assert rig.model.counters.load_insns == 0


def test_long_stream_decodes_in_bounded_memory(monkeypatch):
    """Only a few decoded blocks stay: a 10,000-instruction stream runs in little memory, and
    instructions of dropped blocks decode again when their engine reaches them."""
    monkeypatch.setattr(golden.fast.decode, "BLOCK", 256)
    monkeypatch.setattr(golden.fast.decode, "BLOCKS_KEPT", 4)
    rig = Rig()
    n = 10_000  # loads run ahead of the stores they signal: both engines' blocks are in use
    stream = [load(MemId.INP, 0, 0, 0, 0, 0, push_next_dep=1),
              MemInsn(opcode=Opcode.LOAD, memory_type=MemId.UOP, pop_prev_dep=1)] * (n // 2)
    addr = rig.place(encode_stream(stream + [FINISH], DEFAULT))
    tracemalloc.start()
    try:
        counters = rig.model.run(addr, n + 1)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert (counters.load_insns, counters.compute_insns, counters.tokens["l2g"]) == (
        n // 2, n // 2 + 1, n // 2)
    assert peak < 2 << 20, f"peak {peak / 2**20:.1f} MiB"


@pytest.mark.parametrize("n_out, n_in, f_out, f_in", [
    (3, 4, 4, 1), (4, 1, 1, 9), (1, 5, 7, 1), (3, 4, 5, 1), (3, 4, 1, 3), (3, 4, 0, 1),
    (4, 1, 2, 0), (1, 5, 0, 2), (2, 3, 3, 0)])
def test_single_micro_op_nests_reset_and_alu(n_out, n_in, f_out, f_in):
    """One micro-op over a nest: consecutive entries (a slice), gaps, strides and repeats,
    for a reset and an ALU op with an immediate (applied once per visit)."""
    rng = np.random.default_rng(n_out * 100 + n_in * 10 + f_out + f_in)
    rig = Rig(TINY)
    sp = rig.model.sp
    sp.acc[:] = rand(rng, sp.acc.shape, -1000, 1000, np.int32)
    sp.uop[0] = int.from_bytes(encode_uop(Uop(2, 0, 0), TINY), "little")
    visits = [2 + o * f_out + i * f_in for o in range(n_out) for i in range(n_in)]
    acc = sp.acc.astype(np.int64)
    out = np.zeros_like(sp.out)
    for d in visits:
        acc[d] += 3
        out[d] = acc[d].astype(np.int8)
    rig.run([alu(AluOp.ADD, 0, 1, iter_out=n_out, iter_in=n_in, dfo=f_out, dfi=f_in, imm=3),
             FINISH])
    np.testing.assert_array_equal(sp.acc, acc)
    np.testing.assert_array_equal(sp.out, out)
    rig.run([GemmInsn(opcode=Opcode.GEMM, reset_reg=1, uop_end=1, iter_out=n_out, iter_in=n_in,
                      dst_factor_out=f_out, dst_factor_in=f_in), FINISH])
    acc[visits] = 0
    np.testing.assert_array_equal(sp.acc, acc)
    np.testing.assert_array_equal(sp.out, out)  # a reset leaves OUT alone


def test_alu_reading_entries_it_writes_later_sees_their_old_values():
    """dst k reads k + 1, which the same instruction overwrites one step later: serially it
    still holds its old value (a write-after-read inside one hazard-free segment)."""
    rig = Rig(TINY)
    sp = rig.model.sp
    sp.acc[:10, 0, 0] = np.arange(1, 11)
    sp.uop[0] = int.from_bytes(encode_uop(Uop(0, 1, 0), TINY), "little")
    rig.run([alu(AluOp.ADD, 0, 1, iter_in=9, dfi=1, sfi=1), FINISH])
    np.testing.assert_array_equal(sp.acc[:10, 0, 0], [3, 5, 7, 9, 11, 13, 15, 17, 19, 10])
    np.testing.assert_array_equal(sp.out[:9, 0, 0], [3, 5, 7, 9, 11, 13, 15, 17, 19])

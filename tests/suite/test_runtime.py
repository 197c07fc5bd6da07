"""The runtime: upstream's unit scenarios (vta-reference section 6) and the queue's rules.

Every program result is checked against its NumPy formula; stream-structure
tests check the instructions against the rules of vta-reference section 5.
"""

from __future__ import annotations

import io

import numpy as np
import pytest

from vta.isa import AluOp, GemmInsn, MemId, MemInsn, Opcode
from vta.runtime import (
    COMPUTE_STAGE,
    LOAD_STAGE,
    MODE_ALU,
    MODE_GEMM,
    STORE_STAGE,
    CommandQueue,
)

L, C, S = LOAD_STAGE, COMPUTE_STAGE, STORE_STAGE
PRESETS = ["default", "tiny"]


@pytest.fixture
def rng():
    return np.random.default_rng(0xDEADB)


@pytest.fixture
def upload(request):
    """upload(dev, array) -> device buffer holding the array; freed after the test."""
    made = []

    def put(dev, array=None, nbytes=None):
        nbytes = array.nbytes if array is not None else nbytes
        buf = dev.alloc(nbytes)
        made.append((dev, buf))
        if array is not None:
            dev.write(buf, np.ascontiguousarray(array))
        return buf

    yield put
    for dev, buf in made:
        dev.free(buf)


def fetch(dev, buf, shape, dtype=np.int8):
    n = int(np.prod(shape)) * np.dtype(dtype).itemsize
    return dev.read(buf, n).view(dtype).reshape(shape)


def alu_kernel(q, key, dst, src, rows, cols, op, use_imm, imm=0, src_row=None):
    """ALU over rows x cols consecutive ACC entries from dst (src likewise)."""

    def finit():
        q.uop_loop_begin(rows, cols, cols if src_row is None else src_row, 0)
        q.uop_loop_begin(cols, 1, 1, 0)
        q.uop_push(MODE_ALU, 0, dst, src, 0, op, use_imm, imm)
        q.uop_loop_end()
        q.uop_loop_end()

    return q.push_alu(key, finit)


def store_out(q, buf, count):
    q.dep_push(C, S)
    q.dep_pop(C, S)
    q.store_2d(0, MemId.OUT, buf, 0, count, 1, count)
    q.dep_push(S, C)
    q.dep_pop(S, C)


def acc_shape(dev, *lead):
    return (*lead, dev.cfg.BATCH, dev.cfg.BLOCK_OUT)


# ---------------------------------------------------------- section 6
@pytest.mark.parametrize("preset", PRESETS)
def test_save_load_out(open_dev, upload, rng, preset):
    dev = open_dev(preset)
    n = 6
    x = rng.integers(1, 10, acc_shape(dev, n, n)).astype(np.int32)
    xb, yb = upload(dev, x), upload(dev, nbytes=x.size)
    with CommandQueue(dev) as q:
        q.load_2d(xb, 0, n * n, 1, n * n, 0, 0, 0, 0, 0, MemId.ACC)
        alu_kernel(q, "shr0", 0, 0, n, n, AluOp.SHR, 1, 0)
        store_out(q, yb, n * n)
        q.synchronize()
    np.testing.assert_array_equal(fetch(dev, yb, x.shape), x.astype(np.int8))


# upstream case names; pad lists are [y, x] (index 0 = y, index 1 = x)
PADDED_CASES = {
    "Y0": ((2, 0), (0, 0)),
    "Y1": ((0, 2), (0, 0)),
    "X0": ((0, 0), (2, 0)),
    "X1": ((0, 0), (0, 2)),
    "all": ((1, 1), (1, 1)),
}


@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize("case", list(PADDED_CASES))
def test_padded_load(open_dev, upload, rng, preset, case):
    dev = open_dev(preset)
    (y0, x0), (y1, x1) = PADDED_CASES[case]
    n, m = 3, 5
    x = rng.integers(0, 10, acc_shape(dev, n, m)).astype(np.int32)
    rows, cols = n + y0 + y1, m + x0 + x1
    xb, yb = upload(dev, x), upload(dev, nbytes=rows * cols * x[0, 0].size)
    with CommandQueue(dev) as q:
        q.load_2d(xb, 0, m, n, m, x0, y0, x1, y1, 0, MemId.ACC)
        alu_kernel(q, "shr0", 0, 0, rows, cols, AluOp.SHR, 1, 0)
        store_out(q, yb, rows * cols)
        q.synchronize()
    expected = np.zeros(acc_shape(dev, rows, cols), dtype=np.int8)
    expected[y0:y0 + n, x0:x0 + m] = x.astype(np.int8)
    np.testing.assert_array_equal(fetch(dev, yb, expected.shape), expected)


def _gemm_operands(dev, rng, o, n, m):
    cfg = dev.cfg
    x = rng.integers(-128, 128, (o, n, cfg.BATCH, cfg.BLOCK_IN)).astype(np.int8)
    w = rng.integers(-128, 128, (m, n, cfg.BLOCK_OUT, cfg.BLOCK_IN)).astype(np.int8)
    # y[i, j, b, :] = sum_k x[i, k, b, :] . w[j, k].T   (int32)
    y = np.einsum("ikbc,jkoc->ijbo", x.astype(np.int64), w.astype(np.int64))
    expected = np.clip(y >> 8, 0, 127).astype(np.int8)
    return x, w, expected


def _gemm_thread(q, t, rows, n, m, inp_base, wgt_base, acc_base):
    """Compute of one (virtual) thread: reset, GEMM, SHR 8, MAX 0, MIN 127."""

    def reset():
        q.uop_loop_begin(rows, m, 0, 0)
        q.uop_loop_begin(m, 1, 0, 0)
        q.uop_push(MODE_GEMM, 1, acc_base, 0, 0)
        q.uop_loop_end()
        q.uop_loop_end()

    def gemm():  # rows x reduction loops; one micro-op per output block
        q.uop_loop_begin(rows, m, n, 0)
        q.uop_loop_begin(n, 0, 1, 1)
        for j in range(m):
            q.uop_push(MODE_GEMM, 0, acc_base + j, inp_base, wgt_base + j * n)
        q.uop_loop_end()
        q.uop_loop_end()

    q.push_gemm(("reset", t), reset)
    q.push_gemm(("gemm", t), gemm)
    return [(f"shr{t}", AluOp.SHR, 8), (f"max{t}", AluOp.MAX, 0), (f"min{t}", AluOp.MIN, 127)]


@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize("force_serial", [False, True])
def test_gemm_default_schedule(open_dev, upload, rng, preset, force_serial):
    dev = open_dev(preset)
    o, n, m = 4, 1, 4
    x, w, expected = _gemm_operands(dev, rng, o, n, m)
    xb, wb, yb = upload(dev, x), upload(dev, w), upload(dev, nbytes=expected.nbytes)
    with CommandQueue(dev, force_serial=force_serial) as q:
        q.load_2d(xb, 0, o * n, 1, o * n, 0, 0, 0, 0, 0, MemId.INP)
        q.load_2d(wb, 0, m * n, 1, m * n, 0, 0, 0, 0, 0, MemId.WGT)
        q.dep_push(L, C)
        q.dep_pop(L, C)
        for key, op, imm in _gemm_thread(q, 0, o, n, m, 0, 0, 0):
            alu_kernel(q, key, 0, 0, o, m, op, 1, imm)
        store_out(q, yb, o * m)
        stats = q.synchronize()
    np.testing.assert_array_equal(fetch(dev, yb, expected.shape), expected)
    assert stats.gemm_uops == o * m * n
    assert stats.alu_uops == 3 * o * m


@pytest.mark.parametrize("preset", PRESETS)
def test_gemm_two_virtual_threads(open_dev, upload, rng, preset):
    """upstream "smt": the output batch split over two virtual threads, tokens in between."""
    dev = open_dev(preset)
    o, n, m = 4, 2, 4
    x, w, expected = _gemm_operands(dev, rng, o, n, m)
    xb, wb, yb = upload(dev, x), upload(dev, w), upload(dev, nbytes=expected.nbytes)
    half = o // 2
    with CommandQueue(dev) as q:
        for _ in range(2):  # each thread starts with a free input region
            q.dep_push(C, L)
        for t in range(2):  # load stage of both threads
            q.dep_pop(C, L)
            q.load_2d(xb, t * half * n, half * n, 1, half * n, 0, 0, 0, 0, t * half * n,
                      MemId.INP)
            q.load_2d(wb, 0, m * n, 1, m * n, 0, 0, 0, 0, t * m * n, MemId.WGT)
            q.dep_push(L, C)
        for t in range(2):  # compute stage of both threads
            q.dep_pop(L, C)
            acc = t * half * m
            steps = _gemm_thread(q, t, half, n, m, t * half * n, t * m * n, acc)
            q.dep_push(C, L)
            for key, op, imm in steps:
                alu_kernel(q, key, acc, acc, half, m, op, 1, imm)
            q.dep_push(C, S)
        for t in range(2):  # store stage of both threads
            q.dep_pop(C, S)
            q.store_2d(t * half * m, MemId.OUT, yb, t * half * m, half * m, 1, half * m)
            q.dep_push(S, C)
        for _ in range(2):
            q.dep_pop(C, L)
            q.dep_pop(S, C)
        stats = q.synchronize()
    np.testing.assert_array_equal(fetch(dev, yb, expected.shape), expected)
    # tokens: g2l 2 + 2 (prologue, compute) -- l2g 2 + tail 1 -- g2s 2 -- s2g 2 + tail 1
    assert (stats.g2l_tokens, stats.l2g_tokens, stats.g2s_tokens, stats.s2g_tokens) == \
        (4, 3, 2, 3)


ALU_CASES = {
    "SHL imm": (AluOp.SHR, True, lambda a, b, imm: np.left_shift(a, imm), True),
    "MAX imm": (AluOp.MAX, True, lambda a, b, imm: np.maximum(a, imm), False),
    "MAX": (AluOp.MAX, False, lambda a, b, imm: np.maximum(a, b), False),
    "ADD imm": (AluOp.ADD, True, lambda a, b, imm: a + imm, False),
    "ADD": (AluOp.ADD, False, lambda a, b, imm: a + b, False),
    "SHR imm": (AluOp.SHR, True, lambda a, b, imm: np.right_shift(a, imm), False),
    "MIN imm": (AluOp.MIN, True, lambda a, b, imm: np.minimum(a, imm), False),
    "MIN": (AluOp.MIN, False, lambda a, b, imm: np.minimum(a, b), False),
    "MUL": (AluOp.MUL, False, lambda a, b, imm: a * b, False),
}


@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize("case", list(ALU_CASES))
def test_alu(open_dev, upload, rng, preset, case):
    dev = open_dev(preset)
    op, use_imm, formula, negate = ALU_CASES[case]
    m = n = 8
    a = rng.integers(-16, 16, acc_shape(dev, m, n)).astype(np.int32)
    b = rng.integers(-16, 16, acc_shape(dev, m, n)).astype(np.int32)
    imm = int(rng.integers(1, 5))
    ab, bb, yb = upload(dev, a), upload(dev, b), upload(dev, nbytes=a.size)
    with CommandQueue(dev) as q:
        q.load_2d(ab, 0, m * n, 1, m * n, 0, 0, 0, 0, 0, MemId.ACC)
        if not use_imm:
            q.load_2d(bb, 0, m * n, 1, m * n, 0, 0, 0, 0, m * n, MemId.ACC)
        alu_kernel(q, case, 0, 0 if use_imm else m * n, m, n, op, int(use_imm),
                   -imm if negate else imm)
        store_out(q, yb, m * n)
        q.synchronize()
    expected = formula(a, b, imm).astype(np.int8)  # narrowing wraps, like the hardware
    np.testing.assert_array_equal(fetch(dev, yb, a.shape), expected)


@pytest.mark.parametrize("preset", PRESETS)
def test_relu(open_dev, upload, rng, preset):
    dev = open_dev(preset)
    m, n = 8, 10
    a = rng.integers(-256, 256, acc_shape(dev, m, n)).astype(np.int32)
    ab, yb = upload(dev, a), upload(dev, nbytes=a.size)
    with CommandQueue(dev) as q:
        q.load_2d(ab, 0, m * n, 1, m * n, 0, 0, 0, 0, 0, MemId.ACC)
        alu_kernel(q, "max0", 0, 0, m, n, AluOp.MAX, 1, 0)
        alu_kernel(q, "min127", 0, 0, m, n, AluOp.MIN, 1, 127)
        store_out(q, yb, m * n)
        q.synchronize()
    np.testing.assert_array_equal(fetch(dev, yb, a.shape), np.clip(a, 0, 127).astype(np.int8))


@pytest.mark.parametrize("preset", PRESETS)
def test_shift_and_scale(open_dev, upload, rng, preset):
    dev = open_dev(preset)
    m, n = 2, 8
    a = rng.integers(-10, 10, acc_shape(dev, m, n)).astype(np.int32)
    imm_shift, imm_scale = int(rng.integers(0, 8)), int(rng.integers(1, 5))
    ab, yb = upload(dev, a), upload(dev, nbytes=a.size)
    with CommandQueue(dev) as q:
        q.load_2d(ab, 0, m * n, 1, m * n, 0, 0, 0, 0, 0, MemId.ACC)
        alu_kernel(q, "add", 0, 0, m, n, AluOp.ADD, 1, imm_shift)
        alu_kernel(q, "shr", 0, 0, m, n, AluOp.SHR, 1, imm_scale)
        store_out(q, yb, m * n)
        q.synchronize()
    expected = ((a + imm_shift) >> imm_scale).astype(np.int8)
    np.testing.assert_array_equal(fetch(dev, yb, a.shape), expected)


# ------------------------------------------------------- queue mechanics
def _words(raw: bytes) -> list[tuple[int, int]]:
    return [(int.from_bytes(raw[i:i + 8], "little"), int.from_bytes(raw[i + 8:i + 16], "little"))
            for i in range(0, len(raw), 16)]


def test_load_2d_dram_base_and_pads(device, upload):
    cfg = device.cfg
    buf = upload(device, nbytes=1 << 16)
    with CommandQueue(device) as q:
        insn = q.load_2d(buf, 7, 3, 2, 4, 1, 2, 3, 4, 5, MemId.INP)
        acc = q.load_2d(buf, 1, 1, 1, 1, 0, 0, 0, 0, 0, MemId.ACC)
        acc8 = q.load_2d(buf, 1, 1, 1, 1, 0, 0, 0, 0, 0, MemId.ACC_8BIT)
        assert insn.dram_base == buf.addr // cfg.INP_ELEM_BYTES + 7
        assert (insn.x_pad_0, insn.y_pad_0, insn.x_pad_1, insn.y_pad_1) == (1, 2, 3, 4)
        assert (insn.sram_base, insn.x_size, insn.y_size, insn.x_stride) == (5, 3, 2, 4)
        assert acc.dram_base == buf.addr // cfg.ACC_ELEM_BYTES + 1
        assert acc8.dram_base == buf.addr // (cfg.BATCH * cfg.BLOCK_OUT) + 1


def test_dep_pop_is_pending_and_a_second_pop_commits_a_noop(device, upload):
    buf = upload(device, nbytes=4096)
    with CommandQueue(device) as q:
        q.dep_pop(L, C)
        assert q.pending_pops(C) == (1, 0) and q.insns == []
        q.dep_pop(L, C)  # same pop pending: the first is committed as a compute no-op
        assert q.insns == [MemInsn(opcode=Opcode.LOAD, memory_type=MemId.UOP, pop_prev_dep=1)]
        q.dep_pop(S, C)
        insn = q.load_2d(buf, 0, 1, 1, 1, 0, 0, 0, 0, 0, MemId.ACC)  # compute stage
        assert (insn.pop_prev_dep, insn.pop_next_dep) == (1, 1)
        assert q.pending_pops(C) == (0, 0)


def test_dep_push_sets_the_flag_or_appends_a_noop(device, upload):
    buf = upload(device, nbytes=4096)
    with CommandQueue(device) as q:
        ld = q.load_2d(buf, 0, 1, 1, 1, 0, 0, 0, 0, 0, MemId.INP)
        q.dep_push(L, C)  # last instruction is a load: flag set on it
        assert ld.push_next_dep == 1 and len(q.insns) == 1
        q.dep_push(L, C)  # flag already set: a load no-op carries the push
        assert q.insns[-1] == MemInsn(opcode=Opcode.LOAD, memory_type=MemId.INP, push_next_dep=1)
        q.dep_push(L, C)  # last is a LOAD no-op (no stage): another no-op
        assert len(q.insns) == 3
        q.dep_pop(S, C)
        q.dep_push(C, L)  # commits compute's pending pop, then pushes with another no-op
        assert q.insns[-2:] == [
            MemInsn(opcode=Opcode.LOAD, memory_type=MemId.UOP, pop_next_dep=1),
            MemInsn(opcode=Opcode.LOAD, memory_type=MemId.UOP, push_prev_dep=1)]
        q.dep_push(S, C)
        assert q.insns[-1] == MemInsn(opcode=Opcode.STORE, memory_type=0, push_prev_dep=1)
        with pytest.raises(ValueError, match=r"dep_push\(1, 3\): tokens only flow between "
                                             "adjacent stages"):
            q.dep_push(L, S)
        with pytest.raises(ValueError, match="dep_pop to_qid must be 1 .load., 2 .compute. or 3 "
                                             r".store., not 0"):
            q.dep_pop(L, 0)


def test_synchronize_standard_tail(device, upload):
    """[store no-op 0x21] [load no-op 0x140] [compute no-op 0x18] FINISH 0x3 (section 2.7)."""
    buf = upload(device, nbytes=4096)
    with CommandQueue(device) as q:
        q.load_2d(buf, 0, 1, 1, 1, 0, 0, 0, 0, 0, MemId.ACC)
        q.synchronize()
        assert _words(q.last_stream)[1:] == [(0x21, 0), (0x140, 0), (0x18, 0), (0x3, 0)]
        # a stream ending in a STORE: the push goes onto the STORE itself
        q.store_2d(0, MemId.OUT, buf, 0, 1, 1, 1)
        q.synchronize()
        words = _words(q.last_stream)
        assert len(words) == 4 and words[0][0] & 0x7F == 0x21  # STORE with push_prev
        assert words[1:] == [(0x140, 0), (0x18, 0), (0x3, 0)]
        assert q.synchronize() is None  # nothing queued: no run
        assert len(q.history) == 2


def test_kernel_cache_one_uop_load_while_resident(device, upload):
    with CommandQueue(device) as q:
        calls = []

        def finit():
            calls.append(1)
            q.uop_push(MODE_ALU, 0, 0, 0, 0, AluOp.ADD, 1, 1)

        q.push_alu("k", finit)
        q.push_alu("k", finit)
        uop_loads = [i for i in q.insns if i.opcode == Opcode.LOAD and i.memory_type == MemId.UOP]
        assert len(calls) == 1 and len(uop_loads) == 1 and q.uops_staged == 1
        q.synchronize()
        assert not q.kernel("k").cached  # nothing is resident across runs
        q.push_alu("k", finit)
        assert len(calls) == 1
        assert [i.memory_type for i in q.insns if i.opcode == Opcode.LOAD] == [MemId.UOP]
        q.synchronize()


def test_preloaded_kernels_share_one_uop_load(open_dev, upload, rng):
    """Kernels preloaded back to back are one UOP LOAD; their ALU ops then load nothing."""
    dev = open_dev("tiny")
    acc = rng.integers(-1000, 1000, acc_shape(dev, 8)).astype(np.int32)
    src = upload(dev, acc.astype("<i4"))
    out = dev.alloc(8 * dev.cfg.BATCH * dev.cfg.BLOCK_OUT)

    def kernel(q, ops_imm):
        def finit():
            q.uop_loop_begin(8, 1, 1, 0)
            q.uop_push(MODE_ALU, 0, 0, 0, 0, *ops_imm)
            q.uop_loop_end()
        return finit

    steps = {"add": (AluOp.ADD, 1, 5), "shr": (AluOp.SHR, 1, 2), "max": (AluOp.MAX, 1, -3)}
    with CommandQueue(dev) as q:
        q.load_2d(src, 0, 8, 1, 8, 0, 0, 0, 0, 0, MemId.ACC)
        for key, op in steps.items():
            assert q.preload(key, kernel(q, op), MODE_ALU).cached
        uop_loads = [i for i in q.insns if i.opcode == Opcode.LOAD and i.memory_type == MemId.UOP]
        assert [(i.sram_base, i.x_size) for i in uop_loads] == [(0, 3)]  # one LOAD of three
        assert q.uops_staged == 3
        q.dep_push(L, C)
        q.dep_pop(L, C)  # a pending pop: the next UOP LOAD takes it and is a LOAD of its own
        q.preload("min", kernel(q, (AluOp.MIN, 1, 40)), MODE_ALU)
        loads = [i for i in q.insns if i.opcode == Opcode.LOAD and i.memory_type == MemId.UOP
                 and i.x_size]
        assert [(i.sram_base, i.x_size, i.pop_prev_dep) for i in loads] == [(0, 3, 0), (3, 1, 1)]
        count = len(q.insns)
        for key, op in [*steps.items(), ("min", (AluOp.MIN, 1, 40))]:
            q.push_alu(key, kernel(q, op))
        assert len(q.insns) == count + 4  # the four ALU ops, no further UOP LOAD
        store_out(q, out, 8)
        q.synchronize()
    expect = np.minimum(np.maximum((acc.astype(np.int64) + 5) >> 2, -3), 40).astype(np.int8)
    assert np.array_equal(fetch(dev, out, acc.shape), expect)
    dev.free(out)


def test_kernel_placement_wraps_and_evicts(open_dev, upload):
    dev = open_dev("tiny")  # 256-entry micro-op buffer
    size = 100

    def kernel(q, base):
        def finit():
            for i in range(size):
                q.uop_push(MODE_ALU, 0, (base + i) % dev.cfg.ACC_BUFF_DEPTH, 0, 0, AluOp.MAX, 1,
                           -(1 << 15))
        return finit

    with CommandQueue(dev) as q:
        for key in "ABCBA":
            q.push_alu(key, kernel(q, ord(key)))
        loads = [(i.sram_base, i.x_size) for i in q.insns
                 if i.opcode == Opcode.LOAD and i.memory_type == MemId.UOP]
        # A at 0, B at 100, C wraps to 0 (evicting A), B still resident, A again at 100
        # (evicting B)
        assert loads == [(0, size), (size, size), (0, size), (size, size)]
        alus = [(i.uop_bgn, i.uop_end) for i in q.insns if i.opcode == Opcode.ALU]
        assert alus == [(0, 100), (100, 200), (0, 100), (100, 200), (100, 200)]
        assert q.kernel("A").cached and q.kernel("C").cached and not q.kernel("B").cached
        q.synchronize()


def test_auto_synchronize_before_instruction_overflow(device, upload, rng):
    n = 4
    x = rng.integers(-50, 50, acc_shape(device, n)).astype(np.int32)
    xb, yb = upload(device, x), upload(device, nbytes=x.size)
    with CommandQueue(device, max_insns=24) as q:
        q.load_2d(xb, 0, n, 1, n, 0, 0, 0, 0, 0, MemId.ACC)
        for _ in range(40):  # compute-only: safe to split anywhere
            alu_kernel(q, "inc", 0, 0, 1, n, AluOp.ADD, 1, 1)
        store_out(q, yb, n)
        q.synchronize()
        assert len(q.history) >= 4
        assert sum(s.alu_uops for s in q.history) == 40 * n
    np.testing.assert_array_equal(fetch(device, yb, x.shape), (x + 40).astype(np.int8))


def test_auto_synchronize_before_uop_overflow(device):
    with CommandQueue(device, max_uops=10) as q:
        for key in range(3):
            def finit(key=key):
                for i in range(4):
                    q.uop_push(MODE_ALU, 0, i, i, 0, AluOp.ADD, 1, key)
            q.push_alu(key, finit)
        assert len(q.history) == 1 and q.uops_staged == 4  # kernels 0, 1 ran; 2 is staged
        q.synchronize()
        assert [s.uop_load_bytes for s in q.history] == [32, 16]


def test_dump_writes_disassembly(device, upload):
    buf = upload(device, nbytes=4096)
    out = io.StringIO()
    with CommandQueue(device, dump=out) as q:
        q.load_2d(buf, 0, 2, 1, 2, 0, 0, 0, 0, 0, MemId.ACC)
        q.synchronize()
    lines = out.getvalue().splitlines()
    assert lines[0] == (f"     0: LOAD ACC dram_base={buf.addr // 64:#x} y_size=1 x_size=2 "
                        "x_stride=2")
    assert lines[-1] == "     4: FINISH"
    assert q.last_dump == out.getvalue()


def test_force_serial_rewrites_flags(device, upload):
    buf = upload(device, nbytes=4096)
    with CommandQueue(device, force_serial=True) as q:
        q.load_2d(buf, 0, 1, 1, 1, 0, 0, 0, 0, 0, MemId.INP)
        q.load_2d(buf, 0, 1, 1, 1, 0, 0, 0, 0, 0, MemId.ACC)
        q.store_2d(0, MemId.OUT, buf, 0, 1, 1, 1)
        q.synchronize()
    words = [w0 for w0, _ in _words(q.last_stream)]
    flags = [(w >> 3) & 0xF for w in words]  # pop_prev, pop_next, push_prev, push_next
    # load -> compute: push_next / pop_prev; compute -> store: push_next / pop_prev;
    # the store then signals compute, which finishes after the serial tail
    assert flags[0] == 0b1000 and flags[1] == 0b1001 and flags[2] == 0b0101
    assert words[-1] == 0x3


# ---------------------------------------------------------- bad calls
def test_recording_errors(device):
    with CommandQueue(device) as q:
        with pytest.raises(RuntimeError, match="uop_push must be called while a kernel is "
                                               "recorded"):
            q.uop_push(MODE_GEMM, 0, 0, 0, 0)

        def hazard():
            q.uop_push(MODE_GEMM, 0, 5, 0, 0)
            q.uop_push(MODE_GEMM, 0, 6, 0, 0)
            q.uop_push(MODE_GEMM, 0, 5, 1, 1)

        with pytest.raises(ValueError, match=r"kernel 'h': micro-op 2 writes dst_index 5 like one "
                                             r"of the two micro-ops before it"):
            q.push_gemm("h", hazard)

        def mixed():
            q.uop_push(MODE_ALU, 0, 0, 0, 0, AluOp.ADD, 1, 1)
            q.uop_push(MODE_ALU, 0, 1, 0, 0, AluOp.ADD, 1, 2)

        with pytest.raises(ValueError, match="micro-op 1 changes imm_val 1 -> 2"):
            q.push_alu("m", mixed)

        def three_loops():
            for _ in range(3):
                q.uop_loop_begin(2, 1, 1, 0)

        with pytest.raises(RuntimeError, match="a micro-op kernel has at most 2 loop levels"):
            q.push_gemm("l", three_loops)

        def alu():
            q.uop_push(MODE_ALU, 0, 0, 0, 0, AluOp.ADD, 1, 1)

        with pytest.raises(ValueError, match="kernel 'a' was recorded with ALU micro-ops but "
                                             "pushed as GEMM"):
            q.push_gemm("a", alu)

        def too_wide():
            q.uop_push(MODE_GEMM, 0, device.cfg.ACC_BUFF_DEPTH, 0, 0)

        with pytest.raises(ValueError, match=r"micro-op 0 dst_idx 2048 does not fit its 11-bit "
                                             r"field \(0\.\.2047\)"):
            q.push_gemm("w", too_wide)
        with pytest.raises(ValueError,
                           match=r"uop_push imm_val must be -32768\.\.32767, not 40000"):
            q.push_alu("i", lambda: q.uop_push(MODE_ALU, 0, 0, 0, 0, AluOp.ADD, 1, 40000))
        with pytest.raises(ValueError, match="uop_push ALU opcode must be one of"):
            q.push_alu("o", lambda: q.uop_push(MODE_ALU, 0, 0, 0, 0, 6, 1, 0))


def test_load_store_argument_errors(device, upload):
    cfg = device.cfg
    buf = upload(device, nbytes=4096)
    with CommandQueue(device) as q:
        with pytest.raises(ValueError, match=r"load_2d x_pad_before must be 0\.\.15, not 16"):
            q.load_2d(buf, 0, 1, 1, 1, 16, 0, 0, 0, 0, MemId.INP)
        with pytest.raises(ValueError, match=r"load_2d memory type must be 0 \(UOP\), 1 \(WGT\), "
                                             r"2 \(INP\), 3 \(ACC\), 5 \(ACC_8BIT\), not 4"):
            q.load_2d(buf, 0, 1, 1, 1, 0, 0, 0, 0, 0, MemId.OUT)
        with pytest.raises(ValueError, match=r"store_2d memory type must be 4 \(OUT\), not 3"):
            q.store_2d(0, MemId.ACC, buf, 0, 1, 1, 1)
        with pytest.raises(ValueError, match=rf"load_2d ACC touches bytes 4032\.\.4160 of buffer "
                                             rf"0x{buf.addr:x}, which holds 4096 bytes"):
            q.load_2d(buf, 63, 2, 1, 2, 0, 0, 0, 0, 0, MemId.ACC)
        depth = cfg.INP_BUFF_DEPTH
        with pytest.raises(ValueError, match=rf"load_2d INP writes SRAM entries {depth - 1}\.\."
                                             rf"{depth + 2}, beyond the {depth}-entry buffer"):
            q.load_2d(buf, 0, 2, 1, 2, 1, 0, 1, 0, depth - 1, MemId.INP)
        with pytest.raises(TypeError, match="load_2d x_size must be an integer, not 1.5"):
            q.load_2d(buf, 0, 1.5, 1, 1, 0, 0, 0, 0, 0, MemId.INP)
        assert q.insns == []


def test_finish_is_gemm_format(device, upload):
    buf = upload(device, nbytes=4096)
    with CommandQueue(device) as q:
        q.load_2d(buf, 0, 1, 1, 1, 0, 0, 0, 0, 0, MemId.ACC)
        q.synchronize()
    assert isinstance(q.history[-1].insn_count, int)
    assert _words(q.last_stream)[-1] == (0x3, 0)
    assert GemmInsn(opcode=Opcode.FINISH).opcode == 3


def test_uop_push_block_equals_single_pushes_and_checks_hazards(device):
    with CommandQueue(device) as q:
        dst, src, wgt = [3, 4, 5, 3, 4], [0, 1, 2, 3, 4], 7

        def single():
            for d, s in zip(dst, src, strict=True):
                q.uop_push(MODE_GEMM, 0, d, s, wgt)

        q.push_gemm("single", single)
        q.push_gemm("block", lambda: q.uop_push_block(MODE_GEMM, 0, dst, src, wgt))
        assert q.kernel("single").raw == q.kernel("block").raw
        np.testing.assert_array_equal(q.kernel("block").uops[:, 2], [7] * 5)

        def hazard():
            q.uop_push(MODE_GEMM, 0, 9, 0, 0)
            q.uop_push_block(MODE_GEMM, 0, [1, 2, 3, 1, 2, 1, 5, 5], 0, 0)

        # 1 recurs three places later (allowed), then two places later (micro-op 6)
        with pytest.raises(ValueError, match="kernel 'hz': micro-op 6 writes dst_index 1 like one "
                                             "of the two micro-ops before it"):
            q.push_gemm("hz", hazard)

        def hazard_at_seam():  # the block's second micro-op repeats the one before the block
            q.uop_push(MODE_GEMM, 0, 1, 0, 0)
            q.uop_push_block(MODE_GEMM, 0, [2, 1], 0, 0)

        with pytest.raises(ValueError, match="micro-op 2 writes dst_index 1"):
            q.push_gemm("seam", hazard_at_seam)

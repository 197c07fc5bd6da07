"""The golden model's fast paths give exactly what its general paths give.

Six fast paths: a LOAD or STORE without padding whose rows do not overlap and lie inside
memory with their whole strides (and no bus-error window) is one slice assignment
(``GoldenModel._plain_step``), and such STOREs, and such LOADs of INP and WGT, wait to be
copied together with the next ones that continue their pattern (``Scratchpads.store``,
``Scratchpads.load``); an ALU operation with an immediate over
one slice of distinct ACC entries is deferred and applied together with the next ones on the
same entries (``Scratchpads.defer``); a GEMM into one slice of ACC entries writes their OUT
entries only when they are settled (``Scratchpads.defer_out``); a reset of one slice waits,
and a GEMM into exactly that slice then writes its sums (``Scratchpads.defer_reset``); a nest
whose micro-ops are those of an earlier nest with every field shifted is not decoded again
(``_field_shift``).  Every test runs the same programs on a model as it is and on one with
the fast paths turned off -- every LOAD/STORE through the general path (copied when it
retires), every ALU operation and reset applied and every GEMM's OUT written when it retires,
every nest's fields extracted -- and requires the same memory, scratchpads, counters, tokens,
trace and fault.  The general paths are what the rest of the golden tests check against
NumPy formulas.
"""

from __future__ import annotations

import numpy as np
import pytest

from vta.config import Config
from vta.errors import DeadlockError, ExecutionError
from vta.golden import GoldenModel
from vta.isa import AluInsn, AluOp, GemmInsn, MemId, MemInsn, Opcode, Uop, encode_stream, encode_uop
from vta.regress.generator import ARENA_BYTES, KINDS, generate

DEFAULT = Config.load("default")
TINY = Config.load("tiny")
TINY_B2 = Config(**{**TINY.to_dict(), "LOG_BATCH": 1})
FINISH = GemmInsn(opcode=Opcode.FINISH)


def general(model: GoldenModel) -> GoldenModel:
    """``model`` with its fast paths off (instance attributes shadow the methods)."""
    model._plain_step = lambda *args: None
    sp = model.sp

    def apply_now(rows, func, imm):
        sp.pending = (rows, [(func, imm)], True)
        sp.settle()

    def write_out_now(rows):
        sp.settle()
        sp.out2[rows] = sp.acc2[rows]

    def reset_now(rows):
        sp.settle()
        sp.acc2[rows] = 0

    class NoReferences(dict):  # every nest's fields extracted, none taken as a shifted copy
        def __setitem__(self, key, value):
            pass

    sp.defer = apply_now
    sp.defer_out = write_out_now
    sp.defer_reset = reset_now
    model._nest_refs = NoReferences()
    return model


def state(model: GoldenModel) -> dict:
    return {"mem": model.mem.copy(), "counters": model.counters.as_dict(),
            "tokens": dict(model.tokens),
            **{name: buf.copy() for name, buf in model.sp.buffers().items()}}


def run(model: GoldenModel, addr: int, count: int) -> dict:
    events = []
    try:
        model.run(addr, count, trace=events.append)
        fault = None
    except (ExecutionError, DeadlockError) as exc:
        fault = (type(exc).__name__, str(exc))
    return {"fault": fault, "trace": events, **state(model)}


def assert_same(fast: dict, slow: dict, what: str) -> None:
    assert fast.keys() == slow.keys()
    for key, value in slow.items():
        if isinstance(value, np.ndarray):
            diff = np.flatnonzero(fast[key].reshape(-1) != value.reshape(-1))
            assert not diff.size, f"{what}: {key} differs at element {diff[0]} ({diff.size} differ)"
        else:
            assert fast[key] == value, f"{what}: {key} differs"


def both(cfg: Config, mem_bytes: int) -> tuple[GoldenModel, GoldenModel]:
    return GoldenModel(cfg, mem_bytes), general(GoldenModel(cfg, mem_bytes))


def run_both(models, data: np.ndarray, stream: np.ndarray, insn_dram: int, count: int,
             what: str, **buffers) -> None:
    """Run ``count`` instructions of ``stream`` (at ``insn_dram``, over memory ``data``,
    scratchpads ``buffers`` by name set first) on each model; require the same outcome."""
    outcomes = []
    for model in models:
        model.mem[:data.size] = data
        model.mem[insn_dram:insn_dram + stream.size] = stream
        for name, value in buffers.items():
            getattr(model.sp, name)[...] = value
        outcomes.append(run(model, insn_dram, count))
    assert_same(*outcomes, what)


@pytest.mark.parametrize("cfg", [DEFAULT, TINY_B2], ids=["default", "tiny-batch2"])
def test_fast_paths_on_generated_programs(cfg):
    """Every kind of `vta regress` program (random shapes, padding, strides, memory types,
    overlapping STORE rows, padding-only LOADs, every fault), on both models."""
    base = 0x10000
    for kind in KINDS:
        for seed in (0, 1):
            case = generate(cfg, seed, base, kind)
            image = np.frombuffer(bytes(case.image()), dtype=np.uint8)
            outcomes = []
            for model in both(cfg, base + ARENA_BYTES):
                model.mem[base:base + image.size] = image
                outcomes.append(run(model, case.insn_addr, case.insn_count))
            assert_same(*outcomes, case.describe())


def _random_mem_insn(rng: np.random.Generator, cfg: Config, mem_bytes: int) -> MemInsn:
    """A LOAD or STORE near the corners of both paths: no padding most of the time,
    strides below, at and above the row, 0 and 1 rows, DRAM up to and past the end."""
    store = rng.random() < 0.4
    mem_type = MemId.OUT if store else rng.choice(
        [MemId.INP, MemId.WGT, MemId.ACC, MemId.ACC_8BIT, MemId.UOP, MemId.OUT])
    if store and rng.random() < 0.05:
        mem_type = MemId.INP  # a fault
    y, x = int(rng.integers(0, 5)), int(rng.integers(0, 5))
    pads = rng.integers(0, 3, 4) * (rng.random() < 0.2)
    elem = {MemId.INP: cfg.INP_ELEM_BYTES, MemId.WGT: cfg.WGT_ELEM_BYTES,
            MemId.ACC: cfg.ACC_ELEM_BYTES, MemId.ACC_8BIT: cfg.BATCH * cfg.BLOCK_OUT,
            MemId.UOP: 4, MemId.OUT: cfg.OUT_ELEM_BYTES}[mem_type]
    entries = mem_bytes // elem
    dram = int(rng.integers(0, entries)) if rng.random() < 0.5 else int(
        entries - rng.integers(0, 4 * max(1, x)) - 1)
    return MemInsn(opcode=Opcode.STORE if store else Opcode.LOAD, memory_type=int(mem_type),
                   sram_base=int(rng.integers(0, 40)), dram_base=max(0, dram), y_size=y,
                   x_size=x, x_stride=int(rng.integers(max(0, x - 2), x + 3)),
                   y_pad_0=int(pads[0]), y_pad_1=int(pads[1]), x_pad_0=int(pads[2]),
                   x_pad_1=int(pads[3]))


@pytest.mark.parametrize("cfg", [TINY, TINY_B2], ids=["tiny", "tiny-batch2"])
def test_fast_load_store_on_random_instructions(cfg):
    """Single LOADs and STOREs on random memory, many at the end of a small memory (where a
    plain access must leave room for a whole stride), some with a bus-error window."""
    rng = np.random.default_rng(11)
    mem_bytes = 1 << 14
    fast, slow = both(cfg, mem_bytes)
    data = rng.integers(0, 256, mem_bytes, dtype=np.uint8)
    taken = {"fast": 0, "general": 0}
    plain = fast._plain_step

    def counting_plain_step(*args):
        step = plain(*args)
        taken["fast" if step is not None else "general"] += 1
        return step

    fast._plain_step = counting_plain_step
    for n in range(3000):
        insn = _random_mem_insn(rng, cfg, mem_bytes)
        window = None
        if rng.random() < 0.1:
            lo = int(rng.integers(0, mem_bytes // 4096)) * 4096
            window = (lo, lo + 4096)
        for model in (fast, slow):
            model.mem[:] = data
            model.bus_error = window
        faults = [model.explain(n, insn) for model in (fast, slow)]
        assert str(faults[0]) == str(faults[1]), insn
        assert_same(state(fast), state(slow), f"{insn} (window {window})")
    assert min(taken.values()) > 300, taken  # both paths well exercised


def _racy_stream(rng: np.random.Generator, cfg: Config, n: int, uop_dram: int,
                 out_dram: int) -> list:
    """Random compute, store and load instructions without dependency tokens: the
    engines interleave, so STOREs read OUT between (and during) ALU chains."""
    insns = [MemInsn(opcode=Opcode.LOAD, memory_type=MemId.UOP, sram_base=0,
                     dram_base=uop_dram // 4, y_size=1, x_size=32, x_stride=32)]
    slices = [(0, 4), (4, 4), (2, 5), (8, 1)]  # (first entry, count): some overlap
    for _ in range(n):
        r = rng.random()
        if r < 0.45:  # an ALU op with an immediate, mostly on a few repeated slices
            first, count = slices[int(rng.integers(len(slices)))]
            op = AluOp(int(rng.choice([AluOp.MIN, AluOp.MAX, AluOp.ADD, AluOp.SHR, AluOp.MUL])))
            imm = int(rng.integers(-40, 40)) if op == AluOp.SHR else int(
                rng.choice([0, 127, -5, rng.integers(-300, 300)]))  # repeats, clips, empty clips
            dfi = 1 if rng.random() < 0.9 else int(rng.choice([0, 2]))  # 0 and 2: not a slice
            insns.append(AluInsn(opcode=Opcode.ALU, alu_opcode=int(op), uop_bgn=first,
                                 uop_end=first + 1, iter_out=1, iter_in=count,
                                 dst_factor_in=dfi, use_imm=1, imm=imm))
        elif r < 0.5:  # ALU with a source
            insns.append(AluInsn(opcode=Opcode.ALU, alu_opcode=int(AluOp.ADD), uop_bgn=16,
                                 uop_end=20, iter_out=1, iter_in=1))
        elif r < 0.55:  # GEMM or reset over some entries
            insns.append(GemmInsn(opcode=Opcode.GEMM, reset_reg=int(rng.random() < 0.5),
                                  uop_bgn=20, uop_end=24, iter_out=2, iter_in=1,
                                  dst_factor_out=1, src_factor_out=1))
        elif r < 0.6:  # LOAD of ACC (compute engine)
            insns.append(MemInsn(opcode=Opcode.LOAD,
                                 memory_type=int(rng.choice([MemId.ACC, MemId.ACC_8BIT])),
                                 sram_base=int(rng.integers(0, 10)), dram_base=int(
                                     rng.integers(0, 64)), y_size=1, x_size=2, x_stride=2))
        elif r < 0.9:  # STORE of some OUT entries
            first = int(rng.integers(0, 10))
            insns.append(MemInsn(opcode=Opcode.STORE, memory_type=MemId.OUT, sram_base=first,
                                 dram_base=out_dram // cfg.OUT_ELEM_BYTES + int(
                                     rng.integers(0, 64)), y_size=2, x_size=2, x_stride=3))
        else:  # LOAD of INP or WGT (load engine)
            insns.append(MemInsn(opcode=Opcode.LOAD,
                                 memory_type=int(rng.choice([MemId.INP, MemId.WGT])),
                                 sram_base=0, dram_base=int(rng.integers(0, 64)), y_size=1,
                                 x_size=4, x_stride=4))
    if rng.random() < 0.3:  # a fault somewhere: what retired before it must be written
        at = int(rng.integers(1, len(insns)))
        insns.insert(at, MemInsn(opcode=Opcode.STORE, memory_type=MemId.OUT,
                                 sram_base=cfg.OUT_BUFF_DEPTH, dram_base=0, y_size=1,
                                 x_size=1, x_stride=1))
    return [*insns, FINISH]


def test_deferred_alu_on_racy_streams():
    """ALU chains deferred while STOREs, GEMMs, resets and ACC LOADs on the same and on
    other entries interleave with them (no tokens: the scheduler's own interleaving)."""
    cfg = TINY_B2
    rng = np.random.default_rng(5)
    uops = [Uop(i % 12, 0, 0) for i in range(16)] + [Uop(i, i + 3, 0) for i in range(4)] + [
        Uop(i, i, i) for i in range(4)] + [Uop(0, 0, 0)] * 8
    uop_bytes = b"".join(encode_uop(u, cfg) for u in uops)
    uop_dram, out_dram, insn_dram = 0x2000, 0x3000, 0x4000
    data = rng.integers(0, 256, 1 << 14, dtype=np.uint8)
    data[uop_dram:uop_dram + len(uop_bytes)] = np.frombuffer(uop_bytes, np.uint8)
    chained = 0  # settles that applied more than one operation
    for trial in range(60):
        insns = _racy_stream(rng, cfg, int(rng.integers(10, 60)), uop_dram, out_dram)
        stream = np.frombuffer(encode_stream(insns, cfg), np.uint8)
        acc = rng.integers(-5000, 5000, (cfg.ACC_BUFF_DEPTH, cfg.BATCH, cfg.BLOCK_OUT))
        models = both(cfg, 1 << 16)
        settle = models[0].sp.settle

        def counting_settle(sp=models[0].sp, settle=settle):
            nonlocal chained
            chained += sp.pending is not None and len(sp.pending[1]) > 1
            settle()

        models[0].sp.settle = counting_settle
        run_both(models, data, stream, insn_dram, len(insns), f"trial {trial}", acc=acc)
    assert chained > 30


def _copy_runs_stream(rng: np.random.Generator, cfg: Config, out_dram: int) -> list:
    """Runs of STOREs, and of LOADs of INP or WGT, that continue one pattern (SRAM and DRAM
    steps) and runs that break it (another size or stride, a step back, bytes written twice,
    padding, no rows), without tokens: LOADs read the DRAM that STOREs write, ALU operations
    and GEMMs write the OUT entries STOREs read, GEMMs read the INP and WGT entries LOADs
    write, while the copies wait to be made together."""
    eb = cfg.OUT_ELEM_BYTES
    area = 96  # OUT-sized DRAM elements from out_dram
    insns = [MemInsn(opcode=Opcode.LOAD, memory_type=MemId.UOP, sram_base=0,
                     dram_base=0x2000 // 4, y_size=1, x_size=32, x_stride=32)]
    while len(insns) < 60:
        mem_type = MemId(int(rng.choice([MemId.OUT, MemId.OUT, MemId.INP, MemId.WGT])))
        elem = {MemId.OUT: eb, MemId.INP: cfg.INP_ELEM_BYTES, MemId.WGT: cfg.WGT_ELEM_BYTES}[
            mem_type]
        y, x = int(rng.integers(1, 4)), int(rng.integers(1, 4))
        stride = x + int(rng.integers(0, 3))
        span = (y - 1) * stride + x
        sram_step = int(rng.choice([y * x, y * x, y * x + 1, y * x - 1, 1, 0]))  # < y * x: twice
        dram_step = span + int(rng.choice([0, 0, 1, 3, -1]))  # -1: rows written twice
        base, dram = int(rng.integers(0, 16)), int(rng.integers(0, area // 4))
        for k in range(int(rng.integers(1, 7))):
            kb, kd, ky, kx = base + k * sram_step, dram + k * dram_step, y, x
            pads = [0] * 4
            if rng.random() < 0.1:  # the pattern broken
                kb, kd, ky = max(0, kb + int(rng.integers(-2, 3))), kd + int(
                    rng.integers(-3, 4)), int(rng.integers(0, 4))
            if mem_type != MemId.OUT and rng.random() < 0.05:
                pads = [int(p) for p in rng.integers(0, 2, 4)]  # the general path
            insns.append(MemInsn(
                opcode=Opcode.STORE if mem_type == MemId.OUT else Opcode.LOAD,
                memory_type=int(mem_type), sram_base=kb,
                dram_base=out_dram // elem + max(0, kd * eb // elem), y_size=ky, x_size=kx,
                x_stride=stride if rng.random() < 0.9 else int(rng.choice([kx - 1,
                                                                           stride + 1])),
                y_pad_0=pads[0], y_pad_1=pads[1], x_pad_0=pads[2], x_pad_1=pads[3]))
            r = rng.random()
            if r < 0.15:  # the load engine reads what the STOREs write (or near it)
                insns.append(MemInsn(opcode=Opcode.LOAD, memory_type=MemId.INP,
                                     sram_base=int(rng.integers(0, 8)),
                                     dram_base=out_dram // cfg.INP_ELEM_BYTES + int(
                                         rng.integers(0, area)), y_size=int(rng.integers(1, 3)),
                                     x_size=int(rng.integers(1, 4)), x_stride=3))
            elif r < 0.2:  # the compute engine too (ACC, 8-bit)
                insns.append(MemInsn(opcode=Opcode.LOAD, memory_type=MemId.ACC_8BIT,
                                     sram_base=int(rng.integers(0, 8)),
                                     dram_base=out_dram // eb + int(rng.integers(0, area)),
                                     y_size=1, x_size=2, x_stride=2))
            elif r < 0.35:  # OUT entries the STOREs read change: deferred and at once
                first = int(rng.integers(0, 12))
                insns.append(AluInsn(opcode=Opcode.ALU, alu_opcode=int(AluOp.ADD),
                                     uop_bgn=first, uop_end=first + 1, iter_out=1,
                                     iter_in=int(rng.integers(1, 5)),
                                     dst_factor_in=int(rng.choice([1, 1, 0, 2])), use_imm=1,
                                     imm=int(rng.integers(-50, 50))))
            elif r < 0.45:  # a GEMM reads INP and WGT 0..3 and writes ACC and OUT 0, 2, 4, 6
                insns.append(GemmInsn(opcode=Opcode.GEMM, uop_bgn=20, uop_end=24,  # (not a
                                      iter_out=int(rng.integers(1, 3)), iter_in=1,  # slice:
                                      dst_factor_out=1, src_factor_out=1))  # OUT at once)
            elif r < 0.5:  # a STORE of overlapping rows, written at once
                insns.append(MemInsn(opcode=Opcode.STORE, memory_type=MemId.OUT, sram_base=2,
                                     dram_base=out_dram // eb + int(rng.integers(0, area)),
                                     y_size=2, x_size=2, x_stride=1))
    if rng.random() < 0.3:  # a fault: the copies retired before it must be made
        insns.insert(int(rng.integers(2, len(insns))), MemInsn(
            opcode=Opcode.STORE, memory_type=MemId.OUT, sram_base=cfg.OUT_BUFF_DEPTH,
            dram_base=0, y_size=1, x_size=1, x_stride=1))
    return [*insns, FINISH]


@pytest.mark.parametrize("cfg", [TINY, TINY_B2], ids=["tiny", "tiny-batch2"])
def test_copy_runs_on_racy_streams(cfg):
    """LOADs and STOREs copied together (``Scratchpads.load``, ``Scratchpads.store``) read
    and write what they do one by one, in the scheduler's order with the loads, stores and
    computations around them."""
    rng = np.random.default_rng(21)
    uops = [Uop(i % 12, 0, 0) for i in range(20)] + [Uop(2 * i, i, i) for i in range(4)]
    uop_bytes = b"".join(encode_uop(u, cfg) for u in uops)
    out_dram, insn_dram = 0x3000, 0x4000
    data = rng.integers(0, 256, 1 << 14, dtype=np.uint8)
    data[0x2000:0x2000 + len(uop_bytes)] = np.frombuffer(uop_bytes, np.uint8)
    joined = {True: [], False: []}  # copies made at once by the fast model: STOREs, LOADs
    for trial in range(120):
        insns = _copy_runs_stream(rng, cfg, out_dram)
        stream = np.frombuffer(encode_stream(insns, cfg), np.uint8)
        out = rng.integers(-128, 128, (cfg.OUT_BUFF_DEPTH, cfg.BATCH, cfg.BLOCK_OUT))
        models = both(cfg, 1 << 16)
        sp = models[0].sp
        flush_stores, flush_loads = sp.flush_stores, sp.flush_loads

        def counting_flush_stores(sp=sp, flush=flush_stores):
            if sp.stores is not None:
                joined[True].append(sp.stores.count)
            flush()

        def counting_flush_loads(sp=sp, flush=flush_loads):
            if sp.loads is not None:
                joined[False].append(sp.loads.count)
            flush()

        sp.flush_stores, sp.flush_loads = counting_flush_stores, counting_flush_loads
        run_both(models, data, stream, insn_dram, len(insns), f"trial {trial}", out=out)
    for counts in joined.values():
        assert sum(n > 2 for n in counts) > 30 and sum(n == 1 for n in counts) > 30, joined


def test_memory_given_between_runs():
    """A model given another memory array between runs (as the RTL tests do, keeping the
    scratchpads) loads from and stores to the new one, on every path."""
    cfg = TINY
    insns = [MemInsn(opcode=Opcode.LOAD, memory_type=MemId.UOP, dram_base=0x2000 // 4,
                     y_size=1, x_size=4, x_stride=4),
             MemInsn(opcode=Opcode.LOAD, memory_type=MemId.ACC, sram_base=2,
                     dram_base=0x2400 // cfg.ACC_ELEM_BYTES, y_size=2, x_size=1, x_stride=1),
             MemInsn(opcode=Opcode.LOAD, memory_type=MemId.INP, dram_base=0x2800 // 4,
                     y_size=2, x_size=2, x_stride=3),
             MemInsn(opcode=Opcode.STORE, memory_type=MemId.OUT, sram_base=1,
                     dram_base=0x3000 // 4, y_size=2, x_size=2, x_stride=3), FINISH]
    stream = np.frombuffer(encode_stream(insns, cfg), np.uint8)
    outcomes = []
    for model in both(cfg, 1 << 14):
        model.mem[0x1000:0x1000 + stream.size] = stream
        run(model, 0x1000, len(insns))  # a first run on the first memory
        model.mem = np.random.default_rng(6).integers(0, 256, 1 << 15, dtype=np.uint8)
        model.mem[0x1000:0x1000 + stream.size] = stream
        model.sp.out[...] = 3
        outcomes.append(run(model, 0x1000, len(insns)))
        assert outcomes[-1]["fault"] is None
        np.testing.assert_array_equal(model.sp.uop[:4].view(np.uint8),
                                      model.mem[0x2000:0x2010])
    assert_same(*outcomes, "memory given between runs")


def test_copy_runs_keep_buffers_apart():
    """A LOAD of WGT whose bytes continue the pattern of the INP LOADs before it (same rows
    of the same length, the next DRAM and SRAM byte offsets) is not copied with them."""
    cfg = TINY
    x_inp = cfg.WGT_ELEM_BYTES // cfg.INP_ELEM_BYTES  # INP entries in one WGT entry's bytes
    insns = [MemInsn(opcode=Opcode.LOAD, memory_type=mem_type, sram_base=k * sram,
                     dram_base=(0x3000 + k * 64) // elem, y_size=2, x_size=x, x_stride=2 * x)
             for k, (mem_type, x, sram, elem) in enumerate(
                 [(MemId.INP, x_inp, 2 * x_inp, cfg.INP_ELEM_BYTES)] * 2
                 + [(MemId.WGT, 1, 2, cfg.WGT_ELEM_BYTES)])]
    insns += [GemmInsn(opcode=Opcode.GEMM, uop_bgn=0, uop_end=1, iter_out=1, iter_in=1),
              FINISH]
    data = np.random.default_rng(4).integers(0, 256, 1 << 14, dtype=np.uint8)
    outcomes = []
    for model in both(cfg, 1 << 16):
        model.mem[:data.size] = data
        stream = encode_stream(insns, cfg)
        model.mem[0x1000:0x1000 + len(stream)] = np.frombuffer(stream, np.uint8)
        outcomes.append(run(model, 0x1000, len(insns)))
    assert_same(*outcomes, "INP then WGT")
    assert outcomes[0]["wgt"][4:6].any()  # the WGT rows arrived


@pytest.mark.parametrize("fast", [True, False], ids=["fast", "general"])
def test_store_of_no_rows_writes_nothing(fast):
    """A STORE with y_size 0 (x_size > 0) writes nothing and counts 0 bytes, on both
    paths (the general path used to fail reshaping its empty rows)."""
    model = GoldenModel(TINY, 1 << 16) if fast else general(GoldenModel(TINY, 1 << 16))
    model.sp.out[...] = 7
    insns = [MemInsn(opcode=Opcode.STORE, memory_type=MemId.OUT, sram_base=3, dram_base=64,
                     y_size=0, x_size=2, x_stride=2), FINISH]
    model.mem[0x1000:0x1000 + 32] = np.frombuffer(encode_stream(insns, TINY), np.uint8)
    counters = model.run(0x1000, 2)
    assert counters.store_insns == 1 and counters.out_store_bytes == 0
    assert not model.mem[:0x1000].any()


def test_deferred_chain_against_numpy():
    """Chains with every repeat and MIN/MAX pair the deferral merges (a repeated MIN or MAX
    dropped, MAX then MIN as one clip, an empty clip) and the ones it must not (repeated ADD,
    MUL, SHR; MIN then MAX), against NumPy applied op by op."""
    cfg = TINY
    chains = [(2, [(AluOp.MAX, -100), (AluOp.MAX, -100), (AluOp.MIN, 400), (AluOp.MIN, 400),
                   (AluOp.MIN, 300), (AluOp.MAX, -50), (AluOp.ADD, 5), (AluOp.ADD, 5),
                   (AluOp.MUL, 3), (AluOp.MUL, 3), (AluOp.SHR, 1), (AluOp.SHR, 1),
                   (AluOp.ADD, -7)]),
              (10, [(AluOp.MAX, 60), (AluOp.MIN, 10), (AluOp.ADD, 1)])]  # an empty clip
    funcs = {AluOp.ADD: np.add, AluOp.MUL: np.multiply, AluOp.SHR: np.right_shift,
             AluOp.MAX: np.maximum, AluOp.MIN: np.minimum}
    model = GoldenModel(cfg, 1 << 16)
    uops = b"".join(encode_uop(Uop(first, 0, 0), cfg) for first, _ in chains)
    model.mem[0x2000:0x2000 + len(uops)] = np.frombuffer(uops, np.uint8)
    insns = [MemInsn(opcode=Opcode.LOAD, memory_type=MemId.UOP, dram_base=0x2000 // 4,
                     y_size=1, x_size=len(chains), x_stride=len(chains))]
    for u, (_, ops) in enumerate(chains):
        insns += [AluInsn(opcode=Opcode.ALU, alu_opcode=int(op), uop_bgn=u, uop_end=u + 1,
                          iter_out=1, iter_in=6, dst_factor_in=1, use_imm=1, imm=imm)
                  for op, imm in ops]
    insns.append(FINISH)
    model.mem[0x1000:0x1000 + 16 * len(insns)] = np.frombuffer(encode_stream(insns, cfg),
                                                              np.uint8)
    start = np.random.default_rng(3).integers(-150, 350, model.sp.acc.shape, dtype=np.int32)
    model.sp.acc[...] = start
    model.run(0x1000, len(insns))
    want = start.copy()
    written = np.zeros(len(want), dtype=bool)
    for first, ops in chains:
        for op, imm in ops:
            want[first:first + 6] = funcs[op](want[first:first + 6], np.int32(imm))
        written[first:first + 6] = True
    np.testing.assert_array_equal(model.sp.acc, want)
    np.testing.assert_array_equal(model.sp.out[written], want[written].astype(np.int8))
    assert not model.sp.out[~written].any()
    assert len(np.unique(want[2:8])) > 5  # the first chain keeps the values apart


@pytest.mark.parametrize("cfg", [TINY, TINY_B2], ids=["tiny", "tiny-batch2"])
def test_gemm_out_and_reset_deferred_against_numpy(cfg):
    """GEMMs into one slice of ACC leave its OUT to be written when settled, a reset of it
    waits for the GEMM that follows (which writes its sums instead of adding them): resets,
    GEMMs and ALU operations alternate on the same entries (each must see the ones before
    it applied), STOREs read them, a reset clears ACC but not OUT, an ALU operation after a
    reset writes OUT; against NumPy op by op, and the same on the model with its fast paths
    off."""
    rng = np.random.default_rng(8)
    b, bi, bo = cfg.BATCH, cfg.BLOCK_IN, cfg.BLOCK_OUT
    r0, n = 5, 4  # ACC entries r0..r0+n-1
    uops = [Uop(r0 + u, u, u % 2) for u in range(n)] + [Uop(r0, 0, 0)]
    uop_bytes = b"".join(encode_uop(u, cfg) for u in uops)
    inp = rng.integers(-128, 128, (n, b, bi), dtype=np.int8)
    wgt = rng.integers(-128, 128, (2, bo, bi), dtype=np.int8)
    uop_dram, inp_dram, wgt_dram, out_dram, insn_dram = 0x2000, 0x3000, 0x4000, 0x5000, 0x1000
    load = dict(opcode=Opcode.LOAD, y_size=1, x_stride=1)
    gemm = GemmInsn(opcode=Opcode.GEMM, uop_bgn=0, uop_end=n, iter_out=1, iter_in=1)
    reset = GemmInsn(opcode=Opcode.GEMM, reset_reg=1, uop_bgn=n, uop_end=n + 1, iter_out=1,
                     iter_in=n, dst_factor_in=1)

    def alu(op, imm, **flags):
        return AluInsn(opcode=Opcode.ALU, alu_opcode=int(op), uop_bgn=n, uop_end=n + 1,
                       iter_out=1, iter_in=n, dst_factor_in=1, use_imm=1, imm=imm, **flags)

    def store(at, **flags):
        return MemInsn(opcode=Opcode.STORE, memory_type=MemId.OUT, sram_base=r0,
                       dram_base=(out_dram + at) // (b * bo), y_size=1, x_size=n, x_stride=n,
                       **flags)

    # tokens: the computation waits for the loads, each STORE for the instruction before it,
    # the computation after it for the STORE
    sync = dict(pop_prev_dep=1, push_prev_dep=1)
    insns = [MemInsn(memory_type=MemId.UOP, dram_base=uop_dram // 4, x_size=n + 1, **load),
             MemInsn(memory_type=MemId.INP, dram_base=inp_dram // (b * bi), x_size=n, **load),
             MemInsn(memory_type=MemId.WGT, dram_base=wgt_dram // (bo * bi), x_size=2,
                     push_next_dep=1, **load),
             reset.replace(pop_prev_dep=1), alu(AluOp.ADD, 11, push_next_dep=1),
             store(0, **sync), reset.replace(pop_next_dep=1), gemm, alu(AluOp.SHR, 3), gemm,
             alu(AluOp.ADD, -9), alu(AluOp.MAX, -12000), alu(AluOp.MIN, 12000),
             gemm.replace(push_next_dep=1), store(256, **sync), gemm.replace(pop_next_dep=1),
             reset, FINISH]
    # NumPy, op by op: what ACC and OUT hold when the STOREs read OUT, and at the end
    product = np.einsum("nbi,noi->nbo", inp.astype(np.int64),
                        wgt[np.arange(n) % 2].astype(np.int64)).astype(np.int32)
    acc = np.zeros((n, b, bo), dtype=np.int32)
    for step in [("gemm",), (np.right_shift, 3), ("gemm",), (np.add, -9), (np.maximum, -12000),
                 (np.minimum, 12000), ("gemm",)]:
        acc = acc + product if step[0] == "gemm" else step[0](acc, np.int32(step[1]))
    stored = acc.astype(np.int8)
    out_end = (acc + product).astype(np.int8)  # the last GEMM's OUT; the reset leaves it
    start = rng.integers(-1000, 1000, (cfg.ACC_BUFF_DEPTH, b, bo))  # what the resets clear
    outcomes = []
    for model in both(cfg, 1 << 16):
        for addr, data in ((uop_dram, uop_bytes), (inp_dram, inp.tobytes()),
                           (wgt_dram, wgt.tobytes()), (insn_dram, encode_stream(insns, cfg))):
            model.mem[addr:addr + len(data)] = np.frombuffer(data, np.uint8)
        model.sp.acc[...] = start
        outcomes.append(run(model, insn_dram, len(insns)))
        assert outcomes[-1]["fault"] is None
        np.testing.assert_array_equal(model.mem[out_dram:out_dram + stored.size], 11)
        np.testing.assert_array_equal(
            model.mem[out_dram + 256:out_dram + 256 + stored.size].view(np.int8),
            stored.reshape(-1))
        np.testing.assert_array_equal(model.sp.out[r0:r0 + n], out_end)
        assert not model.sp.acc[r0:r0 + n].any()
    assert_same(*outcomes, "gemm out and reset deferred")
    clipped = (acc - product <= -12000) | (acc - product >= 12000)
    assert clipped.any() and not clipped.all()  # the clip matters, but keeps most apart
    assert len(np.unique(stored)) > stored.size // 2  # apart: a lost step would show


def test_shifted_nests_against_numpy():
    """GEMM nests whose micro-op words differ from the first nest's by one constant: a true
    shifted copy (every field moved) and one where that constant carries from the src field
    into the wgt field (src 2043 and 0, wgt 0 and 1 -- not a shifted copy), on the default
    configuration; against NumPy, and the same with every nest's fields extracted."""
    cfg = DEFAULT
    b, bi, bo = cfg.BATCH, cfg.BLOCK_IN, cfg.BLOCK_OUT
    nests = [[Uop(0, 0, 0), Uop(1, 5, 0)],  # the reference
             [Uop(10, 7, 3), Uop(11, 12, 3)],  # shifted: dst +10, src +7, wgt +3
             [Uop(20, 2043, 0), Uop(21, 0, 1)]]  # words + 2043 << 11, but src wraps
    uops = [u for nest in nests for u in nest]
    uop_bytes = b"".join(encode_uop(u, cfg) for u in uops)
    rng = np.random.default_rng(12)
    inp = rng.integers(-128, 128, (cfg.INP_BUFF_DEPTH, b, bi), dtype=np.int8)
    wgt = rng.integers(-128, 128, (cfg.WGT_BUFF_DEPTH, bo, bi), dtype=np.int8)
    insns = [MemInsn(opcode=Opcode.LOAD, memory_type=MemId.UOP, dram_base=0x2000 // 4,
                     y_size=1, x_size=len(uops), x_stride=len(uops))]
    insns += [GemmInsn(opcode=Opcode.GEMM, uop_bgn=2 * k, uop_end=2 * k + 2, iter_out=1,
                       iter_in=1) for k in range(len(nests))]
    insns.append(FINISH)
    want = np.zeros((cfg.ACC_BUFF_DEPTH, b, bo), dtype=np.int64)
    for u in uops:
        want[u.dst_idx] += inp[u.src_idx].astype(np.int64) @ wgt[u.wgt_idx].astype(np.int64).T
    outcomes = []
    for model in both(cfg, 1 << 16):
        model.mem[0x2000:0x2000 + len(uop_bytes)] = np.frombuffer(uop_bytes, np.uint8)
        stream = encode_stream(insns, cfg)
        model.mem[0x1000:0x1000 + len(stream)] = np.frombuffer(stream, np.uint8)
        model.sp.inp[...] = inp
        model.sp.wgt[...] = wgt
        outcomes.append(run(model, 0x1000, len(insns)))
        np.testing.assert_array_equal(model.sp.acc, want)
    assert_same(*outcomes, "shifted nests")
    assert want[[0, 1, 10, 11, 20, 21]].all(axis=(1, 2)).any()  # the sums are not zero

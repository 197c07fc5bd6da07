"""The fast golden model gives exactly what the specification model gives.

``GoldenModel`` (vta/golden/fast/) is built for speed: loop nests run through cached
plans (GEMM plans with product tables, read from the micro-ops' grid when they form one;
ALU plans split into hazard-free segments), nests of more than ``CHUNK_UOPS`` micro-ops run
in pieces, a nest whose micro-ops are an earlier nest's shifted by a constant reuses its
fields (``_field_shift``), ALU epilogues, a GEMM's OUT writes and resets wait to be applied
together (``Scratchpads.defer``, ``defer_out``, ``defer_reset``), plain LOADs and STOREs are
slice copies and runs of them one strided copy (``_plain_step``, ``Scratchpads.load`` and
``store``), weight tiles converted to float are kept (``Scratchpads.wgt_float``), and the
stream is decoded in blocks.  ``SpecModel`` (vta/golden/spec.py) does none of that: one
instruction, one micro-op at a time.

Every test runs programs on both and requires the same memory, scratchpads, counters,
tokens, trace and fault (type, message, module, index, field, code, address): every kind
of the regression generator (more seeds under ``-m slow``; ``vta regress --against spec``
at scale), the program suite (tests/hand_programs.py, tests/sim/rtl/rtl_programs.py, the
hand-built matmuls of vta.progfile.handbuilt, vta.ops convolutions) and streams aimed at one
fast path each, instrumented to show that the path was taken.  The specification itself is
checked against NumPy formulas in tests/unit/test_golden.py.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hand_programs import GEMM_1X4

import vta
from vta import golden, isa, ops, progfile
from vta.config import Config
from vta.errors import DeadlockError, ExecutionError
from vta.golden import GoldenModel, SpecModel
from vta.isa import (
    AluInsn,
    AluOp,
    GemmInsn,
    MemId,
    MemInsn,
    Opcode,
    Uop,
    decode_word,
    encode_stream,
    encode_uop,
    insn_class,
)
from vta.progfile.handbuilt import build_matmul
from vta.regress.configs import parse_configs
from vta.regress.generator import ARENA_BYTES, KINDS, generate

DEFAULT = Config.load("default")
TINY = Config.load("tiny")
TINY_B2 = Config(**{**TINY.to_dict(), "LOG_BATCH": 1})
FINISH = GemmInsn(opcode=Opcode.FINISH)


# ------------------------------------------------------------------ comparing
def fault_of(exc: Exception) -> tuple:
    """Everything a fault reports."""
    return (type(exc).__name__, str(exc), getattr(exc, "module", None),
            getattr(exc, "index", None), getattr(exc, "field", None), exc.code,
            getattr(exc, "address", None), getattr(exc, "stuck", None))


def state(model) -> dict:
    return {"mem": model.mem.copy(), "counters": model.counters.as_dict(),
            "tokens": dict(model.tokens),
            **{name: buf.copy() for name, buf in model.sp.buffers().items()}}


def run(model, addr: int, count: int) -> dict:
    events = []
    try:
        model.run(addr, count, trace=events.append)
        fault = None
    except (ExecutionError, DeadlockError) as exc:
        fault = fault_of(exc)
    return {"fault": fault, "trace": events, **state(model)}


def assert_same(fast: dict, spec: dict, what: str) -> None:
    assert fast.keys() == spec.keys()
    for key, value in spec.items():
        if isinstance(value, np.ndarray):
            diff = np.flatnonzero(fast[key].reshape(-1) != value.reshape(-1))
            assert not diff.size, (f"{what}: {key} differs at element {diff[0]} ({diff.size} "
                                   "differ)")
        elif key == "trace" and fast[key] != value:
            pairs = zip(fast[key], value, strict=False)
            k = next((k for k, (a, b) in enumerate(pairs) if a != b),
                     min(len(fast[key]), len(value)))
            raise AssertionError(f"{what}: trace differs at event {k}: fast "
                                 f"{fast[key][k:k + 1]}, spec {value[k:k + 1]}")
        else:
            assert fast[key] == value, f"{what}: {key} differs: fast {fast[key]}, spec {value}"


def both(cfg: Config, mem_bytes: int) -> tuple[GoldenModel, SpecModel]:
    return GoldenModel(cfg, mem_bytes), SpecModel(cfg, mem_bytes)


def run_both(models, data: np.ndarray, stream: np.ndarray, insn_dram: int, count: int,
             what: str, **buffers) -> list[dict]:
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
    return outcomes


def replay(models, image: np.ndarray, insn_addr: int, insn_count: int, what: str,
           bus_error: tuple[int, int] | None = None) -> list[dict]:
    """Give each model a copy of ``image`` as its memory (scratchpads kept, as the hardware
    keeps them between runs) and run the stream on it; require the same outcome."""
    outcomes = []
    for model in models:
        model.mem = image.copy()
        model.bus_error = bus_error
        outcomes.append(run(model, insn_addr, insn_count))
    assert_same(*outcomes, what)
    return outcomes


# ---------------------------------------------------- the regression generator
def check_generated(cfg: Config, kind: str, seeds) -> None:
    base = 0x10000
    for seed in seeds:
        case = generate(cfg, seed, base, kind, mem_size=base + ARENA_BYTES)
        image = np.zeros(base + ARENA_BYTES, dtype=np.uint8)
        data = np.frombuffer(bytes(case.image()), dtype=np.uint8)
        image[base:base + data.size] = data
        replay(both(cfg, 1), image, case.insn_addr, case.insn_count, case.describe())


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("cfg", [DEFAULT, TINY_B2], ids=["default", "tiny-batch2"])
def test_generated_programs(cfg, kind):
    """Every kind of `vta regress` program (random shapes, padding, strides, memory types,
    overlapping STORE rows, padding-only LOADs, full token queues, every fault)."""
    check_generated(cfg, kind, range(3))


@pytest.mark.slow
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("cfg", [TINY, DEFAULT, *parse_configs("random:3", 22)],
                         ids=lambda cfg: cfg.name)
def test_generated_programs_many_seeds(cfg, kind):
    check_generated(cfg, kind, range(3, 40))


# ------------------------------------------------------------ the program suite
def test_hand_written_program():
    """The hand-written program file of the CLI tests."""
    prog = progfile.parse(GEMM_1X4)
    image = np.frombuffer(prog.read(0, prog.end), dtype=np.uint8)
    fast, spec = replay(both(prog.cfg, 1), image, prog.insn_addr, prog.insn_count, "GEMM_1X4")
    assert fast["fault"] is None and fast["counters"]["gemm_uops"] == 1


@pytest.mark.parametrize("cfg", [TINY, DEFAULT, TINY_B2], ids=["tiny", "default", "tiny-batch2"])
def test_rtl_test_programs(cfg, monkeypatch):
    """The programs of the RTL tests, one after the other on the same scratchpads: matmuls,
    the mixed program (every instruction kind, padding, strides, hazards), forwarding,
    zero-fill, one program per fault, one per bus-error stream."""
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1] / "sim" / "rtl"))
    from rtl_programs import bus_errors, faults, suite

    mem_size = 1 << 20
    programs = [*suite(cfg, np.random.default_rng(1)), *faults(cfg, mem_size), *bus_errors(cfg)]
    models = both(cfg, 1)
    for prog in programs:
        replay(models, prog.image(cfg, mem_size), prog.insn_addr, prog.insn_count,
               f"{cfg.name} {prog.name}", prog.bus_error)


MATMULS = [(DEFAULT, (64, 48, 80), {}), (TINY, (36, 20, 40), {}),
           (TINY, (36, 20, 40), {"col_blocks": 3, "row_blocks": 5}),
           (TINY_B2, (12, 8, 20), {})]


def check_matmul(cfg: Config, shape, caps) -> None:
    m, k, n = shape
    rng = np.random.default_rng(5)
    prog = build_matmul(cfg, m, k, n, shift=6, **caps)
    image = np.zeros(prog.end, dtype=np.uint8)
    prog.write(image, rng.integers(-128, 128, (m, k), dtype=np.int8),
               rng.integers(-128, 128, (n, k), dtype=np.int8))
    replay(both(cfg, 1), image, prog.insn_addr, prog.insn_count, f"matmul {shape} {caps}")


@pytest.mark.parametrize("cfg, shape, caps", MATMULS,
                         ids=["default", "tiny", "tiny-chunked", "tiny-batch2"])
def test_matmul_programs(cfg, shape, caps):
    """Hand-built tiled matmuls: loads, GEMMs and stores overlapped by tokens."""
    check_matmul(cfg, shape, caps)


@pytest.mark.slow
@pytest.mark.parametrize("caps", [{}, {"col_blocks": 4, "row_blocks": 32}],
                         ids=["whole", "chunked"])
def test_matmul_256(caps):
    check_matmul(DEFAULT, (256, 256, 256), caps)


def captured_runs(cfg: Config, folder, body) -> list[progfile.Program]:
    """The runs ``body(device)`` makes on a golden device, as captured program files."""
    with vta.open_device("golden", cfg, capture=folder) as dev:
        body(dev)
    return [progfile.load(path) for path in sorted(folder.glob(f"run-*{progfile.SUFFIX}"))]


def check_captured(cfg: Config, runs: list[progfile.Program]) -> None:
    models = both(cfg, 1)
    for number, prog in enumerate(runs):
        image = np.frombuffer(prog.read(0, prog.mem_size or prog.end), dtype=np.uint8)
        fast, _ = replay(models, image, prog.insn_addr, prog.insn_count, f"run {number}")
        assert fast["fault"] is None


def conv_layers(cfg: Config, layers) -> callable:
    """A body running ``ops.conv2d`` on each of ``layers`` (H, W, C, O, kernel, pad, stride)
    with upstream's epilogue (>> 8, ReLU, clip to 127)."""
    def body(dev):
        rng = np.random.default_rng(9)
        for h, w, c, o, k, pad, stride in layers:
            ops.conv2d(dev, rng.integers(-128, 128, (1, c, h, w), dtype=np.int8),
                       rng.integers(-128, 128, (o, c, k, k), dtype=np.int8), stride=stride,
                       padding=pad, shift=8, relu=True, clip=(0, 127))
    return body


def test_conv2d_programs(tmp_path):
    """vta.ops convolutions (3x3 and strided 1x1, several channel chunks): the conv tiles
    the GEMM grid tables, copy runs and deferred epilogues are built for."""
    runs = captured_runs(DEFAULT, tmp_path, conv_layers(DEFAULT, [
        (10, 10, 32, 48, 3, 1, 1), (12, 12, 48, 32, 1, 0, 2), (9, 9, 16, 16, 3, 1, 2)]))
    assert len(runs) == 3
    check_captured(DEFAULT, runs)


@pytest.mark.slow
@pytest.mark.parametrize("layer", list(ops.RESNET18_LAYERS))
def test_resnet18_layers(tmp_path, layer):
    """Upstream's ResNet-18 benchmark layers, as `scripts/bench/golden_fsim.py` runs them."""
    runs = captured_runs(DEFAULT, tmp_path, conv_layers(DEFAULT, [ops.RESNET18_LAYERS[layer]]))
    check_captured(DEFAULT, runs)


# ------------------------------------------------- streams aimed at one fast path
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
def test_plain_load_store_on_random_instructions(cfg):
    """Single LOADs and STOREs on random memory (``_plain_step``: one slice copy when the
    access is plain), many at the end of a small memory (where a plain access must leave
    room for a whole stride), some with a bus-error window; faults by ``explain``."""
    rng = np.random.default_rng(11)
    mem_bytes = 1 << 14
    fast, spec = both(cfg, mem_bytes)
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
        for model in (fast, spec):
            model.mem[:] = data
            model.bus_error = window
        faults = [model.explain(n, insn) for model in (fast, spec)]
        assert [f if f is None else fault_of(f) for f in faults[:1]] == [
            f if f is None else fault_of(f) for f in faults[1:]], insn
        assert_same(state(fast), state(spec), f"{insn} (window {window})")
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
    """ALU chains deferred (``Scratchpads.defer``) while STOREs, GEMMs, resets and ACC LOADs
    on the same and on other entries interleave with them (no tokens: the scheduler's own
    interleaving)."""
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


@pytest.mark.parametrize("model_class", [GoldenModel, SpecModel], ids=["fast", "spec"])
def test_store_of_no_rows_writes_nothing(model_class):
    """A STORE with y_size 0 (x_size > 0) writes nothing and counts 0 bytes (the fast
    model's general path used to fail reshaping its empty rows)."""
    model = model_class(TINY, 1 << 16)
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
    for u, (_, chain) in enumerate(chains):
        insns += [AluInsn(opcode=Opcode.ALU, alu_opcode=int(op), uop_bgn=u, uop_end=u + 1,
                          iter_out=1, iter_in=6, dst_factor_in=1, use_imm=1, imm=imm)
                  for op, imm in chain]
    insns.append(FINISH)
    model.mem[0x1000:0x1000 + 16 * len(insns)] = np.frombuffer(encode_stream(insns, cfg),
                                                              np.uint8)
    start = np.random.default_rng(3).integers(-150, 350, model.sp.acc.shape, dtype=np.int32)
    model.sp.acc[...] = start
    model.run(0x1000, len(insns))
    want = start.copy()
    written = np.zeros(len(want), dtype=bool)
    for first, chain in chains:
        for op, imm in chain:
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
    reset writes OUT; against NumPy op by op, on both models."""
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
    configuration; against NumPy, on both models."""
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


# ------------------------------------------------- nests: pieces, plans, caches
def random_scratchpads(rng: np.random.Generator, cfg: Config) -> dict[str, np.ndarray]:
    """Random INP, WGT and ACC contents (ACC over the whole int32 range)."""
    b, bi, bo = cfg.BATCH, cfg.BLOCK_IN, cfg.BLOCK_OUT
    return {"inp": rng.integers(-128, 128, (cfg.INP_BUFF_DEPTH, b, bi)),
            "wgt": rng.integers(-128, 128, (cfg.WGT_BUFF_DEPTH, bo, bi)),
            "acc": rng.integers(-2**31, 2**31, (cfg.ACC_BUFF_DEPTH, b, bo))}


def uop_words(uops: list[Uop], cfg: Config) -> np.ndarray:
    """The micro-op buffer holding ``uops`` from entry 0 (zeros after them)."""
    words = np.zeros(cfg.UOP_BUFF_DEPTH, dtype=np.uint32)
    words[:len(uops)] = [int.from_bytes(encode_uop(u, cfg), "little") for u in uops]
    return words


def run_nests(cfg: Config, uops: list[Uop], insns: list, seed: int, what: str) -> GoldenModel:
    """Run ``insns`` (then FINISH) on both models from random scratchpads holding ``uops``;
    require the same outcome; return the fast model."""
    insns = [*insns, FINISH]
    models = both(cfg, 1 << 16)
    run_both(models, np.zeros(0, np.uint8), np.frombuffer(encode_stream(insns, cfg), np.uint8),
             0x1000, len(insns), what, uop=uop_words(uops, cfg),
             **random_scratchpads(np.random.default_rng(seed), cfg))
    return models[0]


@pytest.mark.parametrize("chunk", [40, 7], ids=["outer-split", "inner-split"])
@pytest.mark.parametrize("kind", ["gemm", "alu"])
def test_nests_run_in_pieces(monkeypatch, kind, chunk):
    """A nest larger than CHUNK_UOPS runs in pieces (whole outer, or inner, iterations),
    including ALU read-after-write chains that cross piece boundaries and GEMM reductions
    split across pieces."""
    monkeypatch.setattr(golden.fast.model, "CHUNK_UOPS", chunk)
    pieces = []
    split = golden.fast.model._split
    monkeypatch.setattr(golden.fast.model, "_split", lambda *a: (pieces.append(p) or p
                                                           for p in split(*a)))
    if kind == "gemm":  # dst factor 0 on the inner loop: a reduction cut by the pieces
        uops = [Uop(0, 0, 0), Uop(1, 3, 2), Uop(4, 1, 5)]
        insn = GemmInsn(opcode=Opcode.GEMM, uop_bgn=0, uop_end=3, iter_out=5, iter_in=6,
                        dst_factor_out=5, dst_factor_in=0, src_factor_out=7, src_factor_in=2,
                        wgt_factor_out=3, wgt_factor_in=1)
    else:  # dst k reads k - 1, written one step earlier (also across pieces)
        uops = [Uop(1, 0, 0), Uop(2, 1, 0)]
        insn = AluInsn(opcode=Opcode.ALU, alu_opcode=AluOp.ADD, uop_bgn=0, uop_end=2,
                       iter_out=5, iter_in=6, dst_factor_out=12, dst_factor_in=2,
                       src_factor_out=12, src_factor_in=2)
    model = run_nests(TINY, uops, [insn], 17, f"{kind}, pieces of {chunk}")
    assert model.counters.gemm_uops + model.counters.alu_uops == 5 * 6 * len(uops)
    assert len(pieces) >= 2


def gemm_nest_plan(cfg: Config, uops: list[Uop], loops: dict,
                   seed: int) -> golden.fast.plans.GemmPlan:
    """Run one GEMM nest on random scratchpads on both models, require the same outcome, and
    return the fast model's plan of it."""
    model = run_nests(cfg, uops, [GemmInsn(opcode=Opcode.GEMM, uop_end=len(uops), **loops)],
                      seed, f"GEMM {uops} {loops}")
    [plan] = [p for p in model._plans.values() if isinstance(p, golden.fast.plans.GemmPlan)]
    return plan


@pytest.mark.parametrize("layout, uops, loops", [
    # 2 inputs x 3 weights, destination w*2 + x: the product table itself
    ("table", [Uop(0, 0, 0), Uop(2, 0, 1), Uop(4, 0, 2)], dict(
        iter_out=2, iter_in=3, dst_factor_out=1, src_factor_out=5, src_factor_in=1,
        wgt_factor_in=4)),
    # weights and inputs in descending order: the table too, its keys in that order
    ("table", [Uop(0, 7, 2), Uop(1, 3, 2), Uop(2, 7, 1), Uop(3, 3, 1), Uop(4, 7, 0),
               Uop(5, 3, 0)], dict(iter_out=1, iter_in=1)),
    # destination x*3 + w: the product table transposed, picked
    ("picked", [Uop(0, 0, 0), Uop(1, 0, 1), Uop(2, 0, 2)], dict(
        iter_out=2, iter_in=3, dst_factor_out=3, src_factor_out=5, src_factor_in=1,
        wgt_factor_in=4)),
    # every combination, destinations in another order: picked from the table
    ("picked", [Uop(5, 0, 0), Uop(0, 0, 1), Uop(3, 0, 2)], dict(
        iter_out=2, iter_in=1, dst_factor_out=1, src_factor_out=7)),
    # weight-major blocks, inputs in descending order inside each: the table
    ("table", [Uop(1, 0, 0), Uop(0, 5, 0)], dict(
        iter_out=3, iter_in=1, dst_factor_out=2, wgt_factor_out=4)),
    # input-major blocks but weights reversed inside each: picked
    ("picked", [Uop(1, 0, 0), Uop(0, 0, 4)], dict(
        iter_out=3, iter_in=1, dst_factor_out=2, src_factor_out=5)),
    # a whole table in destination order but for one destination taken twice: summed
    ("picked", [Uop(2, 1, 0), Uop(0, 0, 0), Uop(2, 2, 0)], dict(iter_out=1, iter_in=1)),
    # inputs repeating in destination order, but the second block mixes two weights
    ("picked", [Uop(0, 5, 0), Uop(1, 6, 0), Uop(2, 5, 1), Uop(3, 6, 2)], dict(
        iter_out=1, iter_in=1)),
    # two pairs of the first weight, one of the second: not a whole table
    ("picked", [Uop(0, 0, 0), Uop(1, 1, 0), Uop(2, 0, 1)], dict(iter_out=1, iter_in=1)),
    # a diagonal: few of the combinations, one product per weight's group
    ("grouped", [Uop(k, k, k) for k in range(6)], dict(iter_out=1, iter_in=2, src_factor_in=9,
                                                        wgt_factor_in=9)),
])
@pytest.mark.parametrize("cfg", [TINY, TINY_B2], ids=["batch1", "batch2"])
def test_gemm_product_layouts(layout, uops, loops, cfg):
    """Each way a GEMM plan turns products into destinations (its product table whole,
    picked from, or products per weight's group)."""
    assert gemm_nest_plan(cfg, uops, loops, seed=31).layout == layout


#: a conv tile as ops.conv2d makes it: micro-ops (x, channel chunk c) over output rows (the
#: outer loop) and reduction steps (the inner loop), destination x + 3 * row + 9 * c
CONV_TILE = ([Uop(x + 9 * c, 2 * x, 2 * c) for c in range(4) for x in range(3)], dict(
    iter_out=3, dst_factor_out=3, src_factor_out=7, iter_in=2, src_factor_in=20,
    wgt_factor_in=1))


@pytest.mark.parametrize("grid, uops, loops", [
    (True, *CONV_TILE),
    # one micro-op axis of weights, a loop of inputs, a reduction over both
    (True, [Uop(0, 0, 0), Uop(2, 0, 1), Uop(4, 0, 2)], dict(
        iter_out=2, iter_in=3, dst_factor_out=1, src_factor_out=5, src_factor_in=1,
        wgt_factor_in=4)),
    # three micro-op axes, two of inputs (not consecutive), no loops
    (True, [Uop(x + 2 * y + 4 * c, x + 3 * y, c) for c in range(2) for y in range(2)
            for x in range(2)], dict(iter_out=1, iter_in=1)),
    # inputs consecutive, a loop of weights, no reductions
    (True, [Uop(u, u, 0) for u in range(5)], dict(iter_out=3, dst_factor_out=5,
                                                  wgt_factor_out=1, iter_in=1)),
    # the conv tile with one micro-op's input off its grid: a grid along dst only
    (False, CONV_TILE[0][:4] + [Uop(4, 3, 0)] + CONV_TILE[0][5:], CONV_TILE[1]),
    # ... and with one micro-op's weight off
    (False, CONV_TILE[0][:10] + [Uop(19, 2, 5)] + CONV_TILE[0][11:], CONV_TILE[1]),
    # destination x * 3 + w: the table transposed
    (False, [Uop(0, 0, 0), Uop(1, 0, 1), Uop(2, 0, 2)], dict(
        iter_out=2, iter_in=3, dst_factor_out=3, src_factor_out=5, src_factor_in=1,
        wgt_factor_in=4)),
    # an axis moving input and weight together
    (False, [Uop(k, k, k) for k in range(6)], dict(iter_out=1, iter_in=1)),
    # destinations descending; inputs descending
    (False, [Uop(5 - u, u, 0) for u in range(6)], dict(iter_out=2, dst_factor_out=6,
                                                       wgt_factor_out=1, iter_in=1)),
    (False, [Uop(u, 5 - u, 0) for u in range(6)], dict(iter_out=2, dst_factor_out=6,
                                                       wgt_factor_out=1, iter_in=1)),
    # five micro-ops: a first axis of three, then no whole axis
    (False, [Uop(0, 0, 0), Uop(1, 1, 0), Uop(2, 2, 0), Uop(3, 0, 1), Uop(4, 1, 1)], dict(
        iter_out=1, iter_in=1)),
    # a destination repeated; a gap between destinations
    (False, [Uop(0, 0, 0), Uop(0, 1, 0)], dict(iter_out=2, dst_factor_out=1, wgt_factor_out=1,
                                               iter_in=1)),
    (False, [Uop(x + 4 * c, x, c) for c in range(2) for x in range(3)], dict(
        iter_out=1, iter_in=1)),
])
@pytest.mark.parametrize("cfg", [TINY, TINY_B2], ids=["batch1", "batch2"])
def test_gemm_grid_tables(monkeypatch, grid, uops, loops, cfg):
    """A GEMM nest whose micro-ops are a grid and, with its loops, a product table is planned
    from its axes (``_grid_table``), anything irregular from its pairs: the same outcome as
    the specification, and the same plan (layout, rows read, destinations) as the pairs
    give."""
    found = []

    def spy(rel, par):
        found.append(real(rel, par))
        return found[-1]

    real = golden.fast.plans._grid_table
    plans = []
    for table in (spy, lambda rel, par: None):  # then every plan from its pairs
        monkeypatch.setattr(golden.fast.plans, "_grid_table", table)
        plans.append(gemm_nest_plan(cfg, uops, loops, seed=5))
    assert [f is not None for f in found] == [grid]
    fast, general = plans
    assert (fast.layout, fast.nx, fast.nw) == (general.layout, general.nx, general.nw)
    for rows in ("dst", "x_rows", "w_rows"):
        got, want = getattr(fast, rows), getattr(general, rows)
        assert type(got) is type(want)
        assert got == want if isinstance(want, slice) else got.tolist() == want.tolist()


def _kernels(rng: np.random.Generator, cfg: Config) -> list[list[Uop]]:
    """Micro-op kernels the fast model plans differently: conv-tile grids and the same grid
    shifted (another tile, channel chunk or buffer half), diagonals, repeated destinations
    and read-after-write chains, single micro-ops, random indices."""
    kernels = []
    for _ in range(3):
        nx, nc, sx = int(rng.integers(1, 4)), int(rng.integers(1, 4)), int(rng.integers(1, 3))
        grid = [Uop(x + nx * c, sx * x, c) for c in range(nc) for x in range(nx)]
        kernels.append(grid)
        for _ in range(2):
            d, s, w = (int(v) for v in rng.integers(0, 6, 3))
            kernels.append([Uop(u.dst_idx + d, u.src_idx + s, u.wgt_idx + w) for u in grid])
    kernels.append([Uop(k, k, k) for k in range(int(rng.integers(2, 6)))])
    kernels.append([Uop(k + 1, k, 0) for k in range(4)])  # an ALU chain: dst k+1 reads k
    kernels.append([Uop(int(rng.integers(0, 3)), int(rng.integers(0, 8)),
                        int(rng.integers(0, 8))) for _ in range(5)])  # destinations repeat
    kernels += [[Uop(*(int(v) for v in rng.integers(0, 8, 3)))] for _ in range(3)]
    kernels.append([Uop(*(int(v) for v in rng.integers(0, 16, 3))) for _ in range(6)])
    return kernels


def _nest_stream(rng: np.random.Generator, cfg: Config, kernels: list[list[Uop]],
                 starts: list[int], n: int) -> list:
    """Random GEMM, reset and ALU nests over ``kernels`` (at ``starts`` in the micro-op
    buffer) with random loops and factors -- the same kernel under other loops, the same
    loops over another kernel, reductions (dst factor 0), empty nests, the odd index out of
    range, a nest repeated -- and LOADs that change INP and WGT between them, without
    tokens."""
    depth = {"dst_idx": cfg.ACC_BUFF_DEPTH, "wgt_idx": cfg.WGT_BUFF_DEPTH}
    insns = []
    for _ in range(n):
        nests = [i for i in insns if i.opcode != Opcode.LOAD]
        if nests and rng.random() < 0.2:  # a nest again, as the tiles of a layer repeat
            insns.append(nests[int(rng.integers(len(nests)))])
            continue
        if rng.random() < 0.12:  # the load engine writes what the GEMMs read
            mem_type = int(rng.choice([MemId.INP, MemId.WGT]))
            insns.append(MemInsn(opcode=Opcode.LOAD, memory_type=mem_type,
                                 sram_base=int(rng.integers(0, 8)),
                                 dram_base=int(rng.integers(0, 32)), y_size=1,
                                 x_size=int(rng.integers(1, 4)), x_stride=4))
            continue
        k = int(rng.integers(len(kernels)))
        kind = rng.choice(["gemm", "gemm", "reset", "alu", "alu_src"])
        src_depth = cfg.INP_BUFF_DEPTH if kind in ("gemm", "reset") else cfg.ACC_BUFF_DEPTH
        for _ in range(20):  # loops whose indices fit (nearly always)
            loops = [int(rng.choice([1, 1, 2, 3, 4])) for _ in range(2)]
            factors = {f: [int(rng.choice([0, 0, 1, 2, 4, 8])) for _ in range(2)]
                       for f in ("dst_idx", "src_idx", "wgt_idx")}
            tops = {f: max(getattr(u, f) for u in kernels[k]) + sum(
                (n - 1) * fac for n, fac in zip(loops, factors[f], strict=True))
                for f in factors}
            if all(tops[f] < depth.get(f, src_depth) for f in tops) or rng.random() < 0.02:
                break
        if rng.random() < 0.04:
            loops[int(rng.integers(2))] = 0  # an empty nest
        nest = dict(uop_bgn=starts[k], uop_end=starts[k] + len(kernels[k]), iter_out=loops[0],
                    iter_in=loops[1], dst_factor_out=factors["dst_idx"][0],
                    dst_factor_in=factors["dst_idx"][1], src_factor_out=factors["src_idx"][0],
                    src_factor_in=factors["src_idx"][1])
        if kind in ("gemm", "reset"):
            insns.append(GemmInsn(opcode=Opcode.GEMM, reset_reg=int(kind == "reset"),
                                  wgt_factor_out=factors["wgt_idx"][0],
                                  wgt_factor_in=factors["wgt_idx"][1], **nest))
        else:
            op = int(rng.choice(list(AluOp)))
            insns.append(AluInsn(opcode=Opcode.ALU, alu_opcode=op, use_imm=int(kind == "alu"),
                                 imm=int(rng.integers(-40, 40) if op == AluOp.SHR else
                                         rng.integers(-3000, 3000)), **nest))
    return insns


@pytest.mark.parametrize("cfg", [TINY, TINY_B2], ids=["tiny", "tiny-batch2"])
def test_random_nests(monkeypatch, cfg):
    """Random nests over kernels of every shape, many per model: plans reused across kernels
    and loops (the plan cache and the whole-nest cache, keyed on exactly what a plan depends
    on), shifted copies of a kernel (``_field_shift``), grid tables, hazard-free ALU segments,
    float weights kept per plan and WGT base (and dropped by a LOAD of WGT), nests in pieces,
    and a plan cache small enough to be emptied many times."""
    monkeypatch.setattr(golden.fast.model, "PLAN_CACHE_UOPS", 300)
    monkeypatch.setattr(golden.fast.model, "CHUNK_UOPS", 24)
    taken = {"shifted": 0, "grid": 0, "emptied": 0, "nest reused": 0, "weights kept": 0}
    field_shift, grid_table = golden.fast.model._field_shift, golden.fast.plans._grid_table

    def spy(name, real):
        def counting(*args):
            found = real(*args)
            taken[name] += found is not None
            return found
        return counting

    class Counting(dict):
        """A cache that counts its hits (``get``) and its emptying (``clear``)."""

        def __init__(self, hits: str):
            super().__init__()
            self.hits = hits

        def get(self, key, default=None):
            found = super().get(key, default)
            taken[self.hits] += found is not None
            return found

        def clear(self):
            taken["emptied"] += self.hits == "nest reused" and len(self) > 0
            super().clear()

    monkeypatch.setattr(golden.fast.model, "_field_shift", spy("shifted", field_shift))
    monkeypatch.setattr(golden.fast.plans, "_grid_table", spy("grid", grid_table))
    rng = np.random.default_rng(40)
    data = rng.integers(0, 256, 1 << 15, dtype=np.uint8)
    for trial in range(25):
        kernels = _kernels(rng, cfg)
        starts = np.cumsum([0] + [len(k) for k in kernels]).tolist()
        insns = [MemInsn(opcode=Opcode.LOAD, memory_type=MemId.UOP, dram_base=0x3000 // 4,
                         y_size=1, x_size=starts[-1], x_stride=starts[-1])]
        insns += _nest_stream(rng, cfg, kernels, starts, 40) + [FINISH]
        uops = b"".join(encode_uop(u, cfg) for k in kernels for u in k)
        image = data.copy()
        image[0x3000:0x3000 + len(uops)] = np.frombuffer(uops, np.uint8)
        models = both(cfg, 1 << 16)
        models[0]._nests = Counting("nest reused")
        models[0].sp.wgt_float = Counting("weights kept")
        run_both(models, image, np.frombuffer(encode_stream(insns, cfg), np.uint8), 0x2000,
                 len(insns), f"trial {trial}", **random_scratchpads(rng, cfg))
    assert min(taken.values()) > 10, taken


# ------------------------------------------------------------------ decoding
@pytest.mark.parametrize("cfg", [DEFAULT, TINY], ids=["default", "tiny"])
def test_block_decoding_equals_decode_word(cfg):
    """The model decodes a block of instructions at once with NumPy; every field of every
    kind of instruction (random words, negative immediates included) must come out exactly
    as isa.decode_word gives it, with the engine and token queues of vta-reference 3.8."""
    rng = np.random.default_rng(23)
    words = rng.integers(0, 2**63, (600, 2), dtype=np.int64).astype(np.uint64) * 2 + \
        rng.integers(0, 2, (600, 2), dtype=np.int64).astype(np.uint64)  # all 64 bits random
    words[:, 0] = (words[:, 0] & ~np.uint64(7)) | (np.arange(600) % 5).astype(np.uint64)
    model = GoldenModel(cfg, 1 << 16)
    model.mem[:words.size * 8] = words.astype("<u8").view(np.uint8).reshape(-1)
    fetched, codes, queues = model.fetch(0, len(words))
    block = golden.fast.decode.decode_block(fetched, codes, model._decoding)
    engines = []
    for (low, high), fields, links in zip(words.tolist(), *block, strict=True):
        expected = decode_word(low | high << 64, cfg)
        # a decoded instruction is the list of its fields in its class's order
        assert fields == list(expected.fields().values())
        insn = insn_class(fields[0])(*fields)
        assert insn == expected and type(insn) is type(expected)
        engine = isa.dispatch_engine(expected)
        engines.append(engine)
        flags = [f for f in isa.DEP_FLAGS if getattr(expected, f)]
        assert links.pops == tuple(isa.POP_QUEUE[(engine, f)] for f in flags
                                   if (engine, f) in isa.POP_QUEUE)
        assert links.pushes == tuple((isa.PUSH_QUEUE[(engine, f)], f) for f in flags
                                     if (engine, f) in isa.PUSH_QUEUE)
        assert links.forbidden == next(
            (f for f in flags if f in isa.FORBIDDEN_FLAGS[engine]), None)
    for engine, indices in queues.items():
        assert indices == [i for i, e in enumerate(engines) if e == engine]
    assert any(fields[-1] < 0 for fields in block[0] if fields[0] == Opcode.ALU)  # imm

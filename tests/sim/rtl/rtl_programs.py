"""Small VTA programs for the RTL tests, built with the ISA only.

A :class:`Program` is a set of device-memory writes plus an instruction
stream; :func:`golden_run` executes it on the golden model, so the tests compare
the RTL's device memory, status and counters with the model's.  The instruction
helpers (:func:`load`, :func:`store`, :func:`gemm`, :func:`alu`, :class:`Kernels`)
are shared with the module tests, which hand the same instructions to one engine.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from vta.config import Config
from vta.errors import DeadlockError, ErrorCode, ExecutionError
from vta.golden import GoldenModel
from vta.isa import AluInsn, GemmInsn, MemId, MemInsn, Opcode, Uop, encode_stream, encode_uop

PAGE = 4096
FINISH = GemmInsn(opcode=Opcode.FINISH)
#: A compute-engine instruction that does nothing (a UOP load of no micro-ops).
NOP_COMPUTE = MemInsn(opcode=Opcode.LOAD, memory_type=MemId.UOP)
MIN, MAX, ADD, SHR, MUL = range(5)  # ALU opcodes


# ------------------------------------------------------------------ instructions
def load(mem: int, dram_base: int, x_size: int = 1, y_size: int = 1, *,
         x_stride: int | None = None, opcode: int = Opcode.LOAD, **fields) -> MemInsn:
    """LOAD of ``y_size`` rows of ``x_size`` elements, ``x_stride`` apart (default: packed)."""
    return MemInsn(opcode=opcode, memory_type=mem, dram_base=dram_base, y_size=y_size,
                   x_size=x_size, x_stride=x_size if x_stride is None else x_stride, **fields)


def store(dram_base: int, x_size: int = 1, y_size: int = 1, *, memory_type: int = MemId.OUT,
          **fields) -> MemInsn:
    """STORE from OUT, its block laid out as :func:`load`'s."""
    return load(memory_type, dram_base, x_size, y_size, opcode=Opcode.STORE, **fields)


def gemm(kernel: tuple[int, int], iter_out: int = 1, iter_in: int = 1, **fields) -> GemmInsn:
    """GEMM over micro-ops ``kernel`` = [begin, end)."""
    return GemmInsn(opcode=Opcode.GEMM, uop_bgn=kernel[0], uop_end=kernel[1], iter_out=iter_out,
                    iter_in=iter_in, **fields)


def alu(op: int, kernel: tuple[int, int], iter_out: int = 1, iter_in: int = 1,
        **fields) -> AluInsn:
    """ALU ``op`` over micro-ops ``kernel`` = [begin, end)."""
    return AluInsn(opcode=Opcode.ALU, alu_opcode=op, uop_bgn=kernel[0], uop_end=kernel[1],
                   iter_out=iter_out, iter_in=iter_in, **fields)


def uop_bytes(uops, cfg: Config) -> bytes:
    return b"".join(encode_uop(u, cfg) for u in uops)


class Kernels:
    """Micro-op kernels laid out one after the other from UOP entry 0."""

    def __init__(self):
        self.uops: list[Uop] = []

    def add(self, body) -> tuple[int, int]:
        """Append ``body``; its [begin, end) range."""
        start = len(self.uops)
        self.uops.extend(body)
        return start, len(self.uops)

    def load(self, dram_addr: int, **fields) -> MemInsn:
        """The UOP load of every kernel, from byte address ``dram_addr``."""
        return load(MemId.UOP, dram_addr // 4, len(self.uops), **fields)

    def image(self, cfg: Config) -> bytes:
        return uop_bytes(self.uops, cfg)


# ------------------------------------------------------------------ programs
@dataclass
class Program:
    name: str
    writes: list[tuple[int, bytes]] = field(default_factory=list)
    insns: list = field(default_factory=list)
    insn_addr: int = 0
    raw_insns: bytes | None = None  # overrides insns (undefined opcodes)
    bus_error: tuple[int, int] | None = None  # bytes [lo, hi) answering SLVERR

    def stream(self, cfg: Config) -> bytes:
        return self.raw_insns if self.raw_insns is not None else encode_stream(self.insns, cfg)

    @property
    def insn_count(self) -> int:
        return len(self.raw_insns) // 16 if self.raw_insns is not None else len(self.insns)

    def image(self, cfg: Config, mem_size: int) -> np.ndarray:
        mem = np.zeros(mem_size, dtype=np.uint8)
        for addr, data in self.writes:
            mem[addr : addr + len(data)] = np.frombuffer(data, dtype=np.uint8)
        s = self.stream(cfg)[: max(0, mem_size - self.insn_addr)]
        mem[self.insn_addr : self.insn_addr + len(s)] = np.frombuffer(s, dtype=np.uint8)
        return mem


@dataclass
class Outcome:
    mem: np.ndarray
    module: str
    code: int
    index: int
    counters: dict
    address: int = 0  # ERR_ADDR (BUS_ERROR)


def golden_run(
    cfg: Config, prog: Program, mem_size: int, model: GoldenModel | None = None
) -> Outcome:
    """Run ``prog`` on the golden model; the outcome as the registers would report it.

    Pass the same ``model`` for consecutive programs: scratchpads persist across
    runs on the hardware, and so they do in the model.
    """
    mem = prog.image(cfg, mem_size)
    if model is None:
        model = GoldenModel(cfg, mem)
    model.mem = mem
    model.bus_error = prog.bus_error
    try:
        counters = model.run(prog.insn_addr, prog.insn_count).as_dict()
    except DeadlockError as exc:
        module = next(e for e in ("load", "compute", "store") if e in exc.stuck)
        return Outcome(mem, module, int(ErrorCode.DEADLOCK), exc.stuck[module][0], {})
    except ExecutionError as exc:
        index = 0xFFFFFFFF if exc.index is None else exc.index
        return Outcome(mem, exc.module, int(exc.code), index, {}, exc.address or 0)
    return Outcome(mem, "none", 0, 0, counters)


def matmul(
    cfg: Config, rng: np.random.Generator, m: int, k: int, n: int, shift: int | None = 4
) -> Program:
    from vta.progfile.handbuilt import build_matmul, pack_inp, pack_wgt

    p = build_matmul(cfg, m, k, n, shift=shift)
    a = rng.integers(-128, 128, size=(m, k), dtype=np.int8)
    w = rng.integers(-128, 128, size=(n, k), dtype=np.int8)
    prog = Program(f"matmul{m}x{k}x{n}", insns=list(p.insns), insn_addr=p.insn_addr)
    prog.writes = [
        (p.inp_addr, pack_inp(a, cfg).tobytes()),
        (p.wgt_addr, pack_wgt(w, cfg).tobytes()),
        (p.uop_addr, uop_bytes(p.uops, cfg)),
    ]
    return prog


def suite(cfg: Config, rng: np.random.Generator) -> list[Program]:
    """The programs every RTL level runs, in order, on one device: zero-fill first."""
    b, blk = cfg.BATCH, cfg.BLOCK
    return [zero_fill(cfg), matmul(cfg, rng, 2 * b, 2 * blk, 3 * blk), mixed(cfg, rng),
            forwarding(cfg, rng), matmul(cfg, rng, 3 * b, 2 * blk, 2 * blk, shift=None)]


def _rand_bytes(rng, n):
    return rng.integers(0, 256, size=n, dtype=np.uint8).tobytes()


def mixed(cfg: Config, rng: np.random.Generator) -> Program:
    """Every engine and instruction kind, with padding, strides, loops and hazards.

    load: INP and WGT 2-D loads with padding; compute: UOP load, ACC and ACC_8BIT
    loads with padding, GEMM (reset, then accumulate with micro-ops repeating the
    same dst back to back), every ALU op with and without immediate; store:
    strided 2-D store.  Tokens order the engines; the stream ends with FINISH.
    """
    inp_e, wgt_e, acc_e, out_e = (cfg.INP_ELEM_BYTES, cfg.WGT_ELEM_BYTES, cfg.ACC_ELEM_BYTES,
                                  cfg.OUT_ELEM_BYTES)
    lanes = cfg.BATCH * cfg.BLOCK_OUT  # also the bytes of an ACC_8BIT element
    inp_addr, wgt_addr, acc_addr, acc8_addr = 1 * PAGE, 2 * PAGE, 4 * PAGE, 6 * PAGE
    uop_addr, out_addr, insn_addr = 7 * PAGE, 8 * PAGE, 12 * PAGE
    writes = [
        (inp_addr, _rand_bytes(rng, 24 * inp_e)),
        (wgt_addr, _rand_bytes(rng, 8 * wgt_e)),
        (acc_addr, rng.integers(-1000, 1000, size=24 * lanes, dtype=np.int32).tobytes()),
        (acc8_addr, _rand_bytes(rng, 24 * lanes)),
    ]
    k = Kernels()
    # ACC layout: 0..23 ACC load (4 rows x 6 with pads), 24..35 ACC_8BIT load, 36..47 GEMM
    gemm_reset = k.add([Uop(dst_idx=36 + j) for j in range(4)])
    gemm_body = k.add([Uop(36, 0, 0), Uop(36, 1, 1), Uop(37, 2, 1), Uop(36, 3, 2), Uop(37, 4, 3)])
    alu_k = [k.add([Uop(dst_idx=int(rng.integers(0, 24)), src_idx=int(rng.integers(0, 48)))
                    for _ in range(3)]) for _ in range(6)]
    chain = k.add([Uop(5, 6), Uop(5, 5), Uop(6, 5), Uop(5, 6)])
    insns = [
        # load engine: INP with all four pads, WGT with a stride
        load(MemId.INP, inp_addr // inp_e + 1, 3, 2, x_stride=5, y_pad_0=1, y_pad_1=1,
             x_pad_0=1, x_pad_1=2),
        load(MemId.WGT, wgt_addr // wgt_e, 3, 2, x_pad_1=1, push_next_dep=1),
        # compute: micro-ops, ACC loads
        k.load(uop_addr),
        load(MemId.ACC, acc_addr // acc_e + 2, 3, 2, x_stride=7, y_pad_0=1, y_pad_1=1,
             x_pad_0=2, x_pad_1=1),
        load(MemId.ACC_8BIT, acc8_addr // lanes + 3, 4, 3, sram_base=24),
        gemm(gemm_reset, 3, reset_reg=1, dst_factor_out=4, pop_prev_dep=1),
        gemm(gemm_body, 3, 2, dst_factor_out=4, dst_factor_in=0, src_factor_out=2,
             src_factor_in=5, wgt_factor_out=1, wgt_factor_in=2),
    ]
    shr_imms = [-40, -31, -5, 0, 3, 31, 40]
    for kernel in alu_k:
        op = int(rng.integers(0, 5))
        use_imm = int(rng.integers(0, 2))
        imm = int(rng.choice(shr_imms)) if op == SHR else int(rng.integers(-300, 300))
        insns.append(alu(op, kernel, 2, 3, use_imm=use_imm, imm=imm, dst_factor_out=3,
                         dst_factor_in=1, src_factor_out=0,
                         src_factor_in=int(rng.integers(0, 2))))
    insns += [alu(op, chain, use_imm=0) for op in range(5)]
    insns.append(alu(SHR, alu_k[0], 2, 2, use_imm=0, dst_factor_in=4, src_factor_in=1))
    # OUT rows that GEMM wrote (36..47) and ALU (0..23) -> strided store
    insns += [
        alu(MAX, gemm_reset, 3, use_imm=1, imm=-100, dst_factor_out=4, push_next_dep=1),
        store(out_addr // out_e + 1, 12, 4, x_stride=13, pop_prev_dep=1),
        store(out_addr // out_e + 60, 12, sram_base=36, push_prev_dep=1),
        NOP_COMPUTE.replace(pop_next_dep=1),
        FINISH,
    ]
    writes.append((uop_addr, k.image(cfg)))
    return Program("mixed", writes=writes, insns=insns, insn_addr=insn_addr)


def forwarding(cfg: Config, rng: np.random.Generator) -> Program:
    """ALU micro-ops reading ACC entries written one and two micro-ops earlier.

    The RTL's pipeline has the two newest results in flight, not yet in the
    ACC RAM, when the next micro-op reads: u2 reads u0's result (source,
    second newest), u3 reads u1's and u2's (source newest, destination second
    newest).  ACC holds non-zero data, so every forwarding path changes the
    stored result; every ALU opcode runs the kernel, nothing overwrites it.
    """
    acc_addr, uop_addr, out_addr, insn_addr = 4 * PAGE, 5 * PAGE, 6 * PAGE, 8 * PAGE
    n = 16
    data = rng.integers(1, 60, size=n * cfg.BATCH * cfg.BLOCK_OUT, dtype=np.int32).tobytes()
    k = Kernels()
    kernel = k.add([Uop(7, 9), Uop(8, 9), Uop(10, 7), Uop(7, 8)])
    insns = [k.load(uop_addr), load(MemId.ACC, acc_addr // cfg.ACC_ELEM_BYTES, n)]
    insns += [alu(op, kernel, use_imm=0) for op in (ADD, MIN, MAX, ADD, MUL)]
    insns[-1] = insns[-1].replace(push_next_dep=1)
    insns += [
        store(out_addr // cfg.OUT_ELEM_BYTES, n, pop_prev_dep=1, push_prev_dep=1),
        NOP_COMPUTE.replace(pop_next_dep=1),
        FINISH,
    ]
    writes = [(acc_addr, data), (uop_addr, k.image(cfg))]
    return Program("forwarding", writes=writes, insns=insns, insn_addr=insn_addr)


def zero_fill(cfg: Config) -> Program:
    """Zero every ACC and OUT entry (GEMM reset, then ALU ADD 0 over the whole buffer).

    The RTL's scratchpads power up undefined (X under Icarus); the golden model's
    are zero.  Tests run this first so that both agree from then on.
    """
    depth = cfg.ACC_BUFF_DEPTH
    uop_addr, insn_addr = PAGE, 2 * PAGE
    n = min(depth, (1 << 14) - 1)
    insns = [load(MemId.UOP, uop_addr // 4)]
    for start in range(0, depth, n):
        count = min(n, depth - start)
        insns += [
            load(MemId.UOP, uop_addr // 4 + 1 + start // n, sram_base=1),
            gemm((1, 2), count, reset_reg=1, dst_factor_out=1),
            alu(ADD, (1, 2), count, use_imm=1, imm=0, dst_factor_out=1, src_factor_out=1),
        ]
    insns.append(FINISH)
    uops = [Uop()] + [Uop(dst_idx=s, src_idx=s) for s in range(0, depth, n)]
    return Program("zero_fill", writes=[(uop_addr, uop_bytes(uops, cfg))], insns=insns,
                   insn_addr=insn_addr)


def faults(cfg: Config, mem_size: int) -> list[Program]:
    """One program per fault of decision 7, each stopping at a known instruction."""
    uop_addr, insn_addr = PAGE, 2 * PAGE
    uload = load(MemId.UOP, uop_addr // 4, 2)
    # micro-op 1 has dst depth - 2; "uop_index_range"'s second inner iteration adds 2:
    # exactly index == depth, the first index out of range (a check written ">" instead of
    # ">=" lets it wrap to 0)
    uops = uop_bytes([Uop(dst_idx=1, src_idx=2, wgt_idx=0), Uop(dst_idx=cfg.ACC_BUFF_DEPTH - 2)],
                     cfg)
    cases = {
        "bad_opcode": encode_stream([NOP_COMPUTE, NOP_COMPUTE], cfg) + (6).to_bytes(16, "little")
        + encode_stream([FINISH], cfg),  # an undefined opcode
        "sram_range_load": [NOP_COMPUTE, load(MemId.INP, 8, 2, sram_base=cfg.INP_BUFF_DEPTH - 2,
                                              x_pad_1=1), FINISH],
        "dram_range_load": [load(MemId.ACC, (1 << 32) - 2), FINISH],
        "bad_mem_type": [NOP_COMPUTE, load(MemId.OUT, 0, x_stride=0), FINISH],
        "store_pad": [store(0, x_stride=0, x_pad_0=1), FINISH],
        "store_mem_type": [store(0, x_stride=0, memory_type=MemId.ACC), FINISH],
        "bad_alu": [uload, alu(6, (0, 1)), FINISH],
        "uop_end_range": [gemm((0, cfg.UOP_BUFF_DEPTH + 1)), FINISH],
        "uop_index_range": [uload, gemm((0, 2), 1, 2, dst_factor_in=2, reset_reg=1), FINISH],
        "uop_loop_range": [uload, gemm((0, 1), 3, src_factor_out=cfg.INP_BUFF_DEPTH // 2 - 1),
                           FINISH],
        "bad_dep_load": [NOP_COMPUTE, NOP_COMPUTE.replace(memory_type=MemId.INP, pop_prev_dep=1),
                         FINISH],
        "bad_dep_store": [MemInsn(opcode=Opcode.STORE, push_next_dep=1), FINISH],
        "deadlock": [NOP_COMPUTE, NOP_COMPUTE.replace(pop_prev_dep=1), FINISH],
        "no_finish": [NOP_COMPUTE, NOP_COMPUTE],
        "empty": [],
        "insn_range": [NOP_COMPUTE, FINISH],  # the stream's last instruction past memory
    }
    return [Program(name, writes=[(uop_addr, uops)],
                    insns=[] if isinstance(insns, bytes) else insns,
                    raw_insns=insns if isinstance(insns, bytes) else None,
                    insn_addr=mem_size - 16 if name == "insn_range" else insn_addr)
            for name, insns in cases.items()]


def bus_errors(cfg: Config) -> list[Program]:
    """One program per DRAM stream whose access meets a page answering SLVERR.

    Each names its window (``bus_error``); the golden model predicts the
    engine, the instruction and the failing burst's address.  Accesses enter
    the window from below (the burst starts at the page) or start inside it
    (the burst starts at the access, rounded down to the bus width).
    """
    bad = 16 * PAGE
    insn_addr, data = 2 * PAGE, 12 * PAGE  # data: pages 12..15 good, 16 bad
    inp, wgt, acc, out = (cfg.INP_ELEM_BYTES, cfg.WGT_ELEM_BYTES, cfg.ACC_ELEM_BYTES,
                          cfg.OUT_ELEM_BYTES)
    acc8 = cfg.BATCH * cfg.BLOCK_OUT
    cases = {
        # fetch: the stream runs into the window at its third instruction
        "bus_fetch": [NOP_COMPUTE, NOP_COMPUTE, NOP_COMPUTE, FINISH],
        # load engine: INP starting inside the window, WGT entering it from below
        "bus_inp": [NOP_COMPUTE, load(MemId.INP, (bad + 5 * inp) // inp, 3), FINISH],
        "bus_wgt": [load(MemId.WGT, (bad - wgt) // wgt, 2), FINISH],
        # compute engine: UOP, ACC, ACC_8BIT
        "bus_uop": [NOP_COMPUTE, load(MemId.UOP, (bad - 8) // 4, 6), FINISH],
        "bus_acc": [load(MemId.ACC, (bad + 3 * acc) // acc, 2), FINISH],
        "bus_acc8": [load(MemId.ACC_8BIT, (bad - 2 * acc8) // acc8, 4), FINISH],
        # store engine: a block inside the window (nothing is written on either side)
        "bus_store": [store((bad + 7 * out) // out, 2, 2, x_stride=3), FINISH],
    }
    return [Program(name, writes=[(data, bytes(range(256)) * (5 * PAGE // 256))], insns=insns,
                    insn_addr=bad - 32 if name == "bus_fetch" else insn_addr,
                    bus_error=(bad, bad + PAGE))
            for name, insns in cases.items()]

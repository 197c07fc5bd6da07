"""Small VTA programs for the RTL tests, built with the ISA only.

A :class:`Program` is a set of device-memory writes plus an instruction
stream; :func:`golden_run` executes it on the golden model, so the tests compare
the RTL's device memory, status and counters with the model's.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from vta.config import Config
from vta.errors import DeadlockError, ErrorCode, ExecutionError
from vta.golden import GoldenModel
from vta.isa import AluInsn, GemmInsn, MemId, MemInsn, Opcode, Uop, encode_stream, encode_uop

PAGE = 4096


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


# ------------------------------------------------------------------ builders
def matmul(
    cfg: Config, rng: np.random.Generator, m: int, k: int, n: int, shift: int | None = 4
) -> Program:
    from vta.progfile.handbuilt import build_matmul, pack_inp, pack_wgt
    from vta.progfile.handbuilt import encode_uop as _eu

    p = build_matmul(cfg, m, k, n, shift=shift)
    a = rng.integers(-128, 128, size=(m, k), dtype=np.int8)
    w = rng.integers(-128, 128, size=(n, k), dtype=np.int8)
    prog = Program(f"matmul{m}x{k}x{n}", insns=list(p.insns), insn_addr=p.insn_addr)
    prog.writes = [
        (p.inp_addr, pack_inp(a, cfg).tobytes()),
        (p.wgt_addr, pack_wgt(w, cfg).tobytes()),
        (p.uop_addr, b"".join(_eu(u, cfg) for u in p.uops)),
    ]
    return prog


def _rand_bytes(rng, n):
    return rng.integers(0, 256, size=n, dtype=np.uint8).tobytes()


def _acc_bytes(rng, n_elems, cfg, lo=-1000, hi=1000):
    lanes = cfg.BATCH * cfg.BLOCK_OUT
    return rng.integers(lo, hi, size=n_elems * lanes, dtype=np.int32).tobytes()


def mixed(cfg: Config, rng: np.random.Generator) -> Program:
    """Every engine and instruction kind, with padding, strides, loops and hazards.

    load: INP and WGT 2-D loads with padding; compute: UOP load, ACC and ACC_8BIT
    loads with padding, GEMM (reset, then accumulate with micro-ops repeating the
    same dst back to back), every ALU op with and without immediate; store:
    strided 2-D store.  Tokens order the engines; the stream ends with FINISH.
    """
    inp_e, wgt_e, acc_e, out_e = (
        cfg.INP_ELEM_BYTES,
        cfg.WGT_ELEM_BYTES,
        cfg.ACC_ELEM_BYTES,
        cfg.OUT_ELEM_BYTES,
    )
    acc8_e = cfg.BATCH * cfg.BLOCK_OUT
    inp_addr, wgt_addr, acc_addr, acc8_addr = 1 * PAGE, 2 * PAGE, 4 * PAGE, 6 * PAGE
    uop_addr, out_addr, insn_addr = 7 * PAGE, 8 * PAGE, 12 * PAGE
    writes = [
        (inp_addr, _rand_bytes(rng, 24 * inp_e)),
        (wgt_addr, _rand_bytes(rng, 8 * wgt_e)),
        (acc_addr, _acc_bytes(rng, 24, cfg)),
        (acc8_addr, _rand_bytes(rng, 24 * acc8_e)),
    ]
    uops = []

    def kernel(body):
        start = len(uops)
        uops.extend(body)
        return start, len(uops)

    # ACC layout: 0..23 ACC load (4 rows x 6 with pads), 24..35 ACC_8BIT load, 36..47 GEMM
    gemm_reset = kernel([Uop(dst_idx=36 + j) for j in range(4)])
    gemm_body = kernel(
        [
            Uop(dst_idx=36, src_idx=0, wgt_idx=0),
            Uop(dst_idx=36, src_idx=1, wgt_idx=1),
            Uop(dst_idx=37, src_idx=2, wgt_idx=1),
            Uop(dst_idx=36, src_idx=3, wgt_idx=2),
            Uop(dst_idx=37, src_idx=4, wgt_idx=3),
        ]
    )
    alu_k = [
        kernel(
            [
                Uop(dst_idx=int(rng.integers(0, 24)), src_idx=int(rng.integers(0, 48)))
                for _ in range(3)
            ]
        )
        for _ in range(6)
    ]
    chain = kernel(
        [
            Uop(dst_idx=5, src_idx=6),
            Uop(dst_idx=5, src_idx=5),
            Uop(dst_idx=6, src_idx=5),
            Uop(dst_idx=5, src_idx=6),
        ]
    )
    insns = [
        # load engine: INP with all four pads, WGT with a stride
        MemInsn(
            opcode=Opcode.LOAD,
            memory_type=MemId.INP,
            sram_base=0,
            dram_base=inp_addr // inp_e + 1,
            y_size=2,
            x_size=3,
            x_stride=5,
            y_pad_0=1,
            y_pad_1=1,
            x_pad_0=1,
            x_pad_1=2,
        ),
        MemInsn(
            opcode=Opcode.LOAD,
            memory_type=MemId.WGT,
            sram_base=0,
            dram_base=wgt_addr // wgt_e,
            y_size=2,
            x_size=3,
            x_stride=3,
            x_pad_1=1,
            push_next_dep=1,
        ),
        # compute: micro-ops, ACC loads
        MemInsn(
            opcode=Opcode.LOAD,
            memory_type=MemId.UOP,
            sram_base=0,
            dram_base=uop_addr // 4,
            y_size=1,
            x_size=len(uops),
            x_stride=len(uops),
        ),
        MemInsn(
            opcode=Opcode.LOAD,
            memory_type=MemId.ACC,
            sram_base=0,
            dram_base=acc_addr // acc_e + 2,
            y_size=2,
            x_size=3,
            x_stride=7,
            y_pad_0=1,
            y_pad_1=1,
            x_pad_0=2,
            x_pad_1=1,
        ),
        MemInsn(
            opcode=Opcode.LOAD,
            memory_type=MemId.ACC_8BIT,
            sram_base=24,
            dram_base=acc8_addr // acc8_e + 3,
            y_size=3,
            x_size=4,
            x_stride=4,
        ),
        GemmInsn(
            opcode=Opcode.GEMM,
            reset_reg=1,
            uop_bgn=gemm_reset[0],
            uop_end=gemm_reset[1],
            iter_out=3,
            iter_in=1,
            dst_factor_out=4,
            pop_prev_dep=1,
        ),
        GemmInsn(
            opcode=Opcode.GEMM,
            uop_bgn=gemm_body[0],
            uop_end=gemm_body[1],
            iter_out=3,
            iter_in=2,
            dst_factor_out=4,
            dst_factor_in=0,
            src_factor_out=2,
            src_factor_in=5,
            wgt_factor_out=1,
            wgt_factor_in=2,
        ),
    ]
    shr_imms = [-40, -31, -5, 0, 3, 31, 40]
    for bgn, end in alu_k:
        op = int(rng.integers(0, 5))
        use_imm = int(rng.integers(0, 2))
        imm = int(rng.choice(shr_imms)) if op == 3 else int(rng.integers(-300, 300))
        insns.append(
            AluInsn(
                opcode=Opcode.ALU,
                alu_opcode=op,
                use_imm=use_imm,
                imm=imm,
                uop_bgn=bgn,
                uop_end=end,
                iter_out=2,
                iter_in=3,
                dst_factor_out=3,
                dst_factor_in=1,
                src_factor_out=0,
                src_factor_in=int(rng.integers(0, 2)),
            )
        )
    for op in range(5):
        insns.append(
            AluInsn(
                opcode=Opcode.ALU,
                alu_opcode=op,
                use_imm=0,
                uop_bgn=chain[0],
                uop_end=chain[1],
                iter_out=1,
                iter_in=1,
            )
        )
    insns.append(
        AluInsn(
            opcode=Opcode.ALU,
            alu_opcode=3,
            use_imm=0,
            uop_bgn=alu_k[0][0],
            uop_end=alu_k[0][1],
            iter_out=2,
            iter_in=2,
            dst_factor_in=4,
            src_factor_in=1,
        )
    )
    # OUT rows that GEMM wrote (36..47) and ALU (0..23) -> strided store
    insns.append(
        AluInsn(
            opcode=Opcode.ALU,
            alu_opcode=1,
            use_imm=1,
            imm=-100,
            uop_bgn=gemm_reset[0],
            uop_end=gemm_reset[1],
            iter_out=3,
            iter_in=1,
            dst_factor_out=4,
            push_next_dep=1,
        )
    )
    insns += [
        MemInsn(
            opcode=Opcode.STORE,
            memory_type=MemId.OUT,
            sram_base=0,
            dram_base=out_addr // out_e + 1,
            y_size=4,
            x_size=12,
            x_stride=13,
            pop_prev_dep=1,
        ),
        MemInsn(
            opcode=Opcode.STORE,
            memory_type=MemId.OUT,
            sram_base=36,
            dram_base=out_addr // out_e + 60,
            y_size=1,
            x_size=12,
            x_stride=12,
            push_prev_dep=1,
        ),
        MemInsn(opcode=Opcode.LOAD, memory_type=MemId.UOP, pop_next_dep=1),
        GemmInsn(opcode=Opcode.FINISH),
    ]
    writes.append((uop_addr, b"".join(encode_uop(u, cfg) for u in uops)))
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
    uops = [Uop(dst_idx=7, src_idx=9), Uop(dst_idx=8, src_idx=9), Uop(dst_idx=10, src_idx=7),
            Uop(dst_idx=7, src_idx=8)]
    insns = [
        MemInsn(opcode=Opcode.LOAD, memory_type=MemId.UOP, sram_base=0, dram_base=uop_addr // 4,
                y_size=1, x_size=len(uops), x_stride=len(uops)),
        MemInsn(opcode=Opcode.LOAD, memory_type=MemId.ACC, sram_base=0,
                dram_base=acc_addr // cfg.ACC_ELEM_BYTES, y_size=1, x_size=n, x_stride=n),
    ]
    for op in (2, 0, 1, 2, 4):  # ADD, MIN, MAX, ADD, MUL
        insns.append(AluInsn(opcode=Opcode.ALU, alu_opcode=op, use_imm=0, uop_bgn=0,
                             uop_end=len(uops), iter_out=1, iter_in=1))
    insns[-1] = insns[-1].replace(push_next_dep=1)
    insns += [
        MemInsn(opcode=Opcode.STORE, memory_type=MemId.OUT, sram_base=0,
                dram_base=out_addr // cfg.OUT_ELEM_BYTES, y_size=1, x_size=n, x_stride=n,
                pop_prev_dep=1, push_prev_dep=1),
        MemInsn(opcode=Opcode.LOAD, memory_type=MemId.UOP, pop_next_dep=1),
        GemmInsn(opcode=Opcode.FINISH),
    ]
    writes = [(acc_addr, data), (uop_addr, b"".join(encode_uop(u, cfg) for u in uops))]
    return Program("forwarding", writes=writes, insns=insns, insn_addr=insn_addr)


def zero_fill(cfg: Config) -> Program:
    """Zero every ACC and OUT entry (GEMM reset, then ALU ADD 0 over the whole buffer).

    The RTL's scratchpads power up undefined (X under Icarus); the golden model's
    are zero.  Tests run this first so that both agree from then on.
    """
    depth = cfg.ACC_BUFF_DEPTH
    uop_addr, insn_addr = PAGE, 2 * PAGE
    n = min(depth, (1 << 14) - 1)
    insns = [
        MemInsn(
            opcode=Opcode.LOAD,
            memory_type=MemId.UOP,
            sram_base=0,
            dram_base=uop_addr // 4,
            y_size=1,
            x_size=1,
            x_stride=1,
        )
    ]
    for start in range(0, depth, n):
        count = min(n, depth - start)
        insns += [
            MemInsn(
                opcode=Opcode.LOAD,
                memory_type=MemId.UOP,
                sram_base=1,
                dram_base=uop_addr // 4 + 1 + start // n,
                y_size=1,
                x_size=1,
                x_stride=1,
            ),
            GemmInsn(
                opcode=Opcode.GEMM,
                reset_reg=1,
                uop_bgn=1,
                uop_end=2,
                iter_out=count,
                iter_in=1,
                dst_factor_out=1,
            ),
            AluInsn(
                opcode=Opcode.ALU,
                alu_opcode=2,
                use_imm=1,
                imm=0,
                uop_bgn=1,
                uop_end=2,
                iter_out=count,
                iter_in=1,
                dst_factor_out=1,
                src_factor_out=1,
            ),
        ]
    insns.append(GemmInsn(opcode=Opcode.FINISH))
    uops = [Uop()] + [Uop(dst_idx=s, src_idx=s) for s in range(0, depth, n)]
    return Program(
        "zero_fill",
        writes=[(uop_addr, b"".join(encode_uop(u, cfg) for u in uops))],
        insns=insns,
        insn_addr=insn_addr,
    )


def faults(cfg: Config, mem_size: int) -> list[Program]:
    """One program per fault of decision 7, each stopping at a known instruction."""
    depth_acc = cfg.ACC_BUFF_DEPTH
    uop_addr, insn_addr = PAGE, 2 * PAGE
    nop_c = MemInsn(opcode=Opcode.LOAD, memory_type=MemId.UOP)
    fin = GemmInsn(opcode=Opcode.FINISH)
    uload = MemInsn(
        opcode=Opcode.LOAD,
        memory_type=MemId.UOP,
        sram_base=0,
        dram_base=uop_addr // 4,
        y_size=1,
        x_size=2,
        x_stride=2,
    )
    uops = b"".join(
        encode_uop(u, cfg)
        for u in (Uop(dst_idx=1, src_idx=2, wgt_idx=0), Uop(dst_idx=depth_acc - 2))
    )
    w = [(uop_addr, uops)]
    out = []

    def prog(name, insns, raw=None):
        p = Program(name, writes=list(w), insns=insns, insn_addr=insn_addr)
        if raw is not None:
            p.raw_insns = raw
        return p

    good = encode_stream([nop_c, nop_c], cfg)
    out.append(
        prog("bad_opcode", [], raw=good + (6).to_bytes(16, "little") + encode_stream([fin], cfg))
    )
    out.append(
        prog(
            "sram_range_load",
            [
                nop_c,
                MemInsn(
                    opcode=Opcode.LOAD,
                    memory_type=MemId.INP,
                    sram_base=cfg.INP_BUFF_DEPTH - 2,
                    dram_base=8,
                    y_size=1,
                    x_size=2,
                    x_stride=2,
                    x_pad_1=1,
                ),
                fin,
            ],
        )
    )
    out.append(
        prog(
            "dram_range_load",
            [
                MemInsn(
                    opcode=Opcode.LOAD,
                    memory_type=MemId.ACC,
                    sram_base=0,
                    dram_base=(1 << 32) - 2,
                    y_size=1,
                    x_size=1,
                    x_stride=1,
                ),
                fin,
            ],
        )
    )
    out.append(
        prog(
            "bad_mem_type",
            [nop_c, MemInsn(opcode=Opcode.LOAD, memory_type=MemId.OUT, x_size=1, y_size=1), fin],
        )
    )
    out.append(
        prog(
            "store_pad",
            [
                MemInsn(opcode=Opcode.STORE, memory_type=MemId.OUT, x_size=1, y_size=1, x_pad_0=1),
                fin,
            ],
        )
    )
    out.append(
        prog(
            "store_mem_type",
            [MemInsn(opcode=Opcode.STORE, memory_type=MemId.ACC, x_size=1, y_size=1), fin],
        )
    )
    out.append(
        prog(
            "bad_alu",
            [
                uload,
                AluInsn(
                    opcode=Opcode.ALU, alu_opcode=6, uop_bgn=0, uop_end=1, iter_out=1, iter_in=1
                ),
                fin,
            ],
        )
    )
    out.append(
        prog(
            "uop_end_range",
            [
                GemmInsn(
                    opcode=Opcode.GEMM,
                    uop_bgn=0,
                    uop_end=cfg.UOP_BUFF_DEPTH + 1,
                    iter_out=1,
                    iter_in=1,
                ),
                fin,
            ],
        )
    )
    # micro-op 1 has dst depth - 2; the second inner iteration adds 2: exactly index == depth,
    # the first index out of range (a check written ">" instead of ">=" lets it wrap to 0)
    out.append(
        prog(
            "uop_index_range",
            [
                uload,
                GemmInsn(
                    opcode=Opcode.GEMM,
                    uop_bgn=0,
                    uop_end=2,
                    iter_out=1,
                    iter_in=2,
                    dst_factor_in=2,
                    reset_reg=1,
                ),
                fin,
            ],
        )
    )
    out.append(
        prog(
            "uop_loop_range",
            [
                uload,
                GemmInsn(
                    opcode=Opcode.GEMM,
                    uop_bgn=0,
                    uop_end=1,
                    iter_out=3,
                    iter_in=1,
                    src_factor_out=cfg.INP_BUFF_DEPTH // 2 - 1,
                ),
                fin,
            ],
        )
    )
    out.append(
        prog(
            "bad_dep_load",
            [nop_c, MemInsn(opcode=Opcode.LOAD, memory_type=MemId.INP, pop_prev_dep=1), fin],
        )
    )
    out.append(prog("bad_dep_store", [MemInsn(opcode=Opcode.STORE, push_next_dep=1), fin]))
    out.append(
        prog(
            "deadlock",
            [nop_c, MemInsn(opcode=Opcode.LOAD, memory_type=MemId.UOP, pop_prev_dep=1), fin],
        )
    )
    out.append(prog("no_finish", [nop_c, nop_c]))
    out.append(prog("empty", []))
    far = prog("insn_range", [nop_c, fin])
    far.insn_addr = mem_size - 16
    out.append(far)
    return out


def bus_errors(cfg: Config) -> list[Program]:
    """One program per DRAM stream whose access meets a page answering SLVERR.

    Each names its window (``bus_error``); the golden model predicts the
    engine, the instruction and the failing burst's address.  Accesses enter
    the window from below (the burst starts at the page) or start inside it
    (the burst starts at the access, rounded down to the bus width).
    """
    bad = 16 * PAGE
    window = (bad, bad + PAGE)
    insn_addr, data = 2 * PAGE, 12 * PAGE  # data: pages 12..15 good, 16 bad
    nop_c = MemInsn(opcode=Opcode.LOAD, memory_type=MemId.UOP)
    fin = GemmInsn(opcode=Opcode.FINISH)
    acc8_e = cfg.BATCH * cfg.BLOCK_OUT
    out = []

    def load(mem_type, elem_bytes, start, n, sram_base=0):
        return MemInsn(opcode=Opcode.LOAD, memory_type=mem_type, sram_base=sram_base,
                       dram_base=start // elem_bytes, y_size=1, x_size=n, x_stride=n)

    def prog(name, insns, addr=insn_addr):
        return Program(name, writes=[(data, bytes(range(256)) * (5 * PAGE // 256))],
                       insns=insns, insn_addr=addr, bus_error=window)

    # fetch: the stream runs into the window at its third instruction
    out.append(prog("bus_fetch", [nop_c, nop_c, nop_c, fin], addr=bad - 32))
    # load engine: INP starting inside the window, WGT entering it from below
    e = cfg.INP_ELEM_BYTES
    out.append(prog("bus_inp", [nop_c, load(MemId.INP, e, bad + 5 * e, 3), fin]))
    e = cfg.WGT_ELEM_BYTES
    out.append(prog("bus_wgt", [load(MemId.WGT, e, bad - e, 2), fin]))
    # compute engine: UOP, ACC, ACC_8BIT
    out.append(prog("bus_uop", [nop_c, load(MemId.UOP, 4, bad - 8, 6), fin]))
    e = cfg.ACC_ELEM_BYTES
    out.append(prog("bus_acc", [load(MemId.ACC, e, bad + 3 * e, 2), fin]))
    out.append(prog("bus_acc8", [load(MemId.ACC_8BIT, acc8_e, bad - 2 * acc8_e, 4), fin]))
    # store engine: a block inside the window (nothing is written on either side)
    e = cfg.OUT_ELEM_BYTES
    out.append(prog("bus_store", [
        MemInsn(opcode=Opcode.STORE, memory_type=MemId.OUT, sram_base=0,
                dram_base=(bad + 7 * e) // e, y_size=2, x_size=2, x_stride=3),
        fin]))
    return out

"""Hand-built VTA programs: a tiled int8 matmul written directly as instructions.

This is the program behind ``vta demo`` and the golden-model benchmark.  It is
written against the ISA alone (no runtime), so it doubles as a readable example
of how a VTA stream is put together: packed operands in DRAM, micro-op kernels,
LOAD / GEMM / ALU / STORE instructions and the dependency tokens that let the
load, compute and store engines overlap.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..config import Config
from ..isa import (
    AluInsn,
    AluOp,
    GemmInsn,
    Insn,
    MemId,
    MemInsn,
    Opcode,
    Uop,
    encode_stream,
    encode_uop,
)

PAGE = 4096


def _align(n: int) -> int:
    return (n + PAGE - 1) // PAGE * PAGE


def pack_inp(a: np.ndarray, cfg: Config) -> np.ndarray:
    """(M, K) int8 -> (M/BATCH, K/BLOCK_IN, BATCH, BLOCK_IN) packed INP elements."""
    m, k = a.shape
    b, bi = cfg.BATCH, cfg.BLOCK_IN
    return a.reshape(m // b, b, k // bi, bi).transpose(0, 2, 1, 3).copy()


def pack_wgt(w: np.ndarray, cfg: Config) -> np.ndarray:
    """(N, K) int8 -> (N/BLOCK_OUT, K/BLOCK_IN, BLOCK_OUT, BLOCK_IN) packed WGT elements."""
    n, k = w.shape
    bo, bi = cfg.BLOCK_OUT, cfg.BLOCK_IN
    return w.reshape(n // bo, bo, k // bi, bi).transpose(0, 2, 1, 3).copy()


def unpack_out(c: np.ndarray, cfg: Config, m: int, n: int) -> np.ndarray:
    """(M/BATCH, N/BLOCK_OUT, BATCH, BLOCK_OUT) packed OUT elements -> (M, N)."""
    b, bo = cfg.BATCH, cfg.BLOCK_OUT
    return c.reshape(m // b, n // bo, b, bo).transpose(0, 2, 1, 3).reshape(m, n)


@dataclass
class MatmulProgram:
    """A built program: where everything lives in device memory and the stream."""

    cfg: Config
    m: int
    k: int
    n: int
    shift: int | None
    inp_addr: int
    wgt_addr: int
    out_addr: int
    uop_addr: int
    insn_addr: int
    insns: list[Insn] = field(default_factory=list)
    uops: list[Uop] = field(default_factory=list)

    @property
    def insn_count(self) -> int:
        return len(self.insns)

    @property
    def end(self) -> int:
        """First byte address past the program's memory."""
        return self.insn_addr + _align(len(self.insns) * 16)

    def write(self, mem: np.ndarray, a: np.ndarray, w: np.ndarray) -> None:
        """Place operands, micro-ops and instructions into device memory ``mem``."""
        cfg = self.cfg

        def put(addr: int, data: bytes | np.ndarray) -> None:
            raw = np.frombuffer(bytes(data) if not isinstance(data, np.ndarray)
                                else data.tobytes(), dtype=np.uint8)
            mem[addr:addr + raw.size] = raw

        put(self.inp_addr, pack_inp(a, cfg))
        put(self.wgt_addr, pack_wgt(w, cfg))
        put(self.uop_addr, b"".join(encode_uop(u, cfg) for u in self.uops))
        put(self.insn_addr, encode_stream(self.insns, cfg))

    def read_result(self, mem: np.ndarray) -> np.ndarray:
        cfg = self.cfg
        nbytes = self.m * self.n
        raw = mem[self.out_addr:self.out_addr + nbytes].view(np.int8)
        return unpack_out(raw, cfg, self.m, self.n)

    def expected(self, a: np.ndarray, w: np.ndarray) -> np.ndarray:
        """NumPy reference computed independently of the model.

        With a shift: ``clip((a @ w.T) >> shift, 0, 127)``; without: the low 8
        bits of the int32 product (what GEMM writes to the OUT buffer).
        """
        acc = a.astype(np.int64) @ w.astype(np.int64).T
        acc = ((acc + (1 << 31)) % (1 << 32)) - (1 << 31)  # int32 wrap
        if self.shift is None:
            return acc.astype(np.int8)
        return np.clip(acc >> self.shift, 0, 127).astype(np.int8)


def build_matmul(cfg: Config, m: int, k: int, n: int, *, shift: int | None = 8,
                 base: int = PAGE, col_blocks: int | None = None,
                 row_blocks: int | None = None) -> MatmulProgram:
    """Build ``clip((A @ W.T) >> shift, 0, 127)`` for A (m, k), W (n, k), int8 -> int8.

    With ``shift=None`` there is no ALU epilogue: the result is the low 8 bits
    of the int32 product, which is what GEMM alone writes to OUT.

    m must be a multiple of BATCH, k of BLOCK_IN and n of BLOCK_OUT.  The product
    is tiled over rows of A (``mt`` element rows) and columns of W (``nt``
    column blocks) so that each tile fits the scratchpads.  INP and ACC are
    split in two halves used by alternate tiles, so the load engine fetches
    tile t+1 while compute works on tile t and store drains tile t-1.  WGT is
    split in two halves used by alternate column chunks, so the next chunk's
    weights load while the GEMMs of this one run.

    By default tiles are as large as the scratchpad halves allow (fewest, largest
    instructions).  ``col_blocks`` / ``row_blocks`` cap the BLOCK_OUT columns and
    BATCH rows per tile: smaller first tiles start the GEMM core sooner, which is
    what a cycle-accurate run rewards (``scripts/bench/rtl_sim.py`` uses
    ``col_blocks = N / BLOCK_OUT / 4``, ``row_blocks = 32``).  Tokens:

    * load pushes ``l2g`` after each tile's INP load; compute pops it before GEMM;
    * compute pushes ``g2l`` after each GEMM (the INP half is free again); load
      pops as many as it needs before reusing an INP or WGT half;
    * compute pushes ``g2s`` after the epilogue; store pops it, stores and pushes
      ``s2g``; compute pops that before resetting the same ACC half again.
    """
    b, bi, bo = cfg.BATCH, cfg.BLOCK_IN, cfg.BLOCK_OUT
    for name, value, unit in (("m", m, b), ("k", k, bi), ("n", n, bo)):
        if value <= 0 or value % unit:
            raise ValueError(f"{name} must be a positive multiple of {unit}, not {value}")
    mb, kb, nb = m // b, k // bi, n // bo
    half_inp, half_acc = cfg.INP_BUFF_DEPTH // 2, cfg.ACC_BUFF_DEPTH // 2
    half_wgt = cfg.WGT_BUFF_DEPTH // 2
    if kb > half_wgt or kb > half_inp:
        raise ValueError(f"k = {k} is too deep for this configuration's INP/WGT buffers "
                         "(a reduction split is not implemented by this example program)")
    nt = max(1, min(nb, half_wgt // kb, half_acc, col_blocks or nb))
    mt = max(1, min(mb, half_inp // kb, half_acc // nt, row_blocks or mb))
    m_tiles = -(-mb // mt)

    inp_addr = base
    wgt_addr = inp_addr + _align(mb * kb * cfg.INP_ELEM_BYTES)
    out_addr = wgt_addr + _align(nb * kb * cfg.WGT_ELEM_BYTES)
    uop_addr = out_addr + _align(mb * nb * cfg.OUT_ELEM_BYTES)
    prog = MatmulProgram(cfg, m, k, n, shift, inp_addr, wgt_addr, out_addr, uop_addr, 0)
    insns, uops = prog.insns, prog.uops

    def kernel(body: list[Uop]) -> int:
        uops.extend(body)
        return len(uops) - len(body)

    # Micro-op kernels for each half; all stay resident, loaded once up front.
    kernels = []
    for half in range(2):
        ab = half * half_acc
        kernels.append({
            "reset": kernel([Uop(dst_idx=ab + j) for j in range(nt)]),
            "alu": kernel([Uop(dst_idx=ab, src_idx=ab)]),
        })
    gemm_kernels = {  # (INP/ACC half, WGT half) -> first micro-op
        (half, wh): kernel([Uop(dst_idx=half * half_acc + j, src_idx=half * half_inp,
                                wgt_idx=wh * half_wgt + j * kb) for j in range(nt)])
        for half in range(2) for wh in range(2)}
    if len(uops) > cfg.UOP_BUFF_DEPTH:
        raise ValueError("micro-op kernels do not fit the UOP buffer")

    def mem_insn(opcode: int, mem_id: int, sram: int, dram: int, y: int, x: int, stride: int,
                 **deps: int) -> MemInsn:
        return MemInsn(opcode=opcode, memory_type=mem_id, sram_base=sram, dram_base=dram,
                       y_size=y, x_size=x, x_stride=stride, **deps)

    def load_nop(**deps: int) -> MemInsn:
        return MemInsn(opcode=Opcode.LOAD, memory_type=MemId.INP, **deps)

    def compute_nop(**deps: int) -> MemInsn:
        return MemInsn(opcode=Opcode.LOAD, memory_type=MemId.UOP, **deps)

    insns.append(mem_insn(Opcode.LOAD, MemId.UOP, 0, uop_addr // 4, 1, len(uops), len(uops)))
    tiles = [(m0, n0) for n0 in range(0, nb, nt) for m0 in range(0, mb, mt)]
    g2l_popped = 0  # g2l tokens the load engine has taken (one per finished GEMM)
    s2g_popped = 0  # s2g tokens the compute engine has taken (one per finished STORE)
    last_n0 = None
    chunk = -1  # column chunk index; its weights live in WGT half chunk % 2

    def load_wait(needed: int) -> dict[str, int]:
        """Pop g2l until ``needed`` are taken; all but the last as load no-ops."""
        nonlocal g2l_popped
        while g2l_popped < needed - 1:
            insns.append(load_nop(pop_next_dep=1))
            g2l_popped += 1
        if g2l_popped < needed:
            g2l_popped += 1
            return {"pop_next_dep": 1}
        return {}

    for t, (m0, n0) in enumerate(tiles):
        rows, cols = min(mt, mb - m0), min(nt, nb - n0)
        half = t % 2
        k_half = kernels[half]
        ib, ab = half * half_inp, half * half_acc
        # load engine: weights when the column chunk changes (into the WGT half the
        # chunk before last used: after its GEMMs), then this tile's inputs (after
        # GEMM t-2 freed the INP half)
        if n0 != last_n0:
            chunk += 1
            insns.append(mem_insn(Opcode.LOAD, MemId.WGT, (chunk % 2) * half_wgt,
                                  wgt_addr // cfg.WGT_ELEM_BYTES + n0 * kb, 1,
                                  cols * kb, cols * kb, **load_wait(t - m_tiles)))
            last_n0 = n0
        insns.append(mem_insn(Opcode.LOAD, MemId.INP, ib,
                              inp_addr // cfg.INP_ELEM_BYTES + m0 * kb, 1, rows * kb,
                              rows * kb, push_next_dep=1, **load_wait(t - 1)))
        # compute engine: reset the ACC half (after STORE t-2 drained it), GEMM, epilogue
        reset_deps = {}
        if t >= 2:
            reset_deps["pop_next_dep"] = 1
            s2g_popped += 1
        insns.append(GemmInsn(opcode=Opcode.GEMM, reset_reg=1, uop_bgn=k_half["reset"],
                              uop_end=k_half["reset"] + cols, iter_out=rows, iter_in=1,
                              dst_factor_out=cols, **reset_deps))
        gemm_k = gemm_kernels[(half, chunk % 2)]
        insns.append(GemmInsn(opcode=Opcode.GEMM, pop_prev_dep=1, push_prev_dep=1,
                              uop_bgn=gemm_k, uop_end=gemm_k + cols,
                              iter_out=rows, iter_in=kb, dst_factor_out=cols,
                              src_factor_out=kb, src_factor_in=1, wgt_factor_in=1))
        epilogue = [] if shift is None else [(AluOp.SHR, shift), (AluOp.MAX, 0), (AluOp.MIN, 127)]
        if not epilogue:
            insns[-1].push_next_dep = 1
        for step, (op, imm) in enumerate(epilogue):
            last = step == len(epilogue) - 1
            insns.append(AluInsn(opcode=Opcode.ALU, alu_opcode=op, use_imm=1, imm=imm,
                                 uop_bgn=k_half["alu"], uop_end=k_half["alu"] + 1,
                                 iter_out=rows, iter_in=cols, dst_factor_out=cols,
                                 dst_factor_in=1, src_factor_out=cols, src_factor_in=1,
                                 push_next_dep=int(last)))
        # store engine
        insns.append(mem_insn(Opcode.STORE, MemId.OUT, ab,
                              out_addr // cfg.OUT_ELEM_BYTES + m0 * nb + n0, rows, cols, nb,
                              pop_prev_dep=1, push_prev_dep=1))
    # Tail: load and store drain their tokens and signal compute, which then finishes.
    insns.append(load_nop(push_next_dep=1, **load_wait(len(tiles))))
    while s2g_popped < len(tiles) - 1:
        insns.append(compute_nop(pop_next_dep=1))
        s2g_popped += 1
    insns.append(compute_nop(pop_prev_dep=1, pop_next_dep=1))
    insns.append(GemmInsn(opcode=Opcode.FINISH))
    prog.insn_addr = uop_addr + _align(len(uops) * 4)
    return prog

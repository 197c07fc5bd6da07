"""The targeted program kinds of generator version 2: boundary values and orders of events.

The random kinds (``normal``, ``edge``: :mod:`vta.regress.generator`) draw their fields
uniformly, so values at a boundary and particular sequences of instructions come up
rarely: a shift by exactly 31, a loop nest whose last index is the last entry of its
buffer, two ALU operations in a row on the same rows, a token that comes late to an
instruction popping two queues.  These kinds aim at them (docs/regress.md, "Programs"):

``chain``
    Random 32-bit ACC rows, then three to eight ALU operations on them, each on the rows
    of the one before, on rows starting at the same entry, or on others: MIN after MAX
    and MAX after MIN, an operation repeated, immediates at the ends of their range,
    shifts by 30..33 and -30..-33 (and far beyond), a source rows behind its destination
    (each micro-op reads what the one before wrote), the same micro-op with other loop
    factors; GEMMs accumulating into and resets of rows between them; STOREs of rows
    that the next operation writes again (ordered by tokens).
``late-pop``
    An ALU writes rows and the store engine stores them after a few dozen no-ops; the
    compute engine's next instruction pops both the load engine's token (there early)
    and the store engine's (late) before writing the same rows again.
``reach``
    LOADs ending at the last entry of INP, WGT and ACC, a micro-op LOAD ending at the last
    micro-op entry, GEMM and ALU nests whose largest index of each field is exactly the
    last entry of its buffer (micro-op fields plus loop offsets), a STORE of the last OUT
    entries.
``over-SRAM``
    A ``reach`` program with exactly one of those one entry too far: ``SRAM_RANGE``
    there.
``over-DRAM``
    A ``normal`` program with one LOAD or STORE whose last row starts inside device
    memory and ends after it: ``DRAM_RANGE`` there.  (It needs the device's memory size.)
``fault-BUS_ERROR``
    A ``normal`` program with one LOAD or STORE reaching :data:`BUS_ERROR_WINDOW` (from
    below, or starting inside it off a bus word): ``BUS_ERROR`` there, at the address of
    the failing burst.

Each is a method of :class:`Targeted`, which :class:`vta.regress.generator.Generator`
extends; they use its helpers (random draws, the prologue, LOADs, micro-op LOADs).
"""

from __future__ import annotations

import dataclasses

from ..isa import AluInsn, AluOp, GemmInsn, MemId, MemInsn, Opcode, Uop
from .case import BUS_ERROR_WINDOW, DATA_BYTES, OUT_BYTES, noop

#: Shift amounts of ``chain`` programs: both sides of 31 and of -32, and far beyond.
SHIFTS = (0, 1, 30, 31, 32, 33, 99, -1, -30, -31, -32, -33, -99)
#: Immediates at the ends of the 16-bit signed range, and around 0.
IMM_EDGES = (-(1 << 15), -(1 << 15) + 1, -2, -1, 0, 1, 2, (1 << 15) - 2, (1 << 15) - 1)
_OPS = (AluOp.MIN, AluOp.MAX, AluOp.ADD, AluOp.SHR, AluOp.MUL)


class Targeted:
    """The version-2 kinds (module docstring), as methods of the generator."""

    # ------------------------------------------------------------ helpers
    def edge_imm(self, op: int) -> int:
        if op == AluOp.SHR:
            return SHIFTS[self.r(0, len(SHIFTS) - 1)]
        if self.chance(0.6):
            return IMM_EDGES[self.r(0, len(IMM_EDGES) - 1)]
        return self.r(-(1 << 15), (1 << 15) - 1)

    def nest_on_rows(self, a: int, m: int, kernels: list, *, op: int | None = None,
                     imm: int = 0, src: int | None = None, gemm: tuple | None = None,
                     reset: bool = False, shape: str = "out") -> list:
        """A micro-op LOAD and a one-micro-op nest over the ``m`` rows from ``a``: an ALU
        ``op`` (with ``imm``, or rows from ``src`` with ``src`` given), or a GEMM
        (``gemm`` = its INP and WGT entries; ``reset``).  ``shape``: ``out`` (the outer
        loop walks the rows), ``in`` (the inner one), ``two`` (both: m/2 x 2), ``same``
        (the outer loop m times on row ``a``: another factor, the same micro-op)."""
        loops = {"out": (m, 1, 1, 0), "in": (1, m, 0, 1), "two": (m // 2, 2, 2, 1),
                 "same": (m, 1, 0, 0)}[shape]
        io, ii, fo, fi = loops
        if gemm is not None:
            uop = Uop(dst_idx=a, src_idx=gemm[0], wgt_idx=gemm[1])
        else:
            uop = Uop(dst_idx=a, src_idx=a if src is None else src)
        load = self.kernel([uop], kernels)
        fields = dict(uop_bgn=self.kbase, uop_end=self.kbase + 1, iter_out=io, iter_in=ii,
                      dst_factor_out=fo, dst_factor_in=fi)
        if gemm is not None:
            insn = GemmInsn(opcode=Opcode.GEMM, reset_reg=int(reset), **fields)
        else:
            moves = {} if src is None else {"src_factor_out": fo, "src_factor_in": fi}
            insn = AluInsn(opcode=Opcode.ALU, alu_opcode=int(op), use_imm=int(src is None),
                           imm=imm if src is None else 0, **fields, **moves)
        kernels.append(None)
        return [load, insn]

    def out_store(self, a: int, m: int, **deps: int) -> MemInsn:
        """A STORE of OUT rows ``a .. a+m-1`` to the next free place of the output area."""
        e = self.elem[MemId.OUT]
        if (self.out_used + m) * e > OUT_BYTES:
            self.out_used = 0
        dram = (self.base + self.lay.out) // e + self.out_used
        self.out_used += m
        return self._mem(Opcode.STORE, MemId.OUT, a, dram, 1, m, m, **deps)

    def data_load(self, mem: int, sram: int, n: int, **deps: int) -> MemInsn:
        """A one-row LOAD of ``n`` random elements into entries ``sram ..``."""
        avail = DATA_BYTES // self.elem[mem]
        return self._mem(Opcode.LOAD, mem, sram, self.data_el(mem) + self.r(0, avail - n), 1,
                         n, n, **deps)

    def merged(self, stream: list, kernels: list, engines: list[list]) -> None:
        """Append the engines' ``(insn, kernel)`` lists in a random merge, then FINISH."""
        while any(engines):
            live = [q for q in engines if q]
            insn, kernel = live[self.r(0, len(live) - 1)].pop(0)
            stream.append(insn)
            kernels.append(kernel)
        stream.append(GemmInsn(opcode=Opcode.FINISH))
        kernels.append(None)

    @staticmethod
    def first_entry(load: MemInsn) -> int:
        """The first entry a LOAD writes from DRAM (its pads before it)."""
        return load.sram_base + load.y_pad_0 * (load.x_pad_0 + load.x_size + load.x_pad_1) \
            + load.x_pad_0

    # ------------------------------------------------------------ chain
    def chain(self) -> tuple[list, list]:
        kernels: list = []
        stream = self.prologue(kernels)
        loads = [self.rand_load(MemId.INP, "inp", 0), self.rand_load(MemId.WGT, "wgt", 0)]
        self.flag(loads, -1, push_next_dep=1)
        operands = (self.first_entry(loads[0]), self.first_entry(loads[1]))
        depth = self.depth["acc"]
        n = self.r(2, min(16, depth))
        lo = self.r(0, depth - n)
        mem = MemId.ACC if self.chance(0.75) else MemId.ACC_8BIT
        comp, comp_k = [self.data_load(mem, lo, n, pop_prev_dep=1)], [None]
        stores: list = []
        steps = self.r(3, 8)
        last: dict | None = None  # the step before: its nest_on_rows arguments
        stored = None  # rows a STORE has just read (the next step writes them again)
        for step in range(steps):
            first = len(comp)
            last = self._chain_step(lo, n, last, stored, operands)
            comp += self.nest_on_rows(**last, kernels=comp_k)
            if stored is not None:  # the STORE has read the rows: they may be written again
                self.flag(comp, first, pop_next_dep=1)
                stored = None
            if step < steps - 1 and self.chance(0.3):
                self.flag(comp, -1, push_next_dep=1)
                stored = (last["a"], last["m"])
                stores.append(self.out_store(*stored, pop_prev_dep=1, push_prev_dep=1))
        self.flag(comp, -1, push_next_dep=1)
        stores.append(self.out_store(lo, n, pop_prev_dep=1))
        self.notes = [f"{steps} operations on ACC rows {lo}..{lo + n - 1}"]
        self.merged(stream, kernels, [[(i, None) for i in loads],
                                      list(zip(comp, comp_k, strict=True)),
                                      [(i, None) for i in stores]])
        return stream, kernels

    def _chain_step(self, lo: int, n: int, last: dict | None, stored, operands) -> dict:
        """The next step's :meth:`nest_on_rows` arguments (but ``kernels``)."""
        if last is not None and self.chance(0.2):
            return last  # the same operation on the same rows again
        if last is not None and last.get("op") in (AluOp.MIN, AluOp.MAX) \
                and last.get("src") is None and self.chance(0.5):
            # a clip, either way round: MIN after MAX, MAX after MIN, on the same rows
            op = AluOp.MIN if last["op"] == AluOp.MAX else AluOp.MAX
            return {**last, "op": op, "imm": self.edge_imm(op)}
        if last is not None and last.get("gemm") is not None and self.chance(0.4):
            # a GEMM adding into rows a GEMM has just written (or reset)
            return {"a": last["a"], "m": last["m"], "gemm": operands}
        if stored is not None and self.chance(0.6):
            a, m = stored  # the rows a STORE has just read
        elif last is not None and self.chance(0.4):
            a, m = last["a"], last["m"]
        elif last is not None and self.chance(0.35):
            a = last["a"]
            m = self.r(1, lo + n - a)
        else:
            a = self.r(lo, lo + n - 1)
            m = self.r(1, lo + n - a)
        shape = "out"
        if m > 1:
            shape = ("out", "out", "out", "in", "same", "two" if m % 2 == 0 else "in")[
                self.r(0, 5)]
        if self.chance(0.1):  # a GEMM adding products into the rows
            return {"a": a, "m": m, "gemm": operands}
        if self.chance(0.1):  # a reset of the rows
            return {"a": a, "m": m, "gemm": (0, 0), "reset": True}
        op = _OPS[self.r(0, len(_OPS) - 1)]
        if self.chance(0.2):  # rows of ACC as the operand, maybe the rows just behind
            src = a - 1 if a > lo and self.chance(0.4) else self.r(lo, lo + n - m)
            return {"a": a, "m": m, "op": op, "src": src,
                    "shape": "out" if shape == "same" else shape}
        return {"a": a, "m": m, "op": op, "imm": self.edge_imm(op), "shape": shape}

    # ------------------------------------------------------------ late-pop
    def late_pop(self) -> tuple[list, list]:
        kernels: list = []
        stream = self.prologue(kernels)
        depth = self.depth["acc"]
        m = self.r(1, min(8, depth))
        a = self.r(0, depth - m)
        first, first_k = [], []
        first += self.nest_on_rows(a, m, first_k, op=AluOp.ADD, imm=self.r(1, 255))
        self.flag(first, -1, push_next_dep=1)
        load = self.rand_load(MemId.INP, "inp", self.r(0, 1)).replace(push_next_dep=1)
        again, again_k = [], []
        op = _OPS[self.r(0, len(_OPS) - 1)]
        again += self.nest_on_rows(a, m, again_k, op=op, imm=self.r(1, 255))
        self.flag(again, 0, pop_prev_dep=1, pop_next_dep=1)
        self.flag(again, -1, push_next_dep=1)
        wait = self.r(10, 40)
        self.notes = [f"ACC rows {a}..{a + m - 1} written again after a STORE behind {wait} "
                      "no-ops"]
        stream.append(load)
        stream += first
        kernels += [None, *first_k]
        stores = [noop("store") for _ in range(wait)]
        stores.append(self.out_store(a, m, pop_prev_dep=1, push_prev_dep=1))
        stream += stores + again
        kernels += [None] * len(stores) + again_k
        stream.append(self.out_store(a, m, pop_prev_dep=1))
        kernels.append(None)
        stream.append(GemmInsn(opcode=Opcode.FINISH))
        kernels.append(None)
        return stream, kernels

    # ------------------------------------------------------------ reach, over-SRAM
    def end_load(self, mem: int, buf: str, **deps: int) -> MemInsn:
        """A LOAD of random data whose block (pads included) ends at the buffer's last entry."""
        depth = self.depth[buf]
        y, x = self.r(1, 3), self.r(1, 4)
        pads = tuple(self.r(0, 1) for _ in range(4)) if self.chance(0.5) else (0, 0, 0, 0)
        total = (pads[0] + y + pads[1]) * (pads[2] + x + pads[3])
        if total > depth:
            y, x, pads, total = 1, 1, (0, 0, 0, 0), 1
        avail = DATA_BYTES // self.elem[mem]
        return self._mem(Opcode.LOAD, mem, depth - total,
                         self.data_el(mem) + self.r(0, avail - y * x), y, x, x, pads, **deps)

    def reaching(self, depths: dict[str, int], n_uops: int) -> tuple[list[dict], dict]:
        """Micro-ops and loops whose largest index of each field is exactly ``depth - 1``
        (the first micro-op's field plus the last iteration's offsets); every factor is
        drawn from 0..2, and at least one loop of each field moves."""
        io, ii = self.r(2, 3), self.r(1, 3)
        fields = {"iter_out": io, "iter_in": ii}
        tops = {}
        for name, depth in depths.items():
            fo, fi = self.r(1, 2), self.r(0, 2)
            span = (io - 1) * fo + (ii - 1) * fi
            if span > depth - 1:
                fo, fi, span = 1, 0, io - 1
            fields[f"{name}_factor_out"], fields[f"{name}_factor_in"] = fo, fi
            tops[name] = depth - 1 - span
        uops = [{k: t if u == 0 else self.r(0, t) for k, t in tops.items()}
                for u in range(n_uops)]
        return uops, fields

    def reach(self) -> tuple[list, list]:
        kernels: list = []
        stream = self.prologue(kernels)
        d = self.depth
        loads = [self.end_load(MemId.INP, "inp"), self.end_load(MemId.WGT, "wgt",
                                                                 push_next_dep=1)]
        acc = MemId.ACC if self.chance(0.7) else MemId.ACC_8BIT
        comp, comp_k = [self.end_load(acc, "acc", pop_prev_dep=1)], [None]
        uops, fields = self.reaching({"dst": d["acc"], "src": d["inp"], "wgt": d["wgt"]},
                                     self.r(1, 3))
        comp.append(self.kernel([Uop(dst_idx=u["dst"], src_idx=u["src"], wgt_idx=u["wgt"])
                                 for u in uops], comp_k))
        comp.append(GemmInsn(opcode=Opcode.GEMM, uop_bgn=self.kbase,
                             uop_end=self.kbase + len(uops), **fields))
        comp_k.append(None)
        uops, fields = self.reaching({"dst": d["acc"], "src": d["acc"]}, self.r(1, 3))
        # the ALU's micro-ops end at the micro-op buffer's last entry
        start = d["uop"] - len(uops)
        comp.append(self._mem(Opcode.LOAD, MemId.UOP, start, 0, 1, len(uops), len(uops)))
        comp_k.append([Uop(dst_idx=u["dst"], src_idx=u["src"]) for u in uops])
        self.uops_used += len(uops)
        op = _OPS[self.r(0, len(_OPS) - 1)]
        imm = self.chance(0.5)
        comp.append(AluInsn(opcode=Opcode.ALU, uop_bgn=start, uop_end=d["uop"], **fields,
                            alu_opcode=int(op), use_imm=int(imm),
                            imm=self.edge_imm(op) if imm else 0,
                            push_next_dep=1))
        comp_k.append(None)
        m = self.r(1, min(8, d["acc"]))
        store = self.out_store(d["acc"] - m, m, pop_prev_dep=1)
        self.notes = ["nests, LOADs and a STORE reaching the buffers' last entries"]
        self.merged(stream, kernels, [[(i, None) for i in loads],
                                      list(zip(comp, comp_k, strict=True)), [(store, None)]])
        return stream, kernels

    def over_sram(self) -> tuple[list, list]:
        """A ``reach`` program with one index, LOAD or STORE one entry past its buffer."""
        insns, kernels = self.reach()
        nests = [i for i, insn in enumerate(insns) if insn.opcode in (Opcode.GEMM, Opcode.ALU)]
        gemm, alu = nests[-2], nests[-1]  # the reaching ones (the prologue's ALU is first)
        targets = [(gemm, "dst_idx"), (gemm, "src_idx"), (gemm, "wgt_idx"), (alu, "dst_idx"),
                   (alu, "uop_end")]
        if not insns[alu].use_imm:
            targets.append((alu, "src_idx"))
        targets += [(i, "sram_base") for i, insn in enumerate(insns)
                    if i > nests[0] and self._block_end(insn) is not None
                    and self._block_end(insn) == self._depth_of(insn)]
        where, what = targets[self.r(0, len(targets) - 1)]
        insn = insns[where]
        if what in ("sram_base", "uop_end"):
            insns[where] = insn.replace(**{what: getattr(insn, what) + 1})
        else:  # the micro-ops with the largest index of the field: one more
            j = max(k for k in range(where) if kernels[k] is not None)
            top = max(getattr(u, what) for u in kernels[j])
            kernels[j] = [dataclasses.replace(u, **{what: top + 1})
                          if getattr(u, what) == top else u for u in kernels[j]]
        self.notes.append(f"SRAM_RANGE at instruction {where}")
        return insns, kernels

    @staticmethod
    def _block_end(insn) -> int | None:
        """The entry after the last one a LOAD or STORE moving data touches."""
        if insn.opcode not in (Opcode.LOAD, Opcode.STORE) or not insn.x_size:
            return None
        if insn.opcode == Opcode.STORE:
            return insn.sram_base + insn.y_size * insn.x_size
        return insn.sram_base + (insn.y_pad_0 + insn.y_size + insn.y_pad_1) * (
            insn.x_pad_0 + insn.x_size + insn.x_pad_1)

    def _depth_of(self, insn) -> int | None:
        if insn.opcode not in (Opcode.LOAD, Opcode.STORE):
            return None
        buf = {MemId.INP: "inp", MemId.WGT: "wgt", MemId.UOP: "uop"}.get(insn.memory_type,
                                                                        "acc")
        return self.depth[buf]

    # ------------------------------------------------------------ over-DRAM, BUS_ERROR
    def over_dram(self, mem_size: int) -> tuple[list, list]:
        """A ``normal`` program with one LOAD or STORE whose last row crosses the end of
        device memory (``mem_size`` bytes)."""
        self.edge = False
        insns, kernels = self.iterations()
        i = self._pick(insns, lambda insn: self._moves_data(insn)
                       and insn.memory_type != MemId.UOP and insn.x_size > 1)
        insn = insns[i]
        e = self.elem[insn.memory_type]
        end = mem_size // e  # elements of device memory
        inside = self.r(1, insn.x_size - 1)  # of the last row's elements
        last = end - inside
        insns[i] = insn.replace(dram_base=last - (insn.y_size - 1) * insn.x_stride)
        self.notes.append(f"DRAM_RANGE at instruction {i}")
        return insns, kernels

    def bus_error(self) -> tuple[list, list]:
        """A ``normal`` program with one LOAD or STORE reaching :data:`BUS_ERROR_WINDOW`."""
        self.edge = False
        insns, kernels = self.iterations()
        lo, size = BUS_ERROR_WINDOW

        def span(insn) -> int:  # elements from the first to the end of the last row
            return (insn.y_size - 1) * insn.x_stride + insn.x_size

        i = self._pick(insns, lambda insn: self._moves_data(insn)
                       and span(insn) * self.elem[insn.memory_type] <= size)
        insn = insns[i]
        e = self.elem[insn.memory_type]
        n = span(insn)
        if n > 1 and self.chance(0.5):  # from below: the burst at the window's start fails
            first = lo // e - self.r(1, n - 1)
        else:  # inside (off a bus word, most of the time)
            first = lo // e + self.r(0, size // e - n)
        insns[i] = insn.replace(dram_base=first)
        kernels[i] = None  # a micro-op LOAD then reads the window, not its micro-ops
        self.notes.append(f"BUS_ERROR at instruction {i}")
        return insns, kernels

"""The VTA runtime: a command queue that turns runtime calls into instruction streams.

This is upstream's ``vta/runtime/runtime.cc`` (vta-reference section 5) in
Python, over a :class:`vta.device.Device`:

* :meth:`CommandQueue.load_2d` / :meth:`CommandQueue.store_2d` append LOAD /
  STORE instructions (``VTALoadBuffer2D`` / ``VTAStoreBuffer2D``);
  ``dram_base`` is the buffer address divided by the element size of the
  memory type plus an element offset.
* :meth:`CommandQueue.uop_loop_begin`, :meth:`CommandQueue.uop_loop_end` and
  :meth:`CommandQueue.uop_push` record a micro-op kernel while the ``finit``
  callback of :meth:`CommandQueue.push_gemm` / :meth:`CommandQueue.push_alu`
  runs.  Kernels are cached by key; each is placed contiguously in the
  micro-op buffer, placement wraps to 0 evicting the kernels it overlaps, a
  resident kernel needs no UOP LOAD, and after every synchronize no kernel is
  resident any more.
* :meth:`CommandQueue.dep_push` / :meth:`CommandQueue.dep_pop` implement the
  pending-pop and no-op rules of ``InsnQueue`` (section 5.5).
* :meth:`CommandQueue.synchronize` appends the standard tail and FINISH,
  copies micro-ops and instructions to their device buffers, runs them and
  resets the queue.  It happens automatically before the instruction or
  micro-op staging area would overflow (as upstream, that is only safe at a
  point where the program has no dependency token in flight).

Debug options: ``dump`` (the stream as disassembly at every synchronize),
``dump_uop`` (each kernel when recorded), ``force_serial`` (upstream's
``RewriteForceSerial``), ``capture`` (each synchronised run written as a
program file, :mod:`vta.progfile`).

Differences from upstream, on purpose: kernels are cached under any hashable
key (upstream: a small int per call site); the micro-op staging area holds
each loaded kernel once per load, in load order (upstream re-packs the cache
at synchronize, which is equivalent); ACC_8BIT loads belong to the compute
stage, where the hardware dispatches them (upstream's runtime counted them as
load-stage); a synchronize with nothing queued does not run the device.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Hashable
from typing import TYPE_CHECKING, Any

import numpy as np

from . import isa
from .errors import EncodingError
from .isa import AluInsn, GemmInsn, Insn, MemId, MemInsn, Opcode

if TYPE_CHECKING:
    from .device import Device
    from .driver.host import Buffer, RunStats

# Pipeline stages (upstream ``PipelineStage``) and the queue ids TVM passes.
NONE_STAGE, LOAD_STAGE, COMPUTE_STAGE, STORE_STAGE = 0, 1, 2, 3
QID_LOAD_INP = QID_LOAD_WGT = LOAD_STAGE
QID_LOAD_OUT = QID_COMPUTE = COMPUTE_STAGE
QID_STORE_OUT = STORE_STAGE
STAGE_NAMES = {LOAD_STAGE: "load", COMPUTE_STAGE: "compute", STORE_STAGE: "store"}

# Debug flags (upstream values).
DEBUG_DUMP_INSN = 1 << 1
DEBUG_DUMP_UOP = 1 << 2
DEBUG_SKIP_READ_BARRIER = 1 << 3
DEBUG_SKIP_WRITE_BARRIER = 1 << 4
DEBUG_FORCE_SERIAL = 1 << 5

# Micro-op modes.
MODE_GEMM = 0
MODE_ALU = 1

#: Default staging capacities (instructions, micro-ops) before an automatic synchronize.
DEFAULT_MAX_INSNS = 1 << 16
DEFAULT_MAX_UOPS = 1 << 18
#: Instructions kept free for what synchronize appends (tail, FINISH, serial rewrite).
TAIL_RESERVE = 12

_LOOP_LIMIT = (1 << 14) - 1  # iter_out / iter_in are 14-bit fields
_MAX_PAD = 15
_MAX_16 = (1 << 16) - 1


def _elem_bytes(cfg, memory_type: int) -> int:
    if memory_type == MemId.UOP:
        return cfg.UOP_ELEM_BYTES
    if memory_type == MemId.ACC_8BIT:
        return cfg.BATCH * cfg.BLOCK_OUT
    return cfg.elem_bytes_of(MemId(memory_type).name)


def mem_stage(memory_type: int) -> int:
    """The stage a LOAD of ``memory_type`` runs in (section 3.8: ACC, ACC_8BIT, UOP: compute)."""
    if memory_type in (MemId.ACC, MemId.UOP, MemId.ACC_8BIT):
        return COMPUTE_STAGE
    return LOAD_STAGE


def insn_stage(insn: Insn) -> int:
    """Upstream ``GetPipelineStage``: LOAD no-ops (x_size 0) belong to no stage."""
    if insn.opcode in (Opcode.GEMM, Opcode.ALU, Opcode.FINISH):
        return COMPUTE_STAGE
    if insn.opcode == Opcode.LOAD:
        return NONE_STAGE if insn.x_size == 0 else mem_stage(insn.memory_type)
    if insn.opcode == Opcode.STORE:
        return STORE_STAGE
    return NONE_STAGE


def insn_stage_all(insn: Insn) -> int:
    """Upstream ``GetPipelineStageAll``: like :func:`insn_stage`, no-ops by memory type."""
    stage = insn_stage(insn)
    return stage if stage != NONE_STAGE else mem_stage(insn.memory_type)


class UopKernel:
    """A recorded micro-op kernel: up to two loop levels and a micro-op sequence.

    Attributes
    ----------
    key : Hashable
        Cache key.
    mode : int
        :data:`MODE_GEMM` or :data:`MODE_ALU`.
    reset_out : int
        GEMM reset flag (every micro-op of a kernel has the same).
    opcode, use_imm, imm : int
        ALU operation of an ALU kernel.
    loops : list of (extent, dst_factor, src_factor, wgt_factor)
        Loop levels, outer first.
    uops : numpy.ndarray
        (n, 3) int64 array of (dst_idx, src_idx, wgt_idx).
    raw : bytes
        The micro-ops encoded, 4 bytes each (little-endian).
    sram_begin, sram_end : int
        Placement in the micro-op buffer; equal when the kernel is not resident.
    """

    def __init__(self, key: Hashable):
        self.key = key
        self.mode: int | None = None
        self.reset_out = 0
        self.opcode = 0
        self.use_imm = 0
        self.imm = 0
        self.loops: list[tuple[int, int, int, int]] = []
        self._seq: list[tuple[int, int, int]] = []
        self._open = 0
        self.uops = np.zeros((0, 3), dtype=np.int64)
        self.raw = b""
        self.sram_begin = 0
        self.sram_end = 0

    @property
    def cached(self) -> bool:
        """Whether the kernel is resident in the micro-op buffer."""
        return self.sram_begin != self.sram_end

    @property
    def size(self) -> int:
        return len(self.uops)

    def dump(self) -> str:
        """Upstream's kernel dump: one line per micro-op."""
        lines = [f"kernel {self.key!r}: {self.size} uops, loops {self.loops}"]
        lines += [f"[{i:04d}]\t acc={d}, inp={s}, wgt={w}" for i, (d, s, w) in enumerate(self.uops)]
        return "\n".join(lines) + "\n"


class CommandQueue:
    """Builds instruction streams from runtime calls and runs them on a device.

    Parameters
    ----------
    device : Device
        Where streams run; two staging buffers are allocated on it.
    max_insns : int
        Instruction staging capacity (16 bytes each); the queue synchronises
        automatically before it would overflow.
    max_uops : int
        Micro-op staging capacity (4 bytes each), likewise.
    debug : int
        Upstream debug flags (:data:`DEBUG_DUMP_INSN`, :data:`DEBUG_DUMP_UOP`,
        :data:`DEBUG_FORCE_SERIAL`).
    dump : bool, callable or file-like
        Dump every synchronised stream as disassembly: ``True`` prints to
        stdout, a callable receives the text, a file-like object is written.
    dump_uop : bool
        Also dump each micro-op kernel when it is recorded.
    force_serial : bool
        Rewrite dependency flags so that the engines run one after another.
    timeout : float, optional
        Run timeout in seconds (default: the device's).
    capture : str or Path, optional
        Record every run as a program file: a directory (one ``run-NNNN.vtaprog``
        per synchronize) or a ``.vtaprog`` path (default: the device's capture).

    Attributes
    ----------
    history : list of RunStats
        Statistics of every run this queue made (automatic ones included).
    last_stream : bytes or None
        The encoded instructions of the last synchronize (16 bytes each).
    last_dump : str or None
        Their disassembly, when dumping is on.
    """

    def __init__(self, device: Device, *, max_insns: int = DEFAULT_MAX_INSNS,
                 max_uops: int = DEFAULT_MAX_UOPS, debug: int = 0, dump: Any = False,
                 dump_uop: bool = False, force_serial: bool = False,
                 timeout: float | None = None, capture: Any = None):
        if max_insns <= TAIL_RESERVE + 4:
            raise ValueError(f"max_insns must be more than {TAIL_RESERVE + 4}, not {max_insns}")
        if max_uops < 1:
            raise ValueError(f"max_uops must be positive, not {max_uops}")
        self.device = device
        self.cfg = device.cfg
        self.max_insns = int(max_insns)
        self.max_uops = int(max_uops)
        self.debug = debug | (DEBUG_DUMP_UOP if dump_uop else 0) | (
            DEBUG_FORCE_SERIAL if force_serial else 0) | (DEBUG_DUMP_INSN if dump else 0)
        self.dump = dump
        self.timeout = timeout
        self.capture = capture
        self.history: list[RunStats] = []
        self.last_dump: str | None = None
        self.last_stream: bytes | None = None
        self._insn_buf = device.alloc(self.max_insns * isa.INSN_BYTES, name="insn")
        self._uop_buf = device.alloc(self.max_uops * isa.UOP_BYTES, name="uop")
        self._kernels: dict[Hashable, UopKernel] = {}
        self._recording: UopKernel | None = None
        self._syncing = False
        self._uop_fields = isa.layout("uop", self.cfg)
        self._reset_queues()

    # ------------------------------------------------------------ state
    def _reset_queues(self) -> None:
        self._insns: list[Insn] = []
        self._pending_prev = [0, 0, 0, 0]
        self._pending_next = [0, 0, 0, 0]
        for kernel in getattr(self, "_resident", []):
            kernel.sram_begin = kernel.sram_end = 0
        self._resident: list[UopKernel] = []
        self._uop_sram_end = 0
        self._uop_chunks: list[bytes] = []
        self._uops_staged = 0
        self._last_uop_load: Insn | None = None

    @property
    def insns(self) -> list[Insn]:
        """The instructions queued since the last synchronize (live objects)."""
        return self._insns

    @property
    def uops_staged(self) -> int:
        """Micro-ops staged for loading since the last synchronize."""
        return self._uops_staged

    def pending_pops(self, stage: int) -> tuple[int, int]:
        """(pop_prev, pop_next) waiting to be attached to ``stage``'s next instruction."""
        return self._pending_prev[stage], self._pending_next[stage]

    def headroom(self) -> tuple[int, int]:
        """(instructions, micro-ops) that still fit before an automatic synchronize."""
        return (self.max_insns - TAIL_RESERVE - len(self._insns),
                self.max_uops - self._uops_staged)

    def kernel(self, key: Hashable) -> UopKernel | None:
        """The recorded kernel cached under ``key``, if any."""
        return self._kernels.get(key)

    def _ensure_room(self, n_insns: int, n_uops: int = 0) -> None:
        if self._syncing:
            return  # synchronize's own additions use the reserved tail space
        insns_left, uops_left = self.headroom()
        if n_insns <= insns_left and n_uops <= uops_left:
            return
        if n_insns > self.max_insns - TAIL_RESERVE or n_uops > self.max_uops:
            raise ValueError(
                f"one call needs {n_insns} instructions and {n_uops} micro-ops, more than the "
                f"staging areas hold ({self.max_insns - TAIL_RESERVE} and {self.max_uops})")
        self.synchronize()

    def _create(self, stage: int, insn: Insn) -> Insn:
        """Append ``insn`` for ``stage``, taking that stage's pending pops (upstream ``Create``)."""
        insn.pop_prev_dep = self._pending_prev[stage]
        insn.pop_next_dep = self._pending_next[stage]
        insn.push_prev_dep = 0
        insn.push_next_dep = 0
        self._pending_prev[stage] = 0
        self._pending_next[stage] = 0
        self._insns.append(insn)
        return insn

    def _push_noop(self, stage: int, push_prev: int, push_next: int, pop_prev: int,
                   pop_next: int) -> None:
        opcode = Opcode.STORE if stage == STORE_STAGE else Opcode.LOAD
        memory_type = MemId.INP if stage == LOAD_STAGE else MemId.UOP
        self._insns.append(MemInsn(opcode=opcode, memory_type=memory_type,
                                   push_prev_dep=int(push_prev), push_next_dep=int(push_next),
                                   pop_prev_dep=int(pop_prev), pop_next_dep=int(pop_next)))

    def _commit_pending_pop(self, stage: int) -> None:
        if self._pending_prev[stage] or self._pending_next[stage]:
            self._push_noop(stage, 0, 0, self._pending_prev[stage], self._pending_next[stage])
            self._pending_prev[stage] = 0
            self._pending_next[stage] = 0

    # ------------------------------------------------------ load / store
    def load_2d(self, src: Buffer, src_elem_offset: int, x_size: int, y_size: int,
                x_stride: int, x_pad_before: int, y_pad_before: int, x_pad_after: int,
                y_pad_after: int, dst_sram_index: int, dst_memory_type: int) -> MemInsn:
        """Append a 2-D LOAD (upstream ``VTALoadBuffer2D``, same argument order).

        Row r of the transfer reads ``x_size`` elements from element
        ``src_elem_offset + r * x_stride`` of ``src``; the SRAM receives
        ``(y_pad_before + y_size + y_pad_after) * (x_pad_before + x_size +
        x_pad_after)`` consecutive entries from ``dst_sram_index``, pads zero.
        """
        mem = _check_mem_type(dst_memory_type, load=True)
        elem = _elem_bytes(self.cfg, mem)
        for name, value, hi in (("x_size", x_size, _MAX_16), ("y_size", y_size, _MAX_16),
                                ("x_stride", x_stride, _MAX_16),
                                ("x_pad_before", x_pad_before, _MAX_PAD),
                                ("y_pad_before", y_pad_before, _MAX_PAD),
                                ("x_pad_after", x_pad_after, _MAX_PAD),
                                ("y_pad_after", y_pad_after, _MAX_PAD),
                                ("src_elem_offset", src_elem_offset, None),
                                ("dst_sram_index", dst_sram_index, _MAX_16)):
            _check_int(f"load_2d {name}", value, 0, hi)
        if x_size:
            depth = self.cfg.UOP_BUFF_DEPTH if mem == MemId.UOP else self.cfg.depth_of(
                "ACC" if mem == MemId.ACC_8BIT else mem.name)
            total = (x_pad_before + x_size + x_pad_after) * (y_pad_before + y_size + y_pad_after)
            if dst_sram_index + total > depth:
                raise ValueError(
                    f"load_2d {mem.name} writes SRAM entries {dst_sram_index}.."
                    f"{dst_sram_index + total - 1}, beyond the {depth}-entry buffer")
            self._check_dram("load_2d", src, mem, elem, src_elem_offset, x_size, y_size, x_stride)
        self._ensure_room(1)
        insn = MemInsn(opcode=Opcode.LOAD, memory_type=mem, sram_base=dst_sram_index,
                       dram_base=src.addr // elem + src_elem_offset, y_size=y_size,
                       x_size=x_size, x_stride=x_stride, y_pad_0=y_pad_before,
                       y_pad_1=y_pad_after, x_pad_0=x_pad_before, x_pad_1=x_pad_after)
        return self._create(mem_stage(mem), insn)

    def store_2d(self, src_sram_index: int, src_memory_type: int, dst: Buffer,
                 dst_elem_offset: int, x_size: int, y_size: int, x_stride: int) -> MemInsn:
        """Append a 2-D STORE (upstream ``VTAStoreBuffer2D``); pads are always zero."""
        mem = _check_mem_type(src_memory_type, load=False)
        elem = _elem_bytes(self.cfg, mem)
        for name, value, hi in (("x_size", x_size, _MAX_16), ("y_size", y_size, _MAX_16),
                                ("x_stride", x_stride, _MAX_16),
                                ("dst_elem_offset", dst_elem_offset, None),
                                ("src_sram_index", src_sram_index, _MAX_16)):
            _check_int(f"store_2d {name}", value, 0, hi)
        if x_size:
            depth = self.cfg.OUT_BUFF_DEPTH
            if src_sram_index + x_size * y_size > depth:
                raise ValueError(
                    f"store_2d reads OUT entries {src_sram_index}.."
                    f"{src_sram_index + x_size * y_size - 1}, beyond the {depth}-entry buffer")
            self._check_dram("store_2d", dst, mem, elem, dst_elem_offset, x_size, y_size,
                             x_stride)
        self._ensure_room(1)
        insn = MemInsn(opcode=Opcode.STORE, memory_type=mem, sram_base=src_sram_index,
                       dram_base=dst.addr // elem + dst_elem_offset, y_size=y_size,
                       x_size=x_size, x_stride=x_stride)
        return self._create(STORE_STAGE, insn)

    def _check_dram(self, what: str, buf: Buffer, mem: MemId, elem: int, offset: int,
                    x_size: int, y_size: int, x_stride: int) -> None:
        from .driver.host import Buffer

        if not isinstance(buf, Buffer):
            raise TypeError(f"{what} needs a device Buffer, not {type(buf).__name__}")
        if buf.addr % elem:
            raise ValueError(f"{what}: buffer 0x{buf.addr:x} is not aligned to the {elem}-byte "
                             f"{mem.name} element")
        if y_size:
            end = (offset + (y_size - 1) * x_stride + x_size) * elem
            if end > buf.nbytes:
                raise ValueError(
                    f"{what} {mem.name} touches bytes {offset * elem}..{end} of buffer "
                    f"0x{buf.addr:x}, which holds {buf.nbytes} bytes (element offset {offset}, "
                    f"x_size {x_size}, y_size {y_size}, x_stride {x_stride}, {elem}-byte "
                    "elements)")

    # -------------------------------------------------- micro-op kernels
    def _record_target(self, what: str) -> UopKernel:
        if self._recording is None:
            raise RuntimeError(f"{what} must be called while a kernel is recorded (inside the "
                               "finit callback of push_gemm / push_alu)")
        return self._recording

    def uop_loop_begin(self, extent: int, dst_factor: int, src_factor: int,
                       wgt_factor: int) -> None:
        """Open a loop level of the kernel being recorded (at most two, before any micro-op)."""
        kernel = self._record_target("uop_loop_begin")
        if kernel._seq:
            raise RuntimeError("uop_loop_begin must come before the kernel's first uop_push")
        if len(kernel.loops) >= 2:
            raise RuntimeError("a micro-op kernel has at most 2 loop levels")
        _check_int("uop_loop_begin extent", extent, 1, _LOOP_LIMIT)
        for name, value in (("dst_factor", dst_factor), ("src_factor", src_factor),
                            ("wgt_factor", wgt_factor)):
            _check_int(f"uop_loop_begin {name}", value, 0, None)
        kernel.loops.append((extent, dst_factor, src_factor, wgt_factor))
        kernel._open += 1

    def uop_loop_end(self) -> None:
        """Close the innermost open loop level."""
        kernel = self._record_target("uop_loop_end")
        if kernel._open == 0:
            raise RuntimeError("uop_loop_end without a matching uop_loop_begin")
        kernel._open -= 1

    def uop_push(self, mode: int, reset_out: int, dst_index: int, src_index: int,
                 wgt_index: int, opcode: int = 0, use_imm: int = 0, imm_val: int = 0) -> None:
        """Append a micro-op to the kernel being recorded (upstream ``VTAUopPush``).

        Within a kernel mode, reset_out and (ALU) opcode, use_imm and imm must
        not change; a micro-op may not write the same ``dst_index`` as either
        of the two before it (upstream ``VerifyDep``: a pipeline hazard).
        """
        kernel = self._record_target("uop_push")
        if mode not in (MODE_GEMM, MODE_ALU):
            raise ValueError(f"uop_push mode must be 0 (GEMM) or 1 (ALU), not {mode!r}")
        if mode == MODE_ALU:
            if opcode not in list(isa.AluOp):
                raise ValueError(f"uop_push ALU opcode must be one of "
                                 f"{', '.join(f'{o.value} {o.name}' for o in isa.AluOp)}, "
                                 f"not {opcode!r}")
            _check_int("uop_push imm_val", imm_val, -(1 << 15), (1 << 15) - 1)
        settings = (mode, int(bool(reset_out)),
                    *((int(opcode), int(bool(use_imm)), int(imm_val)) if mode == MODE_ALU
                      else (0, 0, 0)))
        if kernel.mode is None:
            kernel.mode, kernel.reset_out, kernel.opcode, kernel.use_imm, kernel.imm = settings
        else:
            current = (kernel.mode, kernel.reset_out, kernel.opcode, kernel.use_imm, kernel.imm)
            if settings != current:
                names = ("mode", "reset_out", "opcode", "use_imm", "imm_val")
                diff = [f"{n} {c!r} -> {s!r}"
                        for n, c, s in zip(names, current, settings, strict=True) if c != s]
                raise ValueError(f"kernel {kernel.key!r}: every micro-op of a kernel must have "
                                 f"the same settings; micro-op {len(kernel._seq)} changes "
                                 + ", ".join(diff))
        for prev in kernel._seq[-2:]:
            if prev[0] == dst_index:
                raise ValueError(
                    f"kernel {kernel.key!r}: micro-op {len(kernel._seq)} writes dst_index "
                    f"{dst_index} like one of the two micro-ops before it (read-after-write "
                    "hazard; reorder the micro-ops)")
        kernel._seq.append((dst_index, src_index, wgt_index))

    def uop_push_block(self, mode: int, reset_out: int, dst_index: Any, src_index: Any,
                       wgt_index: Any, opcode: int = 0, use_imm: int = 0,
                       imm_val: int = 0) -> None:
        """Append many micro-ops at once: :meth:`uop_push` for each element of the index arrays.

        ``dst_index``, ``src_index`` and ``wgt_index`` are equal-length integer
        sequences (or scalars, broadcast); the same rules apply, checked
        vectorised.
        """
        dst, src, wgt = (np.asarray(v, dtype=np.int64) for v in (dst_index, src_index, wgt_index))
        dst, src, wgt = np.broadcast_arrays(dst.reshape(-1), src.reshape(-1), wgt.reshape(-1))
        if dst.size == 0:
            return
        self.uop_push(mode, reset_out, int(dst[0]), int(src[0]), int(wgt[0]), opcode, use_imm,
                      imm_val)
        if dst.size == 1:
            return
        kernel = self._recording
        seq = np.concatenate([np.array([t[0] for t in kernel._seq[-3:-1]], dtype=np.int64), dst])
        first_new = seq.size - dst.size + 1  # position in seq of dst[1]
        clash = np.zeros(seq.size, dtype=bool)
        for lag in (1, 2):
            clash[lag:] |= seq[lag:] == seq[:-lag]
        clash[:first_new] = False
        if clash.any():
            pos = int(np.argmax(clash))
            i = len(kernel._seq) + pos - first_new
            raise ValueError(
                f"kernel {kernel.key!r}: micro-op {i} writes dst_index {int(seq[pos])} like one "
                "of the two micro-ops before it (read-after-write hazard; reorder the micro-ops)")
        kernel._seq.extend(zip(dst[1:].tolist(), src[1:].tolist(), wgt[1:].tolist(),
                               strict=True))

    def _record(self, key: Hashable, finit: Callable[[], Any], mode: int) -> UopKernel:
        if self._recording is not None:
            raise RuntimeError("push_gemm / push_alu cannot be called while recording a kernel")
        kernel = UopKernel(key)
        self._recording = kernel
        try:
            finit()
        finally:
            self._recording = None
        if not kernel._seq:
            raise ValueError(f"kernel {key!r} recorded no micro-ops")
        if kernel._open:
            raise ValueError(f"kernel {key!r}: {kernel._open} uop_loop_begin without "
                             "uop_loop_end")
        if kernel.mode != mode:
            raise ValueError(f"kernel {key!r} was recorded with "
                             f"{'ALU' if kernel.mode == MODE_ALU else 'GEMM'} micro-ops but "
                             f"pushed as {'ALU' if mode == MODE_ALU else 'GEMM'}")
        kernel.uops = np.array(kernel._seq, dtype=np.int64).reshape(-1, 3)
        kernel.raw = self._encode_uops(kernel)
        if kernel.size > self.cfg.UOP_BUFF_DEPTH:
            raise ValueError(f"kernel {key!r} has {kernel.size} micro-ops, more than the "
                             f"{self.cfg.UOP_BUFF_DEPTH}-entry micro-op buffer")
        try:  # loop factors must fit their instruction fields
            isa.encode(self._compute_insn(kernel, 0, 1), self.cfg)
        except EncodingError as exc:
            raise ValueError(f"kernel {key!r}: {exc}") from None
        if self.debug & DEBUG_DUMP_UOP:
            self._emit(kernel.dump())
        return kernel

    def _encode_uops(self, kernel: UopKernel) -> bytes:
        word = np.zeros(kernel.size, dtype=np.uint64)
        for column, field in enumerate(self._uop_fields):
            values = kernel.uops[:, column]
            bad = np.flatnonzero((values < 0) | (values > field.max))
            if bad.size:
                i = int(bad[0])
                raise ValueError(f"kernel {kernel.key!r}: micro-op {i} {field.name} "
                                 f"{int(values[i])} does not fit its {field.width}-bit field "
                                 f"(0..{field.max})")
            word |= values.astype(np.uint64) << np.uint64(field.lo)
        return word.astype("<u4").tobytes()

    def _place(self, kernel: UopKernel) -> None:
        """Make ``kernel`` resident, emitting its UOP LOAD (upstream ``UopQueue::Push``).

        A kernel placed right after another one's UOP LOAD (nothing queued in
        between, no pop waiting for the compute stage, contiguous in the
        micro-op buffer and in staging) extends that LOAD instead: preloaded
        kernels (:meth:`preload`) are one LOAD.
        """
        if kernel.cached:
            return
        n = kernel.size
        begin = self._uop_sram_end
        if begin + n > self.cfg.UOP_BUFF_DEPTH:
            begin = 0  # wrap around
        end = begin + n
        for other in [k for k in self._resident if k.sram_begin < end and begin < k.sram_end]:
            other.sram_begin = other.sram_end = 0  # evicted
            self._resident.remove(other)
        kernel.sram_begin, kernel.sram_end = begin, end
        self._resident.append(kernel)
        self._uop_sram_end = end
        offset = self._uops_staged
        self._uop_chunks.append(kernel.raw)
        self._uops_staged += n
        dram_base = self._uop_buf.addr // isa.UOP_BYTES + offset
        last = self._insns[-1] if self._insns else None
        if (last is not None and last is self._last_uop_load
                and last.sram_base + last.x_size == begin
                and last.dram_base + last.x_size == dram_base
                and last.x_size + n <= _MAX_16
                and self.pending_pops(COMPUTE_STAGE) == (0, 0)):
            last.x_size += n
            last.x_stride = last.x_size
            return
        self._last_uop_load = self._create(COMPUTE_STAGE, MemInsn(
            opcode=Opcode.LOAD, memory_type=MemId.UOP, sram_base=begin, dram_base=dram_base,
            y_size=1, x_size=n, x_stride=n))

    @staticmethod
    def _compute_insn(kernel: UopKernel, begin: int, end: int) -> Insn:
        loops = kernel.loops
        if kernel.mode == MODE_GEMM:
            outer = loops[0] if loops else (1, 0, 0, 0)
            inner = loops[1] if len(loops) > 1 else (1, 0, 0, 0)
            return GemmInsn(opcode=Opcode.GEMM, reset_reg=kernel.reset_out, uop_bgn=begin,
                            uop_end=end, iter_out=outer[0], iter_in=inner[0],
                            dst_factor_out=outer[1], dst_factor_in=inner[1],
                            src_factor_out=outer[2], src_factor_in=inner[2],
                            wgt_factor_out=outer[3], wgt_factor_in=inner[3])
        if len(loops) == 2:
            outer, inner = loops
        elif len(loops) == 1:
            outer, inner = (1, 0, 0, 0), loops[0]
        else:
            outer = inner = (1, 0, 0, 0)
        return AluInsn(opcode=Opcode.ALU, reset_reg=kernel.reset_out, uop_bgn=begin,
                       uop_end=end, iter_out=outer[0], iter_in=inner[0],
                       dst_factor_out=outer[1], dst_factor_in=inner[1],
                       src_factor_out=outer[2], src_factor_in=inner[2],
                       alu_opcode=kernel.opcode, use_imm=kernel.use_imm, imm=kernel.imm)

    def _kernel_for(self, key: Hashable, finit: Callable[[], Any], mode: int) -> UopKernel:
        kernel = self._kernels.get(key)
        if kernel is None:
            kernel = self._record(key, finit, mode)
            self._kernels[key] = kernel
        elif kernel.mode != mode:
            raise ValueError(f"kernel {key!r} is cached as a "
                             f"{'ALU' if kernel.mode == MODE_ALU else 'GEMM'} kernel; it cannot "
                             f"be pushed as {'ALU' if mode == MODE_ALU else 'GEMM'}")
        return kernel

    def _push_op(self, key: Hashable, finit: Callable[[], Any], mode: int) -> Insn:
        kernel = self._kernel_for(key, finit, mode)
        self._ensure_room(2, 0 if kernel.cached else kernel.size)
        self._place(kernel)
        insn = self._compute_insn(kernel, kernel.sram_begin, kernel.sram_end)
        return self._create(COMPUTE_STAGE, insn)

    def preload(self, key: Hashable, finit: Callable[[], Any], mode: int) -> UopKernel:
        """Make the kernel under ``key`` resident now, without running it.

        Records it as :meth:`push_gemm` / :meth:`push_alu` would (``mode``:
        :data:`MODE_GEMM` or :data:`MODE_ALU`) and queues its UOP LOAD; kernels
        preloaded one after another share one LOAD.  A stream that preloads
        every kernel it uses before its first GEMM keeps the compute engine's
        micro-op loads out of the way of the load engine's transfers (they
        share the DRAM bus).  Returns the kernel.
        """
        kernel = self._kernel_for(key, finit, mode)
        if not kernel.cached:
            self._ensure_room(1, kernel.size)
            self._place(kernel)
        return kernel

    def push_gemm(self, key: Hashable, finit: Callable[[], Any]) -> GemmInsn:
        """Append a GEMM running the kernel cached under ``key`` (upstream ``VTAPushGEMMOp``).

        The first time ``key`` is seen, ``finit()`` is called to record the
        kernel with :meth:`uop_loop_begin` / :meth:`uop_push` /
        :meth:`uop_loop_end`.  Loop 0 maps to iter_out, loop 1 to iter_in.
        """
        return self._push_op(key, finit, MODE_GEMM)

    def push_alu(self, key: Hashable, finit: Callable[[], Any]) -> AluInsn:
        """Append an ALU instruction for the kernel under ``key`` (upstream ``VTAPushALUOp``).

        With one loop level the loop maps to iter_in (iter_out = 1); with two,
        loop 0 maps to iter_out and loop 1 to iter_in.
        """
        return self._push_op(key, finit, MODE_ALU)

    # ------------------------------------------------------ dependencies
    @staticmethod
    def _check_qids(what: str, from_qid: int, to_qid: int) -> None:
        for name, q in (("from_qid", from_qid), ("to_qid", to_qid)):
            if q not in STAGE_NAMES:
                raise ValueError(f"{what} {name} must be 1 (load), 2 (compute) or 3 (store), "
                                 f"not {q!r}")
        if abs(from_qid - to_qid) != 1:
            raise ValueError(f"{what}({from_qid}, {to_qid}): tokens only flow between adjacent "
                             "stages (load <-> compute, compute <-> store)")

    def dep_pop(self, from_qid: int, to_qid: int) -> None:
        """Make stage ``to_qid``'s next instruction wait for a token from ``from_qid``.

        The pop is pending until that instruction is created; if the same pop
        is already pending, the pending pops are first committed as a no-op.
        """
        self._check_qids("dep_pop", from_qid, to_qid)
        pending = self._pending_prev if from_qid < to_qid else self._pending_next
        if pending[to_qid]:
            self._ensure_room(1)
            self._commit_pending_pop(to_qid)
        pending[to_qid] = 1

    def dep_push(self, from_qid: int, to_qid: int) -> None:
        """Send a token from stage ``from_qid`` to ``to_qid`` after its last instruction.

        Commits ``from_qid``'s pending pops as a no-op first; then sets the push
        flag on the last queued instruction if it belongs to ``from_qid`` (LOAD
        no-ops belong to no stage) and the flag is free, else appends a no-op
        carrying the push.
        """
        self._check_qids("dep_push", from_qid, to_qid)
        self._ensure_room(2)
        self._commit_pending_pop(from_qid)
        flag = "push_next_dep" if from_qid < to_qid else "push_prev_dep"
        if self._insns:
            last = self._insns[-1]
            if insn_stage(last) == from_qid and not getattr(last, flag):
                setattr(last, flag, 1)
                return
        self._push_noop(from_qid, int(from_qid > to_qid), int(from_qid < to_qid), 0, 0)

    # ------------------------------------------------------- synchronize
    def _rewrite_force_serial(self) -> None:
        """Upstream ``RewriteForceSerial``: serialise adjacent cross-stage instructions."""
        insns = self._insns
        last_store = None
        last = None
        for i in range(1, len(insns)):
            prev_insn, now_insn = insns[i - 1], insns[i]
            prev, now = insn_stage_all(prev_insn), insn_stage_all(now_insn)
            if (prev, now) in ((LOAD_STAGE, COMPUTE_STAGE), (COMPUTE_STAGE, STORE_STAGE)):
                prev_insn.push_prev_dep, prev_insn.push_next_dep = 0, 1
                now_insn.pop_prev_dep, now_insn.pop_next_dep = 1, 0
            elif (prev, now) in ((COMPUTE_STAGE, LOAD_STAGE), (STORE_STAGE, COMPUTE_STAGE)):
                prev_insn.push_prev_dep, prev_insn.push_next_dep = 1, 0
                now_insn.pop_prev_dep, now_insn.pop_next_dep = 0, 1
            else:
                prev_insn.push_prev_dep = prev_insn.push_next_dep = 0
                now_insn.pop_prev_dep = now_insn.pop_next_dep = 0
            if now == STORE_STAGE:
                last_store = now_insn
            last = now_insn
        if last_store is not None and last is last_store:
            last_store.push_prev_dep = 1
            if not self._pending_next[COMPUTE_STAGE]:
                self.dep_pop(STORE_STAGE, COMPUTE_STAGE)
            self._commit_pending_pop(COMPUTE_STAGE)
        else:
            self._pending_next[COMPUTE_STAGE] = 0
        self.dep_push(COMPUTE_STAGE, LOAD_STAGE)
        self.dep_pop(LOAD_STAGE, COMPUTE_STAGE)
        if not self._pending_next[LOAD_STAGE]:
            self.dep_pop(COMPUTE_STAGE, LOAD_STAGE)
        self._commit_pending_pop(LOAD_STAGE)
        self.dep_push(LOAD_STAGE, COMPUTE_STAGE)
        self._commit_pending_pop(COMPUTE_STAGE)

    def _emit(self, text: str) -> None:
        target = self.dump
        if callable(target):
            target(text)
        elif hasattr(target, "write"):
            target.write(text)
        else:
            sys.stdout.write(text)

    def synchronize(self, timeout: float | None = None,
                    capture: Any = None) -> RunStats | None:
        """Finish the stream, run it on the device and reset the queue (``VTASynchronize``).

        Appends the standard tail (store and load signal compute, compute pops
        both) -- or rewrites the flags when ``force_serial`` -- then FINISH,
        copies the staged micro-ops and instructions to their device buffers
        and runs them.  Returns the run's statistics, or ``None`` when nothing
        was queued.  Every kernel is non-resident afterwards.  ``capture``
        records this run as a program file (default: the queue's setting).
        """
        pending = any(self._pending_prev) or any(self._pending_next)
        if not self._insns and not pending:
            return None
        self._syncing = True
        try:
            if self.debug & DEBUG_FORCE_SERIAL:
                self._rewrite_force_serial()
            else:
                self.dep_push(STORE_STAGE, COMPUTE_STAGE)
                self.dep_push(LOAD_STAGE, COMPUTE_STAGE)
                self.dep_pop(STORE_STAGE, COMPUTE_STAGE)
                self.dep_pop(LOAD_STAGE, COMPUTE_STAGE)
                self._commit_pending_pop(COMPUTE_STAGE)
            self._create(COMPUTE_STAGE, GemmInsn(opcode=Opcode.FINISH))
            left = [f"{STAGE_NAMES[s]} {'pop_prev' if p else ''}{'pop_next' if n else ''}"
                    for s, (p, n) in ((s, self.pending_pops(s)) for s in STAGE_NAMES)
                    if p or n]
            if left:
                raise RuntimeError("pops still pending at synchronize: " + ", ".join(left))
            raw = isa.encode_stream(self._insns, self.cfg)
            self.last_stream = raw
            count = len(self._insns)
            if count > self.max_insns:
                raise RuntimeError(f"{count} instructions overflow the {self.max_insns}-entry "
                                   "instruction staging buffer")
            if self.debug & DEBUG_DUMP_INSN:
                self.last_dump = isa.disassemble_stream(raw, self.cfg)
                self._emit(self.last_dump)
            if self._uop_chunks:
                self.device.write(self._uop_buf, b"".join(self._uop_chunks))
            self.device.write(self._insn_buf, raw)
            stats = self.device.run(self._insn_buf, count, timeout=timeout or self.timeout,
                                    capture=capture or self.capture)
        finally:
            self._syncing = False
            self._reset_queues()
        self.history.append(stats)
        return stats

    # ------------------------------------------------------------ close
    def close(self) -> None:
        """Free the staging buffers (queued, unsynchronised instructions are dropped)."""
        for buf in (self._insn_buf, self._uop_buf):
            if buf is not None and not self.device.closed:
                self.device.free(buf)
        self._insn_buf = self._uop_buf = None
        self._reset_queues()

    def __enter__(self) -> CommandQueue:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _check_int(name: str, value: Any, lo: int, hi: int | None) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an integer, not {value!r}")
    if value < lo or (hi is not None and value > hi):
        rng = f"{lo}..{hi}" if hi is not None else f">= {lo}"
        raise ValueError(f"{name} must be {rng}, not {value}")


def _check_mem_type(memory_type: int, *, load: bool) -> MemId:
    allowed = ((MemId.UOP, MemId.WGT, MemId.INP, MemId.ACC, MemId.ACC_8BIT) if load
               else (MemId.OUT,))
    if memory_type not in [int(m) for m in allowed]:
        names = ", ".join(f"{int(m)} ({m.name})" for m in allowed)
        given = int(memory_type) if isinstance(memory_type, (int, np.integer)) else memory_type
        raise ValueError(f"{'load_2d' if load else 'store_2d'} memory type must be {names}, "
                         f"not {given!r}")
    return MemId(memory_type)

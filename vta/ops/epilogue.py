"""What finishes an accumulation: epilogues and folded adds.

An :class:`Epilogue` is the ALU work after a convolution tile's GEMMs:
per-channel int32 rows (a bias, multipliers, shifts, corrections; kept at the
top of the accumulator for the whole stream when they fit, else loaded beside
each tile), ``ADD`` of a row over output rectangles, then ALU steps with
immediates or with a row as the tensor source (``MUL``, ``SHR`` per channel).
A :class:`Residual` is an element-wise add folded into the convolution before
it.  Also the checks of ALU immediates that the operators share.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..config import Config
from ..isa import AluOp

_IMM_MIN, _IMM_MAX = -(1 << 15), (1 << 15) - 1


@dataclass(frozen=True)
class Epilogue:
    """The ALU steps that finish a convolution tile after its accumulation.

    Attributes
    ----------
    rows : int
        Per-output-channel int32 rows the operator loads into the accumulator
        beside each tile: a buffer of ``rows`` x (O/bo, BATCH, BLOCK_OUT) int32,
        row-major (e.g. a bias, per-channel multipliers and shifts).
    regions : tuple of (row, oh0, oh1, ow0, ow1)
        ``ADD`` of that row over the output rectangle ``[oh0, oh1) x [ow0, ow1)``
        (e.g. a zero point's correction where the window overlaps the
        padding), done first.
    steps : tuple of (AluOp, value, from_row)
        ALU ops over the whole tile, in order: with the immediate ``value``, or
        (``from_row``) the tensor op whose source is row ``value``.
    """

    rows: int = 0
    regions: tuple[tuple[int, int, int, int, int], ...] = ()
    steps: tuple[tuple[AluOp, int, bool], ...] = ()

    @property
    def alu_steps(self) -> list[tuple[AluOp, int]]:
        """The immediate steps (for the old bias / shift / ReLU / clip form)."""
        return [(op, v) for op, v, row in self.steps if not row]

    def check(self) -> None:
        """ValueError naming a step whose immediate or row is out of range."""
        for op, value, row in self.steps:
            if row and not 0 <= value < self.rows:
                raise ValueError(f"epilogue step {op.name} reads row {value}, but there are "
                                 f"{self.rows} rows")
            if not row and not _IMM_MIN <= value <= _IMM_MAX:
                raise ValueError(f"epilogue step {op.name} {value}: ALU immediates are 16-bit")
        for region in self.regions:
            if not 0 <= region[0] < self.rows:
                raise ValueError(f"epilogue region {region} reads a row beyond {self.rows}")


def _simple_epilogue(bias: bool, shift: int, relu: bool, clip: tuple[int, int] | None
                     ) -> Epilogue:
    steps = [(AluOp.ADD, 0, True)] if bias else []
    if shift:
        steps.append((AluOp.SHR, shift, False))
    if relu:
        steps.append((AluOp.MAX, 0, False))
    if clip is not None:
        steps += [(AluOp.MAX, clip[0], False), (AluOp.MIN, clip[1], False)]
    return Epilogue(int(bias), (), tuple(steps))


def _epilogue(bias: np.ndarray | None, n_out: int, shift: int, relu: bool,
              clip: tuple[int, int] | None) -> tuple[Epilogue, np.ndarray | None]:
    if isinstance(shift, bool) or not isinstance(shift, (int, np.integer)) or not 0 <= shift <= 31:
        raise ValueError(f"shift must be an integer in 0..31, not {shift!r}")
    if clip is not None:
        lo, hi = clip
        for v in (lo, hi):
            if not _IMM_MIN <= int(v) <= _IMM_MAX:
                raise ValueError(f"clip bounds must be in {_IMM_MIN}..{_IMM_MAX} (16-bit ALU "
                                 f"immediates), not {clip!r}")
        if lo > hi:
            raise ValueError(f"clip must be (lo, hi) with lo <= hi, not {clip!r}")
        clip = (int(lo), int(hi))
    if bias is not None:
        bias = np.asarray(bias)
        if bias.shape != (n_out,):
            raise ValueError(f"bias must have shape ({n_out},) (one value per output channel), "
                             f"not {bias.shape}")
        if not np.issubdtype(bias.dtype, np.integer):
            raise TypeError(f"bias must be an integer array, not {bias.dtype}")
        if bias.min(initial=0) < -(1 << 31) or bias.max(initial=0) >= 1 << 31:
            raise ValueError("bias values must fit int32")
        bias = bias.astype(np.int32)
    return _simple_epilogue(bias is not None, int(shift), bool(relu), clip), bias


def _final_clamp(epi: Epilogue) -> tuple[int, int]:
    """The range the epilogue's trailing immediate MAX/MIN steps leave (unbounded sides:
    one beyond the 16-bit immediates)."""
    lo, hi = _IMM_MIN - 1, _IMM_MAX + 1
    for op, value, from_row in reversed(epi.steps):
        if from_row or op not in (AluOp.MAX, AluOp.MIN):
            break
        if op == AluOp.MAX:
            lo = max(lo, value) if hi > _IMM_MAX else max(lo, min(value, hi))
        else:
            hi = min(hi, value) if lo < _IMM_MIN else min(hi, max(value, lo))
    return lo, hi


def _add_steps(a_lshift: int, b_lshift: int, offset: int, shift: int, relu: bool,
               clip: tuple[int, int] | None) -> tuple[int, int, list[tuple[AluOp, int]]]:
    for name, value in (("a_lshift", a_lshift), ("b_lshift", b_lshift)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) \
                or not 0 <= value <= 24:
            raise ValueError(f"{name} must be an integer in 0..24, not {value!r}")
    if isinstance(offset, bool) or not isinstance(offset, (int, np.integer)) \
            or not _IMM_MIN <= offset <= _IMM_MAX:
        raise ValueError(f"offset must be an integer in {_IMM_MIN}..{_IMM_MAX} (a 16-bit ALU "
                         f"immediate), not {offset!r}")
    epi, _ = _epilogue(None, 0, shift, relu, clip)
    steps = [(AluOp.ADD, int(offset))] if offset else []
    return int(a_lshift), int(b_lshift), steps + epi.alu_steps


def _check_imm(op: AluOp, imm: int) -> None:
    if isinstance(imm, bool) or not isinstance(imm, (int, np.integer)) \
            or not _IMM_MIN <= imm <= _IMM_MAX:
        raise ValueError(f"ALU step {AluOp(op).name} {imm!r}: immediates are 16-bit "
                         f"({_IMM_MIN}..{_IMM_MAX})")




@dataclass(frozen=True)
class Residual:
    """An element-wise add folded into the convolution before it (:func:`emit_conv2d`).

    The result is :func:`emit_add`'s with ``a`` the convolution's int8 output
    ``y``, ``a_steps`` = ``conv_steps``, ``b`` the other operand ``r`` times
    ``other_mult``, and ``steps`` after the sum -- computed in each tile while
    ``y`` is still in the accumulator: the other operand's tile comes into INP
    with the last reduction step's window (the load engine, overlapped with
    compute), and a GEMM with the int8 weight ``other_mult`` times the
    identity (:meth:`weights`) adds ``r * other_mult``; ``y`` is never
    stored.  Exact when the convolution's epilogue ends by clamping ``y``
    within int8 (then the accumulator holds what an ``ACC_8BIT`` load of the
    stored ``y`` would); :func:`emit_conv2d` refuses anything else.
    """

    conv_steps: tuple[tuple[AluOp, int], ...] = ()
    other_mult: int = 1
    steps: tuple[tuple[AluOp, int], ...] = ()

    @classmethod
    def of_shifts(cls, conv_lshift: int = 0, other_lshift: int = 0, offset: int = 0,
                  shift: int = 0, relu: bool = False,
                  clip: tuple[int, int] | None = None) -> Residual:
        """``(y << conv_lshift) + (r << other_lshift) + offset``, then :func:`emit_add`'s
        shift, ReLU and clip."""
        lc, lr, steps = _add_steps(conv_lshift, other_lshift, offset, shift, relu, clip)
        return cls(((AluOp.SHR, -lc),) if lc else (), 1 << lr, tuple(steps))

    @classmethod
    def of_steps(cls, conv_steps: Sequence[tuple[AluOp, int]],
                 other_steps: Sequence[tuple[AluOp, int]],
                 steps: Sequence[tuple[AluOp, int]]) -> Residual | None:
        """From :func:`emit_add`'s per-operand steps; None when the other operand's are not
        one multiplication an int8 weight can do (nothing, ``SHR -k`` with ``k <= 6``, or
        ``MUL m`` with ``|m| <= 127``)."""
        other = list(other_steps)
        if not other:
            mult = 1
        elif len(other) == 1 and other[0][0] == AluOp.SHR and -6 <= other[0][1] <= 0:
            mult = 1 << -other[0][1]
        elif len(other) == 1 and other[0][0] == AluOp.MUL and -128 <= other[0][1] <= 127:
            mult = int(other[0][1])
        else:
            return None
        return cls(tuple(conv_steps), mult, tuple(steps))

    def alu_uops(self) -> int:
        """ALU micro-op cycles per output entry: ``y``'s steps and the steps after the sum
        (a MUL's two)."""
        return sum(2 if op == AluOp.MUL else 1 for op, _ in (*self.conv_steps, *self.steps))

    def weights(self, cfg: Config) -> np.ndarray:
        """The WGT entry that adds ``r * other_mult``: ``other_mult`` times the identity."""
        return np.eye(cfg.BLOCK_OUT, cfg.BLOCK_IN, dtype=np.int8) * np.int8(self.other_mult)

    def check(self, epi: Epilogue) -> None:
        """ValueError unless this add can follow a convolution with epilogue ``epi``."""
        for op, imm in (*self.conv_steps, *self.steps):
            _check_imm(op, imm)
        if not -128 <= self.other_mult <= 127:
            raise ValueError(f"a folded add multiplies its other operand by an int8 weight, "
                             f"not {self.other_mult}")
        lo, hi = _final_clamp(epi)
        if lo < -128 or hi > 127:
            shown = "no clamp" if (lo, hi) == (_IMM_MIN - 1, _IMM_MAX + 1) else (lo, hi)
            raise ValueError(f"a folded add needs the convolution's output clamped within "
                             f"int8 (its epilogue ending in MAX lo, MIN hi within -128..127), "
                             f"not {shown}")

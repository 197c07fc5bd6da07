"""The graph runtime's intermediate form: quantized operators on named tensors.

An imported model (QDQ or QOperator ONNX, see :mod:`vta.graph.onnx_import`)
becomes a :class:`Graph`: a topologically ordered list of :class:`Node` over
named :class:`Value` s.  Quantized values carry a :class:`QType` (real = scale x
(q - zero_point)); a value without one is float32.

Operators (``Node.op``) and their attributes
---------------------------------------------
``conv``       int x, int weight -> int y.  ``weight`` OIHW (int8), ``w_scale`` and
               ``w_zero`` per output channel, ``bias`` int32 (O,) in units of
               x_scale x w_scale, ``stride`` (2), ``pads`` (top, left, bottom, right),
               ``dilation`` (2), ``group``, ``lo``/``hi`` (output clamp in the
               quantized domain: saturation, fused ReLU or Clip).
``dense``      int x (M, K), ``weight`` (N, K); as ``conv`` otherwise.
``add``        int a + int b -> int y, ``lo``/``hi`` as above.
``maxpool``    ``kernel``, ``stride``, ``pads`` (int or float tensors).
``avgpool``    ``kernel``, ``stride``, ``pads``, ``count_include_pad``; ``global``
               for a global average pool (int: requantized to the output's type).
``relu``       ``max(x, zero_point)`` on an int tensor, ``max(x, 0)`` on floats.
``reshape``    ``shape`` (ONNX rules: 0 copies a dimension, -1 is inferred).
``flatten``    ``axis``.
``quantize``   float -> int (ONNX QuantizeLinear: round half to even, saturate).
``dequantize`` int -> float.
``softmax``    float, ``axis``.

Arithmetic of the int operators (the int8 reference, :mod:`vta.graph.reference`)
--------------------------------------------------------------------------------
``acc = wrap32(sum((x - zx) * (w - zw)) + bias)``; ``r = x_scale * w_scale /
y_scale`` per output channel becomes fixed-point parameters at import
(``attrs["fixed"]``, :mod:`vta.graph.fixed`): a pre-shift, a multiplier and a
rounding shift, ``y ~ floor(acc * r + 1/2)`` computed exactly as VTA's ALU does
it; then ``y = clip(y + zy, lo, hi)``.  Add (``attrs["fixed"]``: two
multipliers and a shift), average and max pooling: the same rounding.  A
node without fixed-point parameters (``attrs["fixed_why"]`` says why) is
computed in float64 and runs on the CPU.  An ``add`` with one input has a
constant second operand ``attrs["const"]`` of type ``attrs["const_qtype"]``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import VTAError

__all__ = ["Graph", "GraphError", "Node", "QType", "Value"]


class GraphError(VTAError, ValueError):
    """A model the graph runtime cannot import or run: names the node and the reason."""


@dataclass(frozen=True)
class QType:
    """Linear quantization of a tensor: ``real = scale * (q - zero_point)``.

    Attributes
    ----------
    scale : float
        Positive scale (float32 value, as stored in ONNX).
    zero_point : int
        Integer zero point, within the dtype's range.
    dtype : str
        ``"int8"`` or ``"uint8"``.
    """

    scale: float
    zero_point: int = 0
    dtype: str = "int8"

    @property
    def qmin(self) -> int:
        return -128 if self.dtype == "int8" else 0

    @property
    def qmax(self) -> int:
        return 127 if self.dtype == "int8" else 255

    @property
    def np_dtype(self) -> np.dtype:
        return np.dtype(self.dtype)

    def describe(self) -> str:
        zp = f", zp {self.zero_point}" if self.zero_point else ""
        return f"{self.dtype} x {self.scale:g}{zp}"


@dataclass
class Value:
    """A named tensor: ``shape`` (``None`` for a dimension known only at run time)."""

    name: str
    shape: tuple[int | None, ...] | None = None
    qtype: QType | None = None


@dataclass
class Node:
    """One operator of a :class:`Graph` (``op`` and ``attrs`` as in the module docstring).

    ``sources`` names the ONNX nodes it was made from (a QDQ pattern fuses several).
    """

    name: str
    op: str
    inputs: tuple[str, ...]
    output: str
    attrs: dict[str, Any] = field(default_factory=dict)
    sources: tuple[str, ...] = ()


@dataclass
class Graph:
    """A quantized network: inputs, outputs, values and topologically ordered nodes."""

    name: str
    inputs: list[str]
    outputs: list[str]
    values: dict[str, Value]
    nodes: list[Node]
    metadata: dict[str, str] = field(default_factory=dict)

    def node(self, name: str) -> Node:
        """The node called ``name`` (KeyError naming the known nodes otherwise)."""
        for node in self.nodes:
            if node.name == name:
                return node
        raise KeyError(f"no node {name!r} in graph {self.name!r} (nodes: "
                       f"{', '.join(n.name for n in self.nodes)})")

    def consumers(self) -> dict[str, list[Node]]:
        """Value name -> the nodes that read it."""
        users: dict[str, list[Node]] = {name: [] for name in self.values}
        for node in self.nodes:
            for name in node.inputs:
                users.setdefault(name, []).append(node)
        return users

    def summary(self) -> str:
        """One line per node: name, op, inputs -> output."""
        return "\n".join(f"{n.name}: {n.op}({', '.join(n.inputs)}) -> {n.output}"
                         for n in self.nodes)

"""onnxruntime as an independent judge of the int8 reference.

onnxruntime runs the same ONNX file with its own kernels.  Its integer
arithmetic matches ours except in rounding: ONNX requantizes with round half
to even, our reference (and VTA's shift) rounds half up, so a value exactly
halfway between two int8 steps may differ by one step (one LSB of that
tensor), and such a step can propagate to later layers.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from .ir import Graph, GraphError

__all__ = ["Agreement", "compare", "onnxruntime_available", "run_onnxruntime"]


def onnxruntime_available() -> bool:
    """Whether ``onnxruntime`` can be imported."""
    try:
        import onnxruntime  # noqa: F401
    except ImportError:
        return False
    return True


def run_onnxruntime(model: Any, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Run an ONNX model (path, bytes or ModelProto) on onnxruntime's CPU provider."""
    try:
        import onnxruntime as ort
    except ImportError:
        raise GraphError("onnxruntime is not installed (pip install 'vta[ort]')") from None
    if hasattr(model, "SerializeToString"):
        model = model.SerializeToString()
    elif not isinstance(model, (bytes, bytearray)):
        model = str(model)
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    sess = ort.InferenceSession(model, opts, providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    return dict(zip(names, sess.run(names, dict(feeds)), strict=True))


@dataclass(frozen=True)
class Agreement:
    """How one output of two runs compares.

    Attributes
    ----------
    output : str
        Output name.
    top1_equal, count : int
        Rows (inputs) whose arg-max over the last axis agree, out of ``count``.
    max_diff : float
        Largest absolute difference.
    lsb : float or None
        The output's quantization step (None for an output that is not a
        dequantized int8 tensor); ``max_lsb = max_diff / lsb``.
    """

    output: str
    top1_equal: int
    count: int
    max_diff: float
    lsb: float | None

    @property
    def max_lsb(self) -> float | None:
        return None if self.lsb is None else self.max_diff / self.lsb

    def describe(self) -> str:
        diff = (f"{self.max_lsb:g} LSB" if self.lsb is not None else f"{self.max_diff:g}")
        return (f"{self.output}: top-1 equal on {self.top1_equal}/{self.count} inputs, "
                f"largest difference {diff}")


def output_lsb(graph: Graph, name: str) -> float | None:
    """Quantization step of a graph output that is a dequantized int tensor."""
    for node in graph.nodes:
        if node.output == name and node.op == "dequantize":
            return graph.values[node.inputs[0]].qtype.scale
    q = graph.values[name].qtype
    return q.scale if q is not None else None


def compare(graph: Graph, ours: Mapping[str, np.ndarray],
            theirs: Mapping[str, np.ndarray]) -> list[Agreement]:
    """Top-1 agreement and largest difference of every graph output."""
    out = []
    for name in graph.outputs:
        a = np.asarray(ours[name], dtype=np.float64)
        b = np.asarray(theirs[name], dtype=np.float64)
        if a.shape != b.shape:
            raise GraphError(f"output {name!r} has shape {a.shape} here and {b.shape} there")
        rows_a = a.reshape(-1, a.shape[-1]) if a.ndim else a.reshape(1, 1)
        rows_b = b.reshape(-1, b.shape[-1]) if b.ndim else b.reshape(1, 1)
        equal = int((rows_a.argmax(axis=1) == rows_b.argmax(axis=1)).sum())
        out.append(Agreement(name, equal, len(rows_a), float(np.abs(a - b).max(initial=0)),
                             output_lsb(graph, name)))
    return out

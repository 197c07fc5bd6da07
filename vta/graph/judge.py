"""onnxruntime as an independent judge of the int8 reference, and how far apart they can be.

onnxruntime runs the same ONNX file with its own kernels.  Its integer
arithmetic matches ours except in rounding: ONNX requantizes the exact ratio
(in float32) with round half to even, our reference (and VTA) in fixed point
with round half up, within ``E`` of the exact value (:mod:`vta.graph.fixed`),
so one layer's output may differ by one step (one LSB of that tensor) where
its exact value lies near a rounding boundary, and such a step can propagate
to later layers.

* :func:`compare` -- measured: top-1 agreement and the largest difference.
* :func:`network_bound` -- proven for any input: the largest difference each
  tensor can reach, propagated layer by layer through the weights
  (docs/graph.md, "A bound for the whole network").
* :func:`certify` -- proven for given inputs: the interval each onnxruntime
  value must lie in, hence the largest possible difference from ours and the
  inputs whose top-1 cannot change; and each of our values checked against
  its own inputs.
* :func:`assess` -- all three for the outputs of a run, and the values of
  either run outside the proven intervals (what ``vta graph run`` and ``vta
  graph quantize`` print).
* :func:`onnxruntime_values`, :func:`layer_differences` -- onnxruntime's
  intermediate tensors, to see where two runs part.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import fixed, reference
from .ir import Graph, GraphError, Node, QType

__all__ = ["Agreement", "Assessment", "Certificate", "LayerBound", "NetworkBound", "assess",
           "certify", "compare", "layer_differences", "network_bound",
           "onnxruntime_available", "onnxruntime_values", "run_onnxruntime"]


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


def _model_proto(model: Any):
    """An onnx.ModelProto from a path, serialized bytes or a ModelProto."""
    from .onnx_import import require_onnx

    onnx = require_onnx()
    if isinstance(model, (bytes, bytearray)):
        return onnx.load_from_string(bytes(model))
    if hasattr(model, "graph"):
        return model
    return onnx.load(str(model))


def onnxruntime_values(model: Any, feeds: Mapping[str, np.ndarray], graph: Graph,
                       names: list[str], outputs: Mapping[str, np.ndarray] | None = None
                       ) -> dict[str, np.ndarray]:
    """onnxruntime's values of the int tensors ``names`` of ``graph`` (made outputs of ``model``).

    The names are the ONNX tensors of the imported graph (``graph.values``);
    the model's own outputs are in the result too.  GraphError when making
    them outputs changes the model's own outputs (``outputs``: onnxruntime's,
    computed when not given; it then fuses a QDQ model differently, and the
    values would not be the ones it computes).
    """
    from onnx import ModelProto, TensorProto, helper

    model = _model_proto(model)
    extended = ModelProto()
    extended.CopyFrom(model)
    have = {o.name for o in extended.graph.output}
    for name in names:
        q = graph.values[name].qtype
        if q is None:
            raise GraphError(f"value {name!r} is not an int tensor")
        if name not in have:
            elem = TensorProto.UINT8 if q.dtype == "uint8" else TensorProto.INT8
            extended.graph.output.append(helper.make_tensor_value_info(name, elem, None))
    out = run_onnxruntime(extended, feeds)
    if outputs is None:
        outputs = run_onnxruntime(model, feeds)
    for name, value in outputs.items():
        if not np.array_equal(value, out[name]):
            raise GraphError(f"onnxruntime computes output {name!r} differently when the "
                             "intermediate tensors are outputs too (it fuses the model "
                             "differently); try the QOperator form of the model")
    return out


# --------------------------------------------------------- onnxruntime's arithmetic
#: onnxruntime rounds, half to even, a float32 value t' instead of the exact
#: t.  Its integer kernels (QLinearConv, QGemm, QLinearMatMul,
#: QLinearGlobalAveragePool) convert the exact int32 accumulator to float32
#: and multiply it by a float32 ratio that is itself a product and a quotient
#: of float32 scales: four roundings of relative 2**-24, so |t' - t| <=
#: ORT_REL * |t|.  QLinearAdd sums ``zc - ra*za - rb*zb + ra*a + rb*b`` in
#: float32 (raw a, b): ORT_REL times the sum of those |terms|.
ORT_REL = 2.0 ** -21
#: A QDQ group may also run in float32 (DequantizeLinear, the float operator,
#: QuantizeLinear: onnxruntime fuses some groups and not others), which adds
#: at most (k + 8) * ORT_SUM of the sum of the |terms| of a k-term sum (any
#: order, with or without FMA).
ORT_SUM = 2.0 ** -24
#: ONNX operators whose onnxruntime kernel is an integer one for certain.
_INTEGER_KERNELS = {"QLinearConv", "QLinearMatMul", "QGemm", "QLinearAdd",
                    "QLinearGlobalAveragePool"}


def _integer_nodes(graph: Graph, model: Any) -> set[str]:
    """Nodes made from a QOperator operator of ``model`` (none without a model)."""
    if model is None:
        return set()
    ops = {n.name or f"{n.op_type}_{i}": n.op_type
           for i, n in enumerate(_model_proto(model).graph.node)}
    return {node.name for node in graph.nodes
            if node.sources and ops.get(node.sources[0]) in _INTEGER_KERNELS}


def _ort_error(t_abs, sum_abs, terms: int, integer: bool):
    """The largest ``|t' - t|``: ``t_abs`` bounds ``|t|``, ``sum_abs`` the sum of the
    |terms| of a float32 sum of ``terms`` terms (when the node may run in float)."""
    return ORT_REL * t_abs + (0.0 if integer else (terms + 8) * ORT_SUM * sum_abs)


def _add_error(magnitude):
    """onnxruntime's float32 error in a quantized add whose |terms| sum to ``magnitude``."""
    return ORT_REL * magnitude


def _add_magnitude(operands, yq: QType):
    """``|zc| + sum(r * (|v| + |z|))`` over the operands ``(|v| bound, qtype)``."""
    return abs(yq.zero_point) + sum((v + abs(q.zero_point)) * (q.scale / yq.scale)
                                    for v, q in operands)


def _span(q: QType) -> int:
    return max(q.zero_point - q.qmin, q.qmax - q.zero_point)


def _raw_max(q: QType) -> int:
    return max(abs(q.qmin), abs(q.qmax))


def _weights(node: Node, graph: Graph) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A conv/dense node's zero-point-free int64 weights, bias (int64) and ratios ``r``."""
    a = node.attrs
    w = a["weight"].astype(np.int64) - np.asarray(a["w_zero"], np.int64).reshape(
        (-1,) + (1,) * (a["weight"].ndim - 1))
    bias = np.zeros(w.shape[0], np.int64) if a.get("bias") is None else \
        a["bias"].astype(np.int64)
    xq, yq = graph.values[node.inputs[0]].qtype, graph.values[node.output].qtype
    return w, bias, xq.scale * np.asarray(a["w_scale"], np.float64) / yq.scale


def _add_operands(node: Node, graph: Graph) -> list[QType]:
    qs = [graph.values[i].qtype for i in node.inputs]
    return qs + ([node.attrs["const_qtype"]] if "const" in node.attrs else [])


def _own_error(node: Node) -> float:
    """Our fixed-point error bound ``E`` (:mod:`vta.graph.fixed`); 0 for float64."""
    fp = node.attrs.get("fixed")
    return 0.0 if fp is None else float(fp.error)


def _pool_error(node: Node, x_shape: tuple[int, ...], xq: QType, yq: QType) -> float:
    """Our fixed-point error bound ``E`` of a requantizing pool (0 when it runs in float64)."""
    if node.op == "maxpool":
        return _own_error(node)
    counts = _pool_counts(node, x_shape)
    fp = fixed.pool_params(int(counts.flat[0]), xq, yq) if np.unique(counts).size == 1 else None
    return fp.error if isinstance(fp, fixed.FixedPoint) else 0.0


def _requantizing_pool(node: Node, xq: QType | None, yq: QType | None) -> bool:
    """An int average pool, or an int max pool whose output quantization differs."""
    return xq is not None and (node.op == "avgpool" or (node.op == "maxpool" and xq != yq))


def _int_source(graph: Graph, name: str) -> str:
    """The int tensor a graph output dequantizes (itself when it is not one)."""
    for node in graph.nodes:
        if node.output == name and node.op == "dequantize":
            return node.inputs[0]
    return name


def _pool_counts(node: Node, x_shape: tuple[int, ...]) -> np.ndarray:
    """How many input entries each output window of an average pool takes."""
    a = node.attrs
    if a.get("global"):
        return np.array([x_shape[2] * x_shape[3]])
    ones = np.ones((1, 1) + tuple(x_shape[2:]))
    padded = reference._pad(ones, a["pads"], 1.0 if a.get("count_include_pad") else 0.0)
    return _window_reduce(node, padded, np.add)


def _window_reduce(node: Node, xp: np.ndarray, op) -> np.ndarray:
    out = None
    for _, _, view in reference._windows(xp, node.attrs["kernel"], node.attrs["stride"]):
        out = view.copy() if out is None else op(out, view)
    return out


# ------------------------------------------------------------- for any input
@dataclass(frozen=True)
class LayerBound:
    """One node of :func:`network_bound`.

    ``gain``: output steps that one step of difference at each input can
    cause (``r * max_j sum_i |w_ij|`` for a conv or dense layer, ``(ra, rb)``
    for an add); ``own``: ``E + eps``, our fixed-point error and
    onnxruntime's float32 error in output steps; ``bound``: the largest
    ``|ours - onnxruntime|`` of the output (steps; real units for a float
    tensor; None when unknown, ``why`` says which node made it so).
    """

    node: str
    op: str
    gain: tuple[float, ...]
    own: float
    bound: float | None
    why: str = ""


@dataclass(frozen=True)
class NetworkBound:
    """:func:`network_bound`'s result: per node (graph order) and per graph output
    (LSBs of a dequantized or int output, real units of a float one; None with
    the reason in ``why``)."""

    layers: list[LayerBound]
    outputs: dict[str, float | None]
    why: dict[str, str] = field(default_factory=dict)
    #: per output, the bound that says nothing: the width of its int range
    full: dict[str, float] = field(default_factory=dict)

    def layer(self, name: str) -> LayerBound:
        return next(b for b in self.layers if b.node == name)


def _steps(moved: float, own: float, cap: int) -> float:
    """``min(cap, floor(moved + 1 + own))``: moved by the inputs, plus one rounding step."""
    return float(min(cap, math.floor(moved + 1 + own)))


def network_bound(graph: Graph, input_shapes: Mapping[str, tuple[int, ...]] | None = None,
                  model: Any = None) -> NetworkBound:
    """The largest difference between the int8 reference and onnxruntime, for any input.

    Propagates, node by node, ``B`` = the largest ``|ours - onnxruntime|`` of
    each tensor in its own steps (0 at the float inputs, which both quantize
    the same way): a conv or dense layer ``min(hi - lo, floor(r * max_j
    sum_i |w_ij| * B_in + 1 + E + eps))``, an add ``floor(ra * B_a + rb * B_b
    + 1 + E + eps)``, an average pool ``floor(r * B_in + 1 + E + eps)`` (``r =
    x_scale / y_scale``), a max pool, ReLU or reshape ``B_in``; ``E`` is the
    node's fixed-point error bound and ``eps`` onnxruntime's float32 error
    (``ORT_REL``, ``ORT_SUM``; ``model``, the ONNX model, tells which nodes
    onnxruntime runs with integer kernels).  docs/graph.md has the proof.
    ``input_shapes`` (default: the declared ones, batch 1) give the pools'
    window sizes.
    """
    if input_shapes is None:
        input_shapes = {}
        for name in graph.inputs:
            shape = graph.values[name].shape
            if shape is None or any(d is None for d in shape[1:]):
                raise GraphError(f"input {name!r} has no fixed shape; give input_shapes")
            input_shapes[name] = (1,) + tuple(shape[1:])
    shapes = reference.infer_shapes(graph, input_shapes)
    integer = _integer_nodes(graph, model)
    vals = graph.values
    bound: dict[str, float | None] = {name: 0.0 for name in graph.inputs}
    unknown: dict[str, str] = {}
    layers = []
    for node in graph.nodes:
        ins = [bound[i] for i in node.inputs]
        xq = vals[node.inputs[0]].qtype
        yq = vals[node.output].qtype
        a = node.attrs
        gain: tuple[float, ...] = (1.0,)
        own, why = 0.0, ""
        if any(b is None for b in ins):
            out = None
            why = next(unknown[i] for i in node.inputs if bound[i] is None)
        elif node.op in ("conv", "dense"):
            w, bias, r = _weights(node, graph)
            s = np.abs(w).reshape(len(w), -1).sum(axis=1)
            acc = fixed.acc_bound(w, _span(xq), bias)
            gain = (float(np.max(r * s)),)
            reach = float(np.max(r * acc))
            own = _own_error(node) + _ort_error(reach, reach, w[0].size, node.name in integer)
            out = _steps(gain[0] * ins[0], own, a["hi"] - a["lo"])
            if acc.max() > fixed.INT32_MAX:  # the accumulators may wrap: no bound but the range
                out = float(a["hi"] - a["lo"])
        elif node.op == "add":
            qs = _add_operands(node, graph)
            ins = ins + [0.0] * (len(qs) - len(ins))  # a constant operand does not differ
            gain = tuple(q.scale / yq.scale for q in qs)
            own = _own_error(node) + _add_error(_add_magnitude([(_raw_max(q), q) for q in qs],
                                                               yq))
            out = _steps(sum(g * b for g, b in zip(gain, ins, strict=True)), own,
                         a["hi"] - a["lo"])
        elif _requantizing_pool(node, xq, yq):
            x_shape = shapes[node.inputs[0]]
            n = x_shape[2] * x_shape[3] if a.get("global") else int(np.prod(a["kernel"]))
            r = xq.scale / yq.scale
            gain = (r,)
            reach = r * _span(xq)
            own = _pool_error(node, x_shape, xq, yq) + _ort_error(reach, reach, n,
                                                                  node.name in integer)
            out = _steps(r * ins[0], own, yq.qmax - yq.qmin)
        elif node.op in ("relu", "reshape", "flatten", "maxpool"):
            out = ins[0]  # exact on both sides, and moves no value by more than it moved
        elif node.op == "quantize":
            out = 0.0 if ins[0] == 0 else _steps(ins[0] / yq.scale * (1 + 2**-20), 0.0,
                                                 yq.qmax - yq.qmin)
        elif node.op == "dequantize":
            out = ins[0] * xq.scale * (1 + 2**-20)
        elif node.op == "softmax":  # |d softmax|_inf <= |dz|_inf / 2, float32 rounding apart
            gain = (0.5,)
            out = min(1.0, ins[0] / 2 + 2**-18)
        else:
            out, why = None, f"{node.op} {node.name!r} on float tensors"
        if out is None:
            unknown[node.output] = why
        bound[node.output] = out
        layers.append(LayerBound(node.name, node.op, gain, own, out, why))
    outputs, whys, full = {}, {}, {}
    for name in graph.outputs:
        src = _int_source(graph, name)
        outputs[name] = bound[src]
        if bound[src] is None:
            whys[name] = unknown[src]
        if vals[src].qtype is not None:
            full[name] = float(vals[src].qtype.qmax - vals[src].qtype.qmin)
    return NetworkBound(layers, outputs, whys, full)


# ------------------------------------------------------------ for given inputs
@dataclass
class Certificate:
    """:func:`certify`'s result: where onnxruntime's values must lie, for these inputs.

    Attributes
    ----------
    ours : dict
        Every value of the int8 reference (what VTA computes, bit for bit).
    lo, hi : dict
        Per value, bounds of onnxruntime's value (int tensors: their
        integers; float tensors: real values).
    wrong : dict
        Per requantized int tensor: how many of our values are more than our
        ``E`` from the exact rounding of our own inputs (0 unless the
        reference is wrong).
    """

    graph: Graph
    ours: dict[str, np.ndarray]
    lo: dict[str, np.ndarray]
    hi: dict[str, np.ndarray]
    wrong: dict[str, int]

    def steps(self, name: str) -> np.ndarray:
        """Per element, the largest ``|ours - onnxruntime|`` of value ``name`` (in its steps)."""
        y = self.ours[name].astype(np.float64)
        return np.maximum(self.hi[name] - y, y - self.lo[name])

    def row_steps(self, output: str) -> np.ndarray:
        """Per input (row), the largest possible difference of a graph output, in LSBs."""
        d = self.steps(_int_source(self.graph, output))
        return d.reshape(len(d), -1).max(axis=1) if d.ndim else d.reshape(1)

    def top1_certain(self, output: str) -> np.ndarray:
        """Per row: onnxruntime's arg-max over the last axis must equal ours."""
        src = _int_source(self.graph, output)
        y, lo, hi = (v.reshape(-1, v.shape[-1]) for v in (self.ours[src], self.lo[src],
                                                            self.hi[src]))
        k = y.argmax(axis=1)
        low = lo[np.arange(len(y)), k][:, None]
        cols = np.arange(y.shape[1])[None, :]
        # ties go to the first index: an earlier index must stay below, a later one not above
        beaten = np.where(cols < k[:, None], hi >= low, hi > low) & (cols != k[:, None])
        return ~beaten.any(axis=1)

    def outside(self, name: str, values: np.ndarray) -> int:
        """How many of ``values`` (of value ``name``, a graph output or an int tensor) lie
        outside their certified intervals."""
        src = _int_source(self.graph, name)
        q = self.graph.values[src].qtype
        t = np.asarray(values, np.float64)
        if q is not None and src != name:  # a dequantized output: back to its integers
            t = np.rint(t / q.scale) + q.zero_point
        return int(((t < self.lo[src]) | (t > self.hi[src])).sum())


def _round_interval(t_lo, t_hi, eps, zero: int, lo: int, hi: int):
    """Where ``clip(round_half_even(t') + zero, lo, hi)`` lies for ``t'`` in
    ``[t_lo - eps, t_hi + eps]``."""
    return (np.clip(np.ceil(t_lo - eps - 0.5) + zero, lo, hi).astype(np.int64),
            np.clip(np.floor(t_hi + eps + 0.5) + zero, lo, hi).astype(np.int64))


def _linear_acc(node: Node, x: np.ndarray, w: np.ndarray) -> np.ndarray:
    a = node.attrs
    if node.op == "conv":
        return reference.conv_acc(x, w, a["stride"], a["pads"], a["dilation"], a["group"])
    return np.rint(x.astype(np.float64) @ w.T.astype(np.float64)).astype(np.int64)


def _channel_shape(node: Node) -> tuple[int, ...]:
    """The shape that broadcasts a per-output-channel row over a conv or dense output."""
    return (1, -1) + (1,) * (2 if node.op == "conv" else 0)


def _exact_acc(node: Node, graph: Graph, env: Mapping[str, np.ndarray]) -> np.ndarray:
    """A conv or dense layer's int accumulator (bias included) on the reference's input."""
    w, bias, _ = _weights(node, graph)
    x = node.inputs[0]
    xi = env[x].astype(np.int64) - graph.values[x].qtype.zero_point
    return _linear_acc(node, xi, w) + bias.reshape(_channel_shape(node))


def certify(graph: Graph, feeds: Mapping[str, Any], model: Any = None) -> Certificate:
    """Bounds of onnxruntime's every value for these inputs, and a check of ours.

    Runs the reference and propagates intervals: a conv or dense layer's
    accumulator moves by ``sum_i w_ij * dx_i`` with each ``dx_i`` within its
    interval (positive and negative weights apart), onnxruntime rounds the
    resulting ``r * acc`` (half to even, within ``eps``), an add, pool, ReLU
    and reshape are monotone in their inputs.  Where no input can differ, an
    interval is one value except within ``eps`` of a rounding boundary, so the
    bound is as sharp as the inputs allow.  Each of our requantized values is
    checked the same way against its own inputs, within our ``E``
    (``Certificate.wrong``).  The same assumptions as :func:`network_bound`
    (docs/graph.md); ``model`` likewise.
    """
    env = reference.run_reference(graph, feeds, keep=True)
    integer = _integer_nodes(graph, model)
    points = {k: v.astype(np.int64) if graph.values[k].qtype is not None else v
              for k, v in env.items()}
    lo = {name: points[name] for name in graph.inputs}
    hi = dict(lo)
    wrong = {}
    for node in graph.nodes:
        # a layer's exact accumulator, once: the centre of both intervals below
        acc = _exact_acc(node, graph, env) if node.op in ("conv", "dense") else None
        lo[node.output], hi[node.output] = _interval(node, graph, env, lo, hi, integer, acc=acc)
        if node.op in ("conv", "dense", "add") or _requantizing_pool(
                node, graph.values[node.inputs[0]].qtype, graph.values[node.output].qtype):
            low, high = _interval(node, graph, env, points, points, integer, ours=True,
                                  acc=acc)
            y = points[node.output]
            wrong[node.output] = int(((y < low) | (y > high)).sum())
    return Certificate(graph, env, lo, hi, wrong)


def _interval(node: Node, graph: Graph, env: Mapping[str, np.ndarray],
              lo: Mapping[str, np.ndarray], hi: Mapping[str, np.ndarray], integer: set[str],
              ours: bool = False, acc: np.ndarray | None = None
              ) -> tuple[np.ndarray, np.ndarray]:
    """Where onnxruntime's values of ``node`` lie when its inputs lie in ``[lo, hi]``
    (``ours``: where ours must, our fixed-point error ``E`` in place of its ``eps``;
    ``acc``: a conv or dense layer's :func:`_exact_acc`, when the caller has it)."""
    vals = graph.values
    x = node.inputs[0]
    xq, yq = vals[x].qtype, vals[node.output].qtype
    a = node.attrs
    slack = 1e-9  # float64's own rounding in r * acc, far below any E or eps that matters
    if node.op in ("conv", "dense"):
        w, bias, r = _weights(node, graph)
        shape = _channel_shape(node)
        dlo, dhi = lo[x] - env[x], hi[x] - env[x]
        if acc is None:
            acc = _exact_acc(node, graph, env)
        if dlo.any() or dhi.any():
            wp, wn = np.maximum(w, 0), np.minimum(w, 0)
            acc_lo = acc + _linear_acc(node, dlo, wp) + _linear_acc(node, dhi, wn)
            acc_hi = acc + _linear_acc(node, dhi, wp) + _linear_acc(node, dlo, wn)
        else:
            acc_lo = acc_hi = acc
        r = r.reshape(shape)
        t_lo, t_hi = acc_lo * r, acc_hi * r
        t_abs = np.maximum(np.abs(t_lo), np.abs(t_hi))
        if ours:
            eps = _own_error(node) + slack
        elif node.name in integer:
            eps = _ort_error(t_abs, 0.0, 0, True)
        else:
            far = np.maximum(np.abs(lo[x] - xq.zero_point), np.abs(hi[x] - xq.zero_point))
            terms = _linear_acc(node, far, np.abs(w)) + np.abs(bias).reshape(shape)
            eps = _ort_error(t_abs, terms * r, w[0].size, False)
        return _round_interval(t_lo, t_hi, eps, yq.zero_point, a["lo"], a["hi"])
    if node.op == "add":
        ops_ = [(lo[i], hi[i], vals[i].qtype) for i in node.inputs]
        if "const" in a:
            c = a["const"].astype(np.int64)
            ops_.append((c, c, a["const_qtype"]))
        t_lo = sum((lv - q.zero_point) * (q.scale / yq.scale) for lv, _, q in ops_)
        t_hi = sum((hv - q.zero_point) * (q.scale / yq.scale) for _, hv, q in ops_)
        eps = _own_error(node) + slack if ours else _add_error(_add_magnitude(
            [(np.maximum(np.abs(lv), np.abs(hv)), q) for lv, hv, q in ops_], yq))
        return _round_interval(t_lo, t_hi, eps, yq.zero_point, a["lo"], a["hi"])
    if _requantizing_pool(node, xq, yq):
        r = xq.scale / yq.scale
        shape = lo[x].shape
        n = shape[2] * shape[3] if a.get("global") else int(np.prod(a["kernel"]))
        ends = []
        for v in (lo[x], hi[x]):
            v = (v - xq.zero_point).astype(np.float64)
            if a.get("global"):
                ends.append(v.sum(axis=(2, 3), keepdims=True) / n)
            elif node.op == "maxpool":
                ends.append(_window_reduce(node, reference._pad(v, a["pads"], -np.inf),
                                           np.maximum))
            else:
                ends.append(_window_reduce(node, reference._pad(v, a["pads"], 0.0), np.add)
                            / _pool_counts(node, shape))
        t_abs = np.maximum(np.abs(ends[0]), np.abs(ends[1])) * r
        eps = _pool_error(node, shape, xq, yq) + slack if ours else \
            _ort_error(t_abs, r * _span(xq), n, node.name in integer)
        return _round_interval(ends[0] * r, ends[1] * r, eps, yq.zero_point, yq.qmin, yq.qmax)
    if node.op in ("relu", "reshape", "flatten", "maxpool"):  # monotone, exact
        return tuple(reference.eval_node(node, graph, [v]).astype(v.dtype)
                     for v in (lo[x], hi[x]))
    if node.op == "quantize":
        if np.array_equal(lo[x], env[x]) and np.array_equal(hi[x], env[x]):
            y = env[node.output].astype(np.int64)  # the same float32 division, half to even
            return y, y
        return _round_interval(lo[x] / yq.scale, hi[x] / yq.scale,
                               2**-20 * np.maximum(np.abs(lo[x]), np.abs(hi[x])) / yq.scale,
                               yq.zero_point, yq.qmin, yq.qmax)
    if node.op == "dequantize":
        lo_y, hi_y = ((v - xq.zero_point) * xq.scale for v in (lo[x], hi[x]))
        return lo_y - 2**-22 * np.abs(lo_y), hi_y + 2**-22 * np.abs(hi_y)
    if node.op == "softmax":
        return _softmax_interval(lo[x], hi[x], a["axis"])
    # float pooling: its float32 sums may round apart; no interval here
    raise GraphError(f"node {node.name!r} ({node.op} on float tensors): no certified "
                     "interval for it")


def _softmax_interval(lo: np.ndarray, hi: np.ndarray, axis: int):
    """``softmax_i`` is increasing in ``z_i`` and decreasing in every other ``z_j``."""
    top = hi.max(axis=axis, keepdims=True)
    elo, ehi = np.exp(lo - top), np.exp(hi - top)
    slo, shi = elo.sum(axis=axis, keepdims=True), ehi.sum(axis=axis, keepdims=True)
    low = elo / (elo + shi - ehi)
    high = ehi / (ehi + slo - elo)
    return low - 2**-18, np.minimum(high + 2**-18, 1.0)


@dataclass(frozen=True)
class Assessment:
    """One graph output against onnxruntime: measured (:class:`Agreement`) and proven.

    ``bound``: :func:`network_bound` (any input), ``full`` the width of the
    output's int range (a bound that large says nothing); ``certified``,
    ``top1_certain`` and ``outside``: :func:`certify` (these inputs), the
    last the number of values outside the proven intervals (0 unless an
    assumption of the proof fails or one side computes wrongly): ours at
    every requantized tensor (against their own inputs), onnxruntime's at
    the outputs and, where it can show them, every int tensor; ``where``
    names the first such tensor.
    In the units of ``agreement.max_lsb`` (LSB) or, for a float output, of
    ``max_diff``.  ``why`` says why a bound is missing.
    """

    agreement: Agreement
    bound: float | None
    full: float | None
    certified: float | None
    top1_certain: int | None
    outside: int | None
    where: str = ""
    why: str = ""

    def describe(self) -> str:
        unit = " LSB" if self.agreement.lsb is not None else ""
        parts = []
        if self.certified is not None:
            parts.append(f"at most {self.certified:g}{unit} on these inputs (top-1 certain on "
                         f"{self.top1_certain}/{self.agreement.count})")
        if self.bound is not None and self.full is not None and self.bound >= self.full:
            parts.append(f"on any input only the full range ({self.bound:g}{unit})")
        elif self.bound is not None:
            parts.append(f"{self.bound:g}{unit} on any input")
        proven = ", ".join(parts) if parts else f"no bound ({self.why})"
        text = f"{self.agreement.describe()}; proven: {proven}"
        if self.outside:
            text += (f"; {self.outside} values OUTSIDE the proven intervals, first "
                     f"{self.where} (docs/graph.md, \"A bound for the whole network\")")
        return text

    def as_dict(self) -> dict[str, Any]:
        return dict(vars(self.agreement), max_lsb=self.agreement.max_lsb,
                    bound_any_input=self.bound, bound_full_range=self.full,
                    bound_these_inputs=self.certified, top1_certain=self.top1_certain,
                    outside_bound=self.outside, outside_first=self.where or None,
                    bound_missing=self.why or None)


def assess(graph: Graph, feeds: Mapping[str, Any], ours: Mapping[str, np.ndarray],
           theirs: Mapping[str, np.ndarray], model: Any = None,
           per_input: bool = True) -> list[Assessment]:
    """:func:`compare` each output, with :func:`network_bound` and :func:`certify` beside it
    (``model``: the ONNX model, which tells which nodes onnxruntime runs in integers).

    ``per_input=False`` leaves :func:`certify` out: it costs several runs of the int8
    reference (and onnxruntime once more), while the rest costs a fraction of one.
    """
    agreements = compare(graph, ours, theirs)
    why = ""
    try:
        static = network_bound(graph, {k: np.shape(v) for k, v in feeds.items()}, model)
    except GraphError as exc:
        static, why = None, str(exc)
    cert = None
    if per_input:
        try:
            cert = certify(graph, feeds, model)
        except GraphError as exc:
            why = str(exc)
    # values outside the intervals: ours at every requantized tensor, onnxruntime's at the
    # outputs and, where it can show them without fusing the model otherwise, every int tensor
    outside: dict[str, int] = {}
    if cert is not None:
        ints = [n.output for n in graph.nodes if graph.values[n.output].qtype is not None]
        for name, count in cert.wrong.items():
            outside[f"ours in {name!r}"] = count
        for name in graph.outputs:
            outside[f"onnxruntime's {name!r}"] = cert.outside(name, theirs[name])
        if model is not None:
            try:
                values = onnxruntime_values(model, feeds, graph, ints, theirs)
            except GraphError:
                values = {}
            for name in ints:
                if name in values:
                    outside[f"onnxruntime's {name!r}"] = cert.outside(name, values[name])
    count = sum(outside.values()) if cert is not None else None
    where = next((k for k, v in outside.items() if v), "")
    out = []
    for a in agreements:
        bound = full = certified = top1 = None
        if static is not None:
            bound, full = static.outputs[a.output], static.full.get(a.output)
            why = why or static.why.get(a.output, "")
        if cert is not None:
            certified = float(cert.row_steps(a.output).max(initial=0))
            top1 = int(cert.top1_certain(a.output).sum())
        out.append(Assessment(a, bound, full, certified, top1, count, where, why))
    return out


def layer_differences(graph: Graph, model: Any, feeds: Mapping[str, Any]
                      ) -> list[tuple[str, np.ndarray, np.ndarray]]:
    """Where the int8 reference and onnxruntime part: per int node, per input (row of the
    batch), how many of its outputs differ and by how many steps at most."""
    names = [n.output for n in graph.nodes if graph.values[n.output].qtype is not None]
    theirs = onnxruntime_values(model, feeds, graph, names)
    ours = reference.run_reference(graph, feeds, keep=True)
    out = []
    for node in graph.nodes:
        if node.output in names:
            d = np.abs(theirs[node.output].astype(np.int64) - ours[node.output].astype(np.int64))
            d = d.reshape(len(d), -1)
            out.append((node.name, (d > 0).sum(axis=1), d.max(axis=1)))
    return out

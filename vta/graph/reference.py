"""The int8 reference: NumPy execution of a :class:`~vta.graph.ir.Graph`.

This defines what every backend must produce, bit for bit (arithmetic in the
docstring of :mod:`vta.graph.ir`).  The graph runtime also runs its CPU-placed
nodes through :func:`eval_node`, so CPU nodes are the reference by construction
and VTA nodes are checked against it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from . import fixed
from .fixed import AddFixed, FixedPoint
from .ir import Graph, GraphError, Node, QType

__all__ = ["eval_node", "infer_shapes", "run_reference"]


def wrap32(x: np.ndarray) -> np.ndarray:
    """Two's complement wrap of int64 values to int32 (the accumulator's arithmetic)."""
    return ((x.astype(np.int64) + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)


def _round_half_up(x: np.ndarray) -> np.ndarray:
    return np.floor(x + 0.5).astype(np.int64)


def requantize(acc: np.ndarray, ratio: Any, zero_point: int, lo: int, hi: int,
               fp: FixedPoint | None = None, axis: int = 1) -> np.ndarray:
    """int64 accumulators -> clipped integers: ``acc * ratio`` rounded half up, + zero point.

    With fixed-point parameters ``fp`` exactly as VTA computes it
    (:func:`vta.graph.fixed.apply`; ``acc`` already holds the pre-shift's
    offset), else in float64 (a node that has none runs on the CPU).
    """
    if fp is not None:
        y = fixed.apply(acc, fp, axis)
    else:
        ratio = np.asarray(ratio, dtype=np.float64)
        shape = [1] * acc.ndim
        if ratio.size > 1:  # per channel along ``axis``
            shape[axis] = ratio.size
        y = _round_half_up(acc * ratio.reshape(shape))
    return np.clip(y + zero_point, lo, hi)


def _int(x: np.ndarray, qtype: QType) -> np.ndarray:
    return x.astype(np.int64) - qtype.zero_point


def _pad(x: np.ndarray, pads: tuple[int, int, int, int], value: float) -> np.ndarray:
    t, left, b, r = pads
    if not any(pads):
        return x
    return np.pad(x, ((0, 0), (0, 0), (t, b), (left, r)), constant_values=value)


def _windows(x: np.ndarray, kernel: tuple[int, int], stride: tuple[int, int],
             dilation: tuple[int, int] = (1, 1)):
    """Yield (r, s, view) for every kernel position: view is (N, C, OH, OW)."""
    kh, kw = kernel
    sh, sw = stride
    dh, dw = dilation
    h, w = x.shape[2:]
    oh = (h - dh * (kh - 1) - 1) // sh + 1
    ow = (w - dw * (kw - 1) - 1) // sw + 1
    for r in range(kh):
        for s in range(kw):
            y0, x0 = r * dh, s * dw
            yield r, s, x[:, :, y0:y0 + sh * (oh - 1) + 1:sh, x0:x0 + sw * (ow - 1) + 1:sw]


def conv_acc(x: np.ndarray, w: np.ndarray, stride, pads, dilation=(1, 1),
             group: int = 1) -> np.ndarray:
    """Exact int64 convolution of zero-point-free integers (float64 BLAS, exact below 2**53)."""
    xp = _pad(x.astype(np.float64), pads, 0.0)
    o, cg = w.shape[:2]
    out = None
    for g in range(group):
        xs = xp[:, g * cg:(g + 1) * cg]
        ws = w[g * (o // group):(g + 1) * (o // group)].astype(np.float64)
        cols, taps = [], []
        for r, s, view in _windows(xs, w.shape[2:], stride, dilation):
            cols.append(view)
            taps.append(ws[:, :, r, s])
        n, _, oh, ow = cols[0].shape
        # (N, OH, OW, KH*KW*C) @ (KH*KW*C, O/g)
        patches = np.stack(cols, axis=1).transpose(0, 3, 4, 1, 2).reshape(n, oh, ow, -1)
        kern = np.stack(taps, axis=0).transpose(0, 2, 1).reshape(-1, o // group)
        part = (patches @ kern).transpose(0, 3, 1, 2)
        out = part if out is None else np.concatenate([out, part], axis=1)
    return np.rint(out).astype(np.int64)


def _linear(node: Node, x: np.ndarray, xq: QType, yq: QType) -> np.ndarray:
    a = node.attrs
    w = a["weight"].astype(np.int64) - np.asarray(a["w_zero"]).reshape(
        (-1,) + (1,) * (a["weight"].ndim - 1))
    xi = _int(x, xq)
    if node.op == "conv":
        acc = conv_acc(xi, w, a["stride"], a["pads"], a["dilation"], a["group"])
    else:
        acc = np.rint(xi.astype(np.float64) @ w.T.astype(np.float64)).astype(np.int64)
    fp = a.get("fixed")
    bias = np.zeros(w.shape[0], np.int64)
    if a.get("bias") is not None:
        bias += a["bias"].astype(np.int64)
    if fp is not None:
        bias += fp.offset()
    acc = wrap32(acc + (bias.reshape(1, -1, 1, 1) if node.op == "conv" else bias))
    ratio = xq.scale * np.asarray(a["w_scale"], dtype=np.float64) / yq.scale
    return requantize(acc, ratio, yq.zero_point, a["lo"], a["hi"], fp)


def add_ints(a: np.ndarray, aq: QType, b: np.ndarray, bq: QType, yq: QType, lo: int,
             hi: int, fp: AddFixed | None = None) -> np.ndarray:
    """Quantized add: fixed point with ``fp`` (:class:`vta.graph.fixed.AddFixed`), else float64."""
    ai, bi = _int(a, aq), _int(b, bq)
    if fp is not None:
        y = fp.apply(ai, bi)
    else:
        y = _round_half_up(ai * (aq.scale / yq.scale) + bi * (bq.scale / yq.scale))
    return np.clip(y + yq.zero_point, lo, hi)


def _pool(node: Node, x: np.ndarray, xq: QType | None, yq: QType | None) -> np.ndarray:
    a = node.attrs
    if node.op == "maxpool":
        fill = xq.qmin if xq is not None else -np.inf
        xp = _pad(x, a["pads"], fill)
        out = None
        for _, _, view in _windows(xp, a["kernel"], a["stride"]):
            out = view.copy() if out is None else np.maximum(out, view)
        if xq is None or xq == yq:
            return out
        return requantize(_int(out, xq), xq.scale / yq.scale, yq.zero_point, yq.qmin,
                          yq.qmax, a.get("fixed"))
    if a.get("global"):
        total = x.astype(np.float64 if xq is None else np.int64)
        if xq is not None:
            total = total - xq.zero_point
        total = total.sum(axis=(2, 3), keepdims=True)
        count = np.full(total.shape, x.shape[2] * x.shape[3], dtype=np.float64)
    else:
        xv = x.astype(np.float64) if xq is None else _int(x, xq).astype(np.float64)
        ones = np.ones((1, 1) + x.shape[2:])
        xp, op = _pad(xv, a["pads"], 0.0), _pad(ones, a["pads"], 0.0)
        if a.get("count_include_pad"):
            op = np.ones_like(op)
        total = count = None
        for (_, _, view), (_, _, cview) in zip(_windows(xp, a["kernel"], a["stride"]),
                                               _windows(op, a["kernel"], a["stride"]), strict=True):
            total = view.copy() if total is None else total + view
            count = cview.copy() if count is None else count + cview
    if xq is None:
        return (total / count).astype(np.float32)
    sizes = np.unique(count)
    fp = fixed.pool_params(int(sizes[0]), xq, yq) if sizes.size == 1 else None
    if isinstance(fp, FixedPoint):  # one window size: the integer sum, scaled in fixed point
        return requantize(np.rint(total).astype(np.int64), None, yq.zero_point, yq.qmin,
                          yq.qmax, fp)
    return np.clip(_round_half_up(total / count * (xq.scale / yq.scale)) + yq.zero_point,
                   yq.qmin, yq.qmax)


def _reshape_target(shape: tuple[int, ...], target: tuple[int, ...]) -> tuple[int, ...]:
    out = [shape[i] if t == 0 else int(t) for i, t in enumerate(target)]
    if -1 in out:
        known = int(np.prod([d for d in out if d != -1]))
        out[out.index(-1)] = int(np.prod(shape)) // max(known, 1)
    return tuple(out)


def eval_node(node: Node, graph: Graph, inputs: list[np.ndarray]) -> np.ndarray:
    """Run one node on NumPy arrays (its inputs in order); returns its output array."""
    vals = graph.values
    qin = [vals[name].qtype for name in node.inputs]
    yq = vals[node.output].qtype
    a = node.attrs
    x = inputs[0]
    if node.op in ("conv", "dense"):
        y = _linear(node, x, qin[0], yq)
    elif node.op == "add":
        if len(inputs) > 1:
            b, bq = inputs[1], qin[1]
        else:  # a constant operand (broadcast)
            b, bq = a["const"], a["const_qtype"]
        y = add_ints(x, qin[0], b, bq, yq, a["lo"], a["hi"], a.get("fixed"))
    elif node.op in ("maxpool", "avgpool"):
        y = _pool(node, x, qin[0], yq)
    elif node.op == "relu":
        y = np.maximum(x, qin[0].zero_point if qin[0] is not None else 0)
    elif node.op == "reshape":
        y = x.reshape(_reshape_target(x.shape, a["shape"]))
    elif node.op == "flatten":
        axis = a["axis"] % max(x.ndim, 1) if a["axis"] < 0 else a["axis"]
        y = x.reshape(int(np.prod(x.shape[:axis])), -1)
    elif node.op == "quantize":
        scaled = np.rint(x.astype(np.float32) / np.float32(yq.scale)).astype(np.int64)
        y = np.clip(scaled + yq.zero_point, yq.qmin, yq.qmax)
    elif node.op == "dequantize":
        y = (x.astype(np.int32) - qin[0].zero_point).astype(np.float32) * np.float32(qin[0].scale)
    elif node.op == "softmax":
        e = np.exp(x - x.max(axis=a["axis"], keepdims=True))
        y = (e / e.sum(axis=a["axis"], keepdims=True)).astype(np.float32)
    else:  # pragma: no cover - the importer only makes the operators above
        raise GraphError(f"node {node.name!r}: no reference for operator {node.op!r}")
    return y.astype(yq.np_dtype if yq is not None else np.float32)


def check_feeds(graph: Graph, feeds: Mapping[str, Any]) -> dict[str, np.ndarray]:
    """The graph's inputs as arrays of their declared types (GraphError naming a bad one)."""
    out = {}
    for name in graph.inputs:
        if name not in feeds:
            raise GraphError(f"input {name!r} of graph {graph.name!r} was not given "
                             f"(inputs: {', '.join(graph.inputs)})")
        arr = np.asarray(feeds[name])
        value = graph.values[name]
        want = value.qtype.np_dtype if value.qtype is not None else np.dtype(np.float32)
        if arr.dtype != want:
            if value.qtype is not None or not np.issubdtype(arr.dtype, np.number):
                raise GraphError(f"input {name!r} must be a {want} array, not {arr.dtype}")
            arr = arr.astype(np.float32)
        if value.shape is not None and (len(arr.shape) != len(value.shape) or any(
                d is not None and d != e for d, e in zip(value.shape, arr.shape, strict=True))):
            shown = tuple("N" if d is None else d for d in value.shape)
            raise GraphError(f"input {name!r} must have shape {shown}, not {arr.shape}")
        out[name] = arr
    extra = set(feeds) - set(graph.inputs)
    if extra:
        raise GraphError(f"graph {graph.name!r} has no input {sorted(extra)[0]!r} "
                         f"(inputs: {', '.join(graph.inputs)})")
    return out


def run_reference(graph: Graph, feeds: Mapping[str, Any],
                  keep: bool = False) -> dict[str, np.ndarray]:
    """Run ``graph`` on NumPy alone; returns the outputs by name (every value if ``keep``)."""
    env = check_feeds(graph, feeds)
    infer_shapes(graph, {k: v.shape for k, v in env.items()})  # a one-line error for bad sizes
    for node in graph.nodes:
        env[node.output] = eval_node(node, graph, [env[i] for i in node.inputs])
    return env if keep else {name: env[name] for name in graph.outputs}


def infer_shapes(graph: Graph, input_shapes: Mapping[str, tuple[int, ...]]
                 ) -> dict[str, tuple[int, ...]]:
    """Every value's concrete shape for the given input shapes (no arithmetic run)."""
    shapes = {name: tuple(int(d) for d in s) for name, s in input_shapes.items()}
    for node in graph.nodes:
        x = shapes[node.inputs[0]]
        a = node.attrs
        if node.op in ("conv", "maxpool", "avgpool"):
            if len(x) != 4:
                raise GraphError(f"node {node.name!r} ({node.op}): its input has shape {x}, not "
                                 "4-D (N, C, H, W)")
            if node.op == "conv" and x[1] != a["weight"].shape[1] * a["group"]:
                raise GraphError(f"node {node.name!r} (conv): its input has {x[1]} channels, "
                                 f"its weights take {a['weight'].shape[1] * a['group']}")
            if a.get("global"):
                shapes[node.output] = x[:2] + (1, 1)
                continue
            kernel = a["weight"].shape[2:] if node.op == "conv" else a["kernel"]
            dil = a.get("dilation", (1, 1))
            t, left, b, r = a["pads"]
            oh = (x[2] + t + b - dil[0] * (kernel[0] - 1) - 1) // a["stride"][0] + 1
            ow = (x[3] + left + r - dil[1] * (kernel[1] - 1) - 1) // a["stride"][1] + 1
            if oh < 1 or ow < 1:
                raise GraphError(f"node {node.name!r} ({node.op}): a {kernel[0]}x{kernel[1]} "
                                 f"window does not fit its {x[2]}x{x[3]} input")
            c = a["weight"].shape[0] if node.op == "conv" else x[1]
            shapes[node.output] = (x[0], c, oh, ow)
        elif node.op == "dense":
            if len(x) != 2 or x[1] != a["weight"].shape[1]:
                raise GraphError(f"node {node.name!r} (dense): its input has shape {x}, but its "
                                 f"weights take (N, {a['weight'].shape[1]}); check the input's "
                                 "size")
            shapes[node.output] = (x[0], a["weight"].shape[0])
        elif node.op == "reshape":
            target = _reshape_target(x, a["shape"])
            if np.prod(target) != np.prod(x) or min(target, default=1) < 0:
                raise GraphError(f"node {node.name!r} (reshape): cannot reshape {x} to "
                                 f"{a['shape']}")
            shapes[node.output] = target
        elif node.op == "flatten":
            axis = a["axis"] % len(x) if a["axis"] < 0 else a["axis"]
            shapes[node.output] = (int(np.prod(x[:axis])), int(np.prod(x[axis:])))
        else:
            shapes[node.output] = x
    return shapes


def first_mismatch(graph, ours: dict, ref: dict) -> str | None:
    """None when every output equals the reference, else where the first difference is."""
    for name in graph.outputs:
        a, b = ours[name], ref[name]
        if a.shape != b.shape or a.dtype != b.dtype:
            return f"output {name!r}: {a.dtype}{a.shape} vs reference {b.dtype}{b.shape}"
        if not np.array_equal(a, b):
            idx = tuple(int(i) for i in np.argwhere(a != b)[0])
            return (f"output {name!r}: {int((a != b).sum())} of {a.size} values differ; first "
                    f"at {idx}: got {a[idx]}, reference {b[idx]}")
    return None

"""Import quantized ONNX models (QDQ and QOperator forms) into a :class:`~vta.graph.ir.Graph`.

QDQ form: ``DequantizeLinear`` -> float operator -> ``QuantizeLinear`` around
Conv, MatMul, Gemm, Add, MaxPool, AveragePool, GlobalAveragePool, Reshape and
Flatten (an optional Relu or Clip between the operator and its
``QuantizeLinear`` is fused into it); weights and biases are ``DequantizeLinear``
of int8 / int32 initializers (or float biases, quantized at import).
QOperator form: ``QLinearConv``, ``QLinearMatMul``, ``QLinearAdd`` and
``QLinearGlobalAveragePool`` (domain ``com.microsoft``), with MaxPool, Relu,
Reshape and Flatten on int8 tensors.  Anything else left in float --
``QuantizeLinear`` / ``DequantizeLinear`` at the edges, Softmax, Relu, Flatten,
Reshape, Identity, pooling -- runs on the CPU.

Everything is checked here: an operator, attribute or data type that neither
VTA nor the CPU path can run raises :class:`~vta.graph.ir.GraphError` naming
the ONNX node and the reason.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from . import fixed
from .ir import Graph, GraphError, Node, QType, Value

__all__ = ["load_onnx", "require_onnx"]

_DOMAINS = ("", "ai.onnx", "com.microsoft")
_INT_TYPES = {3: "int8", 2: "uint8"}  # TensorProto.INT8, UINT8
_FLOAT = 1  # TensorProto.FLOAT
_FUSABLE_ACT = ("Relu", "Clip")


def require_onnx():
    """Import and return the ``onnx`` package, or raise a one-line GraphError."""
    try:
        import onnx
    except ImportError:
        raise GraphError("the graph runtime needs the 'onnx' package, which is not installed "
                         "(pip install 'onnx>=1.17')") from None
    return onnx


class _Importer:
    def __init__(self, model):
        onnx = require_onnx()
        from onnx import numpy_helper

        self.nh = numpy_helper
        self.model = model
        g = model.graph
        for op in model.opset_import:
            if op.domain not in _DOMAINS:
                raise GraphError(f"model uses operator set domain {op.domain!r}, which the "
                                 f"graph runtime does not know (known: '', com.microsoft)")
        self.name = g.name or "model"
        self.consts: dict[str, np.ndarray] = {t.name: numpy_helper.to_array(t)
                                              for t in g.initializer}
        self.values: dict[str, Value] = {}
        self.nodes: list[Node] = []
        self.skip: set[int] = set()
        self.dq: dict[str, tuple[str, QType]] = {}  # float name -> (int name, qtype)
        self.qconst: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        self.materialised: set[str] = set()
        self.renames: dict[str, str] = {}  # ONNX value -> the value it is the same tensor as
        self.onnx_nodes = list(g.node)
        for i, n in enumerate(self.onnx_nodes):
            if not n.name:
                n.name = f"{n.op_type}_{i}"
        self.users: dict[str, list[int]] = {}
        for i, n in enumerate(self.onnx_nodes):
            for name in n.input:
                if name:
                    self.users.setdefault(name, []).append(i)
        self.graph_outputs = [o.name for o in g.output]
        self.inputs = []
        # int graph inputs: scale 1 until the first quantized reader gives the real one
        self.int_inputs: set[str] = set()
        for inp in g.input:
            if inp.name in self.consts:
                continue
            t = inp.type.tensor_type
            if t.elem_type not in (_FLOAT, *_INT_TYPES):
                raise GraphError(f"graph input {inp.name!r} has element type {t.elem_type}; "
                                 "the graph runtime takes float32, int8 or uint8 inputs")
            shape = tuple(d.dim_value if d.HasField("dim_value") else None
                          for d in t.shape.dim) if t.HasField("shape") else None
            self.values[inp.name] = Value(inp.name, shape)
            if t.elem_type in _INT_TYPES:
                self.values[inp.name].qtype = QType(1.0, 0, _INT_TYPES[t.elem_type])
                self.int_inputs.add(inp.name)
            self.inputs.append(inp.name)
        del onnx

    # ------------------------------------------------------------ helpers
    def fail(self, node, reason: str):
        raise GraphError(f"ONNX node {node.name!r} ({node.op_type}): {reason}")

    def attrs(self, node) -> dict[str, Any]:
        from onnx import helper

        return {a.name: helper.get_attribute_value(a) for a in node.attribute}

    def const(self, node, name: str, what: str) -> np.ndarray:
        if name in self.consts:
            return self.consts[name]
        self.fail(node, f"{what} {name!r} must be a constant (an initializer)")

    def qparams(self, node, scale_name: str, zp_name: str | None, what: str,
                per_channel: bool = False) -> tuple[np.ndarray, np.ndarray]:
        scale = np.asarray(self.const(node, scale_name, f"{what} scale"), dtype=np.float64)
        if zp_name:
            zp = np.asarray(self.const(node, zp_name, f"{what} zero point"))
        else:
            zp = np.zeros((), np.uint8)
        if not per_channel and (scale.size != 1 or zp.size != 1):
            self.fail(node, f"{what} must have one scale and zero point (per-tensor), not "
                            f"{scale.size}")
        if np.any(scale <= 0) or not np.all(np.isfinite(scale)):
            self.fail(node, f"{what} scale must be positive and finite, not {scale.ravel()[:4]}")
        return scale, zp

    def qtype(self, node, scale_name: str, zp_name: str | None, what: str) -> QType:
        scale, zp = self.qparams(node, scale_name, zp_name, what)
        dtype = str(zp.dtype)
        if dtype not in ("int8", "uint8"):
            self.fail(node, f"{what} must be int8 or uint8, not {dtype}")
        return QType(float(scale.reshape(-1)[0]), int(zp.reshape(-1)[0]), dtype)

    def set_qtype(self, node, name: str, q: QType) -> None:
        """Give value ``name`` its quantization; a second, different one is refused."""
        value = self.values.get(name)
        if value is None:
            self.values[name] = Value(name, None, q)
        elif name in self.int_inputs and value.qtype.dtype == q.dtype:
            value.qtype = q
            self.int_inputs.discard(name)
        elif value.qtype is None or value.qtype.dtype != q.dtype:
            self.fail(node, f"{name!r} must be a {q.dtype} tensor, not "
                            f"{value.qtype.dtype if value.qtype else 'float'}")
        elif not np.isclose(value.qtype.scale, q.scale, rtol=1e-6) \
                or value.qtype.zero_point != q.zero_point:
            self.fail(node, f"{name!r} is read with scale {q.scale:g} / zero point "
                            f"{q.zero_point}, but was produced with {value.qtype.describe()}")

    def int_value(self, node, name: str) -> QType:
        v = self.values.get(name)
        if v is None or v.qtype is None:
            self.fail(node, f"input {name!r} must be an int8/uint8 tensor")
        return v.qtype

    def use_float(self, node, name: str) -> str:
        """A float value for a float consumer: materialise a pending DequantizeLinear."""
        if name in self.dq and name not in self.materialised:
            src, q = self.dq[name]
            self.values[name] = Value(name)
            self.nodes.append(Node(f"{name}:dequantize", "dequantize", (src,), name,
                                   sources=(name,)))
            self.materialised.add(name)
        if name in self.qconst:
            self.fail(node, f"input {name!r} is a dequantized constant; only weights and "
                            "biases of Conv/MatMul/Gemm may be")
        if name in self.consts:
            self.fail(node, f"input {name!r} is a constant; the graph runtime runs constant "
                            "operands only as weights")
        v = self.values.get(name)
        if v is None or v.qtype is not None:
            self.fail(node, f"input {name!r} must be a float tensor here")
        return name

    def add_node(self, name: str, op: str, inputs, output: str, attrs=None, sources=(),
                 qtype: QType | None = None) -> None:
        self.nodes.append(Node(name, op, tuple(inputs), output, dict(attrs or {}),
                               tuple(sources)))
        self.values.setdefault(output, Value(output))
        self.values[output].qtype = qtype

    def single_user(self, name: str, op_types: tuple[str, ...]) -> int | None:
        users = self.users.get(name, [])
        if len(users) == 1 and name not in self.graph_outputs \
                and self.onnx_nodes[users[0]].op_type in op_types:
            return users[0]
        return None

    def epilogue(self, out_name: str):
        """Follow ``out`` through an optional Relu/Clip to a single QuantizeLinear.

        Returns (quantize node index, fused activation node index or None, float clip
        range) or None when the output is not requantized that way.
        """
        act = self.single_user(out_name, _FUSABLE_ACT)
        lo, hi = -np.inf, np.inf
        name = out_name
        if act is not None:
            a = self.onnx_nodes[act]
            if a.op_type == "Clip":
                lo, hi = self.clip_bounds(a)
            else:
                lo = 0.0
            name = a.output[0]
        q = self.single_user(name, ("QuantizeLinear",))
        if q is None:
            return None
        return q, act, (lo, hi)

    def clip_bounds(self, node) -> tuple[float, float]:
        attrs = self.attrs(node)
        lo, hi = attrs.get("min", -np.inf), attrs.get("max", np.inf)
        if len(node.input) > 1 and node.input[1]:
            lo = float(self.const(node, node.input[1], "Clip min"))
        if len(node.input) > 2 and node.input[2]:
            hi = float(self.const(node, node.input[2], "Clip max"))
        return float(lo), float(hi)

    def out_range(self, yq: QType, act_range: tuple[float, float]) -> tuple[int, int]:
        lo, hi = yq.qmin, yq.qmax
        flo, fhi = act_range
        if np.isfinite(flo):
            lo = max(lo, int(np.clip(np.rint(flo / yq.scale) + yq.zero_point, -2**31, 2**31)))
        if np.isfinite(fhi):
            hi = min(hi, int(np.clip(np.rint(fhi / yq.scale) + yq.zero_point, -2**31, 2**31)))
        return lo, hi

    # ------------------------------------------------------------- walk
    def run(self) -> Graph:
        for i, node in enumerate(self.onnx_nodes):
            if i in self.skip:
                continue
            if node.domain not in _DOMAINS:
                self.fail(node, f"operator domain {node.domain!r} is not supported")
            for k, name in enumerate(node.input):
                if name in self.renames:
                    node.input[k] = self.renames[name]
            handler = getattr(self, f"op_{node.op_type}", None)
            if handler is None:
                self.fail(node, "operator not supported by the graph runtime (neither on VTA "
                                "nor on the CPU)")
            handler(i, node)
        for name in self.graph_outputs:
            old = self.renames.get(name)
            if old is not None and old not in self.graph_outputs and old not in self.inputs:
                self._rename(old, name)
            elif old is not None:
                raise GraphError(f"graph output {name!r} is a copy of {old!r}, which is itself "
                                 "a graph input or output; the graph runtime does not copy")
        for name in self.graph_outputs:
            if name in self.dq:
                self.use_float(_Named(f"graph output {name}", "output"), name)
            if name not in self.values:
                raise GraphError(f"graph output {name!r} is not computed by any node")
        graph = Graph(self.name, self.inputs, self.graph_outputs, self.values, self.nodes,
                      {p.key: p.value for p in self.model.metadata_props})
        _fuse_int_relu(graph)
        fixed.annotate(graph)
        return graph

    # ----------------------------------------------------- quantization
    def op_QuantizeLinear(self, i, node):
        yq = self.qtype(node, node.input[1], node.input[2] if len(node.input) > 2 else None,
                        "output")
        x = node.input[0]
        if x in self.dq and x not in self.materialised and self.dq[x][1] == yq:
            # DQ -> Q with the same parameters: the int tensor itself
            self.renames[node.output[0]] = self.dq[x][0]
            return
        self.add_node(node.name, "quantize", [self.use_float(node, x)], node.output[0],
                      sources=(node.name,), qtype=yq)

    def op_DequantizeLinear(self, i, node):
        x = node.input[0]
        attrs = self.attrs(node)
        zp_name = node.input[2] if len(node.input) > 2 and node.input[2] else None
        if x in self.consts:
            scale, zp = self.qparams(node, node.input[1], zp_name, "constant", per_channel=True)
            data = self.consts[x]
            axis = int(attrs.get("axis", 1)) % max(data.ndim, 1)
            self.qconst[node.output[0]] = (data, scale.reshape(-1),
                                           np.asarray(zp).reshape(-1).astype(np.int64), axis)
            return
        q = self.qtype(node, node.input[1], zp_name, "input")
        self.set_qtype(node, x, q)
        self.dq[node.output[0]] = (x, q)

    # ------------------------------------------------------ linear ops
    def weights(self, node, name: str, kind: str, out_axis: int = 0):
        """int8 weights, scale and zero point; per-channel ones along ``out_axis``."""
        if name not in self.qconst:
            self.fail(node, f"{kind} {name!r} must be a DequantizeLinear of an int8 initializer")
        data, scale, zp, axis = self.qconst[name]
        if data.dtype != np.int8:
            self.fail(node, f"{kind} must be int8, not {data.dtype}")
        if max(scale.size, zp.size) > 1 and axis != out_axis:
            self.fail(node, f"per-channel weights must be quantized along axis {out_axis} "
                            f"(output channels), not axis {axis}")
        return data, scale, zp

    def bias(self, node, name: str | None, x_scale: float, w_scale: np.ndarray,
             n_out: int) -> np.ndarray | None:
        if not name:
            return None
        unit = x_scale * w_scale
        if name in self.qconst:
            data, scale, zp, _ = self.qconst[name]
            if data.ndim != 1 or data.dtype not in (np.int32, np.int8, np.uint8):
                self.fail(node, f"bias must be a 1-D int32, int8 or uint8 tensor, not "
                                f"{data.dtype} {data.shape}")
            real = (data.astype(np.float64) - zp) * scale
        elif name in self.consts:
            real = self.consts[name].astype(np.float64)
        else:
            self.fail(node, f"bias {name!r} must be a constant")
        if real.shape != (n_out,):
            self.fail(node, f"bias must have shape ({n_out},), not {real.shape}")
        q = np.rint(real / unit)
        if np.any(np.abs(q) >= 2**31):
            self.fail(node, "bias does not fit int32 in units of input scale x weight scale")
        return q.astype(np.int32)

    def conv_attrs(self, node, weight_shape) -> dict[str, Any]:
        attrs = self.attrs(node)
        if len(weight_shape) != 4:
            self.fail(node, f"only 2-D convolutions (4-D weights) are supported, not "
                            f"{len(weight_shape) - 2}-D")
        known = {"kernel_shape", "strides", "pads", "dilations", "group", "auto_pad"}
        for key in attrs:
            if key not in known:
                self.fail(node, f"attribute {key!r} is not supported")
        auto = attrs.get("auto_pad", b"NOTSET")
        auto = auto.decode() if isinstance(auto, bytes) else auto
        if auto not in ("NOTSET", "VALID"):
            self.fail(node, f"auto_pad={auto} is not supported (give explicit pads)")
        kshape = tuple(attrs.get("kernel_shape", weight_shape[2:]))
        if kshape != tuple(weight_shape[2:]):
            self.fail(node, f"kernel_shape {kshape} does not match the weights "
                            f"{tuple(weight_shape[2:])}")
        pads = tuple(attrs.get("pads", (0, 0, 0, 0)))
        return {"stride": tuple(attrs.get("strides", (1, 1))),
                "pads": (pads[0], pads[1], pads[2], pads[3]),
                "dilation": tuple(attrs.get("dilations", (1, 1))),
                "group": int(attrs.get("group", 1))}

    def linear(self, i, node, op: str, x: str, xq: QType, w, w_scale, w_zp, bias_name,
               attrs, out_name: str, yq: QType, act_range, sources) -> None:
        n_out = w.shape[0]
        if w_scale.size not in (1, n_out) or w_zp.size not in (1, n_out):
            self.fail(node, f"weight scale/zero point must have 1 or {n_out} values, not "
                            f"{w_scale.size}/{w_zp.size}")
        w_scale = np.broadcast_to(w_scale, (n_out,)).astype(np.float64)
        w_zp = np.broadcast_to(w_zp, (n_out,)).astype(np.int64)
        lo, hi = self.out_range(yq, act_range)
        attrs = dict(attrs, weight=w, w_scale=w_scale, w_zero=w_zp,
                     bias=self.bias(node, bias_name, xq.scale, w_scale, n_out), lo=lo, hi=hi)
        self.add_node(node.name, op, [x], out_name, attrs, sources, qtype=yq)

    def fused_epilogue(self, node, what: str):
        fused = self.epilogue(node.output[0])
        if fused is None:
            self.fail(node, f"{what} must be quantized: its output must feed (through at most "
                            "one Relu or Clip) a single QuantizeLinear")
        qi, act, rng = fused
        qnode = self.onnx_nodes[qi]
        yq = self.qtype(qnode, qnode.input[1], qnode.input[2] if len(qnode.input) > 2 else None,
                        "output")
        self.skip.add(qi)
        sources = [node.name]
        if act is not None:
            self.skip.add(act)
            sources.append(self.onnx_nodes[act].name)
        sources.append(qnode.name)
        return qnode.output[0], yq, rng, tuple(sources)

    def dq_input(self, node, name: str) -> tuple[str, QType]:
        if name not in self.dq:
            self.fail(node, f"input {name!r} must come from a DequantizeLinear (QDQ form)")
        return self.dq[name]

    def op_Conv(self, i, node):
        x, xq = self.dq_input(node, node.input[0])
        w, ws, wz = self.weights(node, node.input[1], "weight")
        attrs = self.conv_attrs(node, w.shape)
        out, yq, rng, src = self.fused_epilogue(node, "Conv")
        self.linear(i, node, "conv", x, xq, w, ws, wz, node.input[2] if len(node.input) > 2
                    else None, attrs, out, yq, rng, src)

    def op_Gemm(self, i, node):
        attrs = self.attrs(node)
        if attrs.get("alpha", 1.0) != 1.0 or attrs.get("beta", 1.0) != 1.0 \
                or attrs.get("transA", 0):
            self.fail(node, "only Gemm with alpha=1, beta=1, transA=0 is supported")
        x, xq = self.dq_input(node, node.input[0])
        trans = bool(attrs.get("transB", 0))
        w, ws, wz = self.weights(node, node.input[1], "weight", 0 if trans else 1)
        if not trans:
            w = np.ascontiguousarray(w.T)
        bias = node.input[2] if len(node.input) > 2 and node.input[2] else None
        self.dense_node(i, node, x, xq, w, ws, wz, bias, "Gemm")

    def op_MatMul(self, i, node):
        x, xq = self.dq_input(node, node.input[0])
        w, ws, wz = self.weights(node, node.input[1], "weight", 1)
        if w.ndim != 2:
            self.fail(node, f"MatMul weights must be a 2-D constant, not {w.ndim}-D")
        self.dense_node(i, node, x, xq, np.ascontiguousarray(w.T), ws, wz, None, "MatMul")

    def dense_node(self, i, node, x, xq, w, ws, wz, bias, what: str) -> None:
        """A dense layer; a following ``Add`` of a constant (the bias) is fused into it."""
        add = None if bias else self.single_user(node.output[0], ("Add",))
        if add is not None:
            other = [n for n in self.onnx_nodes[add].input if n != node.output[0]]
            if len(other) == 1 and (other[0] in self.qconst or other[0] in self.consts):
                bias = other[0]
                self.skip.add(add)
                node = _Alias(node, self.onnx_nodes[add].output[0])
        out, yq, rng, src = self.fused_epilogue(node, what)
        if add is not None and add in self.skip:
            src = (node.name, self.onnx_nodes[add].name) + src[1:]
        self.linear(i, node, "dense", x, xq, w, ws, wz, bias, {}, out, yq, rng, src)

    def op_Add(self, i, node):
        consts = [n for n in node.input if n in self.qconst]
        if len(consts) == 2:
            self.fail(node, "both operands are constants")
        attrs: dict[str, Any] = {}
        if consts:  # y = a + constant, the constant quantized on its own (ORT's QDQ bias)
            data, scale, zp, _ = self.qconst[consts[0]]
            if scale.size != 1 or zp.size != 1 or data.dtype not in (np.int8, np.uint8):
                self.fail(node, f"constant operand {consts[0]!r} must be int8/uint8 quantized "
                                "per tensor")
            attrs.update(const=data, const_qtype=QType(float(scale[0]), int(zp[0]),
                                                       str(data.dtype)))
        ins = [self.dq_input(node, n) for n in node.input if n not in consts]
        out, yq, rng, src = self.fused_epilogue(node, "Add")
        lo, hi = self.out_range(yq, rng)
        attrs.update(lo=lo, hi=hi)
        self.add_node(node.name, "add", [n for n, _ in ins], out, attrs, src, qtype=yq)

    # ----------------------------------------------------- QOperator ops
    def op_QLinearConv(self, i, node):
        ins = list(node.input) + [""] * (9 - len(node.input))
        x = ins[0]
        xq = self.qtype(node, ins[1], ins[2], "input")
        self.set_qtype(node, x, xq)
        w = self.const(node, ins[3], "weight")
        if w.dtype != np.int8:
            self.fail(node, f"weight must be int8, not {w.dtype}")
        ws, wz = self.qparams(node, ins[4], ins[5], "weight", per_channel=True)
        yq = self.qtype(node, ins[6], ins[7], "output")
        bias = None
        if ins[8]:
            bias = self.const(node, ins[8], "bias")
            if bias.dtype != np.int32:
                self.fail(node, f"bias must be int32, not {bias.dtype}")
        attrs = self.conv_attrs(node, w.shape)
        n_out = w.shape[0]
        lo, hi = yq.qmin, yq.qmax
        ws = np.broadcast_to(ws.reshape(-1), (n_out,)).astype(np.float64)
        attrs.update(weight=w, w_scale=ws,
                     w_zero=np.broadcast_to(np.asarray(wz).reshape(-1), (n_out,)).astype(
                         np.int64), bias=bias, lo=lo, hi=hi)
        if bias is not None and bias.shape != (n_out,):
            self.fail(node, f"bias must have shape ({n_out},), not {bias.shape}")
        self.add_node(node.name, "conv", [x], node.output[0], attrs, (node.name,), qtype=yq)

    def op_QLinearMatMul(self, i, node):
        a = node.input[0]
        self.set_qtype(node, a, self.qtype(node, node.input[1], node.input[2], "input A"))
        w = self.const(node, node.input[3], "input B")
        if w.dtype != np.int8 or w.ndim != 2:
            self.fail(node, f"input B must be a 2-D int8 constant, not {w.dtype} {w.shape}")
        ws, wz = self.qparams(node, node.input[4], node.input[5], "input B", per_channel=True)
        yq = self.qtype(node, node.input[6], node.input[7], "output")
        n_out = w.shape[1]
        if ws.size not in (1, n_out) or np.asarray(wz).size not in (1, n_out):
            self.fail(node, f"input B scale/zero point must have 1 or {n_out} values")
        attrs = {"weight": np.ascontiguousarray(w.T),
                 "w_scale": np.broadcast_to(ws.reshape(-1), (n_out,)).astype(np.float64),
                 "w_zero": np.broadcast_to(np.asarray(wz).reshape(-1), (n_out,)).astype(
                     np.int64),
                 "bias": None, "lo": yq.qmin, "hi": yq.qmax}
        self.add_node(node.name, "dense", [a], node.output[0], attrs, (node.name,), qtype=yq)

    def op_QGemm(self, i, node):
        ins = list(node.input) + [""] * (9 - len(node.input))
        attrs = self.attrs(node)
        if attrs.get("alpha", 1.0) != 1.0 or attrs.get("transA", 0):
            self.fail(node, "only QGemm with alpha=1 and transA=0 is supported")
        if not ins[7]:
            self.fail(node, "a QGemm with a float output (no y_scale) is not supported")
        a = ins[0]
        self.set_qtype(node, a, self.qtype(node, ins[1], ins[2], "input A"))
        w = self.const(node, ins[3], "input B")
        if w.dtype != np.int8 or w.ndim != 2:
            self.fail(node, f"input B must be a 2-D int8 constant, not {w.dtype} {w.shape}")
        ws, wz = self.qparams(node, ins[4], ins[5], "input B", per_channel=True)
        if not attrs.get("transB", 0):
            w = np.ascontiguousarray(w.T)
        yq = self.qtype(node, ins[7], ins[8], "output")
        n_out = w.shape[0]
        bias = None
        if ins[6]:
            bias = self.const(node, ins[6], "bias C")
            if bias.dtype != np.int32 or bias.shape != (n_out,):
                self.fail(node, f"bias C must be int32 of shape ({n_out},), not {bias.dtype} "
                                f"{bias.shape}")
        if ws.size not in (1, n_out) or np.asarray(wz).size not in (1, n_out):
            self.fail(node, f"input B scale/zero point must have 1 or {n_out} values")
        attrs = {"weight": w, "w_scale": np.broadcast_to(ws.reshape(-1), (n_out,)).astype(
                     np.float64),
                 "w_zero": np.broadcast_to(np.asarray(wz).reshape(-1), (n_out,)).astype(
                     np.int64),
                 "bias": bias, "lo": yq.qmin, "hi": yq.qmax}
        self.add_node(node.name, "dense", [a], node.output[0], attrs, (node.name,), qtype=yq)

    def op_QLinearAdd(self, i, node):
        ins = list(node.input) + [""] * (8 - len(node.input))
        operands = [(ins[0], ins[1], ins[2], "A"), (ins[3], ins[4], ins[5], "B")]
        consts = [op for op in operands if op[0] in self.consts]
        if len(consts) == 2:
            self.fail(node, "both operands are constants")
        yq = self.qtype(node, ins[6], ins[7], "output")
        attrs = {"lo": yq.qmin, "hi": yq.qmax}
        if consts:  # y = a + constant (e.g. a bias after QLinearMatMul)
            (name, s, z, what), = consts
            cq = self.qtype(node, s, z, f"input {what}")
            data = self.consts[name]
            if str(data.dtype) != cq.dtype:
                self.fail(node, f"constant input {what} must be {cq.dtype}, not {data.dtype}")
            attrs.update(const=data, const_qtype=cq)
            operands = [op for op in operands if op[0] not in self.consts]
        for name, s, z, what in operands:
            self.set_qtype(node, name, self.qtype(node, s, z, f"input {what}"))
        self.add_node(node.name, "add", [op[0] for op in operands], node.output[0], attrs,
                      (node.name,), qtype=yq)

    def op_QLinearGlobalAveragePool(self, i, node):
        if self.attrs(node).get("channels_last", 0):
            self.fail(node, "channels_last=1 is not supported")
        x = node.input[0]
        self.set_qtype(node, x, self.qtype(node, node.input[1], node.input[2], "input"))
        yq = self.qtype(node, node.input[3], node.input[4], "output")
        self.add_node(node.name, "avgpool", [x], node.output[0], {"global": True},
                      (node.name,), qtype=yq)

    # ------------------------------------------- int or float data movement
    def pool_attrs(self, node) -> dict[str, Any]:
        attrs = self.attrs(node)
        if attrs.get("ceil_mode", 0):
            self.fail(node, "ceil_mode=1 is not supported")
        if any(d != 1 for d in attrs.get("dilations", (1, 1))):
            self.fail(node, "dilations other than 1 are not supported")
        if attrs.get("storage_order", 0):
            self.fail(node, "storage_order=1 is not supported")
        auto = attrs.get("auto_pad", b"NOTSET")
        if (auto.decode() if isinstance(auto, bytes) else auto) not in ("NOTSET", "VALID"):
            self.fail(node, "auto_pad other than NOTSET/VALID is not supported")
        kernel = tuple(attrs["kernel_shape"])
        if len(kernel) != 2:
            self.fail(node, f"only 2-D pooling is supported, not {len(kernel)}-D")
        if len(node.output) > 1 and node.output[1]:
            self.fail(node, "the Indices output is not supported")
        pads = tuple(attrs.get("pads", (0, 0, 0, 0)))
        return {"kernel": kernel, "stride": tuple(attrs.get("strides", (1, 1))),
                "pads": pads, "count_include_pad": int(attrs.get("count_include_pad", 0))}

    def movement(self, i, node, op: str, attrs: dict, same_qtype: bool) -> None:
        """An operator on int tensors (QDQ island or int input) or on float tensors."""
        x = node.input[0]
        if x in self.dq and x not in self.materialised:  # DQ -> op -> Q: on the int tensor
            src, xq = self.dq[x]
            qi = self.single_user(node.output[0], ("QuantizeLinear",))
            if qi is not None:
                qnode = self.onnx_nodes[qi]
                yq = self.qtype(qnode, qnode.input[1],
                                qnode.input[2] if len(qnode.input) > 2 else None, "output")
                if not same_qtype or yq == xq:
                    self.skip.add(qi)
                    self.add_node(node.name, op, [src], qnode.output[0], attrs,
                                  (node.name, qnode.name), qtype=yq)
                    return
        v = self.values.get(x)
        if v is not None and v.qtype is not None and x not in self.dq:  # QOperator form
            if not same_qtype:
                self.fail(node, "an int8 input needs the QLinear form of this operator")
            self.add_node(node.name, op, [x], node.output[0], attrs, (node.name,),
                          qtype=v.qtype)
            return
        self.add_node(node.name, op, [self.use_float(node, x)], node.output[0], attrs,
                      (node.name,))

    def op_MaxPool(self, i, node):
        self.movement(i, node, "maxpool", self.pool_attrs(node), True)

    def op_AveragePool(self, i, node):
        self.movement(i, node, "avgpool", self.pool_attrs(node), False)

    def op_GlobalAveragePool(self, i, node):
        self.movement(i, node, "avgpool", {"global": True}, False)

    def op_Relu(self, i, node):
        self.movement(i, node, "relu", {}, True)

    def op_Flatten(self, i, node):
        self.movement(i, node, "flatten", {"axis": int(self.attrs(node).get("axis", 1))}, True)

    def op_Reshape(self, i, node):
        shape = self.const(node, node.input[1], "shape")
        if self.attrs(node).get("allowzero", 0):
            self.fail(node, "allowzero=1 is not supported")
        self.movement(i, node, "reshape", {"shape": tuple(int(d) for d in shape)}, True)

    def op_Identity(self, i, node):
        x = node.input[0]
        if x in self.dq and x not in self.materialised:
            self.dq[node.output[0]] = self.dq[x]
            return
        self.renames[node.output[0]] = x

    def op_Softmax(self, i, node):
        x = self.use_float(node, node.input[0])
        self.add_node(node.name, "softmax", [x], node.output[0],
                      {"axis": int(self.attrs(node).get("axis", -1))}, (node.name,))

    def op_Clip(self, i, node):
        self.fail(node, "a Clip is supported only between Conv/MatMul/Gemm/Add and their "
                        "QuantizeLinear")


    def _rename(self, old: str, new: str) -> None:
        value = self.values.pop(old)
        value.name = new
        self.values[new] = value
        for node in self.nodes:
            node.inputs = tuple(new if i == old else i for i in node.inputs)
            if node.output == old:
                node.output = new
        if old in self.dq:
            self.dq[new] = self.dq.pop(old)


class _Alias:
    """An ONNX node seen with another output (a MatMul whose bias Add is fused into it)."""

    def __init__(self, node, output: str):
        self.name, self.op_type, self.input = node.name, node.op_type, node.input
        self.output = [output]


class _Named:
    def __init__(self, name: str, op_type: str):
        self.name, self.op_type = name, op_type


def _fuse_int_relu(graph: Graph) -> None:
    """Fold an int Relu that is the only reader of a conv/dense/add output into its clamp."""
    producers = {n.output: n for n in graph.nodes}
    users = graph.consumers()
    kept = []
    renamed: dict[str, str] = {}
    for node in graph.nodes:
        node.inputs = tuple(renamed.get(i, i) for i in node.inputs)
        prev = producers.get(node.inputs[0]) if node.op == "relu" else None
        q = graph.values[node.output].qtype
        if prev is not None and q is not None and prev.op in ("conv", "dense", "add") \
                and len(users[prev.output]) == 1 and prev.output not in graph.outputs:
            prev.attrs["lo"] = max(prev.attrs["lo"], q.zero_point)
            prev.sources = prev.sources + node.sources
            renamed[node.output] = prev.output
            if node.output in graph.outputs:
                graph.outputs[graph.outputs.index(node.output)] = prev.output
            continue
        kept.append(node)
    graph.nodes[:] = kept
    for name in renamed:
        graph.values.pop(name, None)


def load_onnx(model: str | Path | bytes | Any) -> Graph:
    """Import a quantized ONNX model.

    Parameters
    ----------
    model : str, Path, bytes or onnx.ModelProto
        A file path, serialized bytes or a loaded model.

    Returns
    -------
    Graph
        The model as int8 operators (see :mod:`vta.graph.ir`).

    Raises
    ------
    GraphError
        The file cannot be read, or a node cannot run on VTA nor on the CPU
        (the message names the node and the reason).
    """
    onnx = require_onnx()
    where = "the model"
    if isinstance(model, (str, Path)):
        where = str(model)
        try:
            if Path(model).stat().st_size == 0:
                raise GraphError(f"{model}: the file is empty, not an ONNX model")
            model = onnx.load(str(model))
        except FileNotFoundError:
            raise GraphError(f"{model}: no such ONNX file") from None
        except GraphError:
            raise
        except Exception as exc:  # protobuf's DecodeError and friends
            raise GraphError(f"{model}: not a readable ONNX model ({exc})") from None
    elif isinstance(model, (bytes, bytearray)):
        try:
            model = onnx.load_from_string(bytes(model))
        except Exception as exc:
            raise GraphError(f"not a readable ONNX model ({exc})") from None
    if not model.graph.node or not model.graph.output:
        raise GraphError(f"{where}: not an ONNX model with a graph (no nodes or no outputs)")
    return _Importer(model).run()

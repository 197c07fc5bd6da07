"""Write quantized networks as ONNX, in QDQ or QOperator form (the ``onnx`` helper API).

Used by the digits training script, the ResNet-18 generator and the tests::

    b = ModelBuilder("net", (None, 1, 8, 8), input_scale=2**-4)
    y = b.conv(b.input, w_int8, w_scale=2**-7, bias=b_int32, out_scale=2**-3, pad=1,
               relu=True)
    b.output(b.dense(b.flatten(y), w2, 2**-7, None, 2**-2))
    model = b.build()              # onnx.ModelProto; onnx.save(model, "net.onnx")

Every int8 tensor has zero point 0 and the scale given where it is made.
QDQ form: ``DequantizeLinear`` -> Conv / Gemm / Add / pooling [-> Relu] ->
``QuantizeLinear``; QOperator form: ``QLinearConv``, ``QLinearMatMul``,
``QLinearAdd`` and ``QLinearGlobalAveragePool`` (com.microsoft), ``Relu`` and
``MaxPool`` on int8 tensors.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .onnx_import import require_onnx

__all__ = ["ModelBuilder"]

FORMS = ("qdq", "qoperator")


class ModelBuilder:
    """Build a quantized ONNX model one layer at a time.

    Parameters
    ----------
    name : str
        Graph name.
    input_shape : sequence of int or None
        Shape of the float32 input (``None`` for a dynamic batch).
    input_scale : float
        Scale of the int8 tensor the input is quantized to (``QuantizeLinear``).
    form : str
        ``"qdq"`` or ``"qoperator"``.
    opset : int
        Default-domain operator set (at least 14: int8 Relu in QOperator form).
    """

    def __init__(self, name: str, input_shape: Sequence[int | None], input_scale: float,
                 form: str = "qdq", opset: int = 17):
        onnx = require_onnx()
        if form not in FORMS:
            raise ValueError(f"form must be one of {', '.join(FORMS)}, not {form!r}")
        self.h = onnx.helper
        self.nh = onnx.numpy_helper
        self.tp = onnx.TensorProto
        self.name, self.form, self.opset = name, form, opset
        self.nodes: list[Any] = []
        self.inits: list[Any] = []
        self.scales: dict[str, float] = {}
        self.outputs: list[Any] = []
        self._dq: dict[str, str] = {}
        self._n = 0
        dims = ["N" if d is None else int(d) for d in input_shape]
        self.graph_inputs = [self.h.make_tensor_value_info("input", self.tp.FLOAT, dims)]
        self.input = self._quantize("input", input_scale, "input_q")

    # ------------------------------------------------------------ helpers
    def _uid(self, prefix: str) -> str:
        self._n += 1
        return f"{prefix}{self._n}"

    def _const(self, array: np.ndarray, prefix: str) -> str:
        name = self._uid(prefix)
        self.inits.append(self.nh.from_array(np.asarray(array), name))
        return name

    def _scale(self, scale: Any) -> str:
        return self._const(np.asarray(scale, dtype=np.float32), "scale")

    def _zero(self, n: int | None = None, dtype=np.int8) -> str:
        return self._const(np.zeros(() if n is None else (n,), dtype=dtype), "zp")

    def _node(self, op: str, inputs: list[str], outputs: list[str], name: str | None = None,
              domain: str = "", **attrs) -> None:
        self.nodes.append(self.h.make_node(op, inputs, outputs, name=name or self._uid(op),
                                           domain=domain, **attrs))

    def _quantize(self, x: str, scale: float, out: str | None = None) -> str:
        out = out or self._uid("q")
        self._node("QuantizeLinear", [x, self._scale(scale), self._zero()], [out])
        self.scales[out] = float(scale)
        return out

    def _float(self, x: str) -> str:
        """The float (DequantizeLinear) view of int8 tensor ``x`` (made once)."""
        if x not in self._dq:
            out = self._uid("f")
            self._node("DequantizeLinear", [x, self._scale(self.scales[x]), self._zero()], [out])
            self._dq[x] = out
        return self._dq[x]

    def _dq_const(self, data: np.ndarray, scale: Any, dtype) -> str:
        scale = np.asarray(scale, dtype=np.float32)
        zp = self._zero(None if scale.ndim == 0 else scale.size, dtype)
        out = self._uid("w")
        self._node("DequantizeLinear", [self._const(data, "c"), self._const(scale, "s"), zp],
                   [out], axis=0)
        return out

    def _finish(self, y_float: str, out_scale: float, relu: bool) -> str:
        if relu:
            r = self._uid("relu")
            self._node("Relu", [y_float], [r])
            y_float = r
        return self._quantize(y_float, out_scale)

    def _int_relu(self, x: str, relu: bool) -> str:
        if not relu:
            return x
        out = self._uid("r")
        self._node("Relu", [x], [out])
        self.scales[out] = self.scales[x]
        return out

    # ------------------------------------------------------------- layers
    def conv(self, x: str, weight: np.ndarray, w_scale: Any, bias: np.ndarray | None,
             out_scale: float, *, stride: int = 1, pad: int = 0, relu: bool = False,
             name: str | None = None) -> str:
        """int8 convolution (OIHW ``weight``, int32 ``bias`` in units of x_scale x w_scale)."""
        weight = np.asarray(weight, dtype=np.int8)
        attrs = {"strides": [stride, stride], "pads": [pad] * 4,
                 "kernel_shape": list(weight.shape[2:])}
        w_scale = np.asarray(w_scale, dtype=np.float32)
        if self.form == "qoperator":
            ins = [x, self._scale(self.scales[x]), self._zero(), self._const(weight, "w"),
                   self._const(w_scale, "ws"),
                   self._zero(None if w_scale.ndim == 0 else w_scale.size),
                   self._scale(out_scale), self._zero()]
            if bias is not None:
                ins.append(self._const(np.asarray(bias, np.int32), "b"))
            out = self._uid("y")
            self._node("QLinearConv", ins, [out], name=name, **attrs)
            self.scales[out] = float(out_scale)
            return self._int_relu(out, relu)
        ins = [self._float(x), self._dq_const(weight, w_scale, np.int8)]
        if bias is not None:
            ins.append(self._dq_const(np.asarray(bias, np.int32),
                                      np.float32(self.scales[x]) * w_scale, np.int32))
        y = self._uid("conv")
        self._node("Conv", ins, [y], name=name, **attrs)
        return self._finish(y, out_scale, relu)

    def dense(self, x: str, weight: np.ndarray, w_scale: float, bias: np.ndarray | None,
              out_scale: float, *, relu: bool = False, name: str | None = None) -> str:
        """int8 fully connected layer: ``weight`` is (out, in); QOperator form takes no bias."""
        weight = np.asarray(weight, dtype=np.int8)
        if self.form == "qoperator":
            if bias is not None:
                raise ValueError("QLinearMatMul has no bias: pass bias=None in QOperator form")
            ins = [x, self._scale(self.scales[x]), self._zero(),
                   self._const(np.ascontiguousarray(weight.T), "w"), self._scale(w_scale),
                   self._zero(), self._scale(out_scale), self._zero()]
            out = self._uid("y")
            self._node("QLinearMatMul", ins, [out], name=name)
            self.scales[out] = float(out_scale)
            return self._int_relu(out, relu)
        ins = [self._float(x), self._dq_const(weight, w_scale, np.int8)]
        if bias is not None:
            ins.append(self._dq_const(np.asarray(bias, np.int32),
                                      np.float32(self.scales[x]) * np.float32(w_scale),
                                      np.int32))
        y = self._uid("gemm")
        self._node("Gemm", ins, [y], name=name, transB=1)
        return self._finish(y, out_scale, relu)

    def add(self, a: str, b: str, out_scale: float, *, relu: bool = False,
            name: str | None = None) -> str:
        """Quantized element-wise add (a residual connection)."""
        if self.form == "qoperator":
            out = self._uid("y")
            self._node("QLinearAdd", [a, self._scale(self.scales[a]), self._zero(),
                                      b, self._scale(self.scales[b]), self._zero(),
                                      self._scale(out_scale), self._zero()], [out],
                       name=name, domain="com.microsoft")
            self.scales[out] = float(out_scale)
            return self._int_relu(out, relu)
        y = self._uid("add")
        self._node("Add", [self._float(a), self._float(b)], [y], name=name)
        return self._finish(y, out_scale, relu)

    def maxpool(self, x: str, kernel: int, stride: int, pad: int = 0) -> str:
        """Max pooling (keeps the scale)."""
        attrs = {"kernel_shape": [kernel, kernel], "strides": [stride, stride],
                 "pads": [pad] * 4}
        if self.form == "qoperator":
            out = self._uid("y")
            self._node("MaxPool", [x], [out], **attrs)
            self.scales[out] = self.scales[x]
            return out
        y = self._uid("pool")
        self._node("MaxPool", [self._float(x)], [y], **attrs)
        return self._quantize(y, self.scales[x])

    def global_avgpool(self, x: str, out_scale: float) -> str:
        """Global average pooling, requantized to ``out_scale``."""
        if self.form == "qoperator":
            out = self._uid("y")
            self._node("QLinearGlobalAveragePool", [x, self._scale(self.scales[x]), self._zero(),
                                                    self._scale(out_scale), self._zero()],
                       [out], domain="com.microsoft", channels_last=0)
            self.scales[out] = float(out_scale)
            return out
        y = self._uid("gap")
        self._node("GlobalAveragePool", [self._float(x)], [y])
        return self._quantize(y, out_scale)

    def flatten(self, x: str) -> str:
        """Flatten to (N, rest): on the int8 tensor (QOperator) or between DQ and Q (QDQ)."""
        if self.form == "qoperator":
            out = self._uid("y")
            self._node("Flatten", [x], [out], axis=1)
            self.scales[out] = self.scales[x]
            return out
        y = self._uid("flat")
        self._node("Flatten", [self._float(x)], [y], axis=1)
        return self._quantize(y, self.scales[x])

    def output(self, x: str, name: str = "logits", softmax: bool = False,
               shape: Sequence[int | str] = ("N", "classes")) -> str:
        """Dequantize ``x`` into a float graph output (optionally through Softmax)."""
        if softmax:
            self._node("Softmax", [self._float(x)], [name], axis=-1)
        else:
            self._node("DequantizeLinear", [x, self._scale(self.scales[x]), self._zero()],
                       [name])
        self.outputs.append(self.h.make_tensor_value_info(name, self.tp.FLOAT, list(shape)))
        return name

    def build(self):
        """The finished, checked ``onnx.ModelProto``."""
        onnx = require_onnx()
        graph = self.h.make_graph(self.nodes, self.name, self.graph_inputs, self.outputs,
                                  self.inits)
        opsets = [self.h.make_opsetid("", self.opset)]
        if self.form == "qoperator":
            opsets.append(self.h.make_opsetid("com.microsoft", 1))
        model = self.h.make_model(graph, opset_imports=opsets, producer_name="vta.graph")
        model.ir_version = min(model.ir_version, 9)
        if self.form == "qdq":
            onnx.checker.check_model(model)
        return model

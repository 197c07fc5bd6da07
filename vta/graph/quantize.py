"""Quantize float ONNX models for VTA with onnxruntime's ``quantize_static``.

:func:`quantize` calls onnxruntime's static quantizer with the settings VTA
runs best -- int8 symmetric weights (per tensor or per output channel),
int8 or uint8 activations with their calibrated zero points, QDQ or
QOperator form -- and, for ``scheme="pow2"``, rounds every scale up to a power
of two afterwards (weights and biases requantized to the new scales), so
each requantization is a plain shift.  Any scale runs on VTA
(:mod:`vta.graph.fixed`); ``pow2`` trades a little precision for fewer ALU
steps.

:func:`resnet_float` builds a small float ResNet-style network (random
weights, onnx.helper) for tests and benchmarks; :func:`digits_float_model` is
the repository's float digits CNN (``scripts/train_digits.py``).
"""

from __future__ import annotations

import logging
import math
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from .ir import GraphError
from .onnx_import import require_onnx

__all__ = ["pow2_scales", "quantize", "resnet_float"]


def _require_quantizer():
    try:
        from onnxruntime import quantization
    except ImportError:
        raise GraphError("vta graph quantize needs onnxruntime (pip install 'vta[ort]')") \
            from None
    return quantization


class _Calibration:
    """onnxruntime's CalibrationDataReader over the rows of one array, in batches."""

    def __init__(self, name: str, data: np.ndarray, batch: int = 32):
        self.batches = [data[i:i + batch] for i in range(0, len(data), batch)]
        self.name = name
        self.i = 0

    def get_next(self) -> dict[str, np.ndarray] | None:
        if self.i >= len(self.batches):
            return None
        self.i += 1
        return {self.name: self.batches[self.i - 1]}

    def rewind(self) -> None:
        self.i = 0


def quantize(model: Any, calib: np.ndarray, *, per_channel: bool = False,
             scheme: str = "fixed", activations: str = "uint8", form: str = "qdq"):
    """Quantize a float ONNX model (path or ModelProto) on calibration inputs ``calib``.

    Parameters
    ----------
    per_channel : bool
        One weight scale per output channel (else per tensor).
    scheme : ``"fixed"`` or ``"pow2"``
        Keep the calibrated scales (VTA requantizes in fixed point), or round
        every scale up to a power of two (QDQ form only).
    activations : ``"uint8"`` or ``"int8"``
        Activation type (asymmetric, calibrated zero points); weights are
        always int8 symmetric.
    form : ``"qdq"`` or ``"qoperator"``

    Returns
    -------
    onnx.ModelProto
    """
    onnx = require_onnx()
    q = _require_quantizer()
    if scheme not in ("fixed", "pow2"):
        raise GraphError(f"scheme must be 'fixed' or 'pow2', not {scheme!r}")
    if form not in ("qdq", "qoperator"):
        raise GraphError(f"form must be 'qdq' or 'qoperator', not {form!r}")
    if activations not in ("uint8", "int8"):
        raise GraphError(f"activations must be 'uint8' or 'int8', not {activations!r}")
    if scheme == "pow2" and form != "qdq":
        raise GraphError("--scheme pow2 rewrites QDQ models only (use --format qdq)")
    if not isinstance(model, (str, Path)):
        model = model.SerializeToString()
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "float.onnx"
        if isinstance(model, bytes):
            src.write_bytes(model)
        else:
            src.write_bytes(Path(model).read_bytes())
        loaded = onnx.load(str(src))
        inputs = [i.name for i in loaded.graph.input
                  if i.name not in {t.name for t in loaded.graph.initializer}]
        if len(inputs) != 1:
            raise GraphError(f"the model has {len(inputs)} inputs; vta graph quantize "
                             "calibrates models with one input")
        dst = Path(tmp) / "int8.onnx"
        act = q.QuantType.QUInt8 if activations == "uint8" else q.QuantType.QInt8
        root = logging.getLogger()
        level = root.level
        root.setLevel(logging.ERROR)  # the quantizer's advice on pre-processing and x64 speed
        try:
            q.quantize_static(
                str(src), str(dst), _Calibration(inputs[0], np.asarray(calib, np.float32)),
                quant_format=q.QuantFormat.QDQ if form == "qdq" else q.QuantFormat.QOperator,
                per_channel=per_channel, activation_type=act, weight_type=q.QuantType.QInt8,
                calibrate_method=q.CalibrationMethod.MinMax)
        finally:
            root.setLevel(level)
        out = onnx.load(str(dst))
    if scheme == "pow2":
        pow2_scales(out)
    return out


def pow2_scales(model) -> None:
    """Round every scale of a QDQ model up to a power of two, in place.

    Activation scales change in place (a range can only grow); constant
    int8/int32 tensors behind a ``DequantizeLinear`` (weights, biases) are
    requantized to their new scale (same real values, rounded).
    """
    from onnx import numpy_helper

    inits = {t.name: t for t in model.graph.initializer}
    scale_names = set()
    for node in model.graph.node:
        if node.op_type in ("QuantizeLinear", "DequantizeLinear") and len(node.input) > 1:
            scale_names.add(node.input[1])
    old = {n: numpy_helper.to_array(inits[n]).astype(np.float64) for n in scale_names
           if n in inits}
    new = {n: np.exp2(np.ceil(np.log2(v))).astype(np.float32) for n, v in old.items()}
    for node in model.graph.node:
        if node.op_type != "DequantizeLinear" or node.input[0] not in inits \
                or node.input[1] not in old:
            continue
        data = numpy_helper.to_array(inits[node.input[0]])
        zp = numpy_helper.to_array(inits[node.input[2]]).astype(np.int64) \
            if len(node.input) > 2 and node.input[2] in inits else np.zeros((), np.int64)
        axis = next((a.i for a in node.attribute if a.name == "axis"), 1)
        shape = [1] * data.ndim
        so, sn = old[node.input[1]], new[node.input[1]].astype(np.float64)
        if so.size > 1:
            shape[axis] = -1
            so, sn, zp = so.reshape(shape), sn.reshape(shape), zp.reshape(shape)
        info = np.iinfo(data.dtype)
        lo = -info.max if data.dtype == np.int8 else info.min  # int8 weights stay symmetric
        requant = np.clip(np.rint((data.astype(np.int64) - zp) * so / sn) + zp, lo, info.max)
        inits[node.input[0]].CopyFrom(numpy_helper.from_array(requant.astype(data.dtype),
                                                              node.input[0]))
    for n, v in new.items():
        inits[n].CopyFrom(numpy_helper.from_array(v, n))


# ------------------------------------------------------------ float models
def resnet_float(seed: int = 0, size: int = 32, classes: int = 10, width: int = 16,
                 batch: int | None = None):
    """A float ResNet-style CNN (onnx.ModelProto) with random He-initialised weights.

    ``conv 3x3 (3 -> width) + ReLU``, max pool 2x2, then four basic blocks
    (two 3x3 convolutions and a residual add each; the second and fourth
    double the width with stride 2 and a 1x1 downsample), global average
    pool, flatten and ``Gemm`` (transB=1): 11 convolutions, 4 adds, 2 pools.
    """
    onnx = require_onnx()
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(seed)
    nodes, inits = [], []
    count = [0]

    def name(prefix: str) -> str:
        count[0] += 1
        return f"{prefix}{count[0]}"

    def const(array: np.ndarray, prefix: str) -> str:
        n = name(prefix)
        inits.append(numpy_helper.from_array(array.astype(np.float32), n))
        return n

    def conv(x: str, cin: int, cout: int, k: int, stride: int, relu: bool, label: str) -> str:
        w = rng.normal(0, math.sqrt(2 / (cin * k * k)), (cout, cin, k, k))
        b = rng.normal(0, 0.05, cout)
        y = name(f"{label}_out")
        nodes.append(helper.make_node("Conv", [x, const(w, f"{label}.w"), const(b, f"{label}.b")],
                                      [y], name=label, kernel_shape=[k, k],
                                      strides=[stride, stride], pads=[k // 2] * 4))
        if relu:
            r = name(f"{label}_relu")
            nodes.append(helper.make_node("Relu", [y], [r], name=f"{label}.relu"))
            return r
        return y

    x = conv("input", 3, width, 3, 1, True, "stem")
    p = name("pool")
    nodes.append(helper.make_node("MaxPool", [x], [p], name="maxpool", kernel_shape=[2, 2],
                                  strides=[2, 2]))
    x, cin = p, width
    for i, (cout, stride) in enumerate([(width, 1), (2 * width, 2), (2 * width, 1),
                                        (4 * width, 2)], start=1):
        y = conv(x, cin, cout, 3, stride, True, f"block{i}.conv1")
        y = conv(y, cout, cout, 3, 1, False, f"block{i}.conv2")
        if stride != 1 or cin != cout:
            x = conv(x, cin, cout, 1, stride, False, f"block{i}.downsample")
        s = name("sum")
        nodes.append(helper.make_node("Add", [x, y], [s], name=f"block{i}.add"))
        r = name("act")
        nodes.append(helper.make_node("Relu", [s], [r], name=f"block{i}.relu"))
        x, cin = r, cout
    nodes.append(helper.make_node("GlobalAveragePool", [x], ["gap"], name="gap"))
    nodes.append(helper.make_node("Flatten", ["gap"], ["flat"], name="flatten", axis=1))
    w = rng.normal(0, math.sqrt(1 / cin), (classes, cin))
    nodes.append(helper.make_node("Gemm", ["flat", const(w, "fc.w"),
                                           const(rng.normal(0, 0.05, classes), "fc.b")],
                                  ["logits"], name="fc", transB=1))
    dim = "N" if batch is None else batch
    graph = helper.make_graph(
        nodes, "resnet_float",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [dim, 3, size, size])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [dim, classes])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def mlp_float(seed: int = 0, features: int = 64, hidden: int = 32, classes: int = 10):
    """A float MLP in the forms exporters write (onnx.ModelProto): ``Reshape`` of an image,
    ``MatMul`` + ``Add`` of a bias, ``Relu``, ``Gemm`` with ``transB=0``, ``Relu``, ``Flatten``,
    ``MatMul`` + ``Add``.  Input (N, 1, 8, 8) for ``features`` = 64."""
    onnx = require_onnx()
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(seed)
    inits = []

    def const(array: np.ndarray, name: str, dtype=np.float32) -> str:
        inits.append(numpy_helper.from_array(np.asarray(array).astype(dtype), name))
        return name

    def weight(rows: int, cols: int) -> np.ndarray:
        return rng.normal(0, math.sqrt(2 / rows), (rows, cols))

    nodes = [
        helper.make_node("Reshape", ["input", const([-1, features], "shape", np.int64)],
                         ["x"], name="reshape"),
        helper.make_node("MatMul", ["x", const(weight(features, hidden), "fc1.w")], ["m1"],
                         name="fc1"),
        helper.make_node("Add", ["m1", const(rng.normal(0, 0.1, hidden), "fc1.b")], ["a1"],
                         name="fc1.bias"),
        helper.make_node("Relu", ["a1"], ["r1"], name="fc1.relu"),
        helper.make_node("Gemm", ["r1", const(weight(hidden, hidden), "fc2.w"),
                                  const(rng.normal(0, 0.1, hidden), "fc2.b")], ["g2"],
                         name="fc2"),
        helper.make_node("Relu", ["g2"], ["r2"], name="fc2.relu"),
        helper.make_node("Flatten", ["r2"], ["f2"], name="flatten", axis=1),
        helper.make_node("MatMul", ["f2", const(weight(hidden, classes), "fc3.w")], ["m3"],
                         name="fc3"),
        helper.make_node("Add", ["m3", const(rng.normal(0, 0.1, classes), "fc3.b")],
                         ["logits"], name="fc3.bias"),
    ]
    graph = helper.make_graph(
        nodes, "mlp_float",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["N", 1, 8, 8])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", classes])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model

#!/usr/bin/env python3
"""Train, quantize and export the digits CNN that ``vta demo`` runs.

Data: scikit-learn's bundled ``load_digits`` (1,797 8x8 images, no download),
split 80/20 with a fixed seed.  Model (NumPy, trained here with plain
backpropagation and Adam)::

    input 1x8x8 (pixel / 16)
    conv1 3x3, 16, pad 1, ReLU             -> 16x8x8
    conv2 3x3, 32, stride 2, pad 1, ReLU   -> 32x4x4
    conv3 3x3, 32, pad 1; + conv2; ReLU    -> 32x4x4   (a residual connection)
    flatten, dense 512 -> 10               -> logits

Quantization: int8 weights and activations, zero points 0, every scale a power
of two (weights per tensor from their largest magnitude, activations from
their largest value on the training set), int32 biases; so every
requantization is a shift that VTA's ALU does.  Export: QDQ ONNX through
:class:`vta.graph.export.ModelBuilder`, written to ``vta/graph/data/digits.onnx``
with the held-out split beside it (``digits_test.npz``, the demo's images, and
256 training images for calibration); the float network as ``digits_float.onnx``
(the input of ``vta graph quantize``).

Prints the accuracy on the held-out split of the float model, the int8
reference (:func:`vta.graph.run_reference`) and onnxruntime (when installed).

Usage: ``python scripts/train_digits.py [--epochs 40] [--seed 0] [--out DIR]``
(needs the ``train`` extra: ``pip install -e '.[train]'``).
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "vta" / "graph" / "data"


# ------------------------------------------------------------ NumPy layers
def im2col(x: np.ndarray, k: int, stride: int, pad: int) -> np.ndarray:
    """(N, C, H, W) -> (N, OH, OW, C*k*k), channel-major like an OIHW weight row."""
    n, c, h, w = x.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh, ow = (h + 2 * pad - k) // stride + 1, (w + 2 * pad - k) // stride + 1
    cols = np.empty((n, c, k, k, oh, ow), x.dtype)
    for r in range(k):
        for s in range(k):
            cols[:, :, r, s] = xp[:, :, r:r + stride * oh:stride, s:s + stride * ow:stride]
    return cols.transpose(0, 4, 5, 1, 2, 3).reshape(n, oh, ow, -1)


def col2im(dcols: np.ndarray, shape, k: int, stride: int, pad: int) -> np.ndarray:
    n, c, h, w = shape
    _, oh, ow, _ = dcols.shape
    d = dcols.reshape(n, oh, ow, c, k, k).transpose(0, 3, 4, 5, 1, 2)
    dx = np.zeros((n, c, h + 2 * pad, w + 2 * pad), dcols.dtype)
    for r in range(k):
        for s in range(k):
            dx[:, :, r:r + stride * oh:stride, s:s + stride * ow:stride] += d[:, :, r, s]
    return dx[:, :, pad:pad + h, pad:pad + w]


class Conv:
    def __init__(self, rng, cin: int, cout: int, k: int = 3, stride: int = 1, pad: int = 1):
        self.w = rng.normal(0, math.sqrt(2 / (cin * k * k)), (cout, cin, k, k))
        self.b = np.zeros(cout)
        self.k, self.stride, self.pad = k, stride, pad

    def forward(self, x):
        self.shape = x.shape
        self.cols = im2col(x, self.k, self.stride, self.pad)
        y = self.cols @ self.w.reshape(self.w.shape[0], -1).T + self.b
        return y.transpose(0, 3, 1, 2)

    def backward(self, dy):
        d = dy.transpose(0, 2, 3, 1)
        self.dw = (d.reshape(-1, d.shape[-1]).T @ self.cols.reshape(-1, self.cols.shape[-1])
                   ).reshape(self.w.shape)
        self.db = d.sum(axis=(0, 1, 2))
        dcols = d @ self.w.reshape(self.w.shape[0], -1)
        return col2im(dcols, self.shape, self.k, self.stride, self.pad)

    def params(self):
        return [("w", self.w, "dw"), ("b", self.b, "db")]


class Dense:
    def __init__(self, rng, cin: int, cout: int):
        self.w = rng.normal(0, math.sqrt(1 / cin), (cout, cin))
        self.b = np.zeros(cout)

    def forward(self, x):
        self.x = x
        return x @ self.w.T + self.b

    def backward(self, dy):
        self.dw = dy.T @ self.x
        self.db = dy.sum(axis=0)
        return dy @ self.w

    def params(self):
        return [("w", self.w, "dw"), ("b", self.b, "db")]


class Net:
    def __init__(self, seed: int):
        rng = np.random.default_rng(seed)
        self.conv1 = Conv(rng, 1, 16)
        self.conv2 = Conv(rng, 16, 32, stride=2)
        self.conv3 = Conv(rng, 32, 32)
        self.fc = Dense(rng, 512, 10)
        self.layers = [self.conv1, self.conv2, self.conv3, self.fc]
        for name in ("conv1", "conv2", "conv3"):
            getattr(self, name).name = name

    def forward(self, x, keep: bool = False):
        a1 = np.maximum(self.conv1.forward(x), 0)
        a2 = np.maximum(self.conv2.forward(a1), 0)
        c3 = self.conv3.forward(a2)
        a3 = np.maximum(c3 + a2, 0)
        logits = self.fc.forward(a3.reshape(len(x), -1))
        if keep:
            self.acts = {"a1": a1, "a2": a2, "c3": c3, "a3": a3, "logits": logits}
        self.masks = (a1 > 0, a2 > 0, a3 > 0)
        return logits

    def backward(self, dlogits):
        m1, m2, m3 = self.masks
        d3 = self.fc.backward(dlogits).reshape(m3.shape) * m3
        d2 = self.conv3.backward(d3) + d3
        d1 = self.conv2.backward(d2 * m2) * m1
        self.conv1.backward(d1)


def train(net: Net, x, y, epochs: int, seed: int, lr: float = 3e-3) -> None:
    rng = np.random.default_rng(seed)
    state = {}
    t = 0
    for epoch in range(epochs):
        rate = lr * 0.5 * (1 + math.cos(math.pi * epoch / epochs))
        for idx in np.array_split(rng.permutation(len(x)), len(x) // 32):
            logits = net.forward(x[idx])
            p = np.exp(logits - logits.max(axis=1, keepdims=True))
            p /= p.sum(axis=1, keepdims=True)
            p[np.arange(len(idx)), y[idx]] -= 1
            net.backward(p / len(idx))
            t += 1
            for layer in net.layers:
                for name, param, grad_name in layer.params():
                    g = getattr(layer, grad_name) + 1e-4 * param * (name == "w")
                    m, v = state.get((id(layer), name), (0.0, 0.0))
                    m = 0.9 * m + 0.1 * g
                    v = 0.999 * v + 0.001 * g * g
                    state[(id(layer), name)] = (m, v)
                    param -= rate * (m / (1 - 0.9 ** t)) / (np.sqrt(v / (1 - 0.999 ** t)) + 1e-8)


# ------------------------------------------------------------ quantization
def pow2_scale(max_abs: float) -> float:
    """The smallest power-of-two scale with max_abs / scale <= 127."""
    return 2.0 ** math.ceil(math.log2(max(max_abs, 1e-8) / 127))


def quantize_weight(w: np.ndarray) -> tuple[np.ndarray, float]:
    scale = pow2_scale(np.abs(w).max())
    return np.clip(np.rint(w / scale), -127, 127).astype(np.int8), scale


def export(net: Net, calib: np.ndarray, form: str = "qdq"):
    """Quantize with power-of-two scales (activations calibrated on ``calib``) and build ONNX."""
    from vta.graph.export import ModelBuilder

    net.forward(calib, keep=True)
    act = {k: pow2_scale(float(np.abs(v).max())) for k, v in net.acts.items()}
    in_scale = 2.0 ** -7
    b = ModelBuilder("digits", (None, 1, 8, 8), in_scale, form=form)
    scales = {"input": in_scale}

    def conv(x, xname, layer, out, **kw):
        w, ws = quantize_weight(layer.w)
        bias = np.rint(layer.b / (scales[xname] * ws)).astype(np.int32)
        scales[out] = act[out]
        return b.conv(x, w, ws, bias, act[out], stride=layer.stride, pad=layer.pad,
                      name=layer.name, **kw)

    a1 = conv(b.input, "input", net.conv1, "a1", relu=True)
    a2 = conv(a1, "a1", net.conv2, "a2", relu=True)
    c3 = conv(a2, "a2", net.conv3, "c3")
    a3 = b.add(a2, c3, act["a3"], relu=True, name="residual")
    wf, wfs = quantize_weight(net.fc.w)
    bf = np.rint(net.fc.b / (act["a3"] * wfs)).astype(np.int32)
    logits = b.dense(b.flatten(a3), wf, wfs, bf, act["logits"], name="fc")
    b.output(logits, shape=("N", 10))
    return b.build()


def export_float(net: Net):
    """The float network as ONNX (Conv, Relu, Add, Flatten, Gemm), for onnxruntime's quantizer."""
    from onnx import helper, numpy_helper

    inits, nodes = [], []

    def const(array: np.ndarray, name: str) -> str:
        inits.append(numpy_helper.from_array(array.astype(np.float32), name))
        return name

    def conv(x: str, layer: Conv, out: str) -> str:
        nodes.append(helper.make_node(
            "Conv", [x, const(layer.w, f"{layer.name}.w"), const(layer.b, f"{layer.name}.b")],
            [out], name=layer.name, kernel_shape=[layer.k, layer.k],
            strides=[layer.stride] * 2, pads=[layer.pad] * 4))
        return out

    def relu(x: str, out: str) -> str:
        nodes.append(helper.make_node("Relu", [x], [out], name=f"{out}.relu"))
        return out

    a1 = relu(conv("input", net.conv1, "c1"), "a1")
    a2 = relu(conv(a1, net.conv2, "c2"), "a2")
    c3 = conv(a2, net.conv3, "c3")
    nodes.append(helper.make_node("Add", [a2, c3], ["s3"], name="residual"))
    a3 = relu("s3", "a3")
    return float_model("digits_float", nodes, inits, a3, net.fc)


def float_model(name: str, nodes: list, inits: list, features: str, fc: Dense):
    """The float ONNX model: ``nodes`` on ``input`` (N, 1, 8, 8), then Flatten and the dense
    layer ``fc`` (Gemm) to ``logits`` (N, 10)."""
    from onnx import TensorProto, helper, numpy_helper

    inits = inits + [numpy_helper.from_array(fc.w.astype(np.float32), "fc.w"),
                     numpy_helper.from_array(fc.b.astype(np.float32), "fc.b")]
    nodes = nodes + [helper.make_node("Flatten", [features], ["flat"], name="flatten", axis=1),
                     helper.make_node("Gemm", ["flat", "fc.w", "fc.b"], ["logits"], name="fc",
                                      transB=1)]
    graph = helper.make_graph(
        nodes, name,
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["N", 1, 8, 8])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 10])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def load_split(seed: int):
    """scikit-learn's bundled digits (uint8 0..16), split 80/20 stratified by ``seed``:
    ``(x_train, x_test, y_train, y_test)``."""
    try:
        from sklearn.datasets import load_digits
        from sklearn.model_selection import train_test_split
    except ImportError:
        raise SystemExit("scikit-learn is needed: pip install -e '.[train]'") from None
    digits = load_digits()
    return train_test_split(digits.images.astype(np.uint8), digits.target, test_size=0.2,
                            random_state=seed, stratify=digits.target)


def to_float(im: np.ndarray) -> np.ndarray:
    """Images as the float network's input: (N, 1, 8, 8) in [0, 1]."""
    return (im.astype(np.float32) / 16.0)[:, None]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--epochs", type=int, default=40)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=OUT, help="output folder")
    args = parser.parse_args()
    x_tr, x_te, y_tr, y_te = load_split(args.seed)
    import onnx

    from vta import graph

    net = Net(args.seed)
    train(net, to_float(x_tr), y_tr, args.epochs, args.seed)
    float_acc = float((net.forward(to_float(x_te)).argmax(1) == y_te).mean())
    model = export(net, to_float(x_tr))
    meta = {"float_accuracy": f"{float_acc:.4f}", "test_images": str(len(y_te)),
            "trained_by": "scripts/train_digits.py", "epochs": str(args.epochs),
            "seed": str(args.seed)}
    for key, value in meta.items():
        model.metadata_props.add(key=key, value=value)
    args.out.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(args.out / "digits.onnx"))
    float_model = export_float(net)
    for key, value in meta.items():
        float_model.metadata_props.add(key=key, value=value)
    onnx.save(float_model, str(args.out / "digits_float.onnx"))
    np.savez_compressed(args.out / "digits_test.npz", images=x_te, labels=y_te.astype(np.uint8),
                        calib=x_tr[:256])
    g = graph.load_onnx(model)
    ref = graph.run_reference(g, {"input": to_float(x_te)})["logits"]
    rows = [("float (NumPy)", float_acc), ("int8 reference", float((ref.argmax(1) == y_te).mean()))]
    try:
        import onnxruntime as ort
    except ImportError:
        rows.append(("onnxruntime", None))
    else:
        sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
        out = sess.run(None, {"input": to_float(x_te)})[0]
        rows.append(("onnxruntime", float((out.argmax(1) == y_te).mean())))
    size = (args.out / "digits.onnx").stat().st_size
    print(f"wrote {args.out / 'digits.onnx'} ({size:,} bytes) and digits_test.npz "
          f"({len(y_te)} held-out images)")
    for name, acc in rows:
        print(f"  {name:<16} {'n/a (not installed)' if acc is None else f'{acc:.2%}'}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Train the float ResNet-style digits network that the ORT-quantization measurements use.

Data: scikit-learn's bundled ``load_digits``, the same 80/20 split as
``scripts/train_digits.py`` (so its 360 held-out images are
``vta.graph.models.digits_test_set()`` and its calibration images
``digits_calibration()``).  Model (NumPy, trained with the layers, the
backpropagation and the Adam loop of ``train_digits.py``)::

    input 1x8x8 (pixel / 16)
    stem    conv 3x3, 16, pad 1, ReLU                           -> 16x8x8
    maxpool 3x3, stride 1, pad 1                                -> 16x8x8
    block1  conv 3x3 16 + ReLU, conv 3x3 16; + input; ReLU      -> 16x8x8
    block2  conv 3x3 32 stride 2 + ReLU, conv 3x3 32;
            + downsample (conv 1x1 32 stride 2); ReLU           -> 32x4x4
    block3  conv 3x3 32 + ReLU, conv 3x3 32; + input; ReLU      -> 32x4x4
    global average pool, dense 32 -> 10                         -> logits

8 convolutions, 3 residual adds, a strided convolution, max and global
average pooling and a dense layer.  The second convolution of each block
starts at a tenth of its He initialisation, so that each block starts near
the identity.  Written as float ONNX (Conv, Relu, MaxPool, Add,
GlobalAveragePool, Flatten, Gemm) to ``vta/graph/data/digits_resnet_float.onnx``
(``vta.graph.models.digits_resnet_float_model()``), the input of
onnxruntime's ``quantize_static`` in ``scripts/bench/graph_quant.py`` and the
tests.  Prints the float model's held-out accuracy (NumPy and onnxruntime).

Usage: ``python scripts/train_digits_resnet.py [--epochs 40] [--seed 0] [--out DIR]``
(needs the ``train`` extra: ``pip install -e '.[train]'``).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
from train_digits import OUT, Conv, Dense, float_model, load_split, to_float, train


class MaxPool3:
    """3x3 max pooling, stride 1, padding 1 (padding is never the maximum)."""

    def forward(self, x):
        n, c, h, w = x.shape
        xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)), constant_values=-np.inf)
        views = np.stack([xp[:, :, r:r + h, s:s + w] for r in range(3) for s in range(3)])
        self.arg = views.argmax(axis=0)
        self.shape = x.shape
        return views.max(axis=0)

    def backward(self, dy):
        n, c, h, w = self.shape
        dxp = np.zeros((n, c, h + 2, w + 2))
        for k in range(9):
            r, s = divmod(k, 3)
            dxp[:, :, r:r + h, s:s + w] += dy * (self.arg == k)
        return dxp[:, :, 1:-1, 1:-1]

    def params(self):
        return []


class ResNet:
    """The network of the module docstring: ``forward``, ``backward``, ``layers`` for ``train``."""

    BLOCKS = (("block1", 16, 16, 1), ("block2", 16, 32, 2), ("block3", 32, 32, 1))

    def __init__(self, seed: int):
        rng = np.random.default_rng(seed)
        self.convs: dict[str, Conv] = {"stem": Conv(rng, 1, 16)}
        for name, cin, cout, stride in self.BLOCKS:
            self.convs[f"{name}.conv1"] = Conv(rng, cin, cout, stride=stride)
            self.convs[f"{name}.conv2"] = Conv(rng, cout, cout)
            self.convs[f"{name}.conv2"].w *= 0.1
            if stride != 1 or cin != cout:
                self.convs[f"{name}.downsample"] = Conv(rng, cin, cout, k=1, stride=stride,
                                                        pad=0)
        for name, conv in self.convs.items():
            conv.name = name
        self.pool = MaxPool3()
        self.fc = Dense(rng, 32, 10)
        self.layers = [*self.convs.values(), self.fc]

    def forward(self, x, keep: bool = False):
        c = self.convs
        relu_masks = {}

        def relu(v, key):
            relu_masks[key] = v > 0
            return np.maximum(v, 0)

        h = self.pool.forward(relu(c["stem"].forward(x), "stem"))
        for name, *_ in self.BLOCKS:
            y = relu(c[f"{name}.conv1"].forward(h), f"{name}.conv1")
            y = c[f"{name}.conv2"].forward(y)
            skip = c[f"{name}.downsample"].forward(h) if f"{name}.downsample" in c else h
            h = relu(y + skip, name)
        self.gap_shape = h.shape
        logits = self.fc.forward(h.mean(axis=(2, 3)))
        self.masks = relu_masks
        return logits

    def backward(self, dlogits):
        c, m = self.convs, self.masks
        n, ch, hh, ww = self.gap_shape
        dh = np.broadcast_to(self.fc.backward(dlogits)[:, :, None, None] / (hh * ww),
                             self.gap_shape) * m[self.BLOCKS[-1][0]]
        for i in range(len(self.BLOCKS) - 1, -1, -1):
            name = self.BLOCKS[i][0]
            dy = c[f"{name}.conv1"].backward(
                c[f"{name}.conv2"].backward(dh) * m[f"{name}.conv1"])
            dskip = c[f"{name}.downsample"].backward(dh) if f"{name}.downsample" in c else dh
            dh = dy + dskip
            if i:
                dh = dh * m[self.BLOCKS[i - 1][0]]
        c["stem"].backward(self.pool.backward(dh) * m["stem"])


def export_float(net: ResNet):
    """The float network as ONNX, for onnxruntime's quantizer."""
    from onnx import checker, helper, numpy_helper

    inits, nodes = [], []

    def const(array: np.ndarray, name: str) -> str:
        inits.append(numpy_helper.from_array(array.astype(np.float32), name))
        return name

    def conv(x: str, name: str) -> str:
        layer = net.convs[name]
        nodes.append(helper.make_node(
            "Conv", [x, const(layer.w, f"{name}.w"), const(layer.b, f"{name}.b")], [name],
            name=name, kernel_shape=[layer.k, layer.k], strides=[layer.stride] * 2,
            pads=[layer.pad] * 4))
        return name

    def relu(x: str) -> str:
        nodes.append(helper.make_node("Relu", [x], [f"{x}.relu"], name=f"{x}.relu"))
        return f"{x}.relu"

    h = relu(conv("input", "stem"))
    nodes.append(helper.make_node("MaxPool", [h], ["maxpool"], name="maxpool",
                                  kernel_shape=[3, 3], strides=[1, 1], pads=[1, 1, 1, 1]))
    h = "maxpool"
    for name, *_ in ResNet.BLOCKS:
        y = conv(relu(conv(h, f"{name}.conv1")), f"{name}.conv2")
        skip = conv(h, f"{name}.downsample") if f"{name}.downsample" in net.convs else h
        nodes.append(helper.make_node("Add", [skip, y], [f"{name}.add"], name=f"{name}.add"))
        h = relu(f"{name}.add")
    nodes.append(helper.make_node("GlobalAveragePool", [h], ["gap"], name="gap"))
    model = float_model("digits_resnet_float", nodes, inits, "gap", net.fc)
    checker.check_model(model)
    return model


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--epochs", type=int, default=40)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=OUT, help="output folder")
    args = parser.parse_args()
    x_tr, x_te, y_tr, y_te = load_split(0)  # train_digits.py's split: the same held-out images
    import onnx

    net = ResNet(args.seed)
    train(net, to_float(x_tr), y_tr, args.epochs, args.seed)
    float_acc = float((net.forward(to_float(x_te)).argmax(1) == y_te).mean())
    model = export_float(net)
    for key, value in {"float_accuracy": f"{float_acc:.4f}", "test_images": str(len(y_te)),
                       "trained_by": "scripts/train_digits_resnet.py",
                       "epochs": str(args.epochs), "seed": str(args.seed)}.items():
        model.metadata_props.add(key=key, value=value)
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "digits_resnet_float.onnx"
    onnx.save(model, str(path))
    print(f"wrote {path} ({path.stat().st_size:,} bytes)")
    print(f"  float (NumPy)        {float_acc:.2%} on {len(y_te)} held-out images")
    try:
        import onnxruntime as ort
    except ImportError:
        return
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    out = sess.run(None, {"input": to_float(x_te)})[0]
    print(f"  float (onnxruntime)  {(out.argmax(1) == y_te).mean():.2%}")


if __name__ == "__main__":
    main()

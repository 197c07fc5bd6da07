"""Models that ship with the graph runtime: the digits CNN and a ResNet-18 generator.

* :func:`digits_model` -- the path of ``digits.onnx`` (package data, ~22 KB), a
  small CNN trained on scikit-learn's bundled handwritten digits by
  ``scripts/train_digits.py``; :func:`digits_test_set` -- its 360 held-out
  images and labels; :func:`digits_float_model` -- the float network of the same
  run (``digits_float.onnx``) and :func:`digits_calibration` -- 256 training
  images, for ``vta graph quantize``.
* :func:`digits_resnet_float_model` -- a float ResNet-style network (8
  convolutions, 3 residual adds, max and global average pooling, ~155 KB)
  trained on the same digits split by ``scripts/train_digits_resnet.py``: a
  real model for onnxruntime's quantizer.
* :func:`resnet18` -- ResNet-18 (batch 1, 3x224x224, 1000 classes) as a
  quantized ONNX graph with deterministic random int8 weights and power-of-two
  scales, generated on demand (the file would be 11 MB).
"""

from __future__ import annotations

import math
from importlib import resources
from pathlib import Path

import numpy as np

from .export import ModelBuilder

__all__ = ["digits_calibration", "digits_float_model", "digits_model",
           "digits_resnet_float_model", "digits_test_set", "resnet18"]


def _data(name: str) -> Path:
    return Path(str(resources.files("vta.graph").joinpath("data", name)))


def digits_model() -> Path:
    """Path of the committed digits network (QDQ ONNX)."""
    return _data("digits.onnx")


def digits_float_model() -> Path:
    """Path of the float digits network (the same training run; input of ``vta graph quantize``)."""
    return _data("digits_float.onnx")


def digits_resnet_float_model() -> Path:
    """Path of the float ResNet-style digits network (``scripts/train_digits_resnet.py``)."""
    return _data("digits_resnet_float.onnx")


def digits_calibration() -> np.ndarray:
    """256 training images (float32 (256, 1, 8, 8) in [0, 1]) to calibrate a quantizer."""
    with np.load(_data("digits_test.npz")) as f:
        return (f["calib"].astype(np.float32) / 16.0)[:, None]


def digits_test_set() -> tuple[np.ndarray, np.ndarray]:
    """The held-out digits: (images float32 (N, 1, 8, 8) in [0, 1], labels int (N,))."""
    with np.load(_data("digits_test.npz")) as f:
        images, labels = f["images"], f["labels"]
    return (images.astype(np.float32) / 16.0)[:, None], labels.astype(np.int64)


#: Standard deviation of uniform int8 weights, and the spread (int units) activations keep.
_W_STD = 73.9
_TARGET = 24.0


def resnet18(form: str = "qdq", seed: int = 0, size: int = 224, classes: int = 1000,
             batch: int | None = 1):
    """ResNet-18 as quantized ONNX (``onnx.ModelProto``), deterministic for a ``seed``.

    Weights are uniform int8 (as upstream's benchmarks), biases small int32,
    every scale a power of two chosen so that activations keep their spread.
    Layer names follow torchvision's: ``conv1`` (upstream's C1), then
    ``layerL.B.convN`` / ``layerL.0.downsample`` and ``layerL.B.add``, ``fc``.
    ``form`` is ``"qdq"`` or ``"qoperator"`` (whose ``fc`` has no bias:
    QLinearMatMul has none).  ``batch=None`` makes the batch dimension dynamic.
    """
    rng = np.random.default_rng(seed)
    b = ModelBuilder("resnet18", (batch, 3, size, size), 2.0 ** -5, form=form)
    # expected root-mean-square of each tensor's real values (a ReLU's output counted as
    # 1/sqrt(2) of its input), from which every scale is chosen
    real = {b.input: 1.0}

    def pow2(v: float) -> float:
        return 2.0 ** round(math.log2(v))

    def weights(shape: tuple[int, ...], fan_in: int) -> tuple[np.ndarray, float, float]:
        w_scale = 1 / pow2(_W_STD * math.sqrt(fan_in))  # real weights ~ 1/sqrt(fan_in)
        return (rng.integers(-128, 128, shape, dtype=np.int8), w_scale,
                _W_STD * w_scale * math.sqrt(fan_in))

    def bias(x: str, w_scale: float, out_scale: float, n: int) -> np.ndarray:
        unit = out_scale / (b.scales[x] * w_scale)  # one output step, in bias units
        return rng.integers(-unit, unit, n).astype(np.int32)

    def conv(x: str, cin: int, cout: int, k: int, stride: int, pad: int, relu: bool,
             name: str) -> str:
        w, w_scale, gain = weights((cout, cin, k, k), cin * k * k)
        out = gain * real[x]
        out_scale = pow2(out / _TARGET)
        y = b.conv(x, w, w_scale, bias(x, w_scale, out_scale, cout), out_scale, stride=stride,
                   pad=pad, relu=relu, name=name)
        real[y] = out / (math.sqrt(2) if relu else 1)
        return y

    x = conv(b.input, 3, 64, 7, 2, 3, True, "conv1")
    pooled = b.maxpool(x, 3, 2, 1)
    real[pooled] = real[x] * 1.5
    x, cin = pooled, 64
    for layer, cout in enumerate((64, 128, 256, 512), start=1):
        for block in range(2):
            stride = 2 if layer > 1 and block == 0 else 1
            prefix = f"layer{layer}.{block}"
            y = conv(x, cin, cout, 3, stride, 1, True, f"{prefix}.conv1")
            y = conv(y, cout, cout, 3, 1, 1, False, f"{prefix}.conv2")
            if stride != 1 or cin != cout:
                x = conv(x, cin, cout, 1, stride, 0, False, f"{prefix}.downsample")
            total = math.hypot(real[x], real[y])
            out = b.add(x, y, pow2(total / _TARGET), relu=True, name=f"{prefix}.add")
            real[out] = total / math.sqrt(2)
            x, cin = out, cout
    gap = b.global_avgpool(x, pow2(real[x] / _TARGET))
    real[gap] = real[x]  # the mean of ReLU outputs: about their root-mean-square
    x = b.flatten(gap)
    real[x] = real[gap]
    w, w_scale, gain = weights((classes, 512), 512)
    out_scale = pow2(gain * real[x] / _TARGET)
    x = b.dense(x, w, w_scale, None if form == "qoperator" else
                bias(x, w_scale, out_scale, classes), out_scale, name="fc")
    b.output(x, shape=("N" if batch is None else batch, classes))
    return b.build()

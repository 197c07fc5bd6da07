"""Real int8 models: onnxruntime's quantize_static output on VTA, and the fixed-point arithmetic.

The models come straight out of onnxruntime's quantizer (QDQ and QOperator,
per tensor and per channel, uint8 and int8 activations) from float networks:
the repository's digits CNN and a ResNet-style network built here.  Every
run is checked bit for bit against the int8 reference, and the reference
against onnxruntime; the fixed-point arithmetic against float64.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import vta
from vta import graph
from vta.graph import fixed, judge
from vta.graph.executor import Executor

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime.quantization")

from vta.graph.models import (  # noqa: E402
    digits_calibration,
    digits_float_model,
    digits_resnet_float_model,
    digits_test_set,
)
from vta.graph.quantize import mlp_float, quantize, resnet_float  # noqa: E402

_VTA_OPS = ("conv", "dense", "add", "maxpool", "avgpool")


# ------------------------------------------------------- fixed point vs float64
def _check_fixed(fp: fixed.FixedPoint, ratio: np.ndarray, accs: np.ndarray, span: int) -> None:
    """Every accumulator: |fixed - floor(acc*r + 1/2)| <= 1, and only where acc*r + 1/2
    lies within E of an integer; outside the output span both saturate."""
    y = fixed.apply(accs + fp.offset(), fp)
    exact = accs * ratio  # float64: exact enough (|acc| < 2**31, 53-bit mantissa)
    lo = np.floor(exact + 0.5 - fp.error - 1e-9)
    hi = np.floor(exact + 0.5 + fp.error + 1e-9)
    yc, loc, hic = (np.clip(v, -span - 1, span + 1) for v in (y, lo, hi))
    assert np.all((yc >= loc) & (yc <= hic))
    assert np.all(np.abs(yc - np.clip(np.floor(exact + 0.5), -span - 1, span + 1)) <= 1)
    # the proof: no int32 overflow anywhere on the way
    a = (accs + fp.offset()) >> fp.pre
    if fp.clamp:
        a = np.clip(a, -fp.clamp, fp.clamp)
    assert np.abs(a * fp.mult).max() <= fixed.INT32_MAX


@pytest.mark.parametrize("per_channel", [False, True])
def test_fixed_point_against_float64_over_random_scales_and_extremes(per_channel):
    rng = np.random.default_rng(7)
    clamped = 0
    for _ in range(150):
        n = 3 if per_channel else 1
        ratio = np.exp(rng.uniform(math.log(1e-7), math.log(8), n))
        bound = np.exp(rng.uniform(math.log(10), math.log(2**31 - 2**16), n)).astype(np.int64)
        span = int(rng.choice([127, 255]))
        fp = fixed.choose(ratio, bound, span, per_channel)
        if isinstance(fp, str):  # only for ratios whose every output saturates anyway
            assert "too large" in fp and ratio.max() * 2**15 > 2**31 / bound.max()
            continue
        assert fp.error < 0.5 and fp.rows == (per_channel and n > 1)
        clamped += bool(fp.clamp)
        accs = np.concatenate([rng.integers(-bound.min(), bound.min() + 1, 4000),
                               [0, 1, -1, bound.min(), -bound.min()]])[:, None]
        edge = np.array([[b, -b] for b in bound]).T  # each channel's own extremes
        _check_fixed(fp, ratio, np.concatenate([np.repeat(accs, n, 1), edge]), span)
    assert clamped  # the clamped form was exercised


def test_fixed_point_power_of_two_is_one_rounding_shift_and_ties_round_up():
    fp = fixed.choose(np.array([2.0**-9]), np.array([2**30]), 127, False)
    assert (int(fp.pre[0]), int(fp.mult[0]), int(fp.shift[0]), fp.clamp, fp.error) == \
        (0, 1, 9, 0, 0.0)
    acc = np.array([256, 255, -256, -257, 2**30, -(2**30)])
    assert fixed.apply(acc, fp).tolist() == [1, 0, 0, -1, 2**21, -(2**21)]


def test_fixed_point_overflow_and_precision_refusals():
    assert "beyond int32" in fixed.choose(np.array([0.1]), np.array([2**31]), 127, False)
    assert "too large" in fixed.choose(np.array([70000.0]), np.array([2**20]), 127, False)
    assert fixed.round_shift(np.array([5, -5, 4, -4, 7]), 1).tolist() == [3, -2, 2, -2, 4]


def test_quantized_add_fixed_point_against_float64():
    rng = np.random.default_rng(3)
    for _ in range(200):
        ra, rb = np.exp(rng.uniform(math.log(1e-3), math.log(16), 2))
        fp = fixed.choose_add(ra, rb)
        a = rng.integers(-255, 256, 3000)
        b = rng.integers(-255, 256, 3000)
        exact = a * ra + b * rb
        y = fp.apply(a, b)
        assert np.all(y >= np.floor(exact + 0.5 - fp.error - 1e-9))
        assert np.all(y <= np.floor(exact + 0.5 + fp.error + 1e-9))
        assert max(fp.mult_a, fp.mult_b) <= fixed.IMM_MAX and fp.error < 0.5


# ------------------------------------------------------------ quantized models
_CACHE: dict = {}


def _quantized(which: str, **kw):
    key = (which, tuple(sorted(kw.items())))
    if key not in _CACHE:
        if which == "digits":
            _CACHE[key] = quantize(digits_float_model(), digits_calibration(), **kw)
        elif which == "digits-resnet":
            _CACHE[key] = quantize(digits_resnet_float_model(), digits_calibration(), **kw)
        elif which == "resnet":
            calib = np.random.default_rng(0).normal(size=(32, 3, 32, 32)).astype(np.float32)
            _CACHE[key] = quantize(resnet_float(), calib, **kw)
        else:
            calib = np.random.default_rng(0).normal(size=(64, 1, 8, 8)).astype(np.float32)
            _CACHE[key] = quantize(mlp_float(), calib, **kw)
    return _CACHE[key]


def _run(model, x, dev):
    g = graph.load_onnx(model)
    with Executor(g, dev) as ex:
        out = ex.run({"input": x})
        report = ex.report()
    ref = graph.run_reference(g, {"input": x})
    assert np.array_equal(out["logits"], ref["logits"])  # bit for bit
    macs = sum(n.macs for n in report.nodes)
    assert sum(n.macs for n in report.vta_nodes) == macs > 0  # every MAC on VTA
    for n in report.nodes:  # every conv, dense, add and pool on VTA
        assert n.placement == "vta" or n.op not in _VTA_OPS, (n.name, n.reason)
    (agreement,) = judge.compare(g, ref, judge.run_onnxruntime(model, {"input": x}))
    return g, ref, report, agreement


_FORMS = [dict(form=f, per_channel=pc, activations=act)
          for f in ("qdq", "qoperator") for pc in (False, True) for act in ("uint8", "int8")]


@pytest.mark.parametrize("kw", _FORMS, ids=lambda kw: "-".join(str(v) for v in kw.values()))
def test_ort_quantized_digits_on_vta_agree_with_onnxruntime(kw):
    x, labels = digits_test_set()
    with vta.open_device("golden") as dev:
        g, ref, report, agreement = _run(_quantized("digits", **kw), x, dev)
    assert agreement.top1_equal == agreement.count == 360
    assert agreement.max_lsb <= 1 + 1e-4  # one requantization step at most
    assert (ref["logits"].argmax(1) == labels).mean() > 0.96
    convs = [n for n in report.nodes if n.op == "conv"]
    assert len(convs) == 3 and all("bias" in n.epilogue for n in convs)


@pytest.mark.parametrize("kw", [_FORMS[0], _FORMS[7], _FORMS[2]],
                         ids=lambda kw: "-".join(str(v) for v in kw.values()))
def test_ort_quantized_resnet_style_network_on_vta(kw):
    x = np.random.default_rng(5).normal(size=(8, 3, 32, 32)).astype(np.float32)
    with vta.open_device("golden") as dev:
        g, ref, report, agreement = _run(_quantized("resnet", **kw), x, dev)
    ops = [n.op for n in report.vta_nodes]
    assert ops.count("conv") == 11 and ops.count("add") == 4
    assert "maxpool" in ops and "avgpool" in ops and "dense" in ops
    assert agreement.top1_equal >= 7 and agreement.max_lsb <= 8  # 13 layers of rounding


@pytest.mark.parametrize("kw", [_FORMS[0], _FORMS[7]],
                         ids=lambda kw: "-".join(str(v) for v in kw.values()))
def test_ort_quantized_trained_resnet_style_digits_network_on_vta(kw):
    """The trained float ResNet-style network (scripts/train_digits_resnet.py) through
    quantize_static: all of it on VTA, and onnxruntime's top-1 on every held-out image."""
    x, labels = digits_test_set()
    with vta.open_device("golden") as dev:
        g, ref, report, agreement = _run(_quantized("digits-resnet", **kw), x, dev)
    ops = [n.op for n in report.vta_nodes]
    assert ops.count("conv") == 8 and ops.count("add") == 3
    assert "maxpool" in ops and "avgpool" in ops and "dense" in ops
    assert agreement.top1_equal == agreement.count == 360
    assert agreement.max_lsb <= 2 + 1e-4  # measured: 1 per tensor, 2 per channel
    float_logits = judge.run_onnxruntime(digits_resnet_float_model(), {"input": x})["logits"]
    assert (float_logits.argmax(1) == labels).mean() > 0.97  # it is trained
    assert (ref["logits"].argmax(1) == labels).mean() > 0.97


# ------------------------------------------------- the bound on the distance from onnxruntime
def _ort_int_values(model, g, x):
    names = [n.output for n in g.nodes if g.values[n.output].qtype is not None]
    ours = graph.run_reference(g, {"input": x}, keep=True)
    return names, ours, judge.onnxruntime_values(model, {"input": x}, g, names)


def _initializer(model, name):
    return next(onnx.numpy_helper.to_array(t).astype(np.float64)
                for t in model.graph.initializer if t.name == name)


def test_network_bound_is_the_documented_formula_and_holds_at_every_layer():
    """network_bound against the formula of docs/graph.md from the ONNX file's own
    initializers, and onnxruntime's every intermediate int tensor within it."""
    kw = dict(form="qoperator", per_channel=False, activations="uint8")
    model = _quantized("digits-resnet", **kw)
    g = graph.load_onnx(model)
    x, _ = digits_test_set()
    nb = judge.network_bound(g, {"input": x.shape}, model)
    # block1.conv1: r * max_j sum_i |w_ji| over the QLinearConv's own scales and weights
    conv = next(n for n in model.graph.node if n.name == "block1.conv1_quant")
    xs, ws, ys = (_initializer(model, conv.input[i]) for i in (1, 4, 6))
    w = _initializer(model, conv.input[3])
    gain = float((xs * ws / ys * np.abs(w).reshape(len(w), -1).sum(axis=1)).max())
    b_in = nb.layer("maxpool").bound
    layer = nb.layer("block1.conv1_quant")
    assert nb.layer("stem_quant").bound == b_in == 1  # one rounding step after exact input
    assert layer.gain[0] == pytest.approx(gain, rel=1e-9) and 0 < layer.own < 0.05
    assert layer.bound == math.floor(gain * b_in + 1 + layer.own)
    full = nb.full["logits"]
    assert full == 255 and all(lb.bound <= full for lb in nb.layers)
    # measured: no int tensor of onnxruntime is further from ours than its bound
    names, ours, theirs = _ort_int_values(model, g, x)
    bounded = 0
    for node in g.nodes:
        if node.output in names:
            d = np.abs(ours[node.output].astype(np.int64) - theirs[node.output]).max()
            assert d <= nb.layer(node.name).bound, node.name
            bounded += nb.layer(node.name).bound < full
    assert bounded >= 4  # the first layers' bounds say something


@pytest.mark.parametrize("which,kw", [
    ("digits-resnet", _FORMS[4]), ("digits-resnet", _FORMS[6]), ("resnet", _FORMS[5])],
    ids=["trained-qoperator-tensor-uint8", "trained-qoperator-channel-uint8",
         "random-qoperator-tensor-int8"])
def test_certified_intervals_hold_onnxruntime_at_every_layer(which, kw):
    """certify: onnxruntime's every int tensor, and ours, within the intervals proven for
    these inputs; the measured logit difference within the certified bound."""
    model = _quantized(which, **kw)
    g = graph.load_onnx(model)
    x = digits_test_set()[0][:120] if which == "digits-resnet" else \
        np.random.default_rng(5).normal(size=(16, 3, 32, 32)).astype(np.float32)
    cert = judge.certify(g, {"input": x}, model)
    names, ours, theirs = _ort_int_values(model, g, x)
    assert len(names) >= 14
    for name in names:
        assert np.array_equal(cert.ours[name], ours[name])
        inside = (theirs[name] >= cert.lo[name]) & (theirs[name] <= cert.hi[name])
        assert inside.all(), (name, int((~inside).sum()))
    assert len(cert.wrong) >= 12 and not any(cert.wrong.values())  # ours: each layer right
    (a,) = judge.assess(g, {"input": x}, ours, theirs, model)
    assert a.outside == 0 and a.agreement.max_lsb <= a.certified + 1e-4
    assert a.top1_certain <= a.agreement.top1_equal
    assert 0 < a.certified < 255  # says something, and is not a point (ties exist)


@pytest.mark.parametrize("plant", ["round up", "truncate"])
def test_a_planted_rounding_error_in_the_reference_is_caught(monkeypatch, plant):
    """The reference rounds one step off (up for half of all values, or down by
    truncation): its values fall outside the certified intervals, and assess says so."""
    model = _quantized("digits-resnet", form="qoperator", per_channel=True, activations="int8")
    g = graph.load_onnx(model)
    x = digits_test_set()[0][:60]
    theirs = judge.run_onnxruntime(model, {"input": x})
    (clean,) = judge.assess(g, {"input": x}, graph.run_reference(g, {"input": x}), theirs,
                            model)
    assert clean.outside == 0
    good = fixed.round_shift

    def planted(v, s):  # "round up": floor(v / 2**s + 1); "truncate": floor(v / 2**s)
        v, s = np.asarray(v, dtype=np.int64), np.asarray(s, dtype=np.int64)
        if plant == "round up":
            return good(v + np.where(s > 0, 1 << np.maximum(s - 1, 0), 0), s)
        return v >> s

    monkeypatch.setattr(fixed, "round_shift", planted)
    ours = graph.run_reference(g, {"input": x})
    (a,) = judge.assess(g, {"input": x}, ours, theirs, model)
    assert a.outside > 0 and a.where == "ours in 'stem_quantized'"  # the first layer already
    assert "OUTSIDE the proven intervals, first ours in 'stem_quantized'" in a.describe()


def test_onnxruntime_outside_its_proven_interval_is_reported():
    """A logit of onnxruntime moved by 2 LSB (a kernel that computes otherwise): outside."""
    model = _quantized("digits-resnet", form="qdq", per_channel=False, activations="int8")
    g = graph.load_onnx(model)
    x = digits_test_set()[0][:30]
    theirs = judge.run_onnxruntime(model, {"input": x})
    ours = graph.run_reference(g, {"input": x})
    cert = judge.certify(g, {"input": x}, model)
    row = int(np.argmin(cert.row_steps("logits")))  # the sharpest row
    assert cert.row_steps("logits")[row] <= 1
    moved = theirs["logits"].copy()
    moved[row, 3] += 2 * judge.output_lsb(g, "logits")
    (a,) = judge.assess(g, {"input": x}, ours, {"logits": moved}, model)
    assert (a.outside, a.where) == (1, "onnxruntime's 'logits'")


@pytest.mark.parametrize("kw", [_FORMS[1], _FORMS[6]],
                         ids=lambda kw: "-".join(str(v) for v in kw.values()))
def test_ort_quantized_matmul_add_gemm_forms(kw):
    x = np.random.default_rng(2).normal(size=(16, 1, 8, 8)).astype(np.float32)
    with vta.open_device("golden") as dev:
        g, ref, report, agreement = _run(_quantized("mlp", **kw), x, dev)
    assert [n.op for n in report.vta_nodes] == ["dense", "add", "dense", "dense", "add"]
    assert agreement.top1_equal == 16 and agreement.max_lsb <= 1 + 1e-4


def test_pow2_scheme_makes_every_requantization_a_shift():
    model = _quantized("digits", form="qdq", per_channel=True, activations="uint8",
                       scheme="pow2")
    g = graph.load_onnx(model)
    for n in g.nodes:
        fp = n.attrs.get("fixed")
        if isinstance(fp, fixed.FixedPoint):
            assert np.all(fp.mult == 1) and not fp.pre.any() and fp.error == 0
    x, labels = digits_test_set()
    with vta.open_device("golden") as dev:
        _, ref, _, agreement = _run(model, x, dev)
    assert (ref["logits"].argmax(1) == labels).mean() > 0.95
    # weights keep their real values: within half a (new, power-of-two) step of the calibrated
    fixed_model = _quantized("digits", form="qdq", per_channel=True, activations="uint8")
    for name in ("conv2", "fc"):
        a, b = (next(n for n in graph.load_onnx(m).nodes if n.name.startswith(name))
                for m in (model, fixed_model))
        real = [n.attrs["weight"] * n.attrs["w_scale"].reshape((-1,) + (1,) * (
            n.attrs["weight"].ndim - 1)) for n in (a, b)]
        step = a.attrs["w_scale"].reshape((-1,) + (1,) * (a.attrs["weight"].ndim - 1))
        assert np.all(np.abs(real[0] - real[1]) <= step / 2 + 1e-9)
        assert np.all(np.log2(a.attrs["w_scale"]) == np.round(np.log2(a.attrs["w_scale"])))


def test_matmul_then_constant_add_bias_fuses_into_the_dense_layer():
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(4)
    w = rng.integers(-127, 128, (24, 10)).astype(np.int8)
    bias = rng.integers(-3000, 3000, 10).astype(np.int32)
    xs, ws, ys = 0.02, 0.003, 0.05
    inits = [numpy_helper.from_array(v, n) for n, v in [
        ("w", w), ("ws", np.float32(ws)), ("b", bias), ("bs", np.float32(xs * ws)),
        ("xs", np.float32(xs)), ("xz", np.uint8(128)), ("ys", np.float32(ys)),
        ("yz", np.uint8(100))]]
    nodes = [helper.make_node("QuantizeLinear", ["input", "xs", "xz"], ["xq"]),
             helper.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xf"]),
             helper.make_node("DequantizeLinear", ["w", "ws"], ["wf"]),
             helper.make_node("DequantizeLinear", ["b", "bs"], ["bf"]),
             helper.make_node("MatMul", ["xf", "wf"], ["m"], name="mm"),
             helper.make_node("Add", ["m", "bf"], ["a"], name="bias_add"),
             helper.make_node("QuantizeLinear", ["a", "ys", "yz"], ["yq"]),
             helper.make_node("DequantizeLinear", ["yq", "ys", "yz"], ["logits"])]
    model = helper.make_model(helper.make_graph(
        nodes, "mm", [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["N", 24])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 10])], inits),
        opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    g = graph.load_onnx(model)
    (dense,) = [n for n in g.nodes if n.op == "dense"]
    assert dense.sources[:2] == ("mm", "bias_add") and np.array_equal(dense.attrs["bias"], bias)
    x = rng.normal(size=(5, 24)).astype(np.float32)
    with vta.open_device("golden") as dev, Executor(g, dev) as ex:
        out = ex.run({"input": x})
    assert np.array_equal(out["logits"], graph.run_reference(g, {"input": x})["logits"])
    (agreement,) = judge.compare(g, out, judge.run_onnxruntime(model, {"input": x}))
    assert agreement.max_lsb <= 1 + 1e-4


@pytest.mark.sim
@pytest.mark.parametrize("which,kw,count,vta_nodes", [
    ("digits", dict(form="qoperator", per_channel=True, activations="uint8"), 12, 5),
    ("digits-resnet", dict(form="qdq", per_channel=True, activations="int8"), 16, 14)],
    ids=["digits", "trained-resnet-style"])
def test_ort_quantized_models_bit_exact_on_verilator(which, kw, count, vta_nodes):
    x, _ = digits_test_set()
    with vta.open_device("verilator") as dev:
        g, ref, report, agreement = _run(_quantized(which, **kw), x[:count], dev)
    assert report.cycles > 0 and all(n.cycles > 0 for n in report.vta_nodes)
    assert len(report.vta_nodes) == vta_nodes and agreement.top1_equal == count


def test_graph_run_reports_the_proven_bound_beside_the_measured_difference(tmp_path):
    """The bound for any input always; with --bound, the one for these inputs too."""
    import json

    x, _ = digits_test_set()
    np.save(tmp_path / "x.npy", x[:24])
    model = tmp_path / "resnet.onnx"
    onnx.save(_quantized("digits-resnet", form="qoperator", per_channel=False,
                         activations="uint8"), str(model))
    result = _cli("graph", "run", model, "-i", tmp_path / "x.npy", "--json")
    assert result.exit_code == 0, result.output
    (ort,) = json.loads(result.output)["onnxruntime"]
    assert ort["bound_these_inputs"] is None and ort["outside_bound"] is None
    assert ort["bound_any_input"] == ort["bound_full_range"] == 255
    result = _cli("graph", "run", model, "-i", tmp_path / "x.npy", "--json", "--bound")
    assert result.exit_code == 0, result.output
    (ort,) = json.loads(result.output)["onnxruntime"]
    ref = graph.run_reference(graph.load_onnx(model), {"input": x[:24]})
    cert = judge.certify(graph.load_onnx(model), {"input": x[:24]}, model)
    assert ort["bound_these_inputs"] == cert.row_steps("logits").max()
    assert ort["top1_certain"] == cert.top1_certain("logits").sum() == 24
    assert ort["max_lsb"] <= ort["bound_these_inputs"] + 1e-4 and ort["outside_bound"] == 0
    assert np.array_equal(cert.ours["logits"], ref["logits"])
    result = _cli("graph", "run", model, "-i", tmp_path / "x.npy", "--bound")
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.replace("│", " ").split())  # the table wraps the line
    bound = f"{ort['bound_these_inputs']:g}"
    assert f"proven: at most {bound} LSB on these inputs (top-1 certain on 24/24)" in text
    assert "on any input only the full range (255 LSB)" in text


# ------------------------------------------------------------- bad input, one line each
def _cli(*args):
    from click.testing import CliRunner

    from vta.cli import main

    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def test_bad_models_and_inputs_are_one_line_errors(tmp_path):
    x, _ = digits_test_set()
    np.save(tmp_path / "x.npy", x[:2])
    empty = tmp_path / "empty.onnx"
    empty.write_bytes(b"")
    result = _cli("graph", "run", empty, "-i", tmp_path / "x.npy")
    assert result.exit_code == 1
    assert result.output.strip().splitlines() == [
        f"Error: GraphError: {empty}: the file is empty, not an ONNX model"]
    # a model whose H and W are dynamic, fed 10x10 images: the dense layer cannot take them
    model = _quantized("digits", form="qdq", per_channel=False, activations="uint8")
    dynamic = onnx.ModelProto()
    dynamic.CopyFrom(model)
    for d, name in zip(dynamic.graph.input[0].type.tensor_type.shape.dim[2:], "HW", strict=True):
        d.dim_param = name
    onnx.save(dynamic, str(tmp_path / "dyn.onnx"))
    np.save(tmp_path / "big.npy", np.zeros((2, 1, 10, 10), np.float32))
    result = _cli("graph", "run", tmp_path / "dyn.onnx", "-i", tmp_path / "big.npy")
    assert result.exit_code == 1
    (line,) = result.output.strip().splitlines()
    assert line.startswith("Error: GraphError: node ")
    assert "(2, 800)" in line and "(N, 512)" in line
    with pytest.raises(graph.GraphError, match=r"^node '.*' \(dense\): its input has shape "
                                               r"\(2, 800\), but its weights take \(N, 512\)"):
        graph.run_reference(graph.load_onnx(dynamic), {"input": np.zeros((2, 1, 10, 10),
                                                                         np.float32)})
    # the same model at its own size runs
    result = _cli("graph", "run", tmp_path / "dyn.onnx", "-i", tmp_path / "x.npy", "--no-ort")
    assert result.exit_code == 0, result.output


def test_graph_quantize_command_and_cpu_hints_in_graph_run(tmp_path):
    import json

    x, labels = digits_test_set()
    np.save(tmp_path / "calib.npy", digits_calibration()[:64])
    np.save(tmp_path / "x.npy", x[:40])
    np.save(tmp_path / "y.npy", labels[:40])
    out = tmp_path / "int8.onnx"
    result = _cli("graph", "quantize", digits_float_model(), "--calib", tmp_path / "calib.npy",
                  "-o", out, "--per-channel", "--eval", tmp_path / "x.npy", "--labels",
                  tmp_path / "y.npy", "--json")
    assert result.exit_code == 0, result.output
    info = json.loads(result.output)
    assert info["mac_share_on_vta"] == 1.0 and info["vta_bit_exact"]
    assert [c["model"] for c in info["columns"]] == ["float", "int8 reference (VTA)",
                                                      "onnxruntime int8"]
    assert all(c["accuracy"] > 0.9 for c in info["columns"])
    agreement = info["onnxruntime_agreement"]
    assert agreement["top1_equal"] == 40 and agreement["outside_bound"] == 0
    assert agreement["max_lsb"] <= agreement["bound_these_inputs"] + 1e-4 <= 256
    assert agreement["bound_any_input"] == agreement["bound_full_range"] == 255
    assert {c["op"] for c in info["cpu_nodes"]} == {"quantize", "dequantize", "flatten"}
    g = graph.load_onnx(out)
    assert any(n.attrs.get("fixed") is not None and n.attrs["fixed"].rows for n in g.nodes)
    result = _cli("graph", "quantize", digits_float_model(), "--calib", tmp_path / "calib.npy",
                  "-o", out, "--scheme", "pow2", "--format", "qoperator")
    assert result.exit_code == 1
    assert "--scheme pow2 rewrites QDQ models only" in result.output
    # graph run: a node with an asymmetric weight says why it stays on the CPU and what to do
    model = onnx.load(str(tmp_path / "int8.onnx"))
    zp = next(t for t in model.graph.initializer if t.name == "conv2.w_zero_point")
    zp.CopyFrom(onnx.numpy_helper.from_array(np.full(onnx.numpy_helper.to_array(zp).shape, 3,
                                                     np.int8), zp.name))
    onnx.save(model, str(tmp_path / "asym.onnx"))
    result = _cli("graph", "run", tmp_path / "asym.onnx", "-i", tmp_path / "x.npy")
    assert result.exit_code == 0, result.output
    assert "stays on the CPU: weight zero point 3; re-quantize with symmetric weights" \
        in result.output

"""The graph runtime: ONNX import, the int8 reference, placement, and bit-exact runs.

Independent expectations: hand-written NumPy formulas for the arithmetic,
onnxruntime (where installed) for whole models, and the int8 reference for
every device run (which must match it bit for bit on every backend).
"""

from __future__ import annotations

import numpy as np
import pytest

import vta
from vta import graph, ops
from vta.graph import fixed, judge
from vta.graph.executor import Executor, pack, packed_shape, unpack
from vta.graph.export import ModelBuilder
from vta.graph.ir import GraphError, QType
from vta.graph.models import digits_model, digits_test_set, resnet18
from vta.graph.reference import add_ints, requantize

onnx = pytest.importorskip("onnx")
helper, numpy_helper, TP = onnx.helper, onnx.numpy_helper, onnx.TensorProto

needs_ort = pytest.mark.skipif(not judge.onnxruntime_available(),
                               reason="onnxruntime is not installed")


@pytest.fixture
def rng():
    return np.random.default_rng(7)


@pytest.fixture
def graph_dev(open_dev, backend):
    """``graph_dev(preset)``: a shared device; Icarus (30-60 s a network) only with -m slow."""
    if backend == "icarus":
        pytest.skip("graph networks run on Icarus in test_digits_icarus (slow)")
    return open_dev


def small_net(rng, form: str, cin: int = 16, bias_fc: bool = True):
    """conv -> conv -> residual add -> maxpool -> global average pool -> flatten -> dense."""
    b = ModelBuilder("small", (None, cin, 8, 8), 2**-5, form=form)
    y = b.conv(b.input, rng.integers(-128, 128, (16, cin, 3, 3), dtype=np.int8), 2**-7,
               rng.integers(-500, 500, 16).astype(np.int32), 2**-3, pad=1, relu=True,
               name="c1")
    z = b.conv(y, rng.integers(-128, 128, (16, 16, 3, 3), dtype=np.int8), 2**-7, None, 2**-3,
               pad=1, name="c2")
    s = b.add(y, z, 2**-2, relu=True, name="res")
    g = b.global_avgpool(b.maxpool(s, 2, 2), 2**-3)
    bias = rng.integers(-50, 50, 10).astype(np.int32) if bias_fc else None
    b.output(b.dense(b.flatten(g), rng.integers(-128, 128, (10, 16), dtype=np.int8), 2**-7,
                     bias, 2**-2, name="fc"), shape=("N", 10))
    return b.build()


# ------------------------------------------------------------- arithmetic
def test_requantize_fixed_point_and_float_paths():
    acc = np.array([5, 6, 7, -5, -6, -7, 2**30])
    fp = fixed.choose(np.array([0.25]), np.array([2**30]), 2**31, False)
    assert (fp.pre[0], fp.mult[0], fp.shift[0], fp.error) == (0, 1, 2, 0.0)
    # ratio 1/4 with no pre-shift: floor(acc / 4 + 1/2), rounding half up, no int32 wrap
    got = requantize(acc, 0.25, 0, -(2**31), 2**31, fp)
    assert got.tolist() == [1, 2, 2, -1, -1, -2, 2**28]
    assert requantize(np.array([300, -300]), 1.0, 0, -128, 127).tolist() == [127, -128]
    # without fixed-point parameters: floor(acc * r + 1/2) in float64, plus the zero point
    assert requantize(np.array([10, -10, 15]), 0.3, 3, -128, 127).tolist() == [6, 0, 8]


def test_add_ints_fixed_point_equals_the_real_formula_for_power_of_two_ratios():
    a = np.arange(-128, 128, dtype=np.int8)
    b = a[::-1].copy()
    aq, bq, yq = QType(2**-3), QType(2**-5), QType(2**-3)
    fp = fixed.choose_add(1.0, 0.25)
    assert (fp.mult_a, fp.mult_b, fp.shift, fp.error) == (4, 1, 2, 0.0)
    got = add_ints(a, aq, b, bq, yq, -128, 127, fp)
    real = a * 2.0**-3 + b * 2.0**-5
    assert np.array_equal(got, np.clip(np.floor(real / 2**-3 + 0.5), -128, 127))


# ----------------------------------------------------------------- import
@pytest.mark.parametrize("form", ["qdq", "qoperator"])
def test_import_both_forms(rng, form):
    g = graph.load_onnx(small_net(rng, form, bias_fc=form == "qdq"))
    ops_seen = [n.op for n in g.nodes]
    assert ops_seen == ["quantize", "conv", "conv", "add", "maxpool", "avgpool", "flatten",
                        "dense", "dequantize"]
    c1 = g.node("c1")
    assert (c1.attrs["lo"], c1.attrs["hi"]) == (0, 127)  # the ReLU is fused into the clamp
    assert g.node("c2").attrs["lo"] == -128
    assert g.values[c1.output].qtype == QType(2**-3)
    assert g.node("fc").attrs["weight"].shape == (10, 16)


@needs_ort
@pytest.mark.parametrize("form", ["qdq", "qoperator"])
def test_reference_agrees_with_onnxruntime(rng, form):
    model = small_net(rng, form, bias_fc=form == "qdq")
    g = graph.load_onnx(model)
    x = rng.normal(size=(4, 16, 8, 8)).astype(np.float32)
    ours = graph.run_reference(g, {"input": x})
    (agreement,) = judge.compare(g, ours, judge.run_onnxruntime(model, {"input": x}))
    assert agreement.lsb == 2**-2
    assert agreement.top1_equal >= 3 and agreement.max_lsb <= 2  # rounding of ties only


def _model(nodes, inputs, outputs, inits, opset=17, ms=False):
    opsets = [helper.make_opsetid("", opset)]
    if ms:
        opsets.append(helper.make_opsetid("com.microsoft", 1))
    return helper.make_model(helper.make_graph(nodes, "t", inputs, outputs, inits),
                             opset_imports=opsets)


def _init(name, value, dtype):
    return numpy_helper.from_array(np.asarray(value, dtype=dtype), name)


def _qdq_pool_model(op: str, **attrs):
    """float -> Q -> DQ -> op -> Q -> DQ -> float, with int8 scale 1/8."""
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["xq"]),
             helper.make_node("DequantizeLinear", ["xq", "s", "z"], ["xf"]),
             helper.make_node(op, ["xf"], ["yf"], name="the_op", **attrs),
             helper.make_node("QuantizeLinear", ["yf", "s2", "z"], ["yq"]),
             helper.make_node("DequantizeLinear", ["yq", "s2", "z"], ["y"])]
    return _model(nodes, [helper.make_tensor_value_info("x", TP.FLOAT, [1, 2, 4, 4])],
                  [helper.make_tensor_value_info("y", TP.FLOAT, None)],
                  [_init("s", 0.125, np.float32), _init("s2", 0.0625, np.float32),
                   _init("z", 0, np.int8)])


@pytest.mark.parametrize("op, attrs, expect, nodes", [
    # a max pool keeps the scale: with a new one it runs in float between DQ and Q
    ("MaxPool", {"kernel_shape": [2, 2], "strides": [2, 2]},
     lambda x: x.reshape(1, 2, 2, 2, 2, 2).max(axis=(3, 5)),
     ["quantize", "dequantize", "maxpool", "quantize", "dequantize"]),
    ("AveragePool", {"kernel_shape": [2, 2], "strides": [2, 2]},
     lambda x: x.reshape(1, 2, 2, 2, 2, 2).mean(axis=(3, 5)),
     ["quantize", "avgpool", "dequantize"]),
    ("GlobalAveragePool", {}, lambda x: x.mean(axis=(2, 3), keepdims=True),
     ["quantize", "avgpool", "dequantize"]),
])
def test_qdq_pooling_islands(op, attrs, expect, nodes):
    g = graph.load_onnx(_qdq_pool_model(op, **attrs))
    assert [n.op for n in g.nodes] == nodes
    x = np.arange(32, dtype=np.float32).reshape(1, 2, 4, 4) / 8 - 2
    got = graph.run_reference(g, {"x": x})["y"]
    want = np.floor(expect(x.astype(np.float64)) / 0.0625 + 0.5) * 0.0625
    assert np.array_equal(got, np.clip(want, -8, 127 / 16).astype(np.float32))


def test_float_ops_run_on_the_cpu_between_quantize_and_dequantize():
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["xq"]),
             helper.make_node("DequantizeLinear", ["xq", "s", "z"], ["xf"]),
             helper.make_node("Reshape", ["xf", "shape"], ["r"]),
             helper.make_node("Relu", ["r"], ["rr"]),
             helper.make_node("Softmax", ["rr"], ["y"], axis=-1)]
    m = _model(nodes, [helper.make_tensor_value_info("x", TP.FLOAT, [2, 3])],
               [helper.make_tensor_value_info("y", TP.FLOAT, None)],
               [_init("s", 0.5, np.float32), _init("z", 0, np.int8),
                _init("shape", [3, 2], np.int64)])
    g = graph.load_onnx(m)
    assert [n.op for n in g.nodes] == ["quantize", "dequantize", "reshape", "relu", "softmax"]
    x = np.array([[1.2, -3.0, 0.3], [2.6, 0.0, -0.2]], np.float32)
    q = np.clip(np.rint(x / 0.5), -128, 127) * 0.5
    r = np.maximum(q.reshape(3, 2), 0)
    want = np.exp(r) / np.exp(r).sum(axis=-1, keepdims=True)
    np.testing.assert_allclose(graph.run_reference(g, {"x": x})["y"], want, rtol=1e-6)


def test_matmul_and_int8_graph_input():
    w = np.arange(-6, 6, dtype=np.int8).reshape(4, 3)  # (K, N)
    nodes = [helper.make_node("DequantizeLinear", ["x", "s", "z"], ["xf"]),
             helper.make_node("DequantizeLinear", ["w", "ws", "z"], ["wf"]),
             helper.make_node("MatMul", ["xf", "wf"], ["m"], name="mm"),
             helper.make_node("Clip", ["m", "lo", "hi"], ["c"]),
             helper.make_node("QuantizeLinear", ["c", "s", "z"], ["y"])]
    m = _model(nodes, [helper.make_tensor_value_info("x", TP.INT8, [2, 4])],
               [helper.make_tensor_value_info("y", TP.INT8, None)],
               [_init("s", 0.5, np.float32), _init("z", 0, np.int8), _init("w", w, np.int8),
                _init("ws", 0.25, np.float32), _init("lo", -1.0, np.float32),
                _init("hi", 3.0, np.float32)])
    g = graph.load_onnx(m)
    (node,) = g.nodes
    assert node.op == "dense" and (node.attrs["lo"], node.attrs["hi"]) == (-2, 6)
    x = np.array([[1, -2, 3, 4], [-128, 127, 5, 0]], np.int8)
    want = np.clip(np.floor((x.astype(np.int64) @ w) * 0.25 + 0.5), -2, 6)
    assert np.array_equal(graph.run_reference(g, {"x": x})["y"], want)
    with pytest.raises(GraphError, match="input 'x' must be a int8 array, not float64"):
        graph.run_reference(g, {"x": x.astype(np.float64)})
    with pytest.raises(GraphError, match=r"input 'x' must have shape \(2, 4\), not \(3, 4\)"):
        graph.run_reference(g, {"x": np.zeros((3, 4), np.int8)})


def _conv_model(**conv_attrs):
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["xq"]),
             helper.make_node("DequantizeLinear", ["xq", "s", "z"], ["xf"]),
             helper.make_node("DequantizeLinear", ["w", "ws", "z"], ["wf"]),
             helper.make_node("Conv", ["xf", "wf"], ["c"], name="conv_a", **conv_attrs),
             helper.make_node("QuantizeLinear", ["c", "s", "z"], ["y"])]
    return _model(nodes, [helper.make_tensor_value_info("x", TP.FLOAT, [1, 2, 5, 5])],
                  [helper.make_tensor_value_info("y", TP.INT8, None)],
                  [_init("s", 0.5, np.float32), _init("z", 0, np.int8),
                   _init("w", np.ones((2, 2, 3, 3)), np.int8), _init("ws", 0.5, np.float32)])


@pytest.mark.parametrize("mutate, message", [
    (lambda m: m.graph.node.append(helper.make_node("Sin", ["y"], ["q"], name="sine")),
     r"ONNX node 'sine' \(Sin\): operator not supported by the graph runtime"),
    (lambda m: m.graph.node[3].attribute.append(helper.make_attribute("auto_pad", "SAME_UPPER")),
     r"ONNX node 'conv_a' \(Conv\): auto_pad=SAME_UPPER is not supported"),
    (lambda m: m.graph.node[3].input.__setitem__(0, "x"),
     r"ONNX node 'conv_a' \(Conv\): input 'x' must come from a DequantizeLinear"),
    (lambda m: m.graph.node.pop(4),
     r"'conv_a' \(Conv\): Conv must be quantized: its output must feed"),
    (lambda m: m.opset_import.append(helper.make_opsetid("ai.graphcore", 1)),
     r"operator set domain 'ai.graphcore'"),
])
def test_unsupported_models_are_refused_naming_the_node(mutate, message):
    m = _conv_model(pads=[1, 1, 1, 1])
    graph.load_onnx(m)  # the unmodified model imports
    mutate(m)
    with pytest.raises(GraphError, match=message):
        graph.load_onnx(m)


def test_refusals_for_pooling_and_files(tmp_path):
    with pytest.raises(GraphError, match=r"'the_op' \(MaxPool\): ceil_mode=1 is not supported"):
        graph.load_onnx(_qdq_pool_model("MaxPool", kernel_shape=[2, 2], ceil_mode=1))
    with pytest.raises(GraphError, match="no such ONNX file"):
        graph.load_onnx(tmp_path / "nope.onnx")
    (tmp_path / "junk.onnx").write_bytes(b"\x00garbage")
    with pytest.raises(GraphError, match="junk.onnx: not a readable ONNX model"):
        graph.load_onnx(tmp_path / "junk.onnx")


def test_missing_onnx_is_one_clear_error(monkeypatch):
    monkeypatch.setitem(__import__("sys").modules, "onnx", None)
    with pytest.raises(GraphError, match=r"needs the 'onnx' package, which is not installed "
                                         r"\(pip install 'onnx>=1.17'\)"):
        graph.load_onnx("whatever.onnx")


# --------------------------------------------------------------- placement
def _placements(g, dev, cin=16, **kw):
    ex = Executor(g, dev, **kw)
    ex.run({"input": np.zeros((1, cin, 8, 8), np.float32)})
    ex.close()
    return {n.name: (n.placement, n.reason) for n in ex.report().nodes}


def test_placement_rules_and_reasons(rng):
    model = small_net(rng, "qdq")
    with vta.open_device("golden") as dev:
        g = graph.load_onnx(model)
        placed = _placements(g, dev)
        assert {k for k, v in placed.items() if v[0] == "vta"} == {
            n.name for n in g.nodes if n.op in ("conv", "add", "maxpool", "avgpool", "dense")}
        flatten = next(n.name for n in g.nodes if n.op == "flatten")
        assert placed[flatten] == ("cpu", "data movement only, no arithmetic (CPU by design)")
        placed = _placements(graph.load_onnx(model), dev, cpu_nodes=["c2"])
        assert placed["c2"] == ("cpu", "kept on the CPU (cpu_nodes)")
        with pytest.raises(GraphError, match="cpu_nodes names 'nope', which is not a node"):
            Executor(graph.load_onnx(model), dev, cpu_nodes=["nope"])
        g = graph.load_onnx(model)
        g.node("c2").attrs["w_zero"] = np.full(16, 3)
        g.node("res").attrs.update(fixed=None, fixed_why="no reason at all")
        placed = _placements(g, dev)
        assert placed["c2"] == ("cpu", "weight zero point 3; re-quantize with symmetric weights "
                                       "(quantize_static's default, or vta graph quantize)")
        assert placed["res"] == ("cpu", "no reason at all; re-quantize")
        g = graph.load_onnx(small_net(rng, "qdq", cin=3))
        assert _placements(g, dev, cin=3)["c1"][0] == "vta"
        assert _placements(g, dev, cin=3, max_channel_waste=4)["c1"] == (
            "cpu", "3 input channels padded to 16: over 4x the work")


def test_pack_unpack_matrices():
    cfg = vta.Config.load("tiny")
    x = np.arange(5 * 7, dtype=np.int8).reshape(5, 7)
    p = pack(x, cfg)
    assert p.shape == packed_shape(x.shape, cfg) == (1, 2, 1, 5, 1, 4)
    assert p[0, 1, 0, 3, 0, 2] == x[3, 6] and p[0, 1, 0, 3, 0, 3] == 0
    assert np.array_equal(unpack(p, x.shape), x)


# --------------------------------------------------------- runs on devices
@pytest.mark.parametrize("form", ["qdq", "qoperator"])
def test_small_net_bit_exact_on_every_backend(graph_dev, rng, form):
    dev = graph_dev("tiny")
    g = graph.load_onnx(small_net(rng, form, bias_fc=form == "qdq"))
    x = rng.normal(size=(2, 16, 8, 8)).astype(np.float32)
    with Executor(g, dev) as ex:
        out = ex.run({"input": x})
        report = ex.report()
    ref = graph.run_reference(g, {"input": x}, keep=True)
    assert np.array_equal(out["logits"], ref["logits"])
    assert [n.op for n in report.vta_nodes] == ["conv", "conv", "add", "maxpool", "avgpool",
                                                "dense"]
    stats = report.stats
    assert stats.gemm_uops > 0 and stats.alu_uops > 0
    # every VTA node's roofline: the operator's bound, whose minimal work the run did
    c1 = report.vta_nodes[0]
    blocks = 16 // dev.cfg.BLOCK_IN  # BLOCK_IN == BLOCK_OUT
    assert c1.bound.as_dict() == ops.conv2d_bound(
        dev.cfg, (2, blocks, 8, 8), (blocks, blocks, 3, 3), stride=1, padding=1, bias=True,
        shift=9, clip=(0, 127)).as_dict()
    # the residual add runs inside c2 (its bound and counters are c2's)
    res = next(n for n in report.vta_nodes if n.name == "res")
    assert res.epilogue == "folded into c2" and res.stats is None and res.bound is None
    ran = [n for n in report.vta_nodes if n.stats is not None]
    assert [n.op for n in ran] == ["conv", "conv", "maxpool", "avgpool", "dense"]
    assert ran[1].stats.acc8_load_bytes == 0  # the add's other operand comes in through INP
    assert report.bound == sum(n.bound.cycles for n in ran)
    for n in ran:
        assert n.stats.gemm_uops == n.bound.work.gemm_uops
        assert n.stats.alu_uops >= n.bound.work.alu_uops
        assert n.stats.acc8_load_bytes >= n.bound.work.acc8_bytes
    alone = ops.conv2d_bound(dev.cfg, (2, blocks, 8, 8), (blocks, blocks, 3, 3), stride=1,
                             padding=1, bias=True, shift=7, clip=(-128, 127))
    entries = 2 * blocks * 8 * 8  # c2's output entries: one identity GEMM micro-op each
    assert ran[1].bound.work.gemm_uops == alone.work.gemm_uops + entries
    assert ran[1].stats.gemm_uops == alone.work.gemm_uops + entries
    assert ran[2].bound.work.acc8_bytes > 0  # a pool's input reaches the accumulator
    if dev.backend != "golden":
        assert all(n.cycles > 0 for n in ran)
        assert 0 < report.gemm_utilisation() < 1
        assert all(n.cycles >= n.bound.cycles for n in ran)
        assert 0 < report.as_dict()["of_bound"] <= 1
    else:
        assert all(n.of_bound is None for n in ran)
    # the same network with every add on its own: the same outputs
    with Executor(g, dev, fold_adds=False) as ex:
        assert np.array_equal(ex.run({"input": x})["logits"], ref["logits"])
        alone_nodes = {n.name: n for n in ex.report().vta_nodes}
        assert alone_nodes["res"].stats is not None and alone_nodes["res"].bound is not None
        assert alone_nodes["res"].stats.acc8_load_bytes > 0  # the add on its own loads both


def test_tensors_stay_on_the_device_between_vta_nodes(rng):
    g = graph.load_onnx(small_net(rng, "qdq"))
    with vta.open_device("golden", "tiny") as dev:
        reads = []
        real_read = dev.read
        dev.read = lambda buf, nbytes=None, offset=0: reads.append(buf) or real_read(
            buf, nbytes, offset)
        with Executor(g, dev) as ex:
            ex.run({"input": rng.normal(size=(1, 16, 8, 8)).astype(np.float32)})
            # read back: the global pool's output (for the CPU flatten) and fc's (the output)
            gap = next(n for n in g.nodes if n.op == "avgpool")
            assert reads == [ex.dev_buf[gap.output], ex.dev_buf[g.node("fc").output]]


def test_executor_runs_again_and_replans_for_a_new_batch(rng):
    g = graph.load_onnx(small_net(rng, "qdq"))
    with vta.open_device("golden", "tiny") as dev, Executor(g, dev) as ex:
        built = []
        for n in (1, 3, 3, 3):
            x = rng.normal(size=(n, 16, 8, 8)).astype(np.float32)
            assert np.array_equal(ex.run({"input": x})["logits"],
                                  graph.run_reference(g, {"input": x})["logits"])
            built.append(len(ex._queue.history))  # streams built (not replayed) by this plan
            assert ex.report().stats.gemm_uops > 0
        assert built[1] == built[2] == built[3] == 5  # built once per plan, then replayed
        # (c1, c2 with the residual add folded in, the two pools, fc)


def test_digits_bit_exact_and_accurate(graph_dev):
    _check_digits(graph_dev("default"))


@pytest.mark.slow
def test_digits_icarus():
    with vta.open_device("icarus", "tiny") as dev:
        _check_digits(dev)


def _check_digits(dev):
    g = graph.load_onnx(digits_model())
    x, labels = digits_test_set()
    n = 40 if dev.backend == "golden" else 4
    with Executor(g, dev) as ex:
        out = ex.run({"input": x[:n]})["logits"]
    ref = graph.run_reference(g, {"input": x[:n]})["logits"]
    assert np.array_equal(out, ref)
    assert (out.argmax(1) == labels[:n]).mean() >= 0.9


def test_digits_int8_accuracy_on_the_held_out_split():
    g = graph.load_onnx(digits_model())
    x, labels = digits_test_set()
    assert len(labels) == 360
    acc = (graph.run_reference(g, {"input": x})["logits"].argmax(1) == labels).mean()
    assert acc >= 0.95
    assert abs(acc - float(g.metadata["float_accuracy"])) < 0.03


# ------------------------------------------------------------------ ops.add
@pytest.mark.parametrize("kw", [{}, {"a_lshift": 2, "offset": 4, "shift": 3, "relu": True},
                                {"b_lshift": 5, "shift": 1, "clip": (-20, 90)}])
def test_ops_add_on_the_alu(open_dev, rng, kw):
    dev = open_dev("tiny")  # a few hundred cycles: every backend
    a = rng.integers(-128, 128, (3, 5, 7), dtype=np.int8)
    b = rng.integers(-128, 128, (3, 5, 7), dtype=np.int8)
    out, stats = ops.add(dev, a, b, return_stats=True, **kw)
    acc = (a.astype(np.int64) << kw.get("a_lshift", 0)) + (b.astype(np.int64) << kw.get(
        "b_lshift", 0)) + kw.get("offset", 0)
    acc >>= kw.get("shift", 0)
    if kw.get("relu"):
        acc = np.maximum(acc, 0)
    if "clip" in kw:
        acc = np.clip(acc, *kw["clip"])
    assert np.array_equal(out, acc.astype(np.int8))
    assert stats.gemm_uops == 0 and stats.acc8_load_bytes == 2 * 27 * 4  # 105 lanes -> 27 x 4


def test_ops_add_many_tiles_and_errors(rng):
    with vta.open_device("golden", "tiny") as dev:
        a = rng.integers(-128, 128, 3000, dtype=np.int8)
        b = rng.integers(-128, 128, 3000, dtype=np.int8)
        assert np.array_equal(ops.add(dev, a, b, shift=1),
                              ((a.astype(np.int64) + b) >> 1).astype(np.int8))
        with pytest.raises(ValueError, match=r"a and b must have the same shape, not \(3000,\)"):
            ops.add(dev, a, b[:5])
        with pytest.raises(TypeError, match="b must be an int8 array, not int16"):
            ops.add(dev, a, b.astype(np.int16))
        with pytest.raises(ValueError, match="a_lshift must be an integer in 0..24, not 25"):
            ops.add(dev, a, b, a_lshift=25)
        with pytest.raises(ValueError, match="offset must be an integer in -32768..32767"):
            ops.add(dev, a, b, offset=1 << 15)


# ------------------------------------------------------------------ ResNet-18
def _resnet_case():
    model = resnet18()
    g = graph.load_onnx(model)
    x = np.random.default_rng(1).normal(size=(1, 3, 224, 224)).astype(np.float32)
    return model, g, x, graph.run_reference(g, {"input": x})


def _check_resnet(dev):
    model, g, x, ref = _resnet_case()
    with Executor(g, dev) as ex:
        out = ex.run({"input": x})
        report = ex.report()
    assert np.array_equal(out["logits"], ref["logits"])
    vta_nodes = {n.name for n in report.vta_nodes}
    convs = {n.name for n in g.nodes if n.op == "conv"}
    assert convs <= vta_nodes  # every convolution, C1 too (3 channels padded to 16)
    assert {n.name for n in g.nodes if n.op in ("add", "dense", "maxpool", "avgpool")} \
        <= vta_nodes
    assert len(vta_nodes) == 20 + 8 + 2 + 1
    assert [n.epilogue for n in report.vta_nodes if n.op == "add"] == [
        f"folded into {name}" for name in ("layer1.0.conv2", "layer1.1.conv2",
                                           "layer2.0.downsample", "layer2.1.conv2",
                                           "layer3.0.downsample", "layer3.1.conv2",
                                           "layer4.0.downsample", "layer4.1.conv2")]
    # buffers are shared: with every add on its own, half of what the tensors need alone;
    # folding the adds (whose convolutions' outputs are never stored) costs nothing more
    with Executor(g, dev, fold_adds=False) as alone:
        alone._prepare({"input": x.shape})
        assert alone.activation_bytes < alone.activation_bytes_unshared / 2
        assert report.activation_bytes <= alone.activation_bytes
    return model, g, x, ref, report


def test_resnet18_golden_bit_exact():
    with vta.open_device("golden") as dev:
        model, g, x, ref, report = _check_resnet(dev)
    macs = sum(n.macs for n in report.vta_nodes)
    assert macs == 1_814_073_344  # ResNet-18's MACs, all on VTA
    assert report.stats.gemm_uops * 256 >= macs  # padded tiles do at least the useful MACs
    if judge.onnxruntime_available():
        (agreement,) = judge.compare(g, ref, judge.run_onnxruntime(model, {"input": x}))
        assert agreement.top1_equal == 1 and agreement.max_lsb <= 4


@pytest.mark.slow
@pytest.mark.parametrize("preset", ["default", "aws"])
def test_resnet18_verilator_bit_exact(preset):
    with vta.open_device("verilator", preset) as dev:
        report = _check_resnet(dev)[-1]
    assert report.cycles > 0 and 0.3 < report.gemm_utilisation() < 1


# ---------------------------------------------------------------------- CLI
def _cli(*args):
    from click.testing import CliRunner

    from vta.cli import main

    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


@pytest.mark.sim
def test_demo_runs_the_digits_network_by_default_on_the_rtl(tmp_path):
    result = _cli("demo", "--images", 3, "--trace", tmp_path / "one.trace")
    assert result.exit_code == 0, result.output
    out = result.output
    assert "backend verilator" in out and "digits CNN" in out
    assert "PASS: the verilator run equals the int8 reference bit for bit (3 images" in out
    util = next(line for line in out.splitlines() if line.startswith("│ GEMM utilisation"))
    assert "%" in util
    assert "accuracy" in out and "images/s" in out
    from vta import trace

    records = trace.read_trace(tmp_path / "one.trace")
    assert {r.module for r in records} == {"load", "compute", "store"}
    assert all(r.cycle is not None for r in records)


def test_demo_digits_json_and_dense_still_selectable():
    import json

    result = _cli("demo", "-b", "golden", "--images", 20, "--json")
    assert result.exit_code == 0, result.output
    info = json.loads(result.output)
    assert info["workload"] == "digits" and info["ok"] and info["bit_exact"]
    assert info["images"] == 20 and info["accuracy"]["vta"] == info["accuracy"]["int8_reference"]
    assert [n["name"] for n in info["nodes"] if n["placement"] == "vta"] == [
        "conv1", "conv2", "conv3", "residual", "fc"]
    result = _cli("demo", "-b", "golden", "-c", "tiny", "-w", "dense", "--json")
    assert json.loads(result.output)["workload"] == "dense"
    result = _cli("demo", "-b", "golden", "-w", "digits", "--shape", 2, 2, 2)
    assert result.exit_code == 2 and "--shape is for the dense workload" in result.output
    result = _cli("demo", "-b", "golden", "--images", 361)
    assert result.exit_code == 2 and "361 is not in the range 1<=x<=360" in result.output


def test_graph_run_command(tmp_path, rng):
    import json

    model = tmp_path / "small.onnx"
    onnx.save(small_net(rng, "qdq"), str(model))
    x = rng.normal(size=(2, 16, 8, 8)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    result = _cli("graph", "run", model, "--input", tmp_path / "x.npy", "-c", "tiny",
                  "-o", tmp_path / "out.npz", "--trace", tmp_path / "t.trace")
    assert result.exit_code == 0, result.output
    assert "PASS: outputs equal the int8 reference bit for bit (logits)" in result.output
    g = graph.load_onnx(model)
    with np.load(tmp_path / "out.npz") as f:
        assert np.array_equal(f["logits"], graph.run_reference(g, {"input": x})["logits"])
    # one run per VTA node that runs: c1, c2 (with the add folded in), the pools, fc
    assert (tmp_path / "t.trace").read_text().count("FINISH") == 5
    result = _cli("graph", "run", model, "-i", tmp_path / "x.npy", "--cpu", "c2", "--json")
    info = json.loads(result.output)
    assert info["bit_exact"] and [n["placement"] for n in info["nodes"]][1:4] == [
        "vta", "cpu", "vta"]
    bounds = [n["bound"]["cycles"] for n in info["nodes"] if n["placement"] == "vta"]
    assert info["bound"] == sum(bounds) and info["of_bound"] is None  # golden: no cycles
    assert info["nodes"][1]["bound"]["binding"] in ("compute", "load", "bus read")
    if judge.onnxruntime_available():
        assert info["onnxruntime"][0]["top1_equal"] >= 1
    result = _cli("graph", "run", model, "-i", tmp_path / "missing.npy")
    assert result.exit_code == 2 and "missing.npy: cannot read a .npy array" in result.output
    np.save(tmp_path / "bad.npy", x[:, :3])
    result = _cli("graph", "run", model, "-i", tmp_path / "bad.npy")
    assert result.exit_code == 1
    assert "GraphError: input 'input' must have shape ('N', 16, 8, 8), not (2, 3, 8, 8)" \
        in result.output


@pytest.mark.slow
def test_training_script_exports_a_model_the_runtime_runs(tmp_path):
    """scripts/train_digits.py end to end (2 epochs): ONNX + held-out split, accuracies printed."""
    import subprocess
    import sys
    from pathlib import Path

    pytest.importorskip("sklearn")
    script = Path(__file__).resolve().parents[2] / "scripts" / "train_digits.py"
    result = subprocess.run([sys.executable, str(script), "--epochs", "2", "--out", str(tmp_path)],
                            capture_output=True, text=True, timeout=600, check=True)
    assert "int8 reference" in result.stdout and "float (NumPy)" in result.stdout
    g = graph.load_onnx(tmp_path / "digits.onnx")
    assert g.metadata["epochs"] == "2"
    with np.load(tmp_path / "digits_test.npz") as f:
        images, labels = f["images"], f["labels"]
    assert images.shape == (360, 8, 8) and images.max() <= 16
    x = (images.astype(np.float32) / 16)[:, None]
    logits = graph.run_reference(g, {"input": x})["logits"]
    assert (logits.argmax(1) == labels).mean() > 0.5  # 2 epochs already learn something

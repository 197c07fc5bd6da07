"""Operators: matmul / dense over odd shapes, conv2d incl. ResNet-18 C2..C11, against NumPy.

The references below compute the same arithmetic directly (int64 / exact
float64 BLAS products), independently of the operators' tiling.
"""

from __future__ import annotations

import numpy as np
import pytest

import vta
from vta import ops
from vta.isa import AluOp

RESNET18 = ops.RESNET18_LAYERS
LARGEST = {"C2", "C5", "C8", "C11"}  # 115.6 M MACs each


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


def wrap32(acc: np.ndarray) -> np.ndarray:
    return ((acc.astype(np.int64) + (1 << 31)) % (1 << 32)) - (1 << 31)


def epilogue(acc, bias=None, shift=0, relu=False, clip=None) -> np.ndarray:
    acc = wrap32(acc)
    if bias is not None:
        acc = wrap32(acc + bias)
    acc = acc >> shift
    if relu:
        acc = np.maximum(acc, 0)
    if clip is not None:
        acc = np.clip(acc, *clip)
    return acc.astype(np.int8)  # low 8 bits


def ref_conv2d(data, kernel, stride, pad) -> np.ndarray:
    """Direct convolution, NCHW x OIHW, exact (float64 products of int8 stay exact)."""
    n, c, h, w = data.shape
    o, _, kh, kw = kernel.shape
    padded = np.zeros((n, c, h + 2 * pad, w + 2 * pad))
    padded[:, :, pad:pad + h, pad:pad + w] = data
    oh, ow = (h + 2 * pad - kh) // stride + 1, (w + 2 * pad - kw) // stride + 1
    out = np.zeros((n, o, oh, ow))
    for r in range(kh):
        for s in range(kw):
            window = padded[:, :, r:r + stride * (oh - 1) + 1:stride,
                            s:s + stride * (ow - 1) + 1:stride]
            out += np.einsum("nchw,oc->nohw", window, kernel[:, :, r, s].astype(np.float64),
                             optimize=True)
    return out.astype(np.int64)


# ---------------------------------------------------------------- packing
def test_pack_unpack_roundtrip_pads_blocks():
    cfg = vta.Config.load("default")
    data = np.arange(2 * 20 * 3 * 5, dtype=np.int64).astype(np.int8).reshape(2, 20, 3, 5)
    packed = ops.pack_nchw(data, cfg)
    assert packed.shape == (2, 2, 3, 5, 1, 16)
    assert packed[1, 1, 2, 4, 0, 3] == data[1, 19, 2, 4]
    assert not packed[:, 1, :, :, :, 4:].any()  # channels 20..31 are zero padding
    np.testing.assert_array_equal(ops.unpack_nchw(packed, 2, 20), data)
    kernel = np.arange(17 * 3 * 2 * 2, dtype=np.int64).astype(np.int8).reshape(17, 3, 2, 2)
    pk = ops.pack_oihw(kernel, cfg)
    assert pk.shape == (2, 1, 2, 2, 16, 16)
    assert pk[1, 0, 1, 0, 0, 2] == kernel[16, 2, 1, 0]
    with pytest.raises(TypeError, match="data must be an int8 array, not int32"):
        ops.pack_nchw(data.astype(np.int32), cfg)
    with pytest.raises(ValueError,
                       match=r"kernel must have 4 dimensions, not 2 \(shape \(2, 2\)\)"):
        ops.pack_oihw(np.zeros((2, 2), np.int8), cfg)


@pytest.mark.parametrize("preset", vta.config.PRESETS)
@pytest.mark.parametrize("layer", list(RESNET18))
def test_every_resnet_layer_fits_every_preset(preset, layer):
    cfg = vta.Config.load(preset)
    h, w, ci, co, k, pad, stride = RESNET18[layer]
    bi, bo = cfg.BLOCK_IN, cfg.BLOCK_OUT
    plan = ops.plan_conv2d(cfg, (1, ci // bi, h, w), (co // bo, ci // bi, k, k), stride, pad,
                           bias=True)
    tih = (plan.th - 1) * stride + k
    tiw = (plan.tw - 1) * stride + k
    assert plan.cb % plan.tcb == 0
    assert plan.tcb * tih * tiw <= cfg.INP_BUFF_DEPTH // 2
    assert plan.tob * plan.tcb * k * k <= cfg.WGT_BUFF_DEPTH // 2
    assert plan.tob * plan.th * plan.tw + plan.tob <= cfg.ACC_BUFF_DEPTH // 2


# ----------------------------------------------------------------- matmul
MATMUL_SHAPES = [(1, 1, 1), (3, 17, 5), (16, 16, 16), (37, 70, 19), (64, 300, 48), (129, 33, 2)]


@pytest.mark.parametrize("m, k, n", MATMUL_SHAPES)
def test_matmul_odd_shapes(device, rng, m, k, n):
    a = rng.integers(-128, 128, (m, k), dtype=np.int8)
    b = rng.integers(-128, 128, (k, n), dtype=np.int8)
    out = ops.matmul(device, a, b)
    assert out.shape == (m, n) and out.dtype == np.int8
    np.testing.assert_array_equal(out, epilogue(a.astype(np.int64) @ b.astype(np.int64)))


@pytest.mark.parametrize("m, k, n", [(5, 7, 3), (9, 300, 6), (40, 40, 40)])
def test_matmul_tiny_config_splits_the_reduction(open_dev, rng, m, k, n):
    dev = open_dev("tiny")
    a = rng.integers(-128, 128, (m, k), dtype=np.int8)
    b = rng.integers(-128, 128, (k, n), dtype=np.int8)
    np.testing.assert_array_equal(ops.matmul(dev, a, b),
                                  epilogue(a.astype(np.int64) @ b.astype(np.int64)))


@pytest.mark.parametrize("options", [
    {"bias": True},
    {"shift": 8},
    {"relu": True},
    {"clip": (-20, 90)},
    {"bias": True, "shift": 9, "relu": True, "clip": (0, 127)},
])
def test_dense_epilogue(device, rng, options):
    m, k, n = 23, 96, 40
    x = rng.integers(-128, 128, (m, k), dtype=np.int8)
    w = rng.integers(-128, 128, (n, k), dtype=np.int8)
    options = dict(options)
    if options.pop("bias", False):
        options["bias"] = rng.integers(-(1 << 20), 1 << 20, n).astype(np.int32)
    out, stats = ops.dense(device, x, w, return_stats=True, **options)
    expected = epilogue(x.astype(np.int64) @ w.astype(np.int64).T, **options)
    np.testing.assert_array_equal(out, expected)
    assert stats.gemm_uops * device.cfg.BATCH * device.cfg.BLOCK_IN * device.cfg.BLOCK_OUT == \
        -(-m // device.cfg.BATCH) * device.cfg.BATCH * 96 * 48


def test_dense_argument_errors(device):
    x = np.zeros((2, 3), np.int8)
    with pytest.raises(ValueError, match=r"w has 4 columns, x has 3 \(both must be K\)"):
        ops.dense(device, x, np.zeros((5, 4), np.int8))
    with pytest.raises(ValueError, match=r"shift must be an integer in 0\.\.31, not 32"):
        ops.dense(device, x, np.zeros((5, 3), np.int8), shift=32)
    with pytest.raises(ValueError, match=r"bias must have shape \(5,\) \(one value per output "
                                         r"channel\), not \(4,\)"):
        ops.dense(device, x, np.zeros((5, 3), np.int8), bias=np.zeros(4, np.int32))
    with pytest.raises(ValueError, match=r"clip bounds must be in -32768\.\.32767"):
        ops.dense(device, x, np.zeros((5, 3), np.int8), clip=(0, 1 << 16))
    with pytest.raises(TypeError, match="x must be an int8 array, not float64"):
        ops.dense(device, x.astype(float), np.zeros((5, 3), np.int8))
    rows = 0xFFFF * device.cfg.BATCH + 1  # one LOAD stride too many
    with pytest.raises(ValueError, match=rf"x has {rows} rows: dense takes at most "
                                         rf"{rows - 1} per call \(a 16-bit LOAD stride"):
        ops.dense(device, np.zeros((rows, 3), np.int8), np.zeros((5, 3), np.int8))
    assert device.driver.live_buffers == []  # nothing leaked by failed calls


# ----------------------------------------------------------------- conv2d
def _resnet_case(device, rng, layer):
    h, w, ci, co, k, pad, stride = RESNET18[layer]
    data = rng.integers(-128, 128, (1, ci, h, w), dtype=np.int8)
    kernel = rng.integers(-128, 128, (co, ci, k, k), dtype=np.int8)
    bias = rng.integers(-(1 << 16), 1 << 16, co).astype(np.int32)
    out = ops.conv2d(device, data, kernel, stride=stride, padding=pad, bias=bias, shift=8,
                     relu=True, clip=(0, 127))
    expected = epilogue(ref_conv2d(data, kernel, stride, pad), bias[None, :, None, None], 8,
                        True, (0, 127))
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("layer", [name for name in RESNET18 if name not in LARGEST])
def test_conv2d_resnet18(device, rng, layer):
    _resnet_case(device, rng, layer)


@pytest.mark.slow
@pytest.mark.parametrize("layer", sorted(LARGEST, key=lambda n: int(n[1:])))
def test_conv2d_resnet18_largest(device, rng, layer):
    _resnet_case(device, rng, layer)


@pytest.mark.parametrize("stride, pad, k", [(1, 1, 3), (2, 1, 3), (1, 0, 1), (2, 0, 3),
                                            (1, 2, 5), (3, 1, 2)])
def test_conv2d_odd_shapes_tiny(open_dev, rng, stride, pad, k):
    dev = open_dev("tiny")
    data = rng.integers(-128, 128, (2, 7, 9, 11), dtype=np.int8)
    kernel = rng.integers(-128, 128, (6, 7, k, k), dtype=np.int8)
    out = ops.conv2d(dev, data, kernel, stride=stride, padding=pad)
    np.testing.assert_array_equal(out, epilogue(ref_conv2d(data, kernel, stride, pad)))


def test_conv2d_batch_and_channel_padding_default(device, rng):
    data = rng.integers(-128, 128, (3, 20, 10, 10), dtype=np.int8)
    kernel = rng.integers(-128, 128, (24, 20, 3, 3), dtype=np.int8)
    bias = rng.integers(-5000, 5000, 24).astype(np.int32)
    out = ops.conv2d(device, data, kernel, stride=1, padding=1, bias=bias, shift=6)
    expected = epilogue(ref_conv2d(data, kernel, 1, 1), bias[None, :, None, None], 6)
    np.testing.assert_array_equal(out, expected)


def test_conv2d_packed_layout(device, rng):
    cfg = device.cfg
    data = rng.integers(-128, 128, (1, 32, 8, 8), dtype=np.int8)
    kernel = rng.integers(-128, 128, (32, 32, 3, 3), dtype=np.int8)
    out = ops.conv2d_packed(device, ops.pack_nchw(data, cfg), ops.pack_oihw(kernel, cfg),
                            stride=2, padding=1)
    assert out.shape == (1, 2, 4, 4, 1, 16)
    np.testing.assert_array_equal(ops.unpack_nchw(out), epilogue(ref_conv2d(data, kernel, 2, 1)))


def test_conv2d_overlaps_engines_with_two_virtual_threads(device, rng):
    """Two halves per scratchpad: tokens flow every step and the stream stays balanced."""
    data = rng.integers(-128, 128, (1, 64, 28, 28), dtype=np.int8)
    kernel = rng.integers(-128, 128, (64, 64, 3, 3), dtype=np.int8)
    cfg = device.cfg
    plan = ops.plan_conv2d(cfg, (1, 4, 28, 28), (4, 4, 3, 3), 1, 1)
    out, stats = ops.conv2d(device, data, kernel, padding=1, return_stats=True)
    np.testing.assert_array_equal(out, epilogue(ref_conv2d(data, kernel, 1, 1)))
    steps = plan.tiles * plan.chunks
    assert plan.tiles >= 2
    # compute releases an input half after every step (+2 granted at the start)
    assert stats.g2l_tokens == steps + 2
    assert stats.l2g_tokens == steps + 1  # one per step, one in the synchronize tail
    assert stats.g2s_tokens == plan.tiles


@pytest.mark.parametrize("options", [{"force_serial": True}, {"max_insns": 64}])
def test_conv2d_queue_options(open_dev, rng, options):
    dev = open_dev("tiny")
    data = rng.integers(-128, 128, (1, 8, 12, 12), dtype=np.int8)
    kernel = rng.integers(-128, 128, (8, 8, 3, 3), dtype=np.int8)
    out, stats = ops.conv2d(dev, data, kernel, padding=1, return_stats=True,
                            queue_options=options)
    np.testing.assert_array_equal(out, epilogue(ref_conv2d(data, kernel, 1, 1)))
    if "max_insns" in options:  # synchronised at tile boundaries, tokens balanced
        assert stats.runs > 1


def test_conv2d_argument_errors(device):
    data = np.zeros((1, 16, 8, 8), np.int8)
    with pytest.raises(ValueError, match=r"padding must be smaller than the kernel \(3x3\), not "
                                         r"\(3, 3\)"):
        ops.conv2d(device, data, np.zeros((16, 16, 3, 3), np.int8), padding=3)
    with pytest.raises(ValueError, match="kernel expects 8 input channels, data has 16"):
        ops.conv2d(device, data, np.zeros((16, 8, 3, 3), np.int8))
    with pytest.raises(ValueError, match=r"stride must be in 1\.\.15, not 0"):
        ops.conv2d(device, data, np.zeros((16, 16, 3, 3), np.int8), stride=0)
    with pytest.raises(ValueError, match=r"a 9x9 kernel with padding \(0, 0\) does not fit a 8x8 "
                                         "input"):
        ops.conv2d(device, data, np.zeros((16, 16, 9, 9), np.int8))
    with pytest.raises(ValueError, match="the input is 65536 entries wide: LOAD strides are "
                                         "16-bit, so at most 65535"):
        ops.plan_conv2d(device.cfg, (1, 1, 1, 65536), (1, 1, 1, 1))
    assert ops.plan_conv2d(device.cfg, (1, 1, 1, 65535), (1, 1, 1, 1)).w == 65535  # the limit
    with pytest.raises(ValueError, match=r"1 input-channel blocks x 256x256 kernel positions = "
                                         "65536 weight entries per output block"):
        ops.plan_conv2d(device.cfg, (1, 1, 256, 256), (1, 1, 256, 256))


@pytest.mark.slow
@pytest.mark.parametrize("layer", list(RESNET18))
def test_conv2d_resnet18_tiny_preset(open_dev, rng, layer):
    """The same layers tiled for the tiny preset's 4x4 blocks and small scratchpads."""
    _resnet_case(open_dev("tiny"), rng, layer)


# ------------------------------------------------------------- the planner's choices
def _one_plan_per_structure(cfg, data_shape, kernel_shape, stride, pad, residual=False):
    """The best-predicted plan of every (split_kernel, loops) the planner considers."""
    seen = {}
    for plan in ops.conv2d_plans(cfg, data_shape, kernel_shape, stride, pad, True, residual):
        seen.setdefault((plan.split_kernel, plan.loops), plan)
    return list(seen.values())


@pytest.mark.parametrize("preset, stride, pad, k", [("tiny", 1, 1, 3), ("tiny", 2, 0, 1),
                                                     ("default", 2, 1, 3)])
def test_conv2d_every_loop_structure_is_exact(open_dev, backend, rng, preset, stride, pad, k):
    """Every way the planner may lay a GEMM's loops and kernel gives the reference's result."""
    if backend == "icarus" and k == 3:
        pytest.skip("twelve 3x3 plans take Icarus about 30 s: its 1x1 case runs")
    dev = open_dev(preset)
    cfg = dev.cfg
    c, o = 2 * cfg.BLOCK_IN, 3 * cfg.BLOCK_OUT
    data = rng.integers(-128, 128, (1, c, 6, 5), dtype=np.int8)
    kernel = rng.integers(-128, 128, (o, c, k, k), dtype=np.int8)
    bias = rng.integers(-3000, 3000, o).astype(np.int32)
    expected = epilogue(ref_conv2d(data, kernel, stride, pad), bias[None, :, None, None], 5,
                        False, (-100, 100))
    plans = _one_plan_per_structure(cfg, ops.pack_nchw(data, cfg).shape,
                                    ops.pack_oihw(kernel, cfg).shape, stride, pad)
    assert len({p.loops for p in plans}) == 6  # every loop pair occurs
    for plan in plans:
        out = ops.conv2d(dev, data, kernel, stride=stride, padding=pad, bias=bias, shift=5,
                         clip=(-100, 100), tiling=plan.tiling)
        np.testing.assert_array_equal(out, expected, err_msg=str(plan.tiling))


def test_tiling_argument_and_its_errors():
    cfg = vta.Config.load("default")
    shapes = ((1, 4, 14, 14), (4, 4, 3, 3))
    plan = ops.plan_conv2d(cfg, *shapes, 1, 1, True)
    assert ops.plan_conv2d(cfg, *shapes, 1, 1, True, tiling=plan.tiling) == plan
    other = dict(plan.tiling, tob=1, th=2, tw=14, tcb=2, split_kernel=True, loops="oc")
    assert ops.plan_conv2d(cfg, *shapes, 1, 1, True, tiling=other).tiling == other
    with pytest.raises(ValueError, match="does not fit this layer on default"):
        ops.plan_conv2d(cfg, *shapes, 1, 1, True, tiling=dict(other, tcb=3))  # not a divisor
    with pytest.raises(ValueError, match="does not fit this layer on default"):
        ops.plan_conv2d(cfg, *shapes, 1, 1, True, tiling=dict(other, loops="cc"))
    with pytest.raises(ValueError, match="not one of ConvPlan.tiling's form"):
        ops.plan_conv2d(cfg, *shapes, 1, 1, True, tiling={"tob": 1})


def test_planner_reads_the_tuning_log(tmp_path):
    import json

    from vta.tune import log

    cfg = vta.Config.load("default")
    shapes = ((1, 4, 14, 14), (4, 4, 3, 3))
    key = (1, 4, 14, 14, 4, 3, 3, 1, 1, 1, 1, True, False)
    analytic = ops.plan_conv2d(cfg, *shapes, 1, 1, True)
    tuned = dict(analytic.tiling, th=7, tw=14, tcb=1, loops="oy")
    entry = {"type": "entry", "signature": log.signature(cfg), "op": "conv2d",
             "shape": list(key), "tiling": tuned, "cycles": 1000}
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps(entry) + "\n" + json.dumps(dict(entry, cycles=900, tiling=dict(
        tuned, tcb=3))) + "\n" + json.dumps(dict(entry, cycles=1100, tiling=analytic.tiling))
                    + "\n{\"type\": \"entr")  # a torn last line is skipped
    with log.use(path):
        # the fewest cycles win, but that entry's tiling no longer fits: the planner's own plan
        assert ops.plan_conv2d(cfg, *shapes, 1, 1, True) == analytic
        path.write_text(json.dumps(entry) + "\n")
        assert ops.plan_conv2d(cfg, *shapes, 1, 1, True).tiling == tuned
        other = vta.Config.load("aws")  # another configuration's layer is not in the log
        assert ops.plan_conv2d(other, *shapes, 1, 1, True).tiling == \
            ops.conv2d_plans(other, *shapes, 1, 1, True)[0].tiling
    with log.use(None):
        assert ops.plan_conv2d(cfg, *shapes, 1, 1, True) == analytic
    path.write_text("not json\n" + json.dumps(entry) + "\n")
    with log.use(path), pytest.raises(ValueError, match=r"t.jsonl:1: not a JSON line"):
        ops.plan_conv2d(cfg, *shapes, 1, 1, True)


# ---------------------------------------------------------------- roofline
@pytest.mark.parametrize("layer", ["C4", "C9"])
def test_bound_never_exceeds_a_run(open_dev, backend, rng, layer):
    """A lower bound: no run of the layer, on any backend that counts cycles, beats it."""
    dev = open_dev("default")
    h, w, c, o, k, p, s = ops.RESNET18_LAYERS[layer]
    data = rng.integers(-128, 128, (1, c, h, w), dtype=np.int8)
    kernel = rng.integers(-128, 128, (o, c, k, k), dtype=np.int8)
    bias = rng.integers(-1000, 1000, o).astype(np.int32)
    _, stats = ops.conv2d(dev, data, kernel, stride=s, padding=p, bias=bias, shift=8,
                          clip=(0, 127), return_stats=True)
    b = ops.conv2d_bound(dev.cfg, ops.pack_nchw(data, dev.cfg).shape,
                         ops.pack_oihw(kernel, dev.cfg).shape, stride=s, padding=p, bias=True,
                         shift=8, clip=(0, 127))
    # the work the run did is at least the minimal work
    assert stats.gemm_uops == b.work.gemm_uops and stats.alu_uops >= b.work.alu_uops
    assert stats.inp_load_bytes >= b.work.inp_bytes
    assert stats.wgt_load_bytes >= b.work.wgt_bytes
    if backend == "golden":
        assert stats.cycles is None
    else:
        assert stats.cycles >= b.cycles


# ------------------------------------------------------------- folded residual adds
@pytest.mark.parametrize("c, h, w, o, k, s, p", [(2, 9, 7, 3, 3, 1, 1), (2, 8, 8, 2, 1, 2, 0)])
def test_conv2d_with_a_folded_add_equals_conv_then_add(open_dev, backend, rng, c, h, w, o, k,
                                                       s, p):
    """The add done in the convolution's tiles gives emit_add's result on the stored output,
    for every loop structure the planner may pick."""
    dev = open_dev("tiny")
    cfg = dev.cfg
    bi = cfg.BLOCK_IN
    data = ops.pack_nchw(rng.integers(-128, 128, (1, c * bi, h, w), dtype=np.int8), cfg)
    kernel = ops.pack_oihw(rng.integers(-128, 128, (o * bi, c * bi, k, k), dtype=np.int8), cfg)
    bias = rng.integers(-3000, 3000, o * bi).astype(np.int32)
    conv = dict(stride=s, padding=p, bias=bias, shift=7, clip=(-128, 127))
    y = ops.conv2d_packed(dev, data, kernel, **conv)
    other = rng.integers(-128, 128, y.shape, dtype=np.int8)
    for kw in (dict(a_lshift=1, offset=1, shift=1, clip=(0, 127)),
               dict(b_lshift=2, relu=True)):
        want = ops.add(dev, y, other, **kw)
        res = ops.Residual.of_shifts(kw.get("a_lshift", 0), kw.get("b_lshift", 0),
                                     kw.get("offset", 0), kw.get("shift", 0),
                                     kw.get("relu", False), kw.get("clip"))
        plans = _one_plan_per_structure(cfg, data.shape, kernel.shape, s, p, residual=True)
        for plan in plans[:6 if backend != "icarus" else 1]:
            got, stats = ops.conv2d_packed(dev, data, kernel, **conv, residual=res, other=other,
                                           tiling=plan.tiling, return_stats=True)
            np.testing.assert_array_equal(got, want, err_msg=str(plan.tiling))
        b = ops.conv2d_bound(cfg, data.shape, kernel.shape, **dict(conv, bias=True),
                             residual=res)
        assert stats.gemm_uops == b.work.gemm_uops  # the convolution's and one per entry
        assert stats.acc8_load_bytes == 0 and stats.alu_uops >= b.work.alu_uops


def test_folded_add_refusals(device):
    cfg = device.cfg
    data = np.zeros((1, 1, 4, 4, cfg.BATCH, cfg.BLOCK_IN), np.int8)
    kernel = np.zeros((1, 1, 3, 3, cfg.BLOCK_OUT, cfg.BLOCK_IN), np.int8)
    other = np.zeros((1, 1, 4, 4, cfg.BATCH, cfg.BLOCK_OUT), np.int8)
    with pytest.raises(ValueError, match="by an int8 weight, not 128"):
        ops.conv2d_packed(device, data, kernel, padding=1, clip=(-128, 127),
                          residual=ops.Residual.of_shifts(other_lshift=7), other=other)
    with pytest.raises(ValueError, match=r"clamped within int8 .*, not \(-200, 127\)"):
        ops.conv2d_packed(device, data, kernel, padding=1, clip=(-200, 127),
                          residual=ops.Residual(), other=other)
    with pytest.raises(ValueError, match="clamped within int8 .*, not no clamp"):
        ops.conv2d_packed(device, data, kernel, padding=1, residual=ops.Residual(),
                          other=other)
    # an epilogue ending MIN then MAX clamps as well; a row step after the clamp does not
    clamped = ops.Epilogue(0, (), ((AluOp.MIN, 100, False), (AluOp.MAX, -5, False)))
    assert ops.epilogue._final_clamp(clamped) == (-5, 100)
    assert ops.Residual.of_steps([], [(AluOp.ADD, 3)], []) is None  # a zero point
    assert ops.Residual.of_steps([], [(AluOp.MUL, 99)], []).other_mult == 99
    with pytest.raises(ValueError, match=r"must have the output's packed shape"):
        ops.conv2d_packed(device, data, kernel, padding=1, clip=(-128, 127),
                          residual=ops.Residual(), other=other[:, :, :2])

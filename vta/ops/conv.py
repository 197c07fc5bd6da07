"""The convolution operators: ``conv2d``, ``dense`` and ``matmul`` on a device, and
``emit_conv2d`` for operands already in device buffers (the graph runtime).

Each call packs its operands (:mod:`vta.ops.layout`), plans the tiling
(:mod:`vta.ops.plan`), queues the stream (:mod:`vta.ops.emit`), runs it and
unpacks the result.  Matmul and dense are the 1x1 convolution of a one-row
image whose columns are the rows of the left operand.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..driver.host import Buffer, RunStats
from ..isa import AluOp
from ..runtime import _MAX_16 as _MAX_STRIDE  # LOAD/STORE strides: 16-bit fields
from ..runtime import CommandQueue
from .emit import _emit_conv
from .epilogue import Epilogue, Residual, _epilogue
from .layout import _as_int8, _ceil_to, pack_nchw, pack_oihw, unpack_nchw
from .plan import ConvPlan, plan_conv2d

#: Upstream's ResNet-18 benchmark layers (batch 1): name -> (H, W, C_in, C_out, kernel, pad,
#: stride), from TVM's vta/tests/python/integration/test_benchmark_topi_conv2d.py.
RESNET18_LAYERS: dict[str, tuple[int, int, int, int, int, int, int]] = {
    "C2": (56, 56, 64, 64, 3, 1, 1),
    "C3": (56, 56, 64, 128, 3, 1, 2),
    "C4": (56, 56, 64, 128, 1, 0, 2),
    "C5": (28, 28, 128, 128, 3, 1, 1),
    "C6": (28, 28, 128, 256, 3, 1, 2),
    "C7": (28, 28, 128, 256, 1, 0, 2),
    "C8": (14, 14, 256, 256, 3, 1, 1),
    "C9": (14, 14, 256, 512, 3, 1, 2),
    "C10": (14, 14, 256, 512, 1, 0, 2),
    "C11": (7, 7, 512, 512, 3, 1, 1),
}



def _run_packed_conv(dev, data: np.ndarray, kernel: np.ndarray, stride, padding,
                     bias: np.ndarray | None, epi: Epilogue, queue_options: dict | None,
                     tiling: dict | None = None, residual: Residual | None = None,
                     other: np.ndarray | None = None) -> tuple[np.ndarray, RunStats | None]:
    cfg = dev.cfg
    b, bi, bo = cfg.BATCH, cfg.BLOCK_IN, cfg.BLOCK_OUT
    if data.shape[4:] != (b, bi):
        raise ValueError(f"packed data must end in ({b}, {bi}) (BATCH, BLOCK_IN), not "
                         f"{data.shape[4:]}")
    if kernel.shape[4:] != (bo, bi):
        raise ValueError(f"packed kernel must end in ({bo}, {bi}) (BLOCK_OUT, BLOCK_IN), not "
                         f"{kernel.shape[4:]}")
    plan = plan_conv2d(cfg, data.shape, kernel.shape, stride, padding, epi.rows, tiling,
                       residual is not None)
    out_shape = (plan.nb, plan.ob, plan.oh, plan.ow, b, bo)
    if residual is not None:
        residual.check(epi)
        other = _as_int8("other", other, 6)
        if other.shape != out_shape:
            raise ValueError(f"other (the residual operand) must have the output's packed "
                             f"shape {out_shape}, not {other.shape}")
    buffers: list[Buffer] = []

    def alloc(nbytes: int, name: str) -> Buffer:
        buf = dev.alloc(max(nbytes, 1), name=name)
        buffers.append(buf)
        return buf

    try:
        data_buf = alloc(data.nbytes, "data")
        dev.write(data_buf, np.ascontiguousarray(data))
        wgt_buf = alloc(kernel.nbytes, "weights")
        dev.write(wgt_buf, np.ascontiguousarray(kernel))
        bias_buf = None
        if epi.rows:
            packed_bias = np.broadcast_to(bias.reshape(plan.ob, 1, bo), (plan.ob, b, bo))
            bias_buf = alloc(packed_bias.size * 4, "bias")
            dev.write(bias_buf, np.ascontiguousarray(packed_bias, dtype="<i4"))
        out_buf = alloc(int(np.prod(out_shape)), "out")
        res_buf = id_buf = None
        if residual is not None:
            res_buf = alloc(other.nbytes, "other")
            dev.write(res_buf, np.ascontiguousarray(other))
            id_buf = alloc(cfg.WGT_ELEM_BYTES, "identity")
            dev.write(id_buf, residual.weights(cfg))
        with CommandQueue(dev, **(queue_options or {})) as q:
            _emit_conv(q, plan, epi, data_buf, wgt_buf, bias_buf, out_buf, residual, res_buf,
                       id_buf)
            q.synchronize()
            stats = RunStats.total(q.history)
        out = dev.read(out_buf, int(np.prod(out_shape))).view(np.int8).reshape(out_shape)
    finally:
        for buf in buffers:
            dev.free(buf)
    return out, stats


def conv2d_packed(dev, data: np.ndarray, kernel: np.ndarray, *,
                  stride: int | Sequence[int] = 1, padding: int | Sequence[int] = 0,
                  bias: np.ndarray | None = None, shift: int = 0, relu: bool = False,
                  clip: tuple[int, int] | None = None, return_stats: bool = False,
                  queue_options: dict | None = None, tiling: dict | None = None,
                  residual: Residual | None = None, other: np.ndarray | None = None):
    """2-D convolution of packed int8 tensors on ``dev``.

    Parameters
    ----------
    dev : Device
        An open device.
    data : numpy.ndarray
        int8 activations, packed NCHW{b}n{bi}c: (N/b, C/bi, H, W, b, bi).
    kernel : numpy.ndarray
        int8 weights, packed OIHW{bo}o{bi}i: (O/bo, C/bi, KH, KW, bo, bi).
    stride, padding : int or (int, int)
        Stride (1..15) and zero padding (0..15, smaller than the kernel) per axis.
    bias : numpy.ndarray, optional
        int32, shape (O,) with O = O/bo * bo: added to the accumulator.
    shift : int
        Arithmetic right shift (0..31) after the bias.
    relu : bool
        Clamp negative values to 0 (after the shift).
    clip : (int, int), optional
        Clamp to [lo, hi] (16-bit bounds) after ReLU.
    return_stats : bool
        Also return the summed :class:`~vta.driver.host.RunStats` of the runs.
    queue_options : dict, optional
        Keyword options for :class:`~vta.runtime.CommandQueue` (``dump``,
        ``force_serial``, ``max_insns`` ...).
    tiling : dict, optional
        The tiling to use (a :attr:`ConvPlan.tiling`; default: :func:`plan_conv2d`'s).
    residual, other : Residual and numpy.ndarray, optional
        Fold an element-wise add of the result and ``other`` (int8, the
        output's packed shape) into the convolution (:class:`Residual`).

    Returns
    -------
    numpy.ndarray
        int8 (N/b, O/bo, OH, OW, b, bo): the low 8 bits of the epilogue result.
    """
    data = _as_int8("data", data, 6)
    kernel = _as_int8("kernel", kernel, 6)
    n_out = kernel.shape[0] * kernel.shape[4]
    epi, bias = _epilogue(bias, n_out, shift, relu, clip)
    out, stats = _run_packed_conv(dev, data, kernel, stride, padding, bias, epi, queue_options,
                                  tiling, residual, other)
    return (out, stats) if return_stats else out


def conv2d(dev, data: np.ndarray, kernel: np.ndarray, *, stride: int | Sequence[int] = 1,
           padding: int | Sequence[int] = 0, bias: np.ndarray | None = None, shift: int = 0,
           relu: bool = False, clip: tuple[int, int] | None = None, return_stats: bool = False,
           queue_options: dict | None = None, tiling: dict | None = None):
    """2-D convolution of NCHW int8 activations with OIHW int8 weights on ``dev``.

    Any N, C and O: they are padded to the block sizes for you (see
    :func:`pack_nchw`, :func:`pack_oihw`).  ``bias`` has shape (O,).  Other
    parameters as in :func:`conv2d_packed`; returns NCHW int8 (N, O, OH, OW).
    """
    data = _as_int8("data", data, 4)
    kernel = _as_int8("kernel", kernel, 4)
    n, c, _, _ = data.shape
    o, c2, _, _ = kernel.shape
    if c2 != c:
        raise ValueError(f"kernel expects {c2} input channels, data has {c}")
    cfg = dev.cfg
    o_pad = _ceil_to(o, cfg.BLOCK_OUT)
    epi, bias = _epilogue(bias, o, shift, relu, clip)
    if bias is not None:
        bias = np.concatenate([bias, np.zeros(o_pad - o, dtype=np.int32)])
    out, stats = _run_packed_conv(dev, pack_nchw(data, cfg), pack_oihw(kernel, cfg), stride,
                                  padding, bias, epi, queue_options, tiling)
    result = unpack_nchw(out, n, o)
    return (result, stats) if return_stats else result


def dense(dev, x: np.ndarray, w: np.ndarray, *, bias: np.ndarray | None = None, shift: int = 0,
          relu: bool = False, clip: tuple[int, int] | None = None, return_stats: bool = False,
          queue_options: dict | None = None, tiling: dict | None = None):
    """``x @ w.T`` (+ bias, epilogue) for int8 ``x`` (M, K) and ``w`` (N, K), int32 accumulation.

    Any M, K, N (padded to the block sizes for you); ``bias`` has shape (N,).
    Returns int8 (M, N): the low 8 bits of the epilogue result (use ``clip``
    or ``shift`` to keep values in range).
    """
    x = _as_int8("x", x, 2)
    w = _as_int8("w", w, 2)
    m, k = x.shape
    n, k2 = w.shape
    if k2 != k:
        raise ValueError(f"w has {k2} columns, x has {k} (both must be K)")
    cfg = dev.cfg
    b, bi, bo = cfg.BATCH, cfg.BLOCK_IN, cfg.BLOCK_OUT
    mp, kp, np_ = _ceil_to(m, b), _ceil_to(k, bi), _ceil_to(n, bo)
    if mp // b > _MAX_STRIDE:  # the rows of x are the columns of a one-row image
        raise ValueError(f"x has {m} rows: dense takes at most {_MAX_STRIDE * b} per call "
                         f"(a 16-bit LOAD stride, {_MAX_STRIDE} x BATCH); split x into chunks")
    epi, bias = _epilogue(bias, n, shift, relu, clip)
    if bias is not None:
        bias = np.concatenate([bias, np.zeros(np_ - n, dtype=np.int32)])
    xp = np.zeros((mp, kp), dtype=np.int8)
    xp[:m, :k] = x
    wp = np.zeros((np_, kp), dtype=np.int8)
    wp[:n, :k] = w
    # a one-row image whose columns are the rows of x: (1, K/bi, 1, M/b, b, bi)
    data = xp.reshape(mp // b, b, kp // bi, bi).transpose(2, 0, 1, 3)[None, :, None]
    kernel = wp.reshape(np_ // bo, bo, kp // bi, bi).transpose(0, 2, 1, 3)[:, :, None, None]
    out, stats = _run_packed_conv(dev, np.ascontiguousarray(data), np.ascontiguousarray(kernel),
                                  1, 0, bias, epi, queue_options, tiling)
    # (1, N/bo, 1, M/b, b, bo) -> (M, N)
    result = out[0, :, 0].transpose(1, 2, 0, 3).reshape(mp, np_)[:m, :n]
    result = np.ascontiguousarray(result)
    return (result, stats) if return_stats else result


def matmul(dev, a: np.ndarray, b: np.ndarray, **kwargs):
    """``a @ b`` for int8 ``a`` (M, K) and ``b`` (K, N); keywords as in :func:`dense`."""
    b = _as_int8("b", b, 2)
    return dense(dev, a, np.ascontiguousarray(b.T), **kwargs)


def emit_conv2d(q: CommandQueue, data_shape: Sequence[int], kernel_shape: Sequence[int],
                data: Buffer, kernel: Buffer, out: Buffer, *,
                stride: int | Sequence[int] = 1, padding: int | Sequence[int] = 0,
                bias: Buffer | None = None, shift: int = 0, relu: bool = False,
                clip: tuple[int, int] | None = None,
                epilogue: Epilogue | None = None, tiling: dict | None = None,
                residual: Residual | None = None, other: Buffer | None = None,
                identity: Buffer | None = None) -> ConvPlan:
    """Queue a packed convolution whose operands are already in device buffers.

    For callers that keep tensors on the device across layers (the graph
    runtime).  ``data``, ``kernel`` and ``out`` hold the packed layouts of
    :func:`conv2d_packed` for the packed shapes ``data_shape`` and
    ``kernel_shape``; ``bias`` holds int32 (O/bo, BATCH, BLOCK_OUT), one value
    per output channel repeated over the batch lanes.  With ``epilogue`` (an
    :class:`Epilogue`), ``bias`` holds its rows instead and ``shift``,
    ``relu`` and ``clip`` are not used.  With ``residual``, ``out`` receives
    the folded add of the convolution and ``other`` (int8 in the output's
    packed layout; see :class:`Residual`), ``identity`` holding
    :meth:`Residual.weights`.  ``tiling`` as in :func:`conv2d_packed`.
    Nothing runs until ``q.synchronize()``.  Returns the tiling used
    (:func:`plan_conv2d`).
    """
    if epilogue is None:
        epilogue, _ = _epilogue(None, 0, shift, relu, clip)  # checks the arguments
        if bias is not None:
            epilogue = Epilogue(1, (), ((AluOp.ADD, 0, True),) + epilogue.steps)
    epilogue.check()
    if epilogue.rows and bias is None:
        raise ValueError(f"the epilogue has {epilogue.rows} rows: give their buffer as bias")
    if residual is not None:
        residual.check(epilogue)
        if other is None or identity is None:
            raise ValueError("a folded add (residual) needs its other operand's buffer (other) "
                             "and its weights' (identity)")
    plan = plan_conv2d(q.cfg, data_shape, kernel_shape, stride, padding, epilogue.rows, tiling,
                       residual is not None)
    _emit_conv(q, plan, epilogue, data, kernel, bias, out, residual, other, identity)
    return plan

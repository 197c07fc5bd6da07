"""Operators on VTA: int8 matmul / dense and conv2d, tiled and double-buffered.

Every operator takes NumPy arrays in the user's layout, packs them into VTA's
blocked layouts, builds one instruction stream with :class:`vta.runtime.CommandQueue`,
runs it on a :class:`vta.device.Device` and returns NumPy arrays.

Arithmetic (exact, as the hardware does it)::

    acc = sum(int8 * int8)        int32, wrapping modulo 2**32
    acc = acc + bias              if bias is given (int32 per output channel)
    acc = acc >> shift            arithmetic, if shift > 0
    acc = max(acc, 0)             if relu
    acc = min(max(acc, lo), hi)   if clip = (lo, hi)
    out = low 8 bits of acc       int8 (two's complement wrap, no saturation)

Layouts (upstream's packed layouts, ``b = BATCH``, ``bi = BLOCK_IN``, ``bo = BLOCK_OUT``)::

    activations NCHW{b}n{bi}c  (N/b, C/bi, H, W, b, bi)      int8
    weights     OIHW{bo}o{bi}i (O/bo, I/bi, KH, KW, bo, bi)  int8
    outputs     NCHW{b}n{bo}c  (N/b, O/bo, OH, OW, b, bo)    int8

The package, one module per concern (imports flow down this list)::

    layout.py       packing to and from the blocked layouts
    epilogue.py     Epilogue (what finishes an accumulation), Residual (a folded add)
    plan.py         the conv2d planner: tilings, the RTL cost model, the tuning log
    emit.py         a plan's instruction stream: tiles, virtual threads, tokens
    conv.py         conv2d, conv2d_packed, dense, matmul, emit_conv2d
    elementwise.py  add, emit_add (element-wise, on the ALU)
    pool.py         plan_pool2d, emit_pool2d (max and average pooling on the ALU)
    bound.py        each operator's roofline (lower bound in cycles)
"""

from __future__ import annotations

from . import epilogue, plan
from .bound import add_bound, conv2d_bound, dense_bound, pool2d_bound
from .conv import RESNET18_LAYERS, conv2d, conv2d_packed, dense, emit_conv2d, matmul
from .elementwise import add, emit_add
from .epilogue import Epilogue, Residual
from .layout import pack_nchw, pack_oihw, unpack_nchw
from .plan import (
    GEMM_AXES,
    ConvPlan,
    conv2d_output_shape,
    conv2d_plans,
    layer_key,
    plan_conv2d,
    predict_cycles,
)
from .pool import PoolPlan, emit_pool2d, plan_pool2d

__all__ = [
    "GEMM_AXES",
    "RESNET18_LAYERS",
    "ConvPlan",
    "Epilogue",
    "PoolPlan",
    "Residual",
    "add",
    "add_bound",
    "conv2d",
    "conv2d_bound",
    "conv2d_output_shape",
    "conv2d_packed",
    "conv2d_plans",
    "dense",
    "dense_bound",
    "emit_add",
    "emit_conv2d",
    "emit_pool2d",
    "epilogue",
    "layer_key",
    "matmul",
    "pack_nchw",
    "pack_oihw",
    "plan",
    "plan_conv2d",
    "plan_pool2d",
    "pool2d_bound",
    "predict_cycles",
    "unpack_nchw",
]

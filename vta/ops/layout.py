"""VTA's blocked layouts: NCHW activations and OIHW weights packed and unpacked.

Activations are NCHW{b}n{bi}c (N/b, C/bi, H, W, b, bi), weights OIHW{bo}o{bi}i
(O/bo, I/bi, KH, KW, bo, bi), both int8 and zero-padded up to the blocks
(``b = BATCH``, ``bi = BLOCK_IN``, ``bo = BLOCK_OUT``); also the argument checks
the operators share.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..config import Config


def _ceil_to(n: int, unit: int) -> int:
    return -(-n // unit) * unit


def _pack(array: np.ndarray, outer: int, inner: int) -> np.ndarray:
    """4-D (A, B, H, W) -> (A/outer, B/inner, H, W, outer, inner), zero-padding A and B."""
    a, b, h, w = array.shape
    padded = np.zeros((_ceil_to(a, outer), _ceil_to(b, inner), h, w), dtype=np.int8)
    padded[:a, :b] = array
    return np.ascontiguousarray(
        padded.reshape(padded.shape[0] // outer, outer, padded.shape[1] // inner, inner, h, w)
        .transpose(0, 2, 4, 5, 1, 3))


def pack_nchw(data: np.ndarray, cfg: Config) -> np.ndarray:
    """NCHW int8 -> packed (N/b, C/bi, H, W, b, bi), zero-padding N and C up to the blocks."""
    return _pack(_as_int8("data", data, 4), cfg.BATCH, cfg.BLOCK_IN)


def pack_oihw(kernel: np.ndarray, cfg: Config) -> np.ndarray:
    """OIHW int8 -> packed (O/bo, I/bi, KH, KW, bo, bi), zero-padding O and I up to the blocks."""
    return _pack(_as_int8("kernel", kernel, 4), cfg.BLOCK_OUT, cfg.BLOCK_IN)


def unpack_nchw(packed: np.ndarray, n: int | None = None, c: int | None = None) -> np.ndarray:
    """Packed (N/b, C/bc, H, W, b, bc) -> NCHW, cropped to ``n`` images and ``c`` channels."""
    if packed.ndim != 6:
        raise ValueError(f"packed activations must have 6 dimensions, not {packed.ndim}")
    nb, cb, h, w, b, bc = packed.shape
    out = packed.transpose(0, 4, 1, 5, 2, 3).reshape(nb * b, cb * bc, h, w)
    return np.ascontiguousarray(out[:n, :c])


def _as_int8(name: str, array: Any, ndim: int) -> np.ndarray:
    array = np.asarray(array)
    if array.ndim != ndim:
        raise ValueError(f"{name} must have {ndim} dimensions, not {array.ndim} "
                         f"(shape {array.shape})")
    if array.dtype != np.int8:
        raise TypeError(f"{name} must be an int8 array, not {array.dtype}")
    return array


def _pair(name: str, value: int | Sequence[int], lo: int, hi: int) -> tuple[int, int]:
    pair = (value, value) if np.isscalar(value) else tuple(value)
    if len(pair) != 2:
        raise ValueError(f"{name} must be an integer or a pair, not {value!r}")
    for v in pair:
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not lo <= v <= hi:
            raise ValueError(f"{name} must be in {lo}..{hi}, not {value!r}")
    return int(pair[0]), int(pair[1])

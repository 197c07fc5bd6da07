"""The one comparison helper of the tests: expected against actual, and where they part.

``assert_same(got, want, what)`` takes NumPy arrays, byte strings or sequences of
equal-length byte strings (scratchpad entries); a mismatch names ``what``, the shapes
and dtypes when they differ, else how many elements differ, the first differing index
(and its address, given ``base``) and the expected and actual values there.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def as_array(value) -> np.ndarray:
    """``value`` as an array: bytes as uint8, a sequence of byte strings as rows of uint8."""
    if isinstance(value, np.ndarray):
        return value
    if isinstance(value, bytes | bytearray | memoryview):
        return np.frombuffer(bytes(value), dtype=np.uint8)
    if isinstance(value, Sequence) and value and all(isinstance(v, bytes) for v in value):
        return np.frombuffer(b"".join(value), dtype=np.uint8).reshape(len(value), -1)
    return np.asarray(value)


def assert_same(got, want, what: str, *, base: int | None = None) -> None:
    """Fail unless ``got`` equals ``want`` element for element (shape and dtype included).

    ``base``: the address of element 0 of one-dimensional memory, to name the first
    differing byte by its address too.
    """
    g, w = as_array(got), as_array(want)
    if g.shape == w.shape and g.dtype == w.dtype:
        _first_difference(g, w, what, base, "")
        return
    said = f"expected shape {w.shape} {w.dtype}, got shape {g.shape} {g.dtype}"
    same_rows = g.ndim and w.ndim and g.shape[1:] == w.shape[1:] and g.dtype == w.dtype
    n = min(len(g), len(w)) if same_rows else 0
    if n:  # one is longer: where the common part differs first
        _first_difference(g[:n], w[:n], what, base, said + "; ")
    raise AssertionError(f"{what}: {said}" + (f"; the first {n} agree" if n else ""))


def _first_difference(g: np.ndarray, w: np.ndarray, what: str, base: int | None,
                      said: str) -> None:
    diff = np.argwhere(g != w)
    if diff.size:
        first = tuple(int(i) for i in diff[0])
        where = f"[{', '.join(map(str, first))}]"
        if base is not None and len(first) == 1:
            where += f" (address 0x{base + first[0]:x})"
        raise AssertionError(f"{what}: {said}{len(diff)} of {w.size} elements differ, first at "
                             f"{where}: expected {_plain(w[first])!r}, got {_plain(g[first])!r}")


def _plain(value):
    """A NumPy scalar as the Python number it holds (an object array's element is one)."""
    return value.item() if isinstance(value, np.generic) else value

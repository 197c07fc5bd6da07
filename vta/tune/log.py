"""The tuning log: the best measured plan of each layer, as JSON lines.

One line per measured layer (``vta tune`` appends them)::

    {"type": "entry", "config": "default", "signature": "0x1c3a...", "op": "conv2d",
     "shape": [1, 4, 56, 56, 4, 3, 3, 1, 1, 1, 1, true], "tiling": {"tob": 4, ...},
     "cycles": 527313, "analytic": {"tiling": {...}, "cycles": 537338},
     "candidates": 8, "vta": "0.1.0", "backend": "verilator", "time": "2026-..."}

The key is (configuration signature, operator, layer shape); ``shape`` is
the layer key of :func:`vta.ops.plan_conv2d` (packed shape, stride, padding,
bias).  A key's entry with the fewest cycles wins.  :func:`vta.ops.plan_conv2d`
asks :func:`lookup` for every layer it plans; the log it reads is, in order:
the one given to :func:`use`, ``$VTA_TUNING_LOG`` (empty: no log), or
``tuning.jsonl`` in the build cache folder (``~/.cache/vta``), where
``vta tune`` writes by default.  An entry whose tiling does not fit the
layer (a log from another version of the planner) is ignored by the planner.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..config import Config

__all__ = ["DEFAULT_NAME", "active_path", "default_path", "entries", "lookup", "use"]

#: File name of the default log in the build cache folder.
DEFAULT_NAME = "tuning.jsonl"
_override: list[Path | None] = []
_cache: dict[Path, tuple[tuple[int, int], dict[tuple, dict[str, Any]]]] = {}


def default_path() -> Path:
    """``tuning.jsonl`` in the build cache folder (``$VTA_CACHE_DIR`` or ``~/.cache/vta``)."""
    from ..hdltools.build import cache_root

    return cache_root() / DEFAULT_NAME


def active_path() -> Path | None:
    """The log :func:`lookup` reads (None: no log)."""
    if _override:
        return _override[-1]
    env = os.environ.get("VTA_TUNING_LOG")
    if env is not None:
        return Path(env) if env else None
    return default_path()


@contextlib.contextmanager
def use(path: str | Path | None) -> Iterator[None]:
    """Read tuning entries from ``path`` inside the block (None: no log at all)."""
    _override.append(None if path is None else Path(path))
    try:
        yield
    finally:
        _override.pop()


def signature(cfg: Config) -> str:
    return f"0x{cfg.signature:08x}"


def key_of(cfg: Config, op: str, shape: tuple | list) -> tuple:
    return (signature(cfg), op, tuple(shape))


def entries(path: str | Path) -> dict[tuple, dict[str, Any]]:
    """The best entry per key of the log at ``path`` ({} when it does not exist).

    A line that is not a JSON object with the entry fields is an error naming
    the file and line (a torn last line, from a run killed while writing, is
    skipped).
    """
    path = Path(path)
    try:
        st = path.stat()
    except OSError:
        return {}
    stamp = (st.st_mtime_ns, st.st_size)
    cached = _cache.get(path)
    if cached is not None and cached[0] == stamp:
        return cached[1]
    best: dict[tuple, dict[str, Any]] = {}
    text = path.read_text()
    lines = text.split("\n")
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            if number == len(lines) and not text.endswith("\n"):
                continue  # torn last line
            raise ValueError(f"{path}:{number}: not a JSON line ({exc.msg})") from None
        if not isinstance(record, dict) or record.get("type") != "entry":
            continue
        try:
            key = (record["signature"], record["op"], tuple(record["shape"]))
            cycles = int(record["cycles"])
            dict(record["tiling"])
        except (KeyError, TypeError, ValueError):
            raise ValueError(f"{path}:{number}: a tuning entry needs signature, op, shape, "
                             "tiling and cycles") from None
        if key not in best or cycles < int(best[key]["cycles"]):
            best[key] = record
    _cache[path] = (stamp, best)
    return best


def lookup(cfg: Config, op: str, shape: tuple) -> dict[str, Any] | None:
    """The tiling of the active log's best entry for this layer, or None.

    The caller checks that it still fits (:func:`vta.ops.plan_conv2d` ignores
    one that does not).
    """
    path = active_path()
    if path is None:
        return None
    entry = entries(path).get(key_of(cfg, op, shape))
    return None if entry is None else dict(entry["tiling"])

"""Tuning: candidate plans of each distinct layer measured on the RTL, on a Dask cluster.

A *layer* is a packed convolution (or dense layer) as the planner sees it:
the layer key of :func:`vta.ops.plan_conv2d` (packed shape, stride, padding,
bias).  Its *candidates* are the analytic plan and the next best plans of
the planner's cost model (:func:`vta.ops.conv2d_plans`, ``candidates`` in
all).  Each candidate is one task: a worker runs the layer with that tiling
on its device (random int8 data and weights, a bias, ``>> 8`` and a clip),
checks the output against NumPy bit for bit, and returns the run's cycles.
Tasks run on a local Dask cluster or an existing one
(:func:`vta.regress.run.connect`, which also ships this package to remote
workers); each worker keeps one open device per configuration.

Every result is appended to the tuning log as a ``measure`` line as it
arrives, and when the last candidate of a layer is in, the layer's best
becomes an ``entry`` line (:mod:`vta.tune.log`), so an interrupted run
resumes from the log alone: measured candidates are skipped.
"""

from __future__ import annotations

import datetime
import json
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .. import ops
from .._version import __version__
from ..config import Config
from ..errors import VTAError
from ..regress.worker import PACKAGE, where
from . import log as tuning_log

__all__ = ["Layer", "Summary", "Task", "TuneError", "close_devices", "layers_of", "measure",
           "resnet_layers", "tune"]

#: Measured epilogue of every candidate run (the planner's key has only its number of rows),
#: and the add folded into a layer that folds one (ResNet's most common: (2y + r + 1) >> 1).
SHIFT, CLIP = 8, (0, 127)
RESIDUAL = ops.Residual.of_shifts(conv_lshift=1, offset=1, shift=1, clip=(0, 127))


class TuneError(VTAError):
    """A tuning run that cannot start: names what is wrong."""


@dataclass(frozen=True)
class Layer:
    """A distinct layer to tune: its planner key and the nodes that have it."""

    shape: tuple  # (nb, cb, h, w, ob, kh, kw, sh, sw, ph, pw, rows, residual): plan_conv2d's key
    names: tuple[str, ...] = ()

    @property
    def data_shape(self) -> tuple[int, int, int, int]:
        return self.shape[:4]

    @property
    def kernel_shape(self) -> tuple[int, int, int, int]:
        nb, cb, h, w, ob, kh, kw = self.shape[:7]
        return (ob, cb, kh, kw)

    @property
    def stride(self) -> tuple[int, int]:
        return self.shape[7:9]

    @property
    def padding(self) -> tuple[int, int]:
        return self.shape[9:11]

    @property
    def label(self) -> str:
        """``CBxHxW:OB KHxKW/S``: blocks of input channels, rows, columns, output blocks,
        kernel, stride (``+add``: a residual add folded in)."""
        nb, cb, h, w, ob, kh, kw, sh, sw, ph, pw, _, residual = self.shape
        return f"{cb}x{h}x{w}:{ob} {kh}x{kw}/{sh}" + (" +add" if residual else "")

    def plans(self, cfg: Config, candidates: int) -> list[dict[str, Any]]:
        """The tilings to measure: the analytic plan first, then the best predicted others."""
        plans = ops.conv2d_plans(cfg, self.data_shape, self.kernel_shape, self.stride,
                                 self.padding, self.shape[11], self.shape[12])
        return [p.tiling for p in plans[:candidates]]


@dataclass(frozen=True)
class Task:
    """One candidate plan of one layer: everything a worker needs, picklable."""

    backend: str
    config: dict[str, Any]
    shape: tuple
    tiling: dict[str, Any]
    analytic: bool = False
    seed: int = 0

    @property
    def cfg(self) -> Config:
        keys = dict(self.config)
        return Config.from_dict(keys, name=keys.pop("name", "custom"))


def layers_of(model: Any, cfg: Config, input_shapes: Mapping[str, tuple] | None = None,
              batch: int = 1) -> list[Layer]:
    """The distinct VTA conv/dense layers of an ONNX model (path or ``ModelProto``).

    ``input_shapes`` default: the model's declared input shapes with ``batch``
    for a dynamic first dimension.
    """
    from .. import graph
    from ..device import open_device
    from ..graph.executor import Executor

    g = graph.load_onnx(model)
    if input_shapes is None:
        input_shapes = {}
        for name in g.inputs:
            shape = g.values[name].shape
            if shape is None or any(d is None for d in shape[1:]):
                raise TuneError(f"input {name!r} has no fixed shape {shape}: give the input "
                                "shapes")
            input_shapes[name] = (batch if shape[0] is None else shape[0], *shape[1:])
    with open_device("golden", cfg) as dev, Executor(g, dev) as ex:
        found = ex.vta_layers(input_shapes)
    by_key: dict[tuple, list[str]] = {}
    for name, (data, kernel, stride, pad, rows, residual) in found.items():
        key = ops.layer_key(data, kernel, stride, pad, rows, residual)
        by_key.setdefault(key, []).append(name)
    return [Layer(key, tuple(names)) for key, names in by_key.items()]


def resnet_layers(names: Iterable[str], cfg: Config) -> list[Layer]:
    """Upstream's ResNet-18 benchmark layers by name (``C2`` .. ``C11``: ``RESNET18_LAYERS``)."""
    out = []
    for name in names:
        if name not in ops.RESNET18_LAYERS:
            raise TuneError(f"unknown layer {name!r}: one of {', '.join(ops.RESNET18_LAYERS)}")
        h, w, c, o, k, p, s = ops.RESNET18_LAYERS[name]
        data = (1, -(-c // cfg.BLOCK_IN), h, w)
        kernel = (-(-o // cfg.BLOCK_OUT), data[1], k, k)
        out.append(Layer(ops.layer_key(data, kernel, s, p, True), (name,)))
    return out


# ------------------------------------------------------------------ workers
_DEVICES: dict[tuple, Any] = {}
_LOCK = threading.Lock()


def _device(backend: str, cfg: Config):
    from ..device import open_device

    # one device per thread: workers that are threads of one process must not share one
    key = (backend, json.dumps(cfg.to_dict(), sort_keys=True), threading.get_ident())
    with _LOCK:
        dev = _DEVICES.get(key)
        if dev is None or dev.closed:
            dev = _DEVICES[key] = open_device(backend, cfg)
        return dev


def close_devices() -> int:
    """Close this process's cached devices (a worker's at the end of a run)."""
    with _LOCK:
        n = len(_DEVICES)
        for dev in _DEVICES.values():
            dev.close()
        _DEVICES.clear()
    return n


def _reference(data: np.ndarray, kernel: np.ndarray, bias: np.ndarray, stride, pad,
               other: np.ndarray | None = None) -> np.ndarray:
    """The layer's exact result on packed operands, in NumPy (int64 sums, then the epilogue;
    with ``other``, :data:`RESIDUAL`'s add of it)."""
    nb, cb, h, w, b, bi = data.shape
    ob, _, kh, kw, bo, _ = kernel.shape
    x = data.transpose(0, 4, 1, 5, 2, 3).reshape(nb * b, cb * bi, h, w).astype(np.float64)
    k = kernel.transpose(0, 4, 1, 5, 2, 3).reshape(ob * bo, cb * bi, kh, kw).astype(np.float64)
    (sh, sw), (ph, pw) = stride, pad
    x = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    oh, ow = (x.shape[2] - kh) // sh + 1, (x.shape[3] - kw) // sw + 1
    acc = np.zeros((nb * b, ob * bo, oh, ow))
    for r in range(kh):
        for s in range(kw):
            win = x[:, :, r:r + sh * (oh - 1) + 1:sh, s:s + sw * (ow - 1) + 1:sw]
            acc += np.einsum("nchw,oc->nohw", win, k[:, :, r, s], optimize=True)
    acc = acc.astype(np.int64) + bias[None, :, None, None]  # exact: |sum| < 2**53
    acc = (acc + (1 << 31)) % (1 << 32) - (1 << 31)  # int32 accumulators wrap
    y = np.clip(acc >> SHIFT, *CLIP).astype(np.int8)
    y = y.reshape(nb, b, ob, bo, oh, ow).transpose(0, 2, 4, 5, 1, 3)
    if other is None:
        return y
    return np.clip(((y.astype(np.int64) << 1) + other + 1) >> 1, 0, 127).astype(np.int8)


def measure(task: Task) -> dict[str, Any]:
    """Run one candidate on this worker's device: its cycles, checked against NumPy."""
    cfg = task.cfg
    layer = Layer(task.shape)
    rng = np.random.default_rng(task.seed)
    b, bi, bo = cfg.BATCH, cfg.BLOCK_IN, cfg.BLOCK_OUT
    nb, cb, h, w, ob, kh, kw = task.shape[:7]
    data = rng.integers(-128, 128, (nb, cb, h, w, b, bi), dtype=np.int8)
    kernel = rng.integers(-128, 128, (ob, cb, kh, kw, bo, bi), dtype=np.int8)
    bias = rng.integers(-(1 << 12), 1 << 12, ob * bo).astype(np.int32)
    residual = RESIDUAL if task.shape[12] else None
    oh, ow = ops.conv2d_output_shape(h, w, kh, kw, layer.stride, layer.padding)
    other = rng.integers(-128, 128, (nb, ob, oh, ow, b, bo), dtype=np.int8) if residual else None
    record = {"type": "measure", "signature": tuning_log.signature(cfg), "config": cfg.name,
              "op": "conv2d", "shape": list(task.shape), "tiling": task.tiling,
              "analytic": task.analytic, "backend": task.backend, "vta": __version__,
              "worker": where(), "package": PACKAGE}
    start = time.perf_counter()
    try:
        dev = _device(task.backend, cfg)
        out, stats = ops.conv2d_packed(dev, data, kernel, stride=layer.stride,
                                       padding=layer.padding, bias=bias, shift=SHIFT, clip=CLIP,
                                       return_stats=True, tiling=task.tiling,
                                       residual=residual, other=other)
    except (VTAError, ValueError) as exc:
        return {**record, "status": "error", "message": f"{type(exc).__name__}: {exc}"}
    record["seconds"] = time.perf_counter() - start
    if not np.array_equal(out, _reference(data, kernel, bias, layer.stride, layer.padding,
                                          other)):
        return {**record, "status": "wrong", "message": "the output differs from NumPy's"}
    if stats.cycles is None:
        return {**record, "status": "error", "message": f"the {task.backend} backend counts "
                "no cycles"}
    return {**record, "status": "ok", "cycles": int(stats.cycles)}


# --------------------------------------------------------------------- run
@dataclass
class LayerResult:
    """A layer's measurements in this run (and in the log before it)."""

    layer: Layer
    expected: int
    measured: list[dict[str, Any]] = field(default_factory=list)

    @property
    def done(self) -> bool:
        return len(self.measured) >= self.expected

    @property
    def ok(self) -> list[dict[str, Any]]:
        return [m for m in self.measured if m.get("status") == "ok"]

    @property
    def best(self) -> dict[str, Any] | None:
        return min(self.ok, key=lambda m: m["cycles"], default=None)

    @property
    def analytic(self) -> dict[str, Any] | None:
        return next((m for m in self.ok if m.get("analytic")), None)


@dataclass
class Summary:
    """What a tuning run measured."""

    cfg: Config
    backend: str
    log: Path
    layers: list[LayerResult]
    workers: int = 0
    seconds: float = 0.0
    startup: float = 0.0
    ran: int = 0  # candidates measured now (not taken from the log)

    def as_dict(self) -> dict[str, Any]:
        rows = []
        for r in self.layers:
            best, analytic = r.best, r.analytic
            bound = ops.conv2d_bound(self.cfg, r.layer.data_shape, r.layer.kernel_shape,
                                     stride=r.layer.stride, padding=r.layer.padding,
                                     bias=True, shift=SHIFT, clip=CLIP,
                                     residual=RESIDUAL if r.layer.shape[12] else None)
            rows.append({"layer": r.layer.label, "nodes": list(r.layer.names),
                         "shape": list(r.layer.shape), "candidates": r.expected,
                         "measured": len(r.ok), "bound": bound.cycles,
                         "analytic_cycles": analytic and analytic["cycles"],
                         "tuned_cycles": best and best["cycles"],
                         "tuned_tiling": best and best["tiling"],
                         "failed": [m for m in r.measured if m.get("status") != "ok"]})
        return {"config": self.cfg.name, "backend": self.backend, "log": str(self.log),
                "workers": self.workers, "seconds": self.seconds, "startup": self.startup,
                "ran": self.ran, "layers": rows}


def _previous(path: Path, cfg: Config) -> dict[tuple, list[dict[str, Any]]]:
    """The measurements already in the log for ``cfg``, by (shape, tiling)."""
    seen: dict[tuple, list[dict[str, Any]]] = {}
    if not path.exists():
        return seen
    tuning_log.entries(path)  # a malformed file is an error naming its line
    sig = tuning_log.signature(cfg)
    for line in path.read_text().splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue  # a torn last line (entries() refused any other)
        if isinstance(record, dict) and record.get("type") == "measure" \
                and record.get("signature") == sig:
            key = (tuple(record["shape"]), json.dumps(record["tiling"], sort_keys=True))
            seen.setdefault(key, []).append(record)
    return seen


def _torn(path: Path) -> None:
    """Cut a log after its last complete line (a run killed while writing)."""
    data = path.read_bytes() if path.exists() else b""
    if data and not data.endswith(b"\n"):
        with open(path, "r+b") as f:
            f.truncate(data.rfind(b"\n") + 1)


def tune(layers: list[Layer], cfg: Config, log: str | Path, *, backend: str = "verilator",
         candidates: int = 8, workers: int | None = None, cluster: str | None = None,
         ship: bool = True, processes: bool = True,
         on_result: Callable[[dict[str, Any], int, int], None] | None = None) -> Summary:
    """Measure ``candidates`` plans of every layer on ``backend`` and log the best of each.

    ``log`` is the tuning log (appended; resumed: candidates it already has
    for this configuration are not measured again).  ``workers``/``cluster``
    as :func:`vta.regress.run.connect`; ``on_result(record, done, total)`` is
    called for every result (progress display).
    """
    try:
        import dask.distributed  # noqa: F401
    except ImportError:
        raise TuneError("vta tune needs Dask: pip install 'vta[tune]'") from None
    from ..regress.run import connect, worker_count

    if backend not in ("verilator", "icarus"):
        raise TuneError(f"tuning measures cycles on an RTL backend (verilator, icarus), not "
                        f"{backend!r}")
    if candidates < 1:
        raise TuneError(f"candidates must be at least 1, not {candidates}")
    path = Path(log)
    path.parent.mkdir(parents=True, exist_ok=True)
    previous = _previous(path, cfg)
    _torn(path)
    config = {**cfg.to_dict(), "name": cfg.name}
    results, tasks = [], []
    for layer in layers:
        tilings = layer.plans(cfg, candidates)
        result = LayerResult(layer, len(tilings))
        for i, tiling in enumerate(tilings):
            old = previous.get((layer.shape, json.dumps(tiling, sort_keys=True)))
            if old:
                result.measured.append({**old[-1], "analytic": i == 0})
            else:
                tasks.append((result, Task(backend, config, layer.shape, tiling, i == 0)))
        results.append(result)
    summary = Summary(cfg, backend, path, results)
    total = sum(r.expected for r in results)
    done = total - len(tasks)
    with open(path, "a") as out:
        def write(record: dict[str, Any]) -> None:
            out.write(json.dumps(record) + "\n")
            out.flush()

        for r in results:  # layers finished in an earlier run whose entry is missing
            if r.done and r.best is not None and not _has_entry(path, cfg, r.layer):
                write(_entry(r))
        start = time.perf_counter()
        if tasks:
            with connect(workers, cluster, processes=processes, ship=ship) as client:
                summary.workers = worker_count(client)
                summary.startup = time.perf_counter() - start
                start = time.perf_counter()
                try:
                    for result, record in _run_tasks(client, tasks):
                        result.measured.append(record)
                        write(record)
                        summary.ran += 1
                        done += 1
                        if result.done and result.best is not None:
                            write(_entry(result))
                        if on_result is not None:
                            on_result(record, done, total)
                finally:
                    client.run(close_devices)
        summary.seconds = time.perf_counter() - start
    return summary


def _has_entry(path: Path, cfg: Config, layer: Layer) -> bool:
    return tuning_log.key_of(cfg, "conv2d", layer.shape) in tuning_log.entries(path)


def _entry(result: LayerResult) -> dict[str, Any]:
    best, analytic = result.best, result.analytic
    return {"type": "entry", "signature": best["signature"], "config": best["config"],
            "op": "conv2d", "shape": best["shape"], "tiling": best["tiling"],
            "cycles": best["cycles"], "candidates": result.expected,
            "analytic": None if analytic is None else {"tiling": analytic["tiling"],
                                                       "cycles": analytic["cycles"]},
            "backend": best["backend"], "vta": __version__,
            "time": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}


def _run_tasks(client, tasks: list[tuple[LayerResult, Task]]):
    """Yield (layer result, record) as the cluster finishes the tasks; cancel them on exit."""
    from dask.distributed import as_completed

    futures = {client.submit(measure, task, pure=False,
                             key=f"vta-tune-{i}-{uuid.uuid4().hex[:6]}"): (result, task)
               for i, (result, task) in enumerate(tasks)}
    try:
        for future in as_completed(list(futures)):
            result, task = futures.pop(future)
            try:
                record = future.result()
            except Exception as exc:  # noqa: BLE001 -- a crashed task is a record too
                record = {"type": "measure", "signature": tuning_log.signature(task.cfg),
                          "config": task.cfg.name, "op": "conv2d", "shape": list(task.shape),
                          "tiling": task.tiling, "analytic": task.analytic,
                          "backend": task.backend, "vta": __version__, "status": "error",
                          "message": f"{type(exc).__name__}: {exc}"}
            yield result, record
    finally:
        if futures:
            client.cancel(list(futures))



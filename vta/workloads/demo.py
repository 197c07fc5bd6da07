"""The workloads of ``vta demo``: each makes its data, runs it on a device and checks it.

Each returns a :class:`WorkloadResult`; the command line prints it.
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np

from ..config import Config


@dataclasses.dataclass
class WorkloadResult:
    """What a demo workload reports: a title, table rows, the check and its JSON summary."""

    title: str
    stats: object
    ok: bool
    message: str
    summary: dict
    rows: list = dataclasses.field(default_factory=list)  # extra (key, value) table rows


def dense_workload(dev, cfg: Config, shape: tuple[int, int, int], seed: int,
                   queue_options: dict | None) -> WorkloadResult:
    """relu((x @ w.T + bias) >> shift) on ``dev``, checked against NumPy."""
    from .. import ops

    m, k, n = shape
    rng = np.random.default_rng(seed)
    x = rng.integers(-128, 128, (m, k), dtype=np.int8)
    w = rng.integers(-128, 128, (n, k), dtype=np.int8)
    bias = rng.integers(-2000, 2000, n, dtype=np.int32)
    shift = 7
    try:
        out, stats = ops.dense(dev, x, w, bias=bias, shift=shift, relu=True, return_stats=True,
                               queue_options=queue_options)
    except ValueError as exc:
        raise ValueError(f"dense {m}x{k}x{n} cannot be built for configuration "
                         f"{cfg.name}: {exc}") from None
    acc = x.astype(np.int64) @ w.astype(np.int64).T + bias
    acc = ((acc + 2**31) % 2**32) - 2**31  # int32 accumulation wraps
    expected = np.maximum(acc >> shift, 0).astype(np.int8)  # the low 8 bits are stored
    title = f"dense {m}x{k} @ ({n}x{k})^T + bias, >> {shift}, ReLU -> int8"
    if np.array_equal(out, expected):
        return WorkloadResult(title, stats, True, f"all {out.size} outputs equal NumPy's",
                              {"outputs": int(out.size), "mismatches": 0})
    bad = np.argwhere(out != expected)[0]
    count = int((out != expected).sum())
    return WorkloadResult(
        title, stats, False,
        f"{count} of {out.size} outputs differ; first at {tuple(int(i) for i in bad)}: got "
        f"{out[tuple(bad)]}, expected {expected[tuple(bad)]}",
        {"outputs": int(out.size), "mismatches": count})


def digits_workload(dev, cfg, images: int, queue_options: dict | None):
    """The bundled digits CNN on ``images`` held-out images (one batch), for ``vta demo``.

    Returns a :class:`WorkloadResult`: accuracy (VTA, the int8
    reference, the float model, onnxruntime when installed), cycles, GEMM
    utilisation per VTA layer and overall, images/s, and whether the run equals
    the int8 reference bit for bit.
    """
    from ..graph import judge, load_onnx, run_reference
    from ..graph.executor import Executor
    from ..graph.models import digits_model, digits_test_set
    from ..graph.reference import first_mismatch

    graph = load_onnx(digits_model())
    x, labels = digits_test_set()
    if not 1 <= images <= len(labels):
        raise ValueError(f"images must be in 1..{len(labels)}, not {images}")
    x, labels = x[:images], labels[:images]
    with Executor(graph, dev, queue_options=queue_options) as ex:
        start = time.perf_counter()
        ours = ex.run({"input": x})
        wall = time.perf_counter() - start
        report = ex.report()
    ref = run_reference(graph, {"input": x})
    mismatch = first_mismatch(graph, ours, ref)
    accuracy = {"vta": float((ours["logits"].argmax(1) == labels).mean()),
                "int8_reference": float((ref["logits"].argmax(1) == labels).mean()),
                "float_model_all_held_out": float(graph.metadata["float_accuracy"])}
    agreement = None
    if judge.onnxruntime_available():
        theirs = judge.run_onnxruntime(digits_model(), {"input": x})
        accuracy["onnxruntime"] = float((theirs["logits"].argmax(1) == labels).mean())
        agreement = judge.compare(graph, ref, theirs)[0]
    rows = [("network", f"digits CNN ({digits_model().name}), {images} held-out 8x8 images "
                        "in one batch"),
            ("accuracy", f"VTA {accuracy['vta']:.2%}, int8 reference "
                         f"{accuracy['int8_reference']:.2%}"
                         + (f", onnxruntime {accuracy['onnxruntime']:.2%}" if agreement else "")
                         + f" (float model: {accuracy['float_model_all_held_out']:.2%} on all "
                           f"{len(digits_test_set()[1])})")]
    for n in report.nodes:
        if n.placement == "vta":
            util = n.gemm_utilisation(cfg)
            parts = [f"{n.seconds * 1e3:.1f} ms"]
            if n.cycles is not None:
                parts.append(f"{n.cycles:,} cycles")
            if util is not None:
                parts.append(f"GEMM utilisation {util:.1%}")
            rows.append((f"  {n.name} ({n.op}, VTA)", ", ".join(parts) + f"; {n.epilogue}"))
        else:
            rows.append((f"  {n.name} ({n.op}, CPU)", n.reason))
    if report.cycles is not None:
        rows.append(("GEMM utilisation", f"{report.gemm_utilisation():.1%} (GEMM micro-ops / "
                                         "cycles, all VTA nodes)"))
    rows.append(report.summary_rows()[-1])
    rows.append(("inference", f"{wall:.3f} s for {images} images ({images / wall:,.1f} "
                              "images/s)"))
    if agreement is not None:
        rows.append(("onnxruntime", agreement.describe() + " (ties: ONNX rounds half to even, "
                                                           "VTA half up)"))
    summary = {"images": images, "accuracy": accuracy, "bit_exact": mismatch is None,
               "inference_seconds": wall, "images_per_second": images / wall,
               "gemm_utilisation": report.gemm_utilisation(),
               "nodes": report.as_dict()["nodes"]}
    title = (f"digits CNN (conv, conv + residual add, dense on VTA) on {images} images: "
             f"accuracy {accuracy['vta']:.2%}")
    message = (f"the {dev.backend} run equals the int8 reference bit for bit ({images} images "
               "x 10 logits)") if mismatch is None else f"int8 reference: {mismatch}"
    return WorkloadResult(title, report.stats, mismatch is None, message, summary, rows)

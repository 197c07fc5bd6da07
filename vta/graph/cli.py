"""``vta graph run`` and the digits workload of ``vta demo`` (registered by :mod:`vta.cli`)."""

from __future__ import annotations

import contextlib
import time
from pathlib import Path
from typing import Any

import click
import numpy as np

from ..cli_common import (
    Differ,
    backend_option,
    config_option,
    device_options,
    echo_json,
    friendly,
    json_option,
    load_config,
    open_device_cli,
    sim_options,
)


def _report_table(report, title: str):
    from rich.table import Table

    table = Table(title=title)
    for i, head in enumerate(report.HEADER):
        table.add_column(head, justify="right" if i in report.NUMERIC else "left")
    for row in report.rows():
        table.add_row(*row)
    return table


def _summary(report) -> list[tuple[str, str]]:
    stats = report.stats
    rows = [("VTA nodes", f"{len(report.vta_nodes)} of {len(report.nodes)}: "
                          f"{', '.join(n.name for n in report.vta_nodes) or 'none'}")]
    if stats is not None:
        rows.append(("work", f"GEMM micro-ops {stats.gemm_uops:,}, ALU micro-ops "
                             f"{stats.alu_uops:,}, {stats.insn_count:,} instructions in "
                             f"{stats.runs} runs"))
    cycles = report.cycles
    rows.append(("cycles", "n/a (functional model)" if cycles is None else
                 f"{cycles:,}; GEMM utilisation {report.gemm_utilisation():.1%}"))
    bound = report.bound
    if bound is not None:
        rows.append(("roofline", f"{bound:,} cycles at least (the VTA nodes' bounds summed)"
                     + ("" if cycles is None else
                        f"; the run took {cycles / bound:.3f}x that ({bound / cycles:.1%} of "
                        "the roofline)")))
    rows.append(("device memory", f"activations {report.activation_bytes:,} bytes in reused "
                                  f"buffers ({report.activation_bytes_unshared:,} without "
                                  f"reuse), weights {report.weight_bytes:,} bytes"))
    return rows


def first_mismatch(graph, ours: dict, ref: dict) -> str | None:
    """None when every output equals the reference, else where the first difference is."""
    for name in graph.outputs:
        a, b = ours[name], ref[name]
        if a.shape != b.shape or a.dtype != b.dtype:
            return f"output {name!r}: {a.dtype}{a.shape} vs reference {b.dtype}{b.shape}"
        if not np.array_equal(a, b):
            idx = tuple(int(i) for i in np.argwhere(a != b)[0])
            return (f"output {name!r}: {int((a != b).sum())} of {a.size} values differ; first "
                    f"at {idx}: got {a[idx]}, reference {b[idx]}")
    return None


@click.group("graph")
def graph_cmd() -> None:
    """Run quantized ONNX models: VTA operators on the device, the rest on the CPU."""


@graph_cmd.command("run")
@click.argument("model", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--input", "-i", "inputs", multiple=True, required=True, metavar="[NAME=]X.npy",
              help="input array (.npy); NAME= for a model with several inputs")
@config_option
@backend_option("golden")
@click.option("--cpu", "cpu_nodes", multiple=True, metavar="NODE",
              help="keep this node on the CPU (repeatable)")
@click.option("--output", "-o", type=click.Path(dir_okay=False, path_type=Path),
              help="write the outputs to this .npz file")
@click.option("--ort/--no-ort", "use_ort", default=None,
              help="compare with onnxruntime (default: when it is installed)")
@click.option("--trace", "trace_file", type=click.Path(dir_okay=False, path_type=Path),
              help="write the per-instruction trace of the inference to this file")
@click.option("--tuning-log", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="plan layers from this tuning log (`vta tune`; default: "
              "$VTA_TUNING_LOG or ~/.cache/vta/tuning.jsonl when it exists)")
@sim_options()
@json_option
@friendly
def run_cmd(model: Path, inputs: tuple[str, ...], config: str, backend: str,
            cpu_nodes: tuple[str, ...], output: Path | None, use_ort: bool | None,
            trace_file: Path | None, tuning_log: Path | None, as_json: bool, **sim) -> None:
    """Run MODEL on an input and check it bit for bit against the int8 reference.

    \b
    Example:
      vta graph run model.onnx --input x.npy -b verilator --json
    """
    from rich.console import Console
    from rich.table import Table

    from ..tune import log
    from . import judge, load_onnx, run_reference
    from .executor import Executor

    cfg = load_config(config)
    if tuning_log is not None and not tuning_log.is_file():
        raise click.BadParameter(f"{tuning_log}: no such file", param_hint="--tuning-log")
    options = device_options(backend, trace=trace_file, **sim)
    graph = load_onnx(model)
    feeds = {}
    for item in inputs:
        name, _, path = item.rpartition("=")
        if not name:
            if len(graph.inputs) != 1:
                raise click.BadParameter(f"the model has inputs {', '.join(graph.inputs)}: "
                                         "name each one (NAME=X.npy)", param_hint="--input")
            name = graph.inputs[0]
        try:
            feeds[name] = np.load(path, allow_pickle=False)
        except (OSError, ValueError) as exc:
            raise click.BadParameter(f"{path}: cannot read a .npy array ({exc})",
                                     param_hint="--input") from None
    if use_ort is None:
        use_ort = judge.onnxruntime_available()
    console = Console(stderr=as_json, soft_wrap=True)
    with console.status(f"opening the {backend} device..."):
        dev = open_device_cli(backend, cfg, options)
    with dev, Executor(graph, dev, cpu_nodes=cpu_nodes) as ex, \
            (log.use(tuning_log) if tuning_log is not None else contextlib.nullcontext()):
        with console.status("running..."):
            ours = ex.run(feeds)
        report = ex.report()
    ref = run_reference(graph, feeds)
    mismatch = first_mismatch(graph, ours, ref)
    agreements = judge.compare(graph, ref, judge.run_onnxruntime(model, feeds)) \
        if use_ort else []
    if output:
        np.savez(output, **ours)
    if as_json:
        info: dict[str, Any] = report.as_dict()
        info["bit_exact"] = mismatch is None
        info["onnxruntime"] = [dict(vars(a), max_lsb=a.max_lsb) for a in agreements]
        echo_json(info)
    else:
        console.print(_report_table(report, f"{model.name} on {backend} ({cfg.name})"))
        table = Table(show_header=False)
        for key, value in _summary(report):
            table.add_row(key, value)
        table.add_row("wall time", f"{report.seconds:.3f} s")
        for a in agreements:
            table.add_row("onnxruntime", a.describe())
        console.print(table)
    if mismatch:
        raise Differ(f"MISMATCH with the int8 reference: {mismatch}")
    if not as_json:
        console.print(f"[bold green]PASS[/]: outputs equal the int8 reference bit for bit "
                      f"({', '.join(graph.outputs)})")


def digits_workload(dev, cfg, images: int, queue_options: dict | None):
    """The bundled digits CNN on ``images`` held-out images (one batch), for ``vta demo``.

    Returns a :class:`vta.cli.WorkloadResult`: accuracy (VTA, the int8
    reference, the float model, onnxruntime when installed), cycles, GEMM
    utilisation per VTA layer and overall, images/s, and whether the run equals
    the int8 reference bit for bit.
    """
    from ..cli import WorkloadResult
    from . import judge, load_onnx, run_reference
    from .executor import Executor
    from .models import digits_model, digits_test_set

    graph = load_onnx(digits_model())
    x, labels = digits_test_set()
    if not 1 <= images <= len(labels):
        raise click.BadParameter(f"must be in 1..{len(labels)}, not {images}",
                                 param_hint="--images")
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
    rows.append(_summary(report)[-1])
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

"""``vta graph run`` and the digits workload of ``vta demo`` (registered by :mod:`vta.cli`)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import click
import numpy as np

from ..cli import _friendly, _load_config, config_option

BACKENDS = ["golden", "verilator", "icarus", "f1", "f2"]


class _TraceWriter:
    """Appends the instruction trace of every device run to a file (``on_run`` hook)."""

    def __init__(self, dev, path: Path):
        self.dev, self.path = dev, path
        self.enabled = False
        self.runs = 0
        path.write_text("")

    def set(self, on: bool) -> None:
        transport = self.dev.driver.transport
        if hasattr(transport, "set_trace"):
            transport.set_trace(on)
        self.enabled = on

    def __call__(self, node: str, stats) -> None:
        if not self.enabled:
            return
        from .. import trace

        transport = self.dev.driver.transport
        if hasattr(transport, "last_trace"):
            records = transport.last_trace
        else:  # the golden model keeps the events of its last run
            records = trace.from_golden(transport._events, self.dev.cfg)
        with open(self.path, "a") as out:
            out.write(f"# node {node}, run {self.runs}\n")
            out.write(trace.format_trace(records, header=self.runs == 0))
        self.runs += 1


def _report_table(report, title: str):
    from rich.table import Table

    table = Table(title=title)
    for i, head in enumerate(report.HEADER):
        table.add_column(head, justify="right" if i in (3, 4, 5) else "left")
    for row in report.rows():
        table.add_row(*row)
    return table


def _summary(report) -> list[str]:
    cycles = report.cycles
    util = report.gemm_utilisation()
    stats = report.stats
    lines = [f"VTA nodes: {len(report.vta_nodes)} of {len(report.nodes)}; "
             f"GEMM micro-ops {stats.gemm_uops:,}, ALU micro-ops {stats.alu_uops:,}, "
             f"{stats.insn_count:,} instructions in {stats.runs} runs" if stats else
             "VTA nodes: none"]
    if cycles is not None:
        lines.append(f"cycles: {cycles:,}; GEMM utilisation {util:.1%}")
    else:
        lines.append("cycles: n/a (the golden model has no clock)")
    lines.append(f"device memory: activations {report.activation_bytes:,} bytes in reused "
                 f"buffers ({report.activation_bytes_unshared:,} without reuse), weights "
                 f"{report.weight_bytes:,} bytes")
    return lines


def _first_mismatch(graph, ours: dict, ref: dict) -> str | None:
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
@click.option("--backend", "-b", default="golden", show_default=True,
              type=click.Choice(BACKENDS), help="device backend")
@click.option("--cpu", "cpu_nodes", multiple=True, metavar="NODE",
              help="keep this node on the CPU (repeatable)")
@click.option("--output", "-o", type=click.Path(dir_okay=False, path_type=Path),
              help="write the outputs to this .npz file")
@click.option("--ort/--no-ort", "use_ort", default=None,
              help="compare with onnxruntime (default: when it is installed)")
@click.option("--trace", type=click.Path(dir_okay=False, path_type=Path),
              help="write the instruction trace of the run to this file")
@click.option("--json", "as_json", is_flag=True, help="print the report as JSON")
@_friendly
def run_cmd(model: Path, inputs: tuple[str, ...], config: str, backend: str,
            cpu_nodes: tuple[str, ...], output: Path | None, use_ort: bool | None,
            trace: Path | None, as_json: bool) -> None:
    """Run MODEL on an input and check it bit for bit against the int8 reference."""
    from rich.console import Console

    from ..device import open_device
    from . import judge, load_onnx, run_reference
    from .executor import Executor

    cfg = _load_config(config)
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
    console = Console(stderr=as_json)
    with console.status(f"opening the {backend} device..."):
        dev = open_device(backend, cfg)
    with dev:
        writer = _TraceWriter(dev, trace) if trace else None
        ex = Executor(graph, dev, cpu_nodes=cpu_nodes, on_run=writer)
        if writer:
            writer.set(True)
        with console.status("running..."):
            ours = ex.run(feeds)
        if writer:
            writer.set(False)
        report = ex.report()
        ex.close()
    ref = run_reference(graph, feeds)
    mismatch = _first_mismatch(graph, ours, ref)
    agreements = judge.compare(graph, ref, judge.run_onnxruntime(model, feeds)) \
        if use_ort else []
    if output:
        np.savez(output, **ours)
    if as_json:
        info: dict[str, Any] = report.as_dict()
        info["bit_exact"] = mismatch is None
        info["onnxruntime"] = [dict(vars(a), max_lsb=a.max_lsb) for a in agreements]
        click.echo(json.dumps(info, indent=2))
    else:
        console.print(_report_table(report, f"{model.name} on {backend} ({cfg.name})"))
        for line in _summary(report):
            console.print(line)
        console.print(f"wall time: {report.seconds:.3f} s")
        for a in agreements:
            console.print(f"onnxruntime: {a.describe()}")
        if trace:
            console.print(f"trace: {trace} ({writer.runs} runs)")
    if mismatch:
        raise click.ClickException(f"MISMATCH with the int8 reference: {mismatch}")
    if not as_json:
        console.print(f"[bold green]PASS[/]: outputs equal the int8 reference bit for bit "
                      f"({', '.join(graph.outputs)})")


def digits_demo(console, dev, images: int, trace: Path | None) -> None:
    """The digits network on ``dev``: accuracy, cycles, utilisation, time, bit-exactness.

    Runs ``images`` held-out images as one batch; with ``trace``, first one
    traced inference of a single image.  Raises ClickException on a mismatch.
    """
    from . import judge, load_onnx, run_reference
    from .executor import Executor
    from .models import digits_model, digits_test_set

    path = digits_model()
    graph = load_onnx(path)
    x, labels = digits_test_set()
    if not 1 <= images <= len(labels):
        raise click.BadParameter(f"must be in 1..{len(labels)}, not {images}",
                                 param_hint="--images")
    x, labels = x[:images], labels[:images]
    meta = graph.metadata
    writer = _TraceWriter(dev, trace) if trace else None
    ex = Executor(graph, dev, on_run=writer)
    if writer:
        writer.set(True)
        ex.run({"input": x[:1]})
        writer.set(False)
    start = time.perf_counter()
    with console.status(f"running {images} images..."):
        ours = ex.run({"input": x})
    wall = time.perf_counter() - start
    report = ex.report()
    ex.close()
    ref = run_reference(graph, {"input": x})
    mismatch = _first_mismatch(graph, ours, ref)
    console.print(_report_table(report, f"digits CNN, {images} images in one batch"))
    rows = [("float model (training script)", meta.get("float_accuracy"), "all held-out")]
    acc = float((ours["logits"].argmax(1) == labels).mean())
    ref_acc = float((ref["logits"].argmax(1) == labels).mean())
    rows += [("int8 reference (NumPy)", ref_acc, images), (f"VTA ({dev.backend})", acc, images)]
    if judge.onnxruntime_available():
        theirs = judge.run_onnxruntime(path, {"input": x})
        rows.append(("onnxruntime", float((theirs["logits"].argmax(1) == labels).mean()),
                     images))
        agreement = judge.compare(graph, ref, theirs)[0]
    else:
        agreement = None
    for name, value, n in rows:
        shown = "n/a" if value is None else f"{float(value):.2%}"
        console.print(f"accuracy, {name}: {shown} ({n} images)")
    for line in _summary(report):
        console.print(line)
    console.print(f"wall time: {wall:.3f} s for {images} images ({images / wall:.1f} images/s)")
    if agreement is not None:
        console.print(f"onnxruntime vs int8 reference: {agreement.describe()} "
                      "(half-way values: ONNX rounds to even, VTA half up)")
    if writer:
        console.print(f"trace of one inference (1 image): {trace} ({writer.runs} runs)")
    if mismatch:
        raise click.ClickException(f"MISMATCH with the int8 reference: {mismatch}")
    console.print(f"[bold green]PASS[/]: the {dev.backend} run equals the int8 reference bit "
                  f"for bit ({images} x {report.nodes[-1].name})")

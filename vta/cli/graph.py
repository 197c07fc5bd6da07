"""``vta graph run``: a quantized ONNX model on a device, checked against the int8 reference."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import click
import numpy as np

from .common import (
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

    from ..graph import judge, load_onnx, reference, run_reference
    from ..graph.executor import Executor
    from ..tune import log

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
    mismatch = reference.first_mismatch(graph, ours, ref)
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
        for key, value in report.summary_rows():
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

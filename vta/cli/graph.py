"""``vta graph run`` (a quantized ONNX model on a device, checked against the int8 reference)
and ``vta graph quantize`` (onnxruntime's quantize_static for VTA)."""

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
    opening,
    output_option,
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
@output_option("--output", "-o", metavar="FILE",
               help="write the outputs to this .npz file")
@click.option("--ort/--no-ort", "use_ort", default=None,
              help="compare with onnxruntime, with the proven bound on the difference "
                   "for any input (default: when it is installed)")
@click.option("--bound", "per_input", is_flag=True,
              help="with onnxruntime: also prove a bound for these inputs and check both "
                   "runs against it (costs several runs of the int8 reference)")
@output_option("--trace", "trace_file", metavar="FILE",
               help="write the per-instruction trace of the inference to this file")
@click.option("--tuning-log", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              default=None,
              help="plan layers from this tuning log (`vta tune`; default: "
              "$VTA_TUNING_LOG or ~/.cache/vta/tuning.jsonl when it exists)")
@sim_options()
@json_option
@friendly
def run_cmd(model: Path, inputs: tuple[str, ...], config: str, backend: str,
            cpu_nodes: tuple[str, ...], output: Path | None, use_ort: bool | None,
            per_input: bool, trace_file: Path | None, tuning_log: Path | None, as_json: bool,
            **sim) -> None:
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
    with console.status(opening(backend)):
        dev = open_device_cli(backend, cfg, options)
    with dev, Executor(graph, dev, cpu_nodes=cpu_nodes) as ex, \
            (log.use(tuning_log) if tuning_log is not None else contextlib.nullcontext()):
        with console.status("running..."):
            ours = ex.run(feeds)
        report = ex.report()
    ref = run_reference(graph, feeds)
    mismatch = reference.first_mismatch(graph, ours, ref)
    agreements = judge.assess(graph, feeds, ref, judge.run_onnxruntime(model, feeds),
                              model, per_input) if use_ort else []
    if output:
        np.savez(output, **ours)
    if as_json:
        info: dict[str, Any] = report.as_dict()
        info["bit_exact"] = mismatch is None
        info["onnxruntime"] = [a.as_dict() for a in agreements]
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
        for n in report.nodes:
            if n.placement == "cpu" and n.op in ("conv", "dense", "add", "maxpool", "avgpool"):
                console.print(f"{n.name} ({n.op}) stays on the CPU: {n.reason}")
    if mismatch:
        raise Differ(f"MISMATCH with the int8 reference: {mismatch}")
    if not as_json:
        console.print(f"[bold green]PASS[/]: outputs equal the int8 reference bit for bit "
                      f"({', '.join(graph.outputs)})")


def _load_npy(path: Path, what: str) -> np.ndarray:
    try:
        return np.load(path, allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise click.BadParameter(f"{path}: cannot read a .npy array ({exc})",
                                 param_hint=what) from None


def _first_output(outputs: dict) -> np.ndarray:
    return np.asarray(next(iter(outputs.values())), dtype=np.float64)


@graph_cmd.command("quantize")
@click.argument("model", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--calib", required=True, type=click.Path(dir_okay=False, path_type=Path),
              metavar="X.npy", help="calibration inputs (float32, batch first)")
@output_option("--output", "-o", required=True, metavar="FILE",
               help="write the quantized model here")
@click.option("--per-channel", is_flag=True, help="one weight scale per output channel")
@click.option("--scheme", type=click.Choice(["fixed", "pow2"]), default="fixed",
              show_default=True,
              help="keep the calibrated scales (fixed-point requantization on VTA) or round "
                   "them up to powers of two (shifts; QDQ only)")
@click.option("--format", "form", type=click.Choice(["qdq", "qoperator"]), default="qdq",
              show_default=True, help="ONNX quantization format")
@click.option("--activations", type=click.Choice(["uint8", "int8"]), default="uint8",
              show_default=True, help="activation type (asymmetric, calibrated zero points)")
@click.option("--eval", "eval_path", type=click.Path(dir_okay=False, path_type=Path),
              metavar="X.npy", help="inputs to compare on (default: the calibration inputs)")
@click.option("--labels", type=click.Path(dir_okay=False, path_type=Path), metavar="Y.npy",
              help="labels of the --eval inputs: report accuracy")
@json_option
@friendly
def quantize_cmd(model: Path, calib: Path, output: Path, per_channel: bool, scheme: str,
                 form: str, activations: str, eval_path: Path | None, labels: Path | None,
                 as_json: bool) -> None:
    """Quantize a float ONNX MODEL with onnxruntime's quantize_static for VTA.

    Writes the int8 model, then compares side by side on the evaluation
    inputs: the float model, the int8 model on the int8 reference (what VTA
    computes, checked on the golden model) and on onnxruntime, with the
    proven bound on how far those two can be apart; the share of
    multiply-accumulates that run on VTA; and for each node left on the CPU
    why, and what to change.

    \b
    Example:
      vta graph quantize float.onnx --calib calib.npy -o int8.onnx --per-channel
    """
    from ..device import open_device
    from ..graph import judge, load_onnx, reference, run_reference
    from ..graph.executor import Executor
    from ..graph.quantize import quantize

    x_calib = _load_npy(calib, "--calib").astype(np.float32)
    x = _load_npy(eval_path, "--eval").astype(np.float32) if eval_path else x_calib
    y = _load_npy(labels, "--labels") if labels else None
    if y is not None and len(y) != len(x):
        raise click.BadParameter(f"{len(y)} labels for {len(x)} inputs", param_hint="--labels")
    quantized = quantize(model, x_calib, per_channel=per_channel, scheme=scheme,
                         activations=activations, form=form)
    output.write_bytes(quantized.SerializeToString())
    graph = load_onnx(output)
    feeds = {graph.inputs[0]: x}
    float_out = _first_output(judge.run_onnxruntime(model, feeds))
    ref = run_reference(graph, feeds)
    theirs = judge.run_onnxruntime(output, feeds)
    ort = _first_output(theirs)
    with open_device("golden") as dev, Executor(graph, dev) as ex:
        ours = ex.run(feeds)
        report = ex.report()
    mismatch = reference.first_mismatch(graph, ours, ref)
    ref_out = _first_output(ref)
    macs = sum(n.macs for n in report.nodes)
    share = report.mac_share()
    agreement = judge.assess(graph, feeds, ref, theirs, quantized)[0]
    cpu = [(n.name, n.op, n.reason) for n in report.nodes if n.placement == "cpu"]
    columns = {"float": float_out, "int8 reference (VTA)": ref_out, "onnxruntime int8": ort}
    rows = []
    for name, out in columns.items():
        row = {"model": name,
               "top1_vs_float": float((out.argmax(-1) == float_out.argmax(-1)).mean()),
               "max_abs_diff_vs_float": float(np.abs(out - float_out).max())}
        if y is not None:
            row["accuracy"] = float((out.argmax(-1) == y.reshape(-1)).mean())
        rows.append(row)
    info = {"model": str(output), "inputs": len(x), "per_channel": per_channel,
            "scheme": scheme, "format": form, "activations": activations,
            "mac_share_on_vta": share, "vta_bit_exact": mismatch is None,
            "onnxruntime_agreement": agreement.as_dict(),
            "columns": rows, "cpu_nodes": [{"name": a, "op": b, "why": c} for a, b, c in cpu]}
    if as_json:
        echo_json(info)
    else:
        from rich.console import Console
        from rich.table import Table

        console = Console(soft_wrap=True)
        table = Table(title=f"{model.name} -> {output.name} ({form}, "
                            f"{'per channel' if per_channel else 'per tensor'}, {scheme}, "
                            f"{activations} activations) on {len(x)} inputs")
        table.add_column("")
        for row in rows:
            table.add_column(row["model"], justify="right")
        if y is not None:
            table.add_row("accuracy", *(f"{r['accuracy']:.2%}" for r in rows))
        table.add_row("top-1 = float", *(f"{r['top1_vs_float']:.2%}" for r in rows))
        table.add_row("max |diff| vs float", *(f"{r['max_abs_diff_vs_float']:.4g}" for r in rows))
        console.print(table)
        console.print(f"int8 reference vs onnxruntime: {agreement.describe()}")
        console.print(f"multiply-accumulates on VTA: {share:.2%} of {macs:,}; "
                      f"{len(report.vta_nodes)} of {len(report.nodes)} nodes on VTA")
        for name, op, why in cpu:
            console.print(f"  {name} ({op}) stays on the CPU: {why}")
        console.print(f"wrote {output}")
    if mismatch:
        raise Differ(f"MISMATCH of the golden model with the int8 reference: {mismatch}")

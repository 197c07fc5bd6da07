"""``vta tune``: candidate plans of a network's layers measured on the RTL, the best logged."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from .common import (
    config_option,
    farm_options,
    farm_progress,
    friendly,
    json_option,
    load_config,
    output_option,
)

EXAMPLES = """
\b
Examples:
  vta tune resnet18                              # every distinct layer, 8 plans each
  vta tune resnet18 --layers C2,C11 --candidates 4 --workers 2
  vta tune model.onnx --batch 8 -c aws --log my-tuning.jsonl
  vta tune resnet18 --cluster tcp://10.0.0.5:8786
"""


@click.command("tune", epilog=EXAMPLES)
@click.argument("model", metavar="MODEL")
@config_option
@click.option("--backend", "-b", type=click.Choice(["verilator", "icarus"]),
              default="verilator", show_default=True, help="the RTL the plans are measured on")
@click.option("--batch", type=click.IntRange(min=1), default=1, show_default=True,
              help="batch size of a model with a dynamic batch dimension")
@click.option("--layers", "layer_names", default=None, metavar="LIST",
              help="resnet18 only: upstream's benchmark layers to tune (e.g. C2,C5,C11) "
              "instead of every layer of the network")
@click.option("--candidates", "-n", type=click.IntRange(min=1), default=8, show_default=True,
              help="plans measured per layer: the analytic plan and the next best predicted")
@farm_options
@output_option("--log", "log_path", metavar="FILE", default=None,
               help="tuning log to append to and resume from (default: the one the planner "
               "reads, ~/.cache/vta/tuning.jsonl)")
@json_option
@friendly
def tune_cmd(model: str, config: str, backend: str, batch: int, layer_names: str | None,
             candidates: int, workers: int | None, cluster: str | None, ship: bool,
             log_path: Path | None, as_json: bool) -> None:
    """Measure candidate plans of every distinct layer of MODEL on the RTL; log the best.

    MODEL is an ONNX file or a bundled network (resnet18, digits).  Each
    distinct conv/dense layer VTA runs gets the planner's plan and the next
    best ones of its cost model measured on the RTL, in parallel on Dask,
    each run checked against NumPy; the fastest goes into the tuning log,
    which `vta graph run`, `vta.ops` and `vta.graph` then use.  Every result is
    appended as it arrives: run the same command again to resume, Ctrl-C
    stops at once (exit 130) and keeps what was measured.
    """
    from ..tune import log as tuning_log
    from ..tune.run import TuneError, layers_of, resnet_layers

    cfg = load_config(config)
    path = log_path if log_path is not None else tuning_log.default_path()
    try:
        if layer_names is not None:
            if model != "resnet18":
                raise click.BadParameter("--layers names upstream's ResNet-18 layers: MODEL "
                                         "must be resnet18", param_hint="--layers")
            layers = resnet_layers([n for n in layer_names.split(",") if n], cfg)
        else:
            layers = layers_of(_model(model), cfg, batch=batch)
        if not layers:
            raise TuneError(f"{model}: no conv or dense layer runs on VTA on {cfg.name}")
        summary = _run(layers, cfg, path, backend, candidates, workers, cluster, ship,
                       quiet=as_json)
    except (TuneError, ValueError) as exc:
        raise click.ClickException(f"{type(exc).__name__}: {exc}") from None
    info = summary.as_dict()
    if as_json:
        click.echo(json.dumps(info, indent=1))
    else:
        _print(info)
    if any(r["failed"] for r in info["layers"]):
        sys.exit(1)


def _model(name: str):
    from ..graph.models import digits_model, resnet18

    if name == "resnet18":
        return resnet18()
    if name == "digits":
        return digits_model()
    if not Path(name).is_file():
        raise click.BadParameter(f"{name!r} is neither an ONNX file nor a bundled network "
                                 "(resnet18, digits)", param_hint="MODEL")
    return Path(name)


def _run(layers, cfg, path, backend, candidates, workers, cluster, ship, quiet):
    from ..tune.run import tune

    with farm_progress("tune", quiet) as (bar, task):
        def on_result(record, done, total):
            status = f"{record['status']} {record.get('cycles', '')}".strip()
            bar.update(task, completed=done, total=total, status=status)
            if record["status"] != "ok":
                bar.console.print(f"[red]{record['status']}[/] {record['shape']} "
                                  f"{record['tiling']}: {record.get('message', '')}")

        summary = tune(layers, cfg, path, backend=backend, candidates=candidates,
                       workers=workers, cluster=cluster, ship=ship, on_result=on_result)
        total = sum(r.expected for r in summary.layers)
        bar.update(task, completed=total, total=total,
                   status="done" if summary.ran else "every plan was in the log")
        return summary


def _print(info: dict) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"tuned on {info['backend']} ({info['config']}): {info['log']}")
    for head in ("layer", "nodes", "plans", "bound", "analytic", "tuned", "gain", "of bound"):
        table.add_column(head, justify="left" if head in ("layer", "nodes") else "right")
    for r in info["layers"]:
        a, t, b = r["analytic_cycles"], r["tuned_cycles"], r["bound"]
        nodes = ", ".join(r["nodes"][:3]) + (" ..." if len(r["nodes"]) > 3 else "")
        table.add_row(r["layer"], nodes, f"{r['measured']}/{r['candidates']}", f"{b:,}",
                      "" if a is None else f"{a:,}", "" if t is None else f"{t:,}",
                      "" if not (a and t) else f"{1 - t / a:.1%}",
                      "" if not t else f"{b / t:.1%}")
    console = Console()
    console.print(table)
    console.print(f"{info['ran']} plans measured on {info['workers']} workers in "
                  f"{info['seconds']:.1f} s (cluster start {info['startup']:.1f} s)")

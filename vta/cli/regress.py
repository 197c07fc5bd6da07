"""``vta regress``: random programs against the golden model (or its specification), on a
Dask cluster."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from .common import EXIT_DIFFER

EXAMPLES = """
\b
Examples:
  vta regress                                   # 100 programs x tiny,default on Verilator
  vta regress --programs 1000 --configs tiny,default,aws --workers 2
  vta regress -b golden --programs 5000 --configs tiny,random:4
  vta regress --against spec --programs 5000    # the fast golden model against the spec
  vta regress --cluster tcp://10.0.0.5:8786 --programs 10000
  vta regress --resume vta-regress/results.jsonl
"""


@click.command("regress", epilog=EXAMPLES)
@click.option("--programs", "-n", type=click.IntRange(min=1), default=100, show_default=True,
              help="random programs (seeds) per configuration")
@click.option("--configs", "configs_spec", default="tiny,default", show_default=True,
              metavar="LIST", help="comma-separated presets, vta_config.json paths, or "
              "random[:N] for N random valid configurations")
@click.option("--backend", "-b", type=click.Choice(["verilator", "icarus", "golden"]),
              default=None, help="the device checked against the model  [default: "
              "verilator; golden with --against spec]")
@click.option("--against", type=click.Choice(["golden", "spec"]), default="golden",
              show_default=True, help="the model the device is checked against: the golden "
              "model (fast) or its specification (vta.golden.SpecModel)")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True,
              help="first seed (seeds SEED .. SEED+N-1)")
@click.option("--kind", default=None, metavar="KIND",
              help="only this program kind (normal, edge, flood-*, fill-*, fault-*; see "
              "docs/regress.md); default: every kind, by a fixed schedule of seeds")
@click.option("--workers", "-w", type=click.IntRange(min=1), default=None,
              help="local worker processes (default: one per core)")
@click.option("--cluster", default=None, metavar="ADDRESS",
              help="run on an existing Dask cluster (scheduler address, e.g. "
              "tcp://host:8786) instead of a local one")
@click.option("--ship/--no-ship", default=True, show_default=True,
              help="with --cluster: upload this vta package to the workers")
@click.option("--out", "-o", type=click.Path(file_okay=False, path_type=Path),
              default=Path("vta-regress"), show_default=True,
              help="output folder: results.jsonl, summary.json, failing programs")
@click.option("--resume", type=click.Path(dir_okay=False, exists=True, path_type=Path),
              default=None, metavar="FILE", help="resume the run of this results.jsonl "
              "(its plan is taken from the file)")
@click.option("--shrink", type=click.IntRange(min=0), default=3, show_default=True,
              help="failing programs to shrink")
@click.option("--shrink-budget", type=click.FloatRange(min=1), default=120.0,
              show_default=True, help="seconds per shrink")
@click.option("--stall", type=click.FloatRange(0, 1), default=None,
              help="RTL: DRAM random stall probability per channel and cycle")
@click.option("--latency", type=click.IntRange(min=0), default=None,
              help="RTL: DRAM latency in cycles")
@click.option("--json", "as_json", is_flag=True, help="print the summary as JSON")
def regress_cmd(programs: int, configs_spec: str, backend: str | None, against: str, seed: int,
                kind: str | None, workers: int | None, cluster: str | None, ship: bool,
                out: Path, resume: Path | None, shrink: int, shrink_budget: float,
                stall: float | None, latency: int | None, as_json: bool) -> None:
    """Run random programs on a device and on the golden model, and compare.

    With --against spec the model is the specification model, and the device
    by default the golden backend: the fast golden model checked against its
    specification.

    Every program is checked byte for byte (device memory), counter for
    counter and trace for trace; faulting programs must report the same fault
    at the same instruction.  Results stream to OUT/results.jsonl; failing
    programs are shrunk and written to OUT; the coverage report lists the
    features no program exercised.
    """
    from ..errors import VTAError
    from ..regress.configs import parse_configs
    from ..regress.run import Plan

    try:
        if resume is not None:
            plan = None
            out = resume.parent
        else:
            backend = backend or ("golden" if against == "spec" else "verilator")
            options = {k: v for k, v in (("stall", stall), ("latency", latency))
                       if v is not None}
            if options and backend == "golden":
                raise click.BadParameter("--stall and --latency apply to the RTL backends, "
                                         "not golden", param_hint="--stall/--latency")
            configs = parse_configs(configs_spec, seed)
            plan = Plan.of(backend, configs, programs, seed=seed, kind=kind, options=options,
                           reference=against)
            out.mkdir(parents=True, exist_ok=True)
            for cfg in configs:
                if cfg.name.startswith("rand"):
                    (out / f"{cfg.name}.json").write_text(json.dumps(cfg.to_dict(), indent=1))
        summary = _run(plan, out, workers, cluster, resume is not None, shrink, shrink_budget,
                       ship, quiet=as_json)
    except VTAError as exc:
        raise click.ClickException(f"{type(exc).__name__}: {exc}") from None
    if as_json:
        click.echo(json.dumps(summary.as_dict(), indent=1))
    else:
        _print_summary(summary)
    if not summary.ok:
        sys.exit(EXIT_DIFFER)


def _run(plan, out, workers, cluster, resume, shrink, shrink_budget, ship, quiet):
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    from ..regress.run import regress

    console = Console(stderr=True)
    columns = [TextColumn("[bold]regress"), BarColumn(), MofNCompleteColumn(),
               TextColumn("{task.fields[status]}"), TimeElapsedColumn(), TimeRemainingColumn()]
    with Progress(*columns, console=console, disable=quiet, transient=False) as bar:
        task = bar.add_task("regress", total=None, status="starting the cluster")
        counts = {"pass": 0, "fail": 0, "crash": 0, "error": 0}

        def on_result(record, done, total):
            counts[record["status"]] = counts.get(record["status"], 0) + 1
            status = f"pass {counts['pass']}  fail {counts['fail']}"
            if counts["crash"] or counts["error"]:
                status += f"  crash {counts['crash'] + counts['error']}"
            bar.update(task, completed=done, total=total, status=status)
            if record["status"] != "pass":
                bar.console.print(_failure_line(record))

        return regress(plan, out, workers=workers, cluster=cluster, resume=resume,
                       shrink=shrink, shrink_budget=shrink_budget, ship=ship,
                       on_result=on_result)


def _failure_line(record: dict) -> str:
    what = record.get("mismatch", {}).get("message") or record.get("message", "")
    return (f"[red]{record['status'].upper()}[/red] {record['config']} seed {record['seed']} "
            f"({record.get('kind')}): {what.splitlines()[0] if what else ''}")


def _print_summary(summary) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    plan = summary.plan
    table = Table(title=f"vta regress: {plan.backend} against {plan.reference}, seeds "
                        f"{plan.seed}..{plan.seed + plan.programs - 1}")
    for col in ("configuration", "pass", "fail", "crash", "error"):
        table.add_column(col, justify="left" if col == "configuration" else "right")
    for name in plan.config_names:
        c = summary.per_config.get(name, {})
        table.add_row(name, *(str(c.get(k, 0)) for k in ("pass", "fail", "crash", "error")))
    console.print(table)
    rate = summary.rate
    console.print(f"{summary.ran} programs run in {summary.seconds:.1f} s on {summary.workers} "
                  f"worker(s): {rate:.2f} programs/s ({rate / max(1, summary.workers):.2f} per "
                  f"worker); {summary.total} results in {summary.out}/results.jsonl")
    for record in summary.failures[:20]:
        console.print(_failure_line(record))
    for entry in summary.shrunk:
        if entry.get("shrunk"):
            stats = entry["stats"]
            console.print(f"shrunk {entry['config']} seed {entry['seed']}: {stats['insns'][0]} "
                          f"-> {stats['insns'][1]} instructions, {stats['uops'][0]} -> "
                          f"{stats['uops'][1]} micro-ops: {entry['shrunk']}")
        else:
            why = f": {entry['message']}" if entry.get("message") else ""
            console.print(f"{entry['config']} seed {entry['seed']}: not shrunk "
                          f"({entry['status']}{why})")
    if summary.coverage is not None:
        console.print(summary.coverage.report(), highlight=False)

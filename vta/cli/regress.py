"""``vta regress``: random programs against the golden model (or its specification), on a
Dask cluster."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from .common import EXIT_DIFFER, farm_options, farm_progress, output_option

EXAMPLES = """
\b
Examples:
  vta regress                                   # 100 programs x tiny,default on Verilator
  vta regress --programs 1000 --configs tiny,default,aws --workers 2
  vta regress -b golden --programs 5000 --configs tiny,random:4
  vta regress --programs 10000 --configs tiny,default,random --rtl-coverage
  vta regress --against spec --programs 5000    # the fast golden model against the spec
  vta regress --cluster tcp://10.0.0.5:8786 --programs 10000
  vta regress --resume vta-regress/results.jsonl
  vta regress --known known.txt --previous last/results.jsonl --history last/results.jsonl
  vta regress --report vta-regress/results.jsonl
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
              help="only this program kind (normal, edge, chain, reach, late-pop, flood-*, "
              "fill-*, fault-*, over-*; see docs/regress.md); default: every kind, by a "
              "fixed schedule of seeds")
@click.option("--generator", "generator", type=click.Choice(["1", "2"]), default=None,
              help="the generator version whose schedule gives each seed's kind (1: the "
              "kinds and schedule before the targeted kinds)  [default: 2; with --resume: "
              "the file's, and a different one is refused]")
@farm_options
@output_option("--out", "-o", folder=True, default=Path("vta-regress"), show_default=True,
               help="output folder (created): results.jsonl, summary.json, junit.xml, "
               "report.html, shrunk programs")
@click.option("--resume", type=click.Path(dir_okay=False, exists=True, path_type=Path),
              default=None, metavar="FILE", help="resume the run of this results.jsonl "
              "(its plan is taken from the file)")
@click.option("--shrink", type=click.IntRange(min=0), default=3, show_default=True,
              help="failure signatures to shrink (the smallest program of each that fails "
              "from zeroed scratchpads)")
@click.option("--shrink-budget", type=click.FloatRange(min=1), default=120.0,
              show_default=True, help="seconds per shrink")
@click.option("--stall", type=click.FloatRange(0, 1), default=None,
              help="RTL: DRAM random stall probability per channel and cycle (fixed timing)")
@click.option("--latency", type=click.IntRange(min=0), default=None,
              help="RTL: DRAM latency in cycles (fixed timing)")
@click.option("--timing", type=click.Choice(["random", "fixed"]), default=None,
              help="RTL: DRAM latency, stalls, response order and outstanding requests "
              "drawn from each program's seed (random, the default), or the same for every "
              "program (fixed: --latency, --stall or their defaults 2 and 0)")
@click.option("--rtl-coverage", is_flag=True,
              help="Verilator: measure line and toggle coverage of hdl/ (a separate build), "
              "merged across workers into OUT/rtl-coverage.json and reported per module")
@click.option("--directed", is_flag=True,
              help="coverage-directed: after one period of the schedule, each program's "
              "kind is the one most likely to hit the bins its configuration has not hit")
@click.option("--max-time", type=click.FloatRange(min=0), default=None, metavar="SECONDS",
              help="stop submitting programs after this long (the rest: --resume)")
@click.option("--max-failures", type=click.IntRange(min=1), default=None, metavar="N",
              help="stop after N programs did not pass (the rest: --resume)")
@click.option("--known", "known_file", type=click.Path(dir_okay=False, exists=True,
              path_type=Path), default=None, metavar="FILE",
              help="known failures: lines of SIGNATURE<TAB>NOTE; failures with these "
              "signatures are reported as known and do not fail the run")
@click.option("--previous", type=click.Path(dir_okay=False, exists=True, path_type=Path),
              default=None, metavar="FILE",
              help="an earlier run's results.jsonl: mark failure signatures new since it")
@click.option("--history", type=click.Path(dir_okay=False, exists=True, path_type=Path),
              multiple=True, metavar="FILE",
              help="an earlier run's results.jsonl for the HTML report's trend (repeatable, "
              "oldest first)")
@click.option("--report", "report_of", type=click.Path(dir_okay=False, exists=True,
              path_type=Path), multiple=True, metavar="FILE",
              help="run nothing: summarise the results.jsonl FILE (coverage, failures by "
              "signature, RTL coverage) and write its junit.xml and report.html beside it; "
              "repeated: the runs merged, reports and rtl-coverage.json written to OUT")
@click.option("--json", "as_json", is_flag=True, help="print the summary as JSON")
def regress_cmd(programs: int, configs_spec: str, backend: str | None, against: str, seed: int,
                kind: str | None, generator: str, workers: int | None, cluster: str | None,
                ship: bool, out: Path, resume: Path | None, shrink: int, shrink_budget: float,
                stall: float | None, latency: int | None, timing: str | None,
                rtl_coverage: bool, directed: bool, max_time: float | None,
                max_failures: int | None, known_file: Path | None, previous: Path | None,
                history: tuple[Path, ...], report_of: tuple[Path, ...], as_json: bool) -> None:
    """Run random programs on a device and on the golden model, and compare.

    With --against spec the model is the specification model, and the device
    by default the golden backend: the fast golden model checked against its
    specification.

    Every program is checked byte for byte (device memory), counter for
    counter and trace for trace; faulting programs must report the same fault
    at the same instruction.  Results stream to OUT/results.jsonl; failures are
    grouped by signature and one program of each is shrunk into OUT; the
    coverage report lists the features no program exercised; OUT/junit.xml and
    OUT/report.html report the run.
    """
    from ..errors import VTAError
    from ..regress.configs import parse_configs
    from ..regress.run import GENERATOR_VERSION, Plan
    from ..regress.triage import previous_signatures, read_known

    try:
        triage = {"known": read_known(known_file) if known_file else None,
                  "previous": previous_signatures(previous) if previous else None}
        if report_of:
            summary = _report(report_of, out, history, triage)
        elif resume is not None:
            plan = None
            out = resume.parent
            if generator is not None:
                _check_generator(resume, int(generator))
        else:
            backend = backend or ("golden" if against == "spec" else "verilator")
            options = {k: v for k, v in (("stall", stall), ("latency", latency))
                       if v is not None}
            if options and backend == "golden":
                raise click.BadParameter("--stall and --latency apply to the RTL backends, "
                                         "not golden", param_hint="--stall/--latency")
            if backend == "golden" and timing == "random":
                raise click.BadParameter("random DRAM timing applies to the RTL backends, not "
                                         "golden", param_hint="--timing")
            if options and timing == "random":
                raise click.BadParameter("--stall and --latency fix the DRAM timing: not with "
                                         "--timing random", param_hint="--timing")
            if rtl_coverage and backend != "verilator":
                raise click.BadParameter(f"RTL coverage comes from Verilator, not {backend}",
                                         param_hint="--rtl-coverage")
            if timing is None:
                timing = "fixed" if backend == "golden" or options else "random"
            if rtl_coverage:
                options["coverage"] = True
            configs = parse_configs(configs_spec, seed)
            plan = Plan.of(backend, configs, programs, seed=seed, kind=kind, options=options,
                           timing=timing, directed=directed, reference=against,
                           generator=int(generator or GENERATOR_VERSION))
            out.mkdir(exist_ok=True)
            for cfg in configs:
                if cfg.name.startswith("rand"):
                    (out / f"{cfg.name}.json").write_text(json.dumps(cfg.to_dict(), indent=1))
        if not report_of:
            summary = _run(plan, out, workers, cluster, resume is not None, shrink,
                           shrink_budget, ship, max_time, max_failures,
                           {**triage, "history": history}, quiet=as_json)
    except VTAError as exc:
        raise click.ClickException(f"{type(exc).__name__}: {exc}") from None
    if as_json:
        click.echo(json.dumps(summary.as_dict(), indent=1))
    else:
        _print_summary(summary)
    if summary.unknown:
        sys.exit(EXIT_DIFFER)


def _check_generator(results: Path, generator: int) -> None:
    """Refuse ``--generator`` naming another version than the results file being resumed."""
    from ..regress.run import RegressError, read_results

    recorded = read_results(results)[0].generator
    if recorded != generator:
        raise RegressError(f"{results} was written by generator version {recorded}, not "
                           f"{generator} (--generator): resume it without --generator (its "
                           "own version), or start a new run")


def _report(paths: tuple[Path, ...], out: Path, history: tuple[Path, ...], triage: dict):
    """The summary of finished results files, its reports written beside the one file, or
    (several, merged) into ``out``."""
    from rich.console import Console

    from ..regress.reports import write_reports
    from ..regress.rtlcov import FILE as RTL_COVERAGE
    from ..regress.run import summary_of

    summary, records = summary_of(list(paths), **triage)
    if len(paths) > 1:
        out.mkdir(parents=True, exist_ok=True)
        summary.out = out
        if summary.rtl is not None:
            summary.rtl.save(out / RTL_COVERAGE)
    written = write_reports(summary, records, summary.out,
                            [(p.parent.name, summary_of(p)[0]) for p in history])

    Console(stderr=True).print("reports: " + ", ".join(map(str, written)), highlight=False)
    return summary


def _run(plan, out, workers, cluster, resume, shrink, shrink_budget, ship, max_time,
         max_failures, triage, quiet):
    from ..regress.run import regress

    with farm_progress("regress", quiet) as (bar, task):
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
                       max_time=max_time, max_failures=max_failures, on_result=on_result,
                       **triage)


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
    rate, per = summary.steady_rate, summary.steady_rate / max(1, summary.workers)
    console.print(f"{summary.ran} programs run in {summary.seconds:.1f} s on {summary.workers} "
                  f"worker(s), {summary.setup_seconds:.1f} s of it opening simulators (builds "
                  f"included): {rate:.2f} programs/s without that ({per:.2f} per worker), "
                  f"{summary.rate:.2f} with it; {summary.total} results in "
                  f"{summary.out}/results.jsonl")
    if summary.stopped:
        console.print(f"stopped early: {summary.stopped}; {summary.total} of "
                      f"{plan.programs * len(plan.configs)} programs have results (--resume "
                      f"{summary.out}/results.jsonl runs the rest)")
    groups = summary.groups
    if groups:
        table = Table(title="failures by signature")
        for col in ("signature", "programs", "configurations", "example", "status"):
            table.add_column(col, justify="right" if col == "programs" else "left")
        for g in groups:
            d = g.as_dict()
            ex = d["example"]
            status = (f"known: {g.known}" if g.known else "new" if g.new else
                      "seen before" if g.new is False else "")
            table.add_row(g.signature, str(g.count), ", ".join(d["configs"]),
                          f"{ex['config']} seed {ex['seed']}", status)
        console.print(table)
        if summary.unknown < summary.total - summary.counts["pass"]:
            console.print(f"{summary.total - summary.counts['pass'] - summary.unknown} failing "
                          "programs have known signatures (--known)")
    for entry in summary.shrunk:
        if entry.get("no_repro"):
            console.print(f"{entry['signature']}: seed(s) "
                          f"{', '.join(map(str, entry['no_repro']))} pass from zeroed "
                          "scratchpads (they need what ran before them on the worker)",
                          highlight=False)
        if entry.get("shrunk"):
            stats = entry["stats"]
            console.print(f"shrunk {entry['config']} seed {entry['seed']} ({entry['signature']})"
                          f": {stats['insns'][0]} -> {stats['insns'][1]} instructions, "
                          f"{stats['uops'][0]} -> {stats['uops'][1]} micro-ops: "
                          f"{entry['shrunk']}")
            if entry.get("diff"):
                console.print(f"  replay: {entry['diff']}", highlight=False)
        else:
            why = f": {entry['message']}" if entry.get("message") else ""
            console.print(f"{entry['config']} seed {entry['seed']}: not shrunk "
                          f"({entry['status']}{why})")
    if summary.coverage is not None:
        console.print(summary.coverage.report(), highlight=False)
        for name, cov in summary.config_coverage.items():
            closed = (f", all hit after {cov.closed_at} of its programs" if cov.closed_at
                      else f"; holes: {', '.join(cov.holes)}")
            console.print(f"  {name}: {len(cov.bins) - len(cov.holes)}/{len(cov.bins)} bins"
                          f"{closed}", highlight=False)
    if summary.cross is not None:
        console.print(summary.cross.report(), highlight=False)
    if summary.rtl is not None:
        console.print(summary.rtl.report(), highlight=False)

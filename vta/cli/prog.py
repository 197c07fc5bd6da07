"""``vta`` commands on program files: run, trace (and trace show / diff)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import click

from .. import isa
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
    stats_rows,
    working,
)

program_argument = click.argument("program", metavar="PROG",
                                  type=click.Path(exists=True, dir_okay=False, path_type=Path))


def load_program(path: Path):
    """The program file ``path`` (errors become one line)."""
    from .. import progfile

    return progfile.load(path)


def _options_for(prog, backend: str, sim: dict, **extra) -> dict:
    options = device_options(backend, **sim, **extra)
    if backend in ("f1", "f2"):  # the card's memory: its size is the card's
        return options
    if "mem_size" not in options and prog.mem_size is not None:
        options["mem_size"] = prog.mem_size
    if "mem_size" not in options and backend != "golden":
        from ..backends import rtl

        simulator = "verilator" if backend.endswith("-sim") else backend
        if prog.end > rtl.DEFAULT_MEM_SIZE[simulator]:  # the smallest power of two that fits
            options["mem_size"] = 1 << (prog.end - 1).bit_length()
    return options


def _open(backend: str, cfg, options: dict, quiet: bool):
    with working(opening(backend), quiet):
        return open_device_cli(backend, cfg, options)


def _running(prog, backend: str, quiet: bool):
    """A spinner while a run is in progress, with the run's progress on a simulator (on
    stderr, on a terminal; Ctrl-C stops the simulator)."""
    what = "" if backend == "golden" else " (Ctrl-C stops the simulator)"
    return working(f"running {prog.insn_count} instructions on {backend}{what}:", quiet)


@click.command()
@program_argument
@backend_option("verilator")
@output_option("--out", "out_dir", folder=True, metavar="DIR",
               help="write each output region to DIR/NAME.bin (DIR is created)")
@output_option("--trace", "trace_file", metavar="FILE",
               help="write the per-instruction trace to this file (`vta trace` shows more)")
@output_option("--waves", "waves_file", metavar="FILE",
               help="RTL: write a waveform of the run to this file (`vta waves` shows more)")
@sim_options()
@json_option
@friendly
def run(program: Path, backend: str, out_dir: Path | None, trace_file: Path | None,
        waves_file: Path | None, as_json: bool, **sim) -> None:
    """Run a program file and print its counters and cycles.

    The output regions are compared with the contents recorded in the file
    (if any): exit status 3 when they differ.

    \b
    Examples:
      vta run prog.vtaprog -b golden
      vta run prog.vtaprog -b verilator --out results/ --json
      vta run prog.vtaprog -b icarus --stall 0.2 --latency 20 --trace prog.trace
    """
    from rich.console import Console
    from rich.table import Table

    from .. import progfile

    prog = load_program(program)
    options = _options_for(prog, backend, sim, trace=trace_file, waves=waves_file)
    if out_dir is not None:
        out_dir.mkdir(exist_ok=True)
    start = time.perf_counter()
    dev = _open(backend, prog.cfg, options, as_json)
    with dev:
        opened = time.perf_counter()
        with _running(prog, backend, as_json):
            result = progfile.replay(prog, dev)
        done = time.perf_counter()
    written = {}
    if out_dir is not None:
        for name, data in result.outputs.items():
            written[name] = out_dir / f"{name}.bin"
            written[name].write_bytes(data)
    expected = progfile.expectations(prog)
    mismatches = progfile.compare(expected, result.outputs)
    stats = result.stats
    if as_json:
        echo_json({
            "program": str(program), "backend": backend, "config": prog.cfg.name,
            "insn_count": prog.insn_count, "stats": stats.as_dict(),
            "outputs": {name: {"size": len(data), "file": written.get(name),
                               "expected": name in expected,
                               "matches": None if name not in expected else
                               not any(m.region == name for m in mismatches)}
                        for name, data in result.outputs.items()},
            "mismatches": [vars(m) for m in mismatches],
            "open_seconds": opened - start, "run_seconds": done - opened})
    else:
        console = Console(soft_wrap=True)
        console.print(f"[bold]vta run[/] {program}: {prog.insn_count} instructions, config "
                      f"[cyan]{prog.cfg.name}[/] ({prog.cfg.bitstream}), backend "
                      f"[cyan]{backend}[/]")
        table = Table(show_header=False)
        for key, value in stats_rows(stats, prog.cfg):
            table.add_row(key, value)
        table.add_row("time", f"open {opened - start:.2f} s, run {done - opened:.3f} s")
        console.print(table)
        for name, data in result.outputs.items():
            where = f" -> {written[name]}" if name in written else ""
            console.print(f"output {name}: {len(data)} bytes{where}")
        if trace_file is not None:
            console.print(f"trace: {trace_file}")
        if waves_file is not None and waves_file.exists():  # golden ignores --waves
            console.print(f"waves: {waves_file}")
    if mismatches:
        raise Differ("outputs differ from the recorded run: "
                     + "; ".join(m.describe(prog.cfg) for m in mismatches))
    if expected and not as_json:
        click.echo(f"outputs match the recorded run ({len(expected)} region(s))")


# -------------------------------------------------------------------- trace
def _range(ctx, param, value):
    if value is None:
        return None
    first, sep, last = value.partition(":")
    try:
        lo = int(first) if first else None
        hi = int(last) if last else None
        if not sep:
            hi = lo
    except ValueError:
        raise click.BadParameter(f"must be FIRST:LAST instruction indices (either may be "
                                 f"left out), not {value!r}") from None
    if (lo is not None and lo < 0) or (hi is not None and hi < 0) or (
            lo is not None and hi is not None and hi < lo):
        raise click.BadParameter(f"must be FIRST:LAST with 0 <= FIRST <= LAST, not {value!r}")
    return lo, hi


def _trace_outputs(fn):
    options = [
        click.option("--engine", "engines", multiple=True,
                     type=click.Choice(["load", "compute", "store"]),
                     help="show only this engine (repeatable)"),
        click.option("--range", "index_range", callback=_range, metavar="FIRST:LAST",
                     help="show only instructions FIRST..LAST (e.g. 10:20, :5, 40:)"),
        output_option("--perfetto", metavar="FILE",
                      help="write a Chrome/Perfetto trace (JSON; open in ui.perfetto.dev)"),
        output_option("--png", metavar="FILE",
                      help="write a PNG timeline of the three engines (needs matplotlib)"),
        json_option,
    ]
    for option in reversed(options):
        fn = option(fn)
    return fn


def _show_steps(records, title: str, engines, index_range, perfetto, png, as_json,
                extra: dict | None = None, cfg=None) -> list:
    from .. import trace as vtrace

    steps = vtrace.analyse(records)
    roof = vtrace.roofline(steps, cfg) if cfg is not None and steps else None
    first, last = index_range or (None, None)
    shown = vtrace.select(steps, engines, first, last)
    if perfetto is not None:
        perfetto.write_text(json.dumps(vtrace.to_chrome_json(shown, title)))
    if png is not None:
        try:
            vtrace.plot_timeline(shown, png, title)
        except ImportError as exc:
            raise click.ClickException(f"{exc}\nhint: the plot extra installs it") from None
    if as_json:
        echo_json({**(extra or {}), "title": title, "roofline": roof,
                   "steps": [s.as_dict() for s in shown]})
        return shown
    click.echo(title)
    click.echo(vtrace.format_steps(shown), nl=False)
    click.echo(_summary(steps))
    if roof is not None:
        click.echo(vtrace.format_roofline(roof))
    for what, path in (("perfetto", perfetto), ("png", png)):
        if path is not None:
            click.echo(f"{what}: {path}")
    return shown


def _summary(steps) -> str:
    timed = steps and all(s.record.cycle is not None for s in steps)
    if not timed:
        return f"{len(steps)} instructions retired (the golden model has no clock: retire order)"
    begin = min(s.record.dispatch for s in steps)
    end = max(s.record.cycle for s in steps)
    parts = []
    for engine in ("load", "compute", "store"):
        mine = [s for s in steps if s.module == engine]
        busy = sum(s.busy for s in mine)
        token = sum(s.stalled for s in mine if s.reason.startswith("token"))
        share = 100 * busy / max(end - begin, 1)
        parts.append(f"{engine} {len(mine)} insns, busy {busy} ({share:.0f}%), waited {token} "
                     "on tokens")
    return f"cycles {begin}..{end} ({end - begin}); " + "; ".join(parts)


class _TraceGroup(click.Group):
    """``vta trace PROG`` runs ``vta trace run PROG``; ``show`` and ``diff`` read saved traces."""

    def parse_args(self, ctx, args):
        if args and args[0] not in self.commands and args[0] not in ctx.help_option_names:
            args = ["run", *args]
        return super().parse_args(ctx, args)


@click.group(cls=_TraceGroup)
def trace() -> None:
    """Per-instruction trace of a program: cycles, tokens and what each instruction waited for.

    \b
    vta trace PROG -b verilator     run PROG and show its trace (= vta trace run PROG)
    vta trace show FILE...          show saved traces (from --out or --trace)
    vta trace diff A B              compare two saved traces

    \b
    Example:
      vta trace prog.vtaprog -b verilator --engine compute --range 10:40 \\
          --perfetto prog.json --png prog.png --out prog.trace
    """


@trace.command("run")
@program_argument
@backend_option("verilator")
@output_option("--out", "out_file", metavar="FILE",
               help="also save the trace (text, one line per instruction) to this file")
@sim_options()
@_trace_outputs
@friendly
def trace_run(program: Path, backend: str, out_file: Path | None, engines, index_range,
              perfetto, png, as_json: bool, **sim) -> None:
    """Run PROG and show its per-instruction trace.

    Per instruction: engine, dispatch/start/retire cycles, the tokens it popped
    (and which instruction pushed them) and pushed, and what it waited for (a
    token, the engine's previous instruction) before it started; busy is DRAM
    time for LOAD/STORE and compute time for GEMM/ALU.  The golden backend gives
    the retire order without cycles.

    \b
    Example:
      vta trace prog.vtaprog -b icarus --png prog.png
    """
    from .. import progfile
    from ..errors import VTAError

    prog = load_program(program)
    options = _options_for(prog, backend, sim, trace=True)
    failure = None
    dev = _open(backend, prog.cfg, options, as_json)
    with dev:
        try:
            with _running(prog, backend, as_json):
                progfile.replay(prog, dev)
        except VTAError as exc:
            failure = exc  # show what ran before the failure, then report it
        records = dev.last_trace or []
    if out_file is not None:
        from .. import trace as vtrace

        out_file.write_text(vtrace.format_trace(records))
    title = f"{program.name} on {backend} ({prog.cfg.name}): {len(records)} of " \
            f"{prog.insn_count} instructions retired"
    _show_steps(records, title, engines, index_range, perfetto, png, as_json,
                {"program": str(program), "backend": backend,
                 "error": None if failure is None else str(failure)}, prog.cfg)
    if failure is not None:
        raise failure


@trace.command("show")
@click.argument("files", nargs=-1, required=True,
                type=click.Path(exists=True, dir_okay=False, path_type=Path))
@config_option
@_trace_outputs
@friendly
def trace_show(files, config: str, engines, index_range, perfetto, png, as_json: bool) -> None:
    """Show saved trace files (`vta trace --out`, `vta run --trace`).

    The roofline line needs the configuration the trace ran on (--config).

    \b
    Example:
      vta trace show prog.trace --engine load --range :20
    """
    from .. import trace as vtrace

    cfg = load_config(config)
    if len(files) > 1 and (perfetto or png):
        raise click.UsageError("--perfetto and --png take one trace file")
    for path in files:
        try:
            records = vtrace.read_trace(path)
        except ValueError as exc:  # it names the file and line
            raise click.ClickException(str(exc)) from None
        _show_steps(records, f"{path}: {len(records)} instructions", engines, index_range,
                    perfetto, png, as_json, {"file": str(path)}, cfg)


@trace.command("diff")
@click.argument("first", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.argument("second", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--limit", type=click.IntRange(min=1), default=10, show_default=True,
              help="differences to list")
@friendly
def trace_diff(first: Path, second: Path, limit: int) -> None:
    """Compare two saved traces: the instructions each engine retired and their tokens.

    Cycles are not compared (a golden and an RTL trace of the same program are
    equal when every engine retired the same instructions with the same token
    effects); the retire cycles of both are summarised when they have them.
    Exit status 3 when they differ.

    \b
    Example:
      vta trace diff golden.trace verilator.trace
    """
    from .. import trace as vtrace

    try:
        a, b = vtrace.read_trace(first), vtrace.read_trace(second)
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None
    na, nb = vtrace.normalise(a), vtrace.normalise(b)
    by_a, by_b = {r.index: r for r in na}, {r.index: r for r in nb}
    differences = []
    for index in sorted(set(by_a) | set(by_b)):
        ra, rb = by_a.get(index), by_b.get(index)
        if ra != rb:
            pad = " " * (len(str(index)) + 3)
            differences.append(f"#{index}: {first.name}: {ra.line() if ra else '(not retired)'}\n"
                               f"{pad}{second.name}: {rb.line() if rb else '(not retired)'}")
    for name, records in ((first.name, a), (second.name, b)):
        cycles = [r.cycle for r in records if r.cycle is not None]
        click.echo(f"{name}: {len(records)} instructions"
                   + (f", last retired at cycle {max(cycles)}" if cycles else ", no cycles"))
    if differences:
        click.echo("\n".join(differences[:limit]))
        raise Differ(f"the traces differ at {len(differences)} instruction(s)")
    click.echo("same instructions and tokens on every engine")


# --------------------------------------------------------------------- diff
@click.command()
@program_argument
@click.option("--backend", "-b", default="verilator", show_default=True,
              type=click.Choice(["verilator", "icarus", "golden"]),
              help="the device under test")
@click.option("--reference", default="golden", show_default=True,
              type=click.Choice(["golden", "verilator", "icarus"]), help="what it is compared to")
@sim_options()
@json_option
@friendly
def diff(program: Path, backend: str, reference: str, as_json: bool, **sim) -> None:
    """Run PROG on the golden model and on the RTL and report the first divergence.

    Compares what both expose -- device memory, the tokens left in the queues,
    the counters, how the run ended -- first for the whole program, then for
    prefixes ending where each STORE can finish (bisected), and names the first
    STORE after which memory differs: region, element, lane, expected and
    actual values, and the GEMM/ALU whose result it stored (the last writing
    that OUT entry that happens before the STORE in token order).  Scratchpads
    are not observable on the RTL.

    Exit status 0 when they agree and the program ran to its end, 3 when they
    differ, 1 when they agree but the program deadlocks or faults on both (the
    message says where) and on an error.

    \b
    Example:
      vta diff prog.vtaprog -b icarus
    """
    from ..progfile import diverge, lint

    if backend == reference == "golden":
        raise click.UsageError("the golden model against itself compares nothing; give "
                               "-b verilator or -b icarus (or --reference an RTL backend)")
    prog = load_program(program)
    start = time.perf_counter()
    under_test = (backend, _options_for(prog, backend, sim))
    compared = (reference, _options_for(prog, reference, {}))
    # the simulator opens first (each memory size is its own build) and the other device
    # gets its memory size, so DRAM_RANGE faults agree
    first, second = (compared, under_test) if backend == "golden" else (under_test, compared)
    with _open(first[0], prog.cfg, first[1], as_json) as one:
        size = one.driver.transport.mem_size
        with _open(second[0], prog.cfg, {**second[1], "mem_size": size}, True) as other, \
                working(f"running {program.name} on {reference} and {backend}, then "
                        "prefixes of it:", as_json):
            ref, dut = (one, other) if first is compared else (other, one)
            result = diverge.compare(prog, ref, dut)
    seconds = time.perf_counter() - start
    found, end = result.divergence, result.reference.error
    deadlock = found is None and end is not None and end.startswith("DEADLOCK")
    # where both are stuck, and why, from the token protocol
    stuck = [f for f in lint.lint(prog) if f.check == "deadlock"] if deadlock else []
    if as_json:
        echo_json({"program": str(program), "reference": reference, "backend": backend,
                   "agree": found is None, "divergence": found.as_dict() if found else None,
                   "end": end, "errors": {reference: result.reference.message,
                                          backend: result.device.message},
                   "deadlock": [vars(f) for f in stuck], "seconds": seconds})
    elif found is None:
        both = "; both deadlock:" if deadlock else f"; both stop with {end}:" if end else ""
        click.echo(f"{program.name}: {backend} agrees with {reference} (memory, tokens, "
                   f"counters and the end of the run; {seconds:.1f} s){both}")
        insns = prog.insns() if stuck else []
        for f in stuck:
            click.echo(f"  #{f.index} ({f.engine}) {f.message}\n"
                       f"      {isa.disassemble(insns[f.index])}")
        if end:
            for name, outcome in ((reference, result.reference), (backend, result.device)):
                click.echo(f"{name}: {outcome.message}")
    else:
        click.echo(f"{program.name}: {backend} differs from {reference} ({found.runs} runs, "
                   f"{seconds:.1f} s)")
        click.echo(found.message)
    if found is not None:
        raise Differ(f"{backend} and {reference} differ" + (
            f" after instruction {found.after}" if found.after is not None else ""))
    if end:
        what = "deadlocks" if deadlock else f"stops with {end}"
        raise click.ClickException(
            f"{program.name} {what} on both {reference} and {backend}, the same way: they "
            "agree, but it never runs to its end\nhint: `vta lint PROG` checks its tokens and "
            "fields without running it")


# --------------------------------------------------------------------- lint
@click.command("lint")
@program_argument
@click.option("--mem-size", type=click.IntRange(min=1), default=None, metavar="BYTES",
              help="device memory DRAM accesses are checked against (default: the program's, "
                   "else 64 MiB)")
@click.option("--errors-only", is_flag=True, help="leave out warnings")
@json_option
@friendly
def lint_cmd(program: Path, mem_size: int | None, errors_only: bool, as_json: bool) -> None:
    """Check a program without running it: tokens, bounds, flags, hazards, races.

    Token balance per queue with a deadlock proof (which instruction waits
    forever, on which queue, and why), SRAM and DRAM bounds, dependency flags
    an engine does not have, micro-op read-after-write hazards, STOREs of OUT
    entries no GEMM/ALU wrote before them, SHR immediates outside -31..31, and
    LOADs or STOREs racing with compute because no token orders them.  "Before"
    is token order (happens-before), not stream order.  Each finding names the
    instruction, engine and field.

    Exit status 3 when there is an error (warnings alone: 0).

    \b
    Example:
      vta lint prog.vtaprog
    """
    from ..progfile import lint as vlint

    prog = load_program(program)
    findings = vlint.lint(prog, mem_size=mem_size)
    if errors_only:
        findings = [f for f in findings if f.severity == "error"]
    errors = sum(f.severity == "error" for f in findings)
    warnings = len(findings) - errors
    if as_json:
        echo_json({"program": str(program), "errors": errors, "warnings": warnings,
                   "findings": [vars(f) for f in findings]})
    else:
        insns = prog.insns()
        for f in findings:
            click.echo(f.line(insns))
        click.echo(f"{program.name}: {prog.insn_count} instructions, {errors} error(s), "
                   f"{warnings} warning(s)")
    if errors:
        raise Differ(f"{errors} error(s) in {program.name}")


# -------------------------------------------------------------------- waves
@click.command()
@program_argument
@click.option("--backend", "-b", default="verilator", show_default=True,
              type=click.Choice(["verilator", "icarus"]), help="the simulator")
@output_option("--output", "-o", required=True, metavar="FILE",
               help="the waveform: FILE.fst for the whole run, FILE.vcd with a window")
@click.option("--cycles", "cycle_range", callback=_range, metavar="FIRST:LAST",
              help="only these cycles (the numbers `vta trace` shows)")
@click.option("--insns", "insn_range", callback=_range, metavar="FIRST:LAST",
              help="only the cycles from the dispatch of instruction FIRST to the retire of LAST")
@sim_options()
@friendly
def waves(program: Path, backend: str, output: Path, cycle_range, insn_range, **sim) -> None:
    """Run PROG on the RTL and write a waveform of it.

    The whole run goes to an FST file; with --cycles or --insns only that
    window is kept, written as VCD (every signal's value at the window's first
    cycle, then each change).  Open either with GTKWave or Surfer.  A waveform
    build of the simulator is separate from the normal one (Verilator: about a
    minute the first time; its FST writer needs the liblz4 and zlib headers).

    \b
    Examples:
      vta waves prog.vtaprog -o prog.fst
      vta waves prog.vtaprog -b icarus --insns 10:14 -o prog.vcd
    """
    import tempfile

    from .. import progfile
    from ..hdltools import waves as vwaves

    if cycle_range and insn_range:
        raise click.UsageError("give --cycles or --insns, not both")
    window = cycle_range or insn_range
    want = ".vcd" if window else ".fst"
    if output.suffix != want:
        why = "a window is written as VCD" if window else "the whole run is written as FST"
        raise click.BadParameter(f"must end in {want} ({why}), not {output.name!r}",
                                 param_hint="--output")
    prog = load_program(program)
    with tempfile.TemporaryDirectory(prefix="vta-waves-") as tmp:
        dump = output.resolve() if not window else Path(tmp) / "run.fst"
        options = _options_for(prog, backend, sim, waves=dump, trace=True)
        with _open(backend, prog.cfg, options, False) as dev:
            with _running(prog, backend, False):
                result = progfile.replay(prog, dev)
            records = dev.last_trace or []
        first = min(r.dispatch for r in records if r.dispatch is not None)
        last = max(r.cycle for r in records)
        if not window:
            click.echo(f"{output}: the whole run, cycles {first}..{last} "
                       f"({result.stats.cycles} cycles), {output.stat().st_size:,} bytes")
            return
        source = f"a run of {program.name} on {backend}"
        if insn_range:
            lo, hi = insn_range
            chosen = [r for r in records if (lo is None or r.index >= lo) and
                      (hi is None or r.index <= hi)]
            if not chosen:
                raise click.BadParameter(f"no instruction of {program.name} in that range "
                                         f"(0..{prog.insn_count - 1})", param_hint="--insns")
            a = min(r.dispatch for r in chosen)
            b = max(r.cycle for r in chosen)
            source += (f" (instructions {min(r.index for r in chosen)}.."
                       f"{max(r.index for r in chosen)})")
        else:
            a = first if cycle_range[0] is None else cycle_range[0]
            b = last if cycle_range[1] is None else cycle_range[1]
        try:
            info = vwaves.window(dump, output, a, b, source=source)
        except ImportError as exc:
            raise click.ClickException(f"{exc}\nhint: the waves extra installs it") from None
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="--cycles") from None
    click.echo(f"{output}: cycles {a}..{b} of the run's {first}..{last}, {info['signals']} "
               f"signals, {output.stat().st_size:,} bytes")

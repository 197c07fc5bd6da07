"""``vta`` commands on program files: run (and, below, the debugging commands)."""

from __future__ import annotations

import time
from pathlib import Path

import click

from .cli_common import (
    Differ,
    backend_option,
    device_options,
    echo_json,
    friendly,
    json_option,
    open_device_cli,
    sim_options,
)

program_argument = click.argument("program", metavar="PROG",
                                  type=click.Path(exists=True, dir_okay=False, path_type=Path))


def load_program(path: Path):
    """The program file ``path`` (errors become one line)."""
    from . import progfile

    return progfile.load(path)


def _options_for(prog, backend: str, sim: dict, **extra) -> dict:
    options = device_options(backend, **sim, **extra)
    if "mem_size" not in options and prog.mem_size is not None:
        options["mem_size"] = prog.mem_size
    if "mem_size" not in options and backend != "golden":
        from .driver import rtl

        if prog.end > rtl.DEFAULT_MEM_SIZE[backend]:  # the smallest power of two that fits
            options["mem_size"] = 1 << (prog.end - 1).bit_length()
    return options


def _open(backend: str, cfg, options: dict, quiet: bool):
    from rich.console import Console

    hint = " (a first run for this configuration builds the simulator: about a minute)" \
        if backend != "golden" else ""
    with Console(stderr=True, quiet=quiet).status(f"opening the {backend} device{hint}..."):
        return open_device_cli(backend, cfg, options)


@click.command()
@program_argument
@backend_option("verilator")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path),
              help="write each output region to DIR/NAME.bin")
@click.option("--trace", "trace_file", type=click.Path(dir_okay=False, path_type=Path),
              help="write the per-instruction trace to this file (`vta trace` shows more)")
@click.option("--waves", "waves_file", type=click.Path(dir_okay=False, path_type=Path),
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

    from . import progfile
    from .cli import _stats_rows

    prog = load_program(program)
    options = _options_for(prog, backend, sim, trace=trace_file, waves=waves_file)
    if out_dir is not None:
        out_dir.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    dev = _open(backend, prog.cfg, options, as_json)
    with dev:
        opened = time.perf_counter()
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
        for key, value in _stats_rows(stats, prog.cfg):
            table.add_row(key, value)
        table.add_row("time", f"open {opened - start:.2f} s, run {done - opened:.3f} s")
        console.print(table)
        for name, data in result.outputs.items():
            where = f" -> {written[name]}" if name in written else ""
            console.print(f"output {name}: {len(data)} bytes{where}")
        if trace_file is not None:
            console.print(f"trace: {trace_file}")
        if waves_file is not None:
            console.print(f"waves: {waves_file}")
    if mismatches:
        raise Differ("outputs differ from the recorded run: "
                     + "; ".join(m.describe(prog.cfg) for m in mismatches))
    if expected and not as_json:
        click.echo(f"outputs match the recorded run ({len(expected)} region(s))")

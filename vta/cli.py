"""The ``vta`` command line: run the demo, inspect configurations, (dis)assemble streams.

This is the only layer that turns :class:`vta.VTAError` into
``click.ClickException`` (a one-line message and exit status 1).
"""

from __future__ import annotations

import functools
import json
import sys
import time
from pathlib import Path

import click
import numpy as np

from . import __version__, isa
from .config import PRESETS, Config
from .errors import VTAError


def _friendly(fn):
    """Report toolkit errors as one clear line instead of a traceback."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except VTAError as exc:
            raise click.ClickException(f"{type(exc).__name__}: {exc}") from None

    return wrapper


def _load_config(value: str) -> Config:
    try:
        return Config.load(value)
    except VTAError as exc:
        raise click.BadParameter(str(exc), param_hint="--config") from None


config_option = click.option(
    "--config", "-c", "config", default="default", show_default=True,
    help=f"configuration: a preset ({', '.join(PRESETS)}) or a vta_config.json path")


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="vta")
def main() -> None:
    """Toolkit for the VTA deep-learning accelerator.

    Golden model, RTL simulation and AWS FPGA backends behind one device API.
    """


@main.command()
@config_option
@click.option("--backend", "-b", default="verilator", show_default=True,
              type=click.Choice(["golden", "verilator", "icarus", "f1", "f2"]),
              help="device backend (f1/f2 only on an AWS FPGA instance)")
@click.option("--shape", nargs=3, type=int, default=(96, 200, 72), show_default=True,
              metavar="M K N", help="x is M x K, w is N x K")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--dump", is_flag=True, help="print the instruction stream (disassembly)")
@_friendly
def demo(config: str, backend: str, shape: tuple[int, int, int], seed: int, dump: bool) -> None:
    """Run an int8 dense layer through VTA and check it against NumPy.

    Builds relu((x @ w.T + bias) >> shift) as a VTA instruction stream (tiled
    to the scratchpads, padded to the block size, loads overlapping compute),
    runs it on the chosen backend and compares every output with NumPy.
    """
    from rich.console import Console
    from rich.table import Table

    from . import ops
    from .device import open_device

    cfg = _load_config(config)
    m, k, n = shape
    if min(shape) <= 0:
        raise click.BadParameter(f"M, K and N must be positive, not {m} {k} {n}",
                                 param_hint="--shape")
    console = Console()
    rng = np.random.default_rng(seed)
    x = rng.integers(-128, 128, (m, k), dtype=np.int8)
    w = rng.integers(-128, 128, (n, k), dtype=np.int8)
    bias = rng.integers(-2000, 2000, n, dtype=np.int32)
    shift = 7
    console.print(f"[bold]vta demo[/]: dense {m}x{k} @ ({n}x{k})^T + bias, >> {shift}, ReLU "
                  f"-> int8, config [cyan]{cfg.name}[/] ({cfg.bitstream}), "
                  f"backend [cyan]{backend}[/]")
    start = time.perf_counter()
    hint = " (the first run builds the simulator: about a minute)" if backend in (
        "verilator", "icarus") else ""
    with console.status(f"opening the {backend} device{hint}..."):
        dev = open_device(backend, cfg)
    with dev:
        opened = time.perf_counter()
        with console.status("building the instruction stream and running it..."):
            out, stats = ops.dense(dev, x, w, bias=bias, shift=shift, relu=True,
                                   return_stats=True,
                                   queue_options={"dump": True} if dump else None)
        done = time.perf_counter()
    acc = x.astype(np.int64) @ w.astype(np.int64).T + bias
    acc = ((acc + 2**31) % 2**32) - 2**31  # int32 accumulation wraps
    expected = np.maximum(acc >> shift, 0).astype(np.int8)  # the low 8 bits are stored

    table = Table(title="what ran", show_header=False)
    table.add_row("instructions", f"{stats.insn_count} in {stats.runs} run(s)")
    table.add_row("GEMM micro-ops", f"{stats.gemm_uops:,} "
                  f"({stats.gemm_uops * cfg.BATCH * cfg.BLOCK_IN * cfg.BLOCK_OUT:,} MACs)")
    table.add_row("ALU micro-ops", f"{stats.alu_uops:,}")
    loaded = {name: stats.counters[f"{name}_load_bytes"] for name in ("uop", "inp", "wgt", "acc")}
    table.add_row("bytes loaded", ", ".join(f"{k.upper()} {v:,}" for k, v in loaded.items()))
    table.add_row("bytes stored", f"{stats.out_store_bytes:,}")
    tokens = ", ".join(f"{q} {stats.counters[f'{q}_tokens']}" for q in ("l2g", "g2l", "g2s", "s2g"))
    table.add_row("tokens pushed", tokens)
    table.add_row("cycles", "n/a (functional model)" if stats.cycles is None
                  else f"{stats.cycles:,}")
    table.add_row("time", f"open {opened - start:.2f} s, run {done - opened:.3f} s")
    console.print(table)
    if not np.array_equal(out, expected):
        bad = np.argwhere(out != expected)[0]
        raise click.ClickException(
            f"MISMATCH: {int((out != expected).sum())} of {out.size} outputs differ; first at "
            f"{tuple(int(i) for i in bad)}: got {out[tuple(bad)]}, expected {expected[tuple(bad)]}")
    console.print(f"[bold green]PASS[/]: all {out.size} outputs equal NumPy's")


@main.command("config")
@click.argument("name", default="default")
@click.option("--json", "as_json", is_flag=True, help="print JSON (upstream keys + derived)")
def config_cmd(name: str, as_json: bool) -> None:
    """Show a configuration and the constants derived from it."""
    cfg = _load_config(name)
    info = cfg.describe()
    if as_json:
        click.echo(json.dumps(info, indent=2))
        return
    width = max(len(k) for k in info)
    for key, value in info.items():
        click.echo(f"{key:<{width}}  {value}")


@main.command()
@click.argument("stream", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@config_option
@click.option("--start", type=int, default=0, show_default=True,
              help="index of the first instruction to show")
@click.option("--count", type=int, default=None, help="number of instructions to show")
@_friendly
def disasm(stream: Path, config: str, start: int, count: int | None) -> None:
    """Disassemble a binary instruction stream (16 bytes per instruction)."""
    cfg = _load_config(config)
    raw = stream.read_bytes()
    if len(raw) % isa.INSN_BYTES:
        raise click.ClickException(
            f"{stream}: {len(raw)} bytes is not a whole number of 16-byte instructions")
    end = len(raw) // isa.INSN_BYTES if count is None else start + count
    chunk = raw[start * isa.INSN_BYTES:end * isa.INSN_BYTES]
    click.echo(isa.disassemble_stream(chunk, cfg, start=start), nl=False)


@main.command()
@click.argument("source", type=click.File("r"))
@click.option("--output", "-o", type=click.Path(dir_okay=False, path_type=Path), required=True,
              help="where to write the binary stream")
@config_option
@_friendly
def asm(source, output: Path, config: str) -> None:
    """Assemble text (one instruction per line, as `vta disasm` prints) into a binary stream."""
    cfg = _load_config(config)
    try:
        raw = isa.assemble_stream(source.read(), cfg)
    except VTAError as exc:
        raise click.ClickException(f"{source.name}: {exc}") from None
    output.write_bytes(raw)
    click.echo(f"{output}: {len(raw) // isa.INSN_BYTES} instructions", err=True)


@main.command("isa")
@config_option
def isa_cmd(config: str) -> None:
    """Print the bit layout of every instruction format for a configuration."""
    sys.stdout.write(isa.render_markdown(_load_config(config)))


@main.command()
@click.option("--format", "fmt", type=click.Choice(["markdown", "verilog"]), default="markdown",
              show_default=True)
def regs(fmt: str) -> None:
    """Print the control register map (the docs and the RTL header come from it)."""
    from .driver import regs as regmap

    sys.stdout.write(regmap.render_markdown() if fmt == "markdown" else regmap.render_verilog())


if __name__ == "__main__":  # pragma: no cover
    main()

"""The ``vta`` command line: run and debug programs, inspect configurations, (dis)assemble.

This is the only layer that turns :class:`vta.VTAError` into
``click.ClickException`` (a one-line message and exit status 1).  Exit codes
are listed in :mod:`vta.cli_common`; Ctrl-C stops any simulator at once,
removes its files and exits with 130.
"""

from __future__ import annotations

import dataclasses
import signal
import sys
import time
from pathlib import Path

import click
import numpy as np

from . import __version__, isa
from .cli_common import (
    EXIT_INTERRUPTED,
    Differ,
    backend_option,
    config_option,
    device_options,
    echo_json,
    friendly,
    json_option,
    load_config,
    open_device_cli,
    setup_logging,
    sim_options,
    working,
)
from .config import PRESETS, Config


def _abort_simulators() -> None:
    """Kill every running simulator now and remove its session folder (Ctrl-C)."""
    rtl = sys.modules.get("vta.driver.rtl")
    if rtl is not None:
        rtl.abort_all()


class _Main(click.Group):
    """The ``vta`` group: Ctrl-C ends simulators at once and exits with status 130."""

    def invoke(self, ctx: click.Context):
        previous = signal.getsignal(signal.SIGINT)

        def on_sigint(signum, frame):
            _abort_simulators()
            raise KeyboardInterrupt

        if previous is signal.default_int_handler:
            signal.signal(signal.SIGINT, on_sigint)
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            _abort_simulators()
            click.echo("\nvta: interrupted", err=True)
            raise click.exceptions.Exit(EXIT_INTERRUPTED) from None
        finally:
            if previous is signal.default_int_handler:
                signal.signal(signal.SIGINT, previous)


@click.group(cls=_Main, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="vta")
@click.option("--verbose", "-v", count=True, help="more log output (simulator builds, runs)")
def main(verbose: int) -> None:
    """Toolkit for the VTA deep-learning accelerator.

    Golden model, RTL simulation (Verilator, Icarus) and AWS FPGAs (f1, f2 on an
    instance; f1-sim, f2-sim: their wrappers simulated) behind one device API;
    program files to record, replay, trace, compare and check VTA programs.

    Exit status: 0 success, 1 error, 2 usage error, 3 a difference was found
    (run, diff, lint, demo, trace diff), 130 interrupted.
    """
    setup_logging(verbose)


# ------------------------------------------------------------------- demo
def _check_dense_size(cfg: Config, backend: str, shape: tuple[int, int, int],
                      mem_size: int | None) -> None:
    """Refuse a dense layer too big for the device or this machine, before any work."""
    import os

    from .driver import golden, rtl

    m, k, n = shape
    b, bi, bo = cfg.BATCH, cfg.BLOCK_IN, cfg.BLOCK_OUT
    mp, kp, np_ = -(-m // b) * b, -(-k // bi) * bi, -(-n // bo) * bo
    device_need = mp * kp + np_ * kp + mp * np_ + np_ * b * 4 + (2 << 20)  # + staging
    if mem_size is None:
        mem_size = (golden.DEFAULT_MEM_SIZE if backend == "golden"
                    else rtl.DEFAULT_MEM_SIZE[backend])
    if device_need > mem_size:
        fits = 1 << (device_need - 1).bit_length()  # the smallest power of two that fits
        hint = (f"give --mem-size {fits}" if fits <= 1 << 32 else
                "a device has at most 4 GiB (32-bit DRAM addresses): a smaller shape")
        raise click.BadParameter(
            f"dense {m}x{k}x{n} needs {_size(device_need)} of device memory (x {_size(mp * kp)}, "
            f"w {_size(np_ * kp)}, out {_size(mp * np_)}); the {backend} device has "
            f"{_size(mem_size)}; {hint}", param_hint="--shape")
    if mp // b > 0xFFFF:
        raise click.BadParameter(
            f"M = {m} needs {mp // b} input columns, more than a LOAD's 16-bit x_stride field "
            f"reaches ({0xFFFF} for BATCH {b}); use M <= {0xFFFF * b}", param_hint="--shape")
    host_need = 9 * (m * k + n * k) + 17 * m * n  # int8 data, int64 reference, results
    try:
        host_have = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError):  # pragma: no cover (not Linux)
        host_have = None
    if host_have and host_need > host_have:
        raise click.BadParameter(
            f"dense {m}x{k}x{n} needs about {_size(host_need)} of host memory for the data and "
            f"the NumPy reference; this machine has {_size(host_have)} free",
            param_hint="--shape")


def _size(nbytes: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if nbytes >= scale:
            return f"{nbytes / scale:.1f} {unit}"
    return f"{nbytes} bytes"


@dataclasses.dataclass
class WorkloadResult:
    """What a demo workload reports: a title, table rows, the check and its JSON summary."""

    title: str
    stats: object
    ok: bool
    message: str
    summary: dict
    rows: list = dataclasses.field(default_factory=list)  # extra (key, value) table rows


def dense_workload(dev, cfg: Config, shape: tuple[int, int, int], seed: int,
                   queue_options: dict | None) -> WorkloadResult:
    """relu((x @ w.T + bias) >> shift) on ``dev``, checked against NumPy."""
    from . import ops

    m, k, n = shape
    rng = np.random.default_rng(seed)
    x = rng.integers(-128, 128, (m, k), dtype=np.int8)
    w = rng.integers(-128, 128, (n, k), dtype=np.int8)
    bias = rng.integers(-2000, 2000, n, dtype=np.int32)
    shift = 7
    try:
        out, stats = ops.dense(dev, x, w, bias=bias, shift=shift, relu=True, return_stats=True,
                               queue_options=queue_options)
    except ValueError as exc:
        raise click.ClickException(f"dense {m}x{k}x{n} cannot be built for configuration "
                                   f"{cfg.name}: {exc}") from None
    acc = x.astype(np.int64) @ w.astype(np.int64).T + bias
    acc = ((acc + 2**31) % 2**32) - 2**31  # int32 accumulation wraps
    expected = np.maximum(acc >> shift, 0).astype(np.int8)  # the low 8 bits are stored
    title = f"dense {m}x{k} @ ({n}x{k})^T + bias, >> {shift}, ReLU -> int8"
    if np.array_equal(out, expected):
        return WorkloadResult(title, stats, True, f"all {out.size} outputs equal NumPy's",
                              {"outputs": int(out.size), "mismatches": 0})
    bad = np.argwhere(out != expected)[0]
    count = int((out != expected).sum())
    return WorkloadResult(
        title, stats, False,
        f"{count} of {out.size} outputs differ; first at {tuple(int(i) for i in bad)}: got "
        f"{out[tuple(bad)]}, expected {expected[tuple(bad)]}",
        {"outputs": int(out.size), "mismatches": count})


@main.command()
@config_option
@backend_option("verilator")
@click.option("--workload", "-w", type=click.Choice(["digits", "dense"]), default=None,
              help="digits: the bundled digits CNN on held-out images (the default); dense: "
                   "one int8 dense layer")
@click.option("--images", type=click.IntRange(min=1, max=360), default=100, show_default=True,
              help="digits: held-out images in the batch")
@click.option("--shape", nargs=3, type=click.IntRange(min=1), default=None, metavar="M K N",
              help="dense: x is M x K, w is N x K (default 96 200 72; implies --workload "
                   "dense)")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True,
              help="seed of the data (and of the DRAM stalls, with --stall)")
@click.option("--dump", is_flag=True, help="print the instruction stream (disassembly)")
@click.option("--trace", "trace_file", type=click.Path(dir_okay=False, path_type=Path),
              help="write the per-instruction trace of every run to this file")
@click.option("--waves", "waves_file", type=click.Path(dir_okay=False, path_type=Path),
              help="RTL: write a waveform of the session to this file")
@click.option("--capture", type=click.Path(file_okay=False, path_type=Path),
              help="record every run as a program file in this folder (`vta run` replays it)")
@sim_options(seed=False)
@json_option
@friendly
def demo(config: str, backend: str, workload: str | None, images: int,
         shape: tuple[int, int, int] | None, seed: int, dump: bool, trace_file: Path | None,
         waves_file: Path | None, capture: Path | None, as_json: bool, **sim) -> None:
    """Run a network or a layer through VTA and check it bit for bit.

    The default workload is the bundled digits CNN (a quantized ONNX model
    run by the graph runtime: convolutions, the residual add and the dense
    layer on VTA, the rest on the CPU) on a batch of held-out handwritten
    digits: accuracy, cycles, GEMM utilisation, wall time, and the outputs
    checked against the int8 reference.  ``--workload dense`` builds
    relu((x @ w.T + bias) >> shift) as a VTA instruction stream and checks
    every output against NumPy.  ``--trace`` writes the trace of the one
    inference (or layer) run.

    \b
    Example:
      vta demo --images 360 --trace digits.trace
      vta demo -b golden -c tiny --shape 9 13 6 --capture runs/
      vta run runs/run-0001.vtaprog -b icarus
    """
    from rich.console import Console
    from rich.table import Table

    cfg = load_config(config)
    if sim.get("stall") and sim.get("sim_seed") is None:
        sim["sim_seed"] = seed
    options = device_options(backend, trace=trace_file, waves=waves_file, **sim)
    if workload is None:
        workload = "dense" if shape is not None else "digits"
    if workload == "digits" and shape is not None:
        raise click.BadParameter("--shape is for the dense workload", param_hint="--shape")
    shape = shape or (96, 200, 72)
    if workload == "dense":
        _check_dense_size(cfg, backend, shape, options.get("mem_size"))
    if capture is not None:
        options["capture"] = capture
    console = Console(stderr=as_json, soft_wrap=True)
    start = time.perf_counter()
    hint = (" (the first run builds the simulator: about a minute)"
            if backend not in ("golden", "f1", "f2") else "")
    with working(f"opening the {backend} device{hint}...", as_json):
        dev = open_device_cli(backend, cfg, options)
    with dev:
        opened = time.perf_counter()
        queue_options = {"dump": True} if dump else None
        with working("building the instruction streams and running them...", as_json):
            if workload == "digits":
                from .graph.cli import digits_workload

                result = digits_workload(dev, cfg, images, queue_options)
            else:
                result = dense_workload(dev, cfg, shape, seed, queue_options)
        done = time.perf_counter()
    stats = result.stats
    if as_json:
        echo_json({"workload": workload, "title": result.title, "config": cfg.name,
                   "backend": backend, **({"shape": list(shape), "seed": seed}
                                          if workload == "dense" else {}), "ok": result.ok,
                   "check": result.message, **result.summary, "stats": stats.as_dict(),
                   "open_seconds": opened - start, "run_seconds": done - opened})
    else:
        console.print(f"[bold]vta demo[/]: {result.title}, config [cyan]{cfg.name}[/] "
                      f"({cfg.bitstream}), backend [cyan]{backend}[/]")
        table = Table(title="what ran", show_header=False)
        for key, value in result.rows + _stats_rows(stats, cfg):
            table.add_row(key, value)
        table.add_row("time", f"open {opened - start:.2f} s, run {done - opened:.3f} s")
        console.print(table)
    if not result.ok:
        raise Differ(f"MISMATCH: {result.message}")
    if not as_json:
        console.print(f"[bold green]PASS[/]: {result.message}")


def _stats_rows(stats, cfg: Config) -> list[tuple[str, str]]:
    """Table rows for a run's counters (shared by demo and run)."""
    rows = [("instructions", f"{stats.insn_count} in {stats.runs} run(s)"),
            ("GEMM micro-ops", f"{stats.gemm_uops:,} "
             f"({stats.gemm_uops * cfg.BATCH * cfg.BLOCK_IN * cfg.BLOCK_OUT:,} MACs)"),
            ("ALU micro-ops", f"{stats.alu_uops:,}")]
    loaded = {name: stats.counters[f"{name}_load_bytes"] for name in ("uop", "inp", "wgt", "acc")}
    rows.append(("bytes loaded", ", ".join(f"{k.upper()} {v:,}" for k, v in loaded.items())))
    rows.append(("bytes stored", f"{stats.out_store_bytes:,}"))
    rows.append(("tokens pushed", ", ".join(f"{q} {stats.counters[f'{q}_tokens']}"
                                            for q in ("l2g", "g2l", "g2s", "s2g"))))
    rows.append(("cycles", "n/a (functional model)" if stats.cycles is None
                 else f"{stats.cycles:,}"))
    return rows


# ----------------------------------------------------------------- config
@main.command("config")
@click.argument("name", required=False)
@click.option("--config", "-c", "option", default=None,
              help=f"the same as NAME: a preset ({', '.join(PRESETS)}) or a vta_config.json path")
@click.option("--json", "as_json", is_flag=True, help="print JSON (upstream keys + derived)")
def config_cmd(name: str | None, option: str | None, as_json: bool) -> None:
    """Show a configuration and the constants derived from it.

    \b
    Example:
      vta config tiny --json
    """
    if name is not None and option is not None and name != option:
        raise click.UsageError(f"give the configuration once: NAME {name!r} and --config "
                               f"{option!r} differ")
    value = name or option or "default"
    cfg = load_config(value, "NAME" if name else "--config")
    info = cfg.describe()
    if as_json:
        echo_json(info)
        return
    width = max(len(k) for k in info)
    for key, val in info.items():
        click.echo(f"{key:<{width}}  {val}")


# ------------------------------------------------------------ disassembly
def _is_program_file(path: Path) -> bool:
    from . import progfile

    head = path.read_bytes()[:4096]
    try:
        text = head.decode()
    except UnicodeDecodeError:
        return False
    return path.suffix == progfile.SUFFIX or text.startswith(progfile.HEADER) or any(
        line.strip().startswith((".vta_program", ".region")) for line in text.splitlines())


@main.command()
@click.argument("stream", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@config_option
@click.option("--start", type=click.IntRange(min=0), default=0, show_default=True,
              help="index of the first instruction to show")
@click.option("--count", type=click.IntRange(min=1), default=None,
              help="number of instructions to show (default: to the end)")
@click.option("--hex", "show_hex", is_flag=True,
              help="show each instruction's 128-bit word (hex, most significant digit first)")
@click.option("--no-uops", is_flag=True, help="program files: leave out the micro-ops")
@json_option
@friendly
def disasm(stream: Path, config: str, start: int, count: int | None, show_hex: bool,
           no_uops: bool, as_json: bool) -> None:
    """Disassemble a program file or a binary instruction stream (16 bytes per instruction).

    For a program file (.vtaprog) the configuration comes from the file and
    every GEMM/ALU is followed by the micro-ops it runs, as comments.

    \b
    Examples:
      vta disasm prog.bin --start 10 --count 5 --hex
      vta disasm runs/run-0001.vtaprog
    """
    from . import progfile

    uops: dict = {}
    if _is_program_file(stream):
        prog = progfile.load(stream)
        cfg, raw = prog.cfg, prog.stream()
        if not no_uops:
            uops = progfile.compute_uops(prog)
    else:
        cfg = load_config(config)
        raw = stream.read_bytes()
        if len(raw) % isa.INSN_BYTES:
            raise click.ClickException(
                f"{stream}: {len(raw)} bytes is not a whole number of 16-byte instructions")
    total = len(raw) // isa.INSN_BYTES
    if total == 0:
        raise click.ClickException(f"{stream}: the stream is empty (no instructions)")
    if start >= total:
        raise click.BadParameter(f"{start} is past the end of the {total}-instruction stream "
                                 f"(indices 0..{total - 1})", param_hint="--start")
    end = total if count is None else min(total, start + count)
    rows = []
    for index in range(start, end):
        word = raw[index * isa.INSN_BYTES:(index + 1) * isa.INSN_BYTES]
        insn = isa.decode(word, cfg)
        rows.append((index, int.from_bytes(word, "little"), insn, uops.get(index, [])))
    if as_json:
        echo_json([{"index": i, "raw": f"{w:032x}", "text": isa.disassemble(insn),
                    "fields": insn.fields(),
                    "uops": [{"entry": e, **dataclasses.asdict(u)} for e, u in ups]}
                   for i, w, insn, ups in rows])
        return
    for index, word, insn, ups in rows:
        hex_col = f"{word:032x}  " if show_hex else ""
        click.echo(f"{index:6d}: {hex_col}{isa.disassemble(insn)}")
        pad = " " * (8 + len(hex_col))
        for entry, uop in ups:
            click.echo(f"{pad}# uop {entry}: {isa.disassemble_uop(uop)}")


# ------------------------------------------------------------- assembly
@main.command()
@click.argument("source", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--output", "-o", type=click.Path(dir_okay=False, path_type=Path), required=True,
              help="where to write the binary stream, or the program file (.vtaprog)")
@config_option
@friendly
def asm(source: Path, output: Path, config: str) -> None:
    """Assemble text into a binary stream, or into a program file.

    Plain text (one instruction per line, as `vta disasm` prints) becomes a
    binary stream of 16-byte instructions.  Text with directives (.region,
    .run, micro-op lines `UOP dst_idx=..`, data lines) becomes a program
    file in canonical form: see docs/program-files.md.

    \b
    Examples:
      vta asm prog.s -o prog.bin
      vta asm hand.s -o hand.vtaprog && vta run hand.vtaprog -b golden
    """
    from . import progfile

    raw_text = source.read_bytes()
    try:
        text = raw_text.decode()
    except UnicodeDecodeError as exc:
        raise click.ClickException(
            f"{source}: not assembly text (binary data at byte {exc.start}); "
            "`vta disasm` reads binary streams") from None
    if not output.parent.is_dir():
        raise click.ClickException(f"cannot write {output}: folder {output.parent} does not "
                                   f"exist (create it first: mkdir -p {output.parent})")
    program = any(line.strip().startswith(".") for line in text.splitlines())
    cfg = load_config(config)
    if program:
        prog = progfile.parse(text, where=str(source), base_dir=source.parent, cfg=cfg)
        _write(output, prog.to_text().encode())
        click.echo(f"{output}: program file, {prog.insn_count} instructions, "
                   f"{len(prog.regions)} regions", err=True)
        return
    try:
        raw = isa.assemble_stream(text, cfg)
    except isa.AssemblyError as exc:
        raise click.ClickException(f"{source}: {exc}") from None
    if not raw:
        raise click.ClickException(f"{source}: no instructions")
    _write(output, raw)
    click.echo(f"{output}: {len(raw) // isa.INSN_BYTES} instructions", err=True)


def _write(path: Path, data: bytes) -> None:
    try:
        path.write_bytes(data)
    except OSError as exc:
        raise click.ClickException(f"cannot write {path}: {exc.strerror}") from None


# ------------------------------------------------------------- reference
@main.command("isa")
@config_option
@json_option
def isa_cmd(config: str, as_json: bool) -> None:
    """Print the bit layout of every instruction format for a configuration.

    \b
    Example:
      vta isa -c tiny --json
    """
    cfg = load_config(config)
    if as_json:
        echo_json({fmt: [{"name": f.name, "lo": f.lo, "width": f.width, "signed": f.signed}
                         for f in isa.layout(fmt, cfg)]
                   for fmt in ("mem", "gemm", "alu", "uop")})
        return
    sys.stdout.write(isa.render_markdown(cfg))


@main.command()
@click.option("--format", "fmt", type=click.Choice(["markdown", "verilog"]), default="markdown",
              show_default=True)
@json_option
def regs(fmt: str, as_json: bool) -> None:
    """Print the control register map (the docs and the RTL header come from it).

    \b
    Example:
      vta regs --format verilog > vta_regs.vh
    """
    from .driver import regs as regmap

    if as_json:
        echo_json([dataclasses.asdict(r) for r in regmap.REGISTERS])
        return
    sys.stdout.write(regmap.render_markdown() if fmt == "markdown" else regmap.render_verilog())


# The program-file commands live in their own module.
from .cli_prog import diff, lint_cmd, run, trace, waves  # noqa: E402
from .cli_tools import bench, cache  # noqa: E402
from .regress.cli import regress_cmd  # noqa: E402
from .tune.cli import tune_cmd  # noqa: E402

for _command in (run, trace, diff, lint_cmd, waves, bench, cache, regress_cmd, tune_cmd):
    main.add_command(_command)

from .graph.cli import graph_cmd  # noqa: E402  (after the helpers it uses)

main.add_command(graph_cmd)

from .aws.cli import aws_cmd  # noqa: E402

main.add_command(aws_cmd)


if __name__ == "__main__":  # pragma: no cover
    main()

"""``vta config``, ``vta isa``, ``vta regs``, ``vta disasm``, ``vta asm``: the configuration,
the register map and the instruction set, shown and (dis)assembled."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import click

from .. import isa
from ..config import PRESETS
from .common import (
    config_option,
    echo_json,
    friendly,
    json_option,
    load_config,
    output_option,
)


# ----------------------------------------------------------------- config
@click.command("config")
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
    from .. import progfile

    head = path.read_bytes()[:4096]
    try:
        text = head.decode()
    except UnicodeDecodeError:
        return False
    return path.suffix == progfile.SUFFIX or text.startswith(progfile.HEADER) or any(
        line.strip().startswith((".vta_program", ".region")) for line in text.splitlines())


@click.command()
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
    from .. import progfile

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
@click.command()
@click.argument("source", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@output_option("--output", "-o", required=True, metavar="FILE",
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
    from .. import progfile

    raw_text = source.read_bytes()
    try:
        text = raw_text.decode()
    except UnicodeDecodeError as exc:
        raise click.ClickException(
            f"{source}: not assembly text (binary data at byte {exc.start}); "
            "`vta disasm` reads binary streams") from None
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
@click.command("isa")
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


@click.command()
@click.option("--format", "fmt", type=click.Choice(["markdown", "verilog"]), default="markdown",
              show_default=True)
@json_option
def regs(fmt: str, as_json: bool) -> None:
    """Print the control register map (the docs and the RTL header come from it).

    \b
    Example:
      vta regs --format verilog > vta_regs.vh
    """
    from .. import regs as regmap

    if as_json:
        echo_json([dataclasses.asdict(r) for r in regmap.REGISTERS])
        return
    sys.stdout.write(regmap.render_markdown() if fmt == "markdown" else regmap.render_verilog())

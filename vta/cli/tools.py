"""``vta bench`` and ``vta cache``: measuring this machine, managing simulator builds."""

from __future__ import annotations

import datetime
import json
import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path

import click

from .common import echo_json, friendly, json_option, load_config

# -------------------------------------------------------------------- bench
_BLAS_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


@click.command()
@click.option("--config", "-c", "config", default="default", show_default=True,
              help="configuration of every benchmark")
@click.option("--quick", is_flag=True,
              help="smaller sizes and fewer repeats (a minute instead of several)")
@click.option("--rtl", type=click.Choice(["verilator", "icarus", "none"]), default="verilator",
              show_default=True, help="the simulator for the RTL figures")
@click.option("--blas-threads", type=click.IntRange(min=1), default=1, show_default=True,
              help="BLAS threads of NumPy and the golden model (more spin against other work "
                   "on a busy machine)")
@json_option
@friendly
def bench(config: str, quick: bool, rtl: str, blas_threads: int, as_json: bool) -> None:
    """Measure the headline figures of BENCHMARKS.md on this machine.

    Golden-model GEMM throughput against NumPy, ResNet-18 conv2d layers on the
    golden backend, and an RTL matmul's cycles, simulated cycles per second and
    GEMM utilisation.  Every timed result is checked against NumPy.  Machines
    are noisy: compare ratios within one run.

    \b
    Example:
      vta bench --quick --rtl icarus
    """
    if os.environ.get("OPENBLAS_NUM_THREADS") != str(blas_threads):
        # BLAS reads its thread count when NumPy loads, which has happened: run again
        env = {**os.environ, **{v: str(blas_threads) for v in _BLAS_VARS}}
        argv = [sys.executable, "-m", "vta.cli", "bench", "--config", config, "--rtl", rtl,
                "--blas-threads", str(blas_threads)] + ["--quick"] * quick + ["--json"] * as_json
        raise SystemExit(subprocess.run(argv, env=env, check=False).returncode)
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    from ..device import open_device
    from ..workloads import bench as vbench

    cfg = load_config(config)
    layers = ["C5", "C11"] if quick else ["C2", "C5", "C8", "C11"]
    gemm_size, repeat = (128, 3) if quick else (256, 10)
    rtl_size = 64 if quick else 128
    steps = [("golden GEMM", lambda: vbench.golden_gemm(cfg, gemm_size, repeat))]
    golden_dev = None

    def layer_step(name):
        return lambda: vbench.resnet_layer(golden_dev, name, 1 if quick else 3)

    steps += [(f"conv2d {name}", layer_step(name)) for name in layers]
    if rtl != "none":
        def rtl_step():
            with open_device(rtl, cfg) as dev:
                return vbench.rtl_matmul(dev, rtl_size)

        steps.append((f"{rtl} matmul (the first run builds the simulator)", rtl_step))
    results = []
    with Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed}/"
                  "{task.total}"), TimeElapsedColumn(), console=Console(stderr=True),
                  transient=as_json) as progress:
        task = progress.add_task("benchmarks", total=len(steps))
        with open_device("golden", cfg) as golden_dev:
            for number, (title, step) in enumerate(steps, 1):
                progress.update(task, description=title)
                if not progress.console.is_terminal:  # pipes and CI logs: a line per step
                    logging.getLogger("vta.workloads.bench").info("benchmark %d/%d: %s", number,
                                                        len(steps), title)
                try:
                    results.append(step())
                except AssertionError as exc:
                    raise click.ClickException(f"{title}: {exc}") from None
                progress.advance(task)
    if as_json:
        echo_json({"config": cfg.name, "quick": quick, "results": results})
        return
    for r in results:
        if "golden_ms" in r:
            click.echo(f"{r['name']}: golden {r['golden_ms']:.2f} ms ({r['golden_gmacs']:.2f} "
                       f"GMAC/s), NumPy float32 {r['numpy_ms']:.2f} ms, ratio 1/{r['ratio']:.1f}")
        elif "mmacs" in r:
            click.echo(f"{r['name']}: {r['ms']:.1f} ms ({r['mmacs']:.1f} MMACs, "
                       f"{r['mmacs'] / r['ms']:.1f} GMAC/s end to end)")
        else:
            click.echo(f"{r['name']}: {r['cycles']:,} cycles, {r['cycles_per_s']:,.0f} "
                       f"cycles/s, GEMM utilisation {100 * r['gemm_utilisation']:.1f}%")


# -------------------------------------------------------------------- cache
def _builds() -> list[dict]:
    from ..hdltools.build import cache_root

    root = cache_root() / "sim"
    out = []
    for stamp in sorted(root.glob("*/.vta-build-complete")) if root.is_dir() else []:
        build = stamp.parent
        try:
            info = json.loads(stamp.read_text())
        except (OSError, ValueError):
            info = {}
        top, _, rest = build.name.partition("-")
        simulator = rest.rsplit("-", 1)[0]
        params = info.get("parameters", {})
        size = sum(p.stat().st_size for p in build.rglob("*") if p.is_file())
        out.append({"path": str(build), "top": top, "simulator": simulator,
                    "config": _config_text(params), "waves": info.get("waves"),
                    "size": size, "built": datetime.datetime.fromtimestamp(
                        stamp.stat().st_mtime).isoformat(timespec="seconds")})
    return out


def _config_text(params: dict) -> str:
    keys = ("LOG_BATCH", "LOG_BLOCK", "LOG_UOP_BUFF_SIZE", "LOG_INP_BUFF_SIZE",
            "LOG_WGT_BUFF_SIZE", "LOG_ACC_BUFF_SIZE", "LOG_BUS_WIDTH")
    if not all(k in params for k in keys):
        return "-"
    text = (f"{1 << params['LOG_BATCH']}x{1 << params['LOG_BLOCK']} "
            f"{params['LOG_UOP_BUFF_SIZE']}_{params['LOG_INP_BUFF_SIZE']}_"
            f"{params['LOG_WGT_BUFF_SIZE']}_{params['LOG_ACC_BUFF_SIZE']} "
            f"bus {8 << params['LOG_BUS_WIDTH'] >> 3}")
    if "LOG_MEM_BYTES" in params:
        text += f" mem 2^{params['LOG_MEM_BYTES']}"
    return text


@click.group()
def cache() -> None:
    """Simulator builds cached under $VTA_CACHE_DIR (default ~/.cache/vta).

    \b
    Examples:
      vta cache list
      vta cache clean --simulator icarus
    """


@cache.command("list")
@json_option
def cache_list(as_json: bool) -> None:
    """Show every cached build: top module, simulator, configuration, size, date.

    \b
    Example:
      vta cache list --json
    """
    builds = _builds()
    if as_json:
        echo_json(builds)
        return
    if not builds:
        click.echo("no simulator builds cached")
        return
    for b in builds:
        waves = " waves" if b["waves"] else ""
        click.echo(f"{b['built']}  {b['size'] / 2**20:7.1f} MiB  {b['simulator']:<9} "
                   f"{b['top']:<12} {b['config']}{waves}  {Path(b['path']).name}")
    total = sum(b["size"] for b in builds)
    click.echo(f"{len(builds)} build(s), {total / 2**20:.1f} MiB")


@cache.command("clean")
@click.option("--simulator", type=click.Choice(["verilator", "icarus"]), default=None,
              help="only this simulator's builds")
@click.option("--yes", "-y", is_flag=True, help="do not ask")
@friendly
def cache_clean(simulator: str | None, yes: bool) -> None:
    """Remove cached builds (the next run rebuilds what it needs).

    \b
    Example:
      vta cache clean --simulator verilator --yes
    """
    from ..hdltools.build import cache_root

    builds = [b for b in _builds() if simulator is None or b["simulator"] == simulator]
    root = cache_root() / "sim"
    leftovers = [p for p in root.glob("*") if simulator is None or f"-{simulator}-" in p.name] \
        if root.is_dir() else []
    if not builds and not leftovers:
        click.echo("nothing to remove")
        return
    total = sum(b["size"] for b in builds)
    if not yes:
        click.confirm(f"remove {len(builds)} build(s) ({total / 2**20:.1f} MiB) from {root}?",
                      abort=True)
    for path in leftovers:  # builds, their logs, locks and generated files
        if path.is_dir():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)
    click.echo(f"removed {len(builds)} build(s), {total / 2**20:.1f} MiB")

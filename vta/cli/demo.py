"""``vta demo``: a network or a layer through VTA, checked bit for bit.

The workloads themselves (data, run, check) are :mod:`vta.workloads.demo`; this
module parses the options, opens the device and prints what ran.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import click

from ..config import Config
from ..workloads.demo import dense_workload, digits_workload
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


def _check_dense_size(cfg: Config, backend: str, shape: tuple[int, int, int],
                      mem_size: int | None) -> None:
    """Refuse a dense layer too big for the device or this machine, before any work."""
    from ..backends import golden, rtl

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


@click.command()
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
@output_option("--trace", "trace_file", metavar="FILE",
               help="write the per-instruction trace of every run to this file")
@output_option("--waves", "waves_file", metavar="FILE",
               help="RTL: write a waveform of the session to this file")
@output_option("--capture", folder=True, metavar="DIR",
               help="record every run as a program file in this folder (created; `vta run` "
                    "replays it)")
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
    with working(opening(backend), as_json):
        dev = open_device_cli(backend, cfg, options)
    with dev:
        opened = time.perf_counter()
        queue_options = {"dump": True} if dump else None
        with working("building the instruction streams and running them...", as_json):
            try:
                if workload == "digits":
                    result = digits_workload(dev, cfg, images, queue_options)
                else:
                    result = dense_workload(dev, cfg, shape, seed, queue_options)
            except ValueError as exc:
                raise click.ClickException(str(exc)) from None
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
        for key, value in result.rows + stats_rows(stats, cfg):
            table.add_row(key, value)
        table.add_row("time", f"open {opened - start:.2f} s, run {done - opened:.3f} s")
        console.print(table)
    if not result.ok:
        raise Differ(f"MISMATCH: {result.message}")
    if not as_json:
        console.print(f"[bold green]PASS[/]: {result.message}")



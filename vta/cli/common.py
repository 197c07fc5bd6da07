"""Pieces shared by the ``vta`` commands: error reporting, exit codes, device options.

Exit codes of every command:

===== =================================================================
code  meaning
===== =================================================================
0     success
1     error: bad input, a fault in the program, a device or simulator
      failure (one line naming what was wrong, with a hint)
2     usage error: an unknown option, a bad option value
3     the command ran and found a difference: ``vta run`` outputs differ
      from the recorded expectation, ``vta diff`` found a divergence,
      ``vta lint`` found an error, ``vta demo`` a mismatch with NumPy,
      ``vta trace diff`` traces that differ, ``vta regress`` a failing program
130   interrupted (Ctrl-C); any simulator was stopped and its files removed
===== =================================================================
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import click

from ..config import PRESETS, Config
from ..errors import DeadlockError, DeviceError, DeviceTimeoutError, ExecutionError, VTAError

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_DIFFER = 3
EXIT_INTERRUPTED = 130

def available_backends() -> tuple[str, ...]:
    """The device backends whose plug-in module this installation has."""
    import importlib.util

    from ..device import BACKENDS as ALL

    return tuple(name for name, module in ALL.items() if importlib.util.find_spec(module))


BACKENDS = available_backends()


class Differ(click.ClickException):
    """The command ran and found a difference (exit status 3)."""

    exit_code = EXIT_DIFFER


def _hint(exc: BaseException) -> str:
    text = str(exc)
    if isinstance(exc, DeadlockError):
        return "`vta lint PROG` names the instruction and queue that can never be satisfied"
    if isinstance(exc, ExecutionError):
        return "`vta lint PROG` checks the fields of every instruction without running it"
    if type(exc).__name__ == "WatchdogError":
        return ("a stream that waits forever: `vta lint PROG` checks its tokens; a slow one: "
                "--watchdog CYCLES waits longer (0: never stops)")
    if isinstance(exc, DeviceTimeoutError):
        return "--timeout SECONDS gives a run longer; `vta trace PROG` shows what each engine did"
    if isinstance(exc, DeviceError) and "not available" in text and "cocotb" in text:
        return "the RTL backends need the sim extra: pip install 'vta[sim]'"
    return ""


def friendly(fn: Callable) -> Callable:
    """Report toolkit errors as one clear line (exit 1) instead of a traceback."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except VTAError as exc:
            hint = _hint(exc)
            message = f"{type(exc).__name__}: {exc}"
            raise click.ClickException(message + (f"\nhint: {hint}" if hint else "")) from None

    return wrapper


def load_config(value: str, param_hint: str = "--config") -> Config:
    try:
        return Config.load(value)
    except VTAError as exc:
        raise click.BadParameter(str(exc), param_hint=param_hint) from None


config_option = click.option(
    "--config", "-c", "config", default="default", show_default=True,
    help=f"configuration: a preset ({', '.join(PRESETS)}) or a vta_config.json path")

json_option = click.option("--json", "as_json", is_flag=True,
                           help="print one JSON document instead of text (for scripts)")


class OutputPath(click.Path):
    """A path a command writes: a file, or (``folder=True``) a folder the command creates.

    The one rule of every output option of every command, checked when the
    command line is parsed, before any work: the folder the output goes into must
    exist and be writable (a command creates at most the folder it is given, never
    the folders above it), and an existing output must be of the right kind.  A
    violation is a usage error (exit 2) naming the option and the folder.
    ``exists``: the folder must exist already (a checkout the command writes into).
    """

    def __init__(self, folder: bool = False, exists: bool = False):
        super().__init__(exists=exists, file_okay=not folder, dir_okay=folder, path_type=Path)

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> Path:
        path = super().convert(value, param, ctx)  # an existing path of the wrong kind fails
        parent = path.parent
        if parent.exists() and not parent.is_dir():
            self.fail(f"{parent} is not a folder", param, ctx)
        if not parent.exists():
            self.fail(f"folder {parent} does not exist (create it first: mkdir -p {parent})",
                      param, ctx)
        target = path if path.exists() else parent
        if not os.access(target, os.W_OK | (os.X_OK if target.is_dir() else 0)):
            self.fail(f"{'folder ' if target.is_dir() else ''}{target} is not writable", param,
                      ctx)
        return path


@contextlib.contextmanager
def farm_progress(label: str, quiet: bool) -> Iterator[tuple[Any, Any]]:
    """The progress bar of a run on a Dask cluster (``vta regress``, ``vta tune``) on stderr:
    done / total, a status, elapsed and remaining time.  Yields (the bar, its task)."""
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    columns = [TextColumn(f"[bold]{label}"), BarColumn(), MofNCompleteColumn(),
               TextColumn("{task.fields[status]}"), TimeElapsedColumn(), TimeRemainingColumn()]
    with Progress(*columns, console=Console(stderr=True), disable=quiet,
                  transient=False) as bar:
        yield bar, bar.add_task(label, total=None, status="starting the cluster")


def farm_options(f: Callable) -> Callable:
    """``--workers``, ``--cluster`` and ``--ship``: where a farm command (``vta regress``,
    ``vta tune``) runs."""
    f = click.option("--ship/--no-ship", default=True, show_default=True,
                     help="with --cluster: upload this vta package to the workers")(f)
    f = click.option("--cluster", default=None, metavar="ADDRESS",
                     help="run on an existing Dask cluster (scheduler address, e.g. "
                     "tcp://host:8786) instead of a local one")(f)
    return click.option("--workers", "-w", type=click.IntRange(min=1), default=None,
                        help="local worker processes (default: one per core)")(f)


def output_option(*names: str, folder: bool = False, exists: bool = False, **kwargs: Any):
    """A click option whose value is an :class:`OutputPath`."""
    return click.option(*names, type=OutputPath(folder=folder, exists=exists), **kwargs)


def echo_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, default=_jsonable))


def _jsonable(value: Any) -> Any:
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, bytes):
        return value.hex()
    if hasattr(value, "item"):
        return value.item()
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


# ------------------------------------------------------------- device options
def _latency(ctx, param, value):
    """CYCLES or READ,WRITE as an int or a pair (the range is the library's rule)."""
    if value is None:
        return None
    try:
        nums = [int(p) for p in value.split(",")]
    except ValueError:
        nums = []
    if len(nums) not in (1, 2):
        raise click.BadParameter(f"must be CYCLES or READ,WRITE (integers), not {value!r}")
    return nums[0] if len(nums) == 1 else tuple(nums)


def backend_option(default: str = "verilator"):
    return click.option("--backend", "-b", default=default, show_default=True,
                        type=click.Choice(BACKENDS), help="where to run it")


def sim_options(seed: bool = True) -> Callable[[Callable], Callable]:
    """The simulation flags shared by ``demo``, ``run``, ``trace``, ``diff`` and ``waves``.

    ``seed=False`` leaves out ``--seed`` (``vta demo`` has its own, which seeds
    the DRAM stalls too).
    """
    options = [
        click.option("--watchdog", type=int, default=None, metavar="CYCLES",
                     help="RTL: stop a run after this many cycles without progress "
                          "(default 1,000,000; 0 disables)"),
        click.option("--timeout", type=float, default=None,
                     metavar="SECONDS", help="stop a run that takes longer (default 600)"),
        click.option("--latency", callback=_latency, default=None, metavar="CYCLES[,W]",
                     help="RTL: DRAM latency in cycles (one value, or READ,WRITE; default 2)"),
        click.option("--stall", type=float, default=None, metavar="P",
                     help="RTL: probability of a DRAM stall per channel and cycle (default 0)"),
        click.option("--mem-size", type=int, default=None, metavar="BYTES",
                     help="device memory, a power of two in 64 KiB..4 GiB (RTL: each size is its "
                          "own build)"),
    ]
    if seed:
        options.append(click.option("--seed", "sim_seed", type=int,
                                    default=None, metavar="N",
                                    help="RTL: seed of the DRAM stall generator"))

    def decorate(fn: Callable) -> Callable:
        for option in reversed(options):
            fn = option(fn)
        return fn

    return decorate


#: The command-line flag of each device option the simulation flags set.
_FLAGS = {"watchdog": "--watchdog", "run_timeout": "--timeout", "latency": "--latency",
          "stall": "--stall", "seed": "--seed", "mem_size": "--mem-size", "trace": "--trace",
          "waves": "--waves"}


def device_options(backend: str, *, watchdog=None, timeout=None, latency=None, stall=None,
                   sim_seed=None, mem_size=None, trace=None, waves=None) -> dict[str, Any]:
    """Keyword options for :func:`vta.open_device` from the command-line flags.

    The library's rule applies (:data:`vta.device.COMMON_OPTIONS`): every backend
    accepts every flag, each value is checked by :func:`vta.device.check_option`
    (a bad one is a usage error naming the flag), and a flag without a meaning on
    ``backend`` (``--watchdog`` on golden) is ignored, with a note on stderr.
    """
    from ..device import check_option, option_applies

    given = {"watchdog": watchdog, "run_timeout": timeout, "latency": latency, "stall": stall,
             "seed": sim_seed, "mem_size": mem_size, "trace": trace, "waves": waves}
    options: dict[str, Any] = {}
    for name, value in given.items():
        if not _given(value):
            continue
        try:
            options[name] = check_option(name, value)
        except (TypeError, ValueError) as exc:
            raise click.BadParameter(str(exc), param_hint=_FLAGS[name]) from None
        if not option_applies(backend, name):
            click.echo(f"vta: {_FLAGS[name]} has no meaning on the {backend} backend: ignored",
                       err=True)
    return options


def _given(value: Any) -> bool:
    return value is not None and value is not False  # 0 is a value (--watchdog 0)


# --------------------------------------------------------------- logging
class _ClickHandler(logging.Handler):
    def emit(self, record: logging.LogRecord) -> None:
        click.echo(f"vta: {record.getMessage()}", err=True)


def setup_logging(verbose: int = 0) -> None:
    """Show the library's log (simulator builds, runs) on stderr."""
    logger = logging.getLogger("vta")
    if not any(isinstance(h, _ClickHandler) for h in logger.handlers):
        logger.addHandler(_ClickHandler())
    logger.setLevel(logging.DEBUG if verbose > 0 else logging.INFO)
    logger.propagate = False


def opening(backend: str) -> str:
    """What a spinner says while ``backend`` opens: a simulated one may be built first (how
    long that takes depends on the simulator, :data:`vta.hdltools.build.BUILD_TIME`)."""
    from ..hdltools.build import BUILD_TIME

    simulator = {"icarus": "icarus", "verilator": "verilator", "f1-sim": "verilator",
                 "f2-sim": "verilator"}.get(backend)
    if simulator is None:
        return f"opening the {backend} device..."
    return (f"opening the {backend} device (a first run for this configuration builds the "
            f"{simulator} simulation: {BUILD_TIME[simulator]})...")


def open_device_cli(backend: str, cfg: Config, options: dict[str, Any]):
    """Open a device for a command, turning a missing simulator into one line with a hint."""
    from ..device import open_device

    try:
        return open_device(backend, cfg, **options)
    except ModuleNotFoundError as exc:  # pragma: no cover (depends on the install)
        raise click.ClickException(
            f"the {backend} backend needs {exc.name}, which is not installed\n"
            "hint: the RTL backends need the sim extra: pip install 'vta[sim]'") from None
    except TypeError as exc:
        raise click.UsageError(f"the {backend} backend does not take that option ({exc})") \
            from None
    except ValueError as exc:
        if isinstance(exc, VTAError):
            raise
        raise click.UsageError(f"bad device option for the {backend} backend: {exc}") from None


#: Seconds between the progress lines of a long simulated run when stderr is not a terminal.
PIPE_PROGRESS_EVERY = 15.0


@contextlib.contextmanager
def working(message: str, quiet: bool = False) -> Iterator[None]:
    """A spinner saying ``message`` on stderr while the block runs, on a terminal (nothing
    in ``--json`` mode: ``quiet``).  A simulated run in the block shows its progress there:
    cycles, speed, instructions retired (:func:`vta.backends.rtl.run_progress`).  In a pipe or
    a CI log a line says the same every :data:`PIPE_PROGRESS_EVERY` seconds of a run; with
    ``-v`` the library's log does, every few seconds, terminal or not.
    """
    from rich.console import Console

    from ..backends import rtl

    console = Console(stderr=True, quiet=quiet)
    if quiet or not console.is_terminal:
        if quiet or logging.getLogger("vta").isEnabledFor(logging.DEBUG):
            yield  # --json; or -v, where the library logs the progress itself
            return
        last = [time.monotonic()]

        def line(progress: rtl.RunProgress) -> None:  # pipes and CI logs: now and then
            if time.monotonic() - last[0] >= PIPE_PROGRESS_EVERY:
                last[0] = time.monotonic()
                click.echo(f"vta: {progress.backend} run in progress: {progress.describe()}",
                           err=True)

        with rtl.run_progress(line):
            yield
        return
    with console.status(message) as status:
        def show(progress: rtl.RunProgress) -> None:
            status.update(f"{progress.backend}: {progress.describe()}")

        with rtl.run_progress(show):
            yield


def stats_rows(stats, cfg: Config) -> list[tuple[str, str]]:
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

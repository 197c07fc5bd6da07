"""The ``vta`` group: the root only registers the commands of this package.

This package is the only layer that turns :class:`vta.VTAError` into
``click.ClickException`` (a one-line message and exit status 1).  Exit codes
are listed in :mod:`vta.cli.common`; Ctrl-C stops any simulator at once,
removes its files and exits with 130.

============ =================================================================
``spec``     config, isa, regs, disasm, asm: the configuration and the ISA
``demo``     demo: a network or a layer through VTA, checked bit for bit
``prog``     run, trace, diff, lint, waves: program files on the backends
``tools``    bench, cache: this machine's figures, the simulator builds
``graph``    graph: quantized ONNX models
``regress``  regress: random programs against the golden model, on a Dask farm
``tune``     tune: plans of a network's layers measured on the RTL, the best logged
``aws``      aws: AWS FPGA builds, AFIs and runs
============ =================================================================
"""

from __future__ import annotations

import signal
import sys

import click

from .._version import __version__
from . import aws, demo, graph, prog, regress, spec, tools, tune
from .common import EXIT_INTERRUPTED, setup_logging


def _abort_simulators() -> None:
    """Kill every running simulator now and remove its session folder (Ctrl-C)."""
    rtl = sys.modules.get("vta.backends.rtl")
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


for _command in (spec.config_cmd, spec.isa_cmd, spec.regs, spec.disasm, spec.asm, demo.demo,
                 prog.run, prog.trace, prog.diff, prog.lint_cmd, prog.waves, tools.bench,
                 tools.cache, graph.graph_cmd, regress.regress_cmd, tune.tune_cmd, aws.aws_cmd):
    main.add_command(_command)

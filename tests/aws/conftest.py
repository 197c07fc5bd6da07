"""Shared simulated AWS devices for tests/aws: one simulator process per kind, reused."""

from __future__ import annotations

import needs
import pytest

import vta


@pytest.fixture(scope="session")
def aws_device():
    """``aws_device(shell, simulator, preset="tiny", **options)`` -> an open f1/f2-sim device."""
    opened: dict = {}

    def get(shell: str, simulator: str, preset: str = "tiny", **options):
        key = (shell, simulator, preset, tuple(sorted(options.items())))
        dev = opened.get(key)
        if dev is None or dev.closed:
            needs.simulator(simulator)
            dev = vta.open_device(f"{shell}-sim", preset, simulator=simulator, **options)
            opened[key] = dev
        return dev

    yield get
    for dev in opened.values():
        dev.close()


@pytest.fixture(scope="session")
def verilator():
    """(verilator executable, environment to run it in); missing: tests/needs.py's rule."""
    import os

    import needs

    from vta.hdltools.build import sim_env

    env = {**os.environ, **sim_env()}
    return needs.tool("verilator", "lints and elaborates the design", path=env["PATH"]), env

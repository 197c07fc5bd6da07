"""Shared simulated AWS devices for tests/aws: one simulator process per kind, reused."""

from __future__ import annotations

import pytest

import vta


@pytest.fixture(scope="session")
def aws_device():
    """``aws_device(shell, simulator, preset="tiny", **options)`` -> an open f1/f2-sim device."""
    opened: dict = {}

    def get(shell: str, simulator: str, preset: str = "tiny", **options):
        from vta.sim.build import SimulatorError, simulator_version

        key = (shell, simulator, preset, tuple(sorted(options.items())))
        dev = opened.get(key)
        if dev is None or dev.closed:
            try:
                simulator_version(simulator)
            except SimulatorError as exc:
                pytest.skip(str(exc))
            dev = vta.open_device(f"{shell}-sim", preset, simulator=simulator, **options)
            opened[key] = dev
        return dev

    yield get
    for dev in opened.values():
        dev.close()


@pytest.fixture(scope="session")
def verilator():
    """(verilator executable, environment to run it in); the test is skipped without one."""
    import os
    import shutil

    from vta.sim.build import sim_env

    env = {**os.environ, **sim_env()}
    exe = shutil.which("verilator", path=env["PATH"])
    if exe is None:
        pytest.skip("verilator not installed")
    return exe, env

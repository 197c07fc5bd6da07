"""What a test needs from the machine: a simulator or a tool.

A missing one skips the test here (a laptop without Icarus still runs the rest) and
fails it where ``$VTA_REQUIRE_TOOLS`` is set: ``.ci/run`` sets it, so a CI machine
without a simulator is red, not green with skips.
"""

from __future__ import annotations

import os
import shutil
from typing import NoReturn

import pytest

REQUIRE_ENV = "VTA_REQUIRE_TOOLS"


def missing(what: str, why: str) -> NoReturn:
    """Skip (or, with ``$VTA_REQUIRE_TOOLS``, fail) because ``what`` is not available."""
    if os.environ.get(REQUIRE_ENV):
        pytest.fail(f"{what} is required (${REQUIRE_ENV} is set) but not available: {why}",
                    pytrace=False)
    pytest.skip(f"{what} not available: {why}")


def simulator(name: str) -> None:
    """Need simulator ``name`` ("verilator" or "icarus") as the builds run it."""
    from vta.hdltools.build import SimulatorError, simulator_version

    try:
        simulator_version(name)
    except SimulatorError as exc:
        missing(name, str(exc))


def tool(name: str, why: str, path: str | None = None) -> str:
    """Need the program ``name`` on ``path`` (default ``$PATH``); returns where it is."""
    exe = shutil.which(name, path=path)
    if exe is None:
        missing(name, why)
    return exe

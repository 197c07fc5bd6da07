"""The ``vta`` command line (entry point ``vta.cli:main``); see :mod:`vta.cli.main`."""

from .main import main

__all__ = ["main"]

"""``python -m vta.cli``: the ``vta`` command."""

from .main import main

main()

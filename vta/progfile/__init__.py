"""Program files and the offline tools over them.

A program file (``.vtaprog``, docs/program-files.md) is one VTA run as text people
can read and diff: the configuration, the device-memory regions the stream
reads or writes, the instruction address and count, and optionally the outputs a
recorded run produced.

============== ===================================================================
``program``    the data model (:class:`Program`, :class:`Region`) and its canonical text
``parse``      reading text and files (:func:`parse`, :func:`load`)
``analysis``   what a stream touches: DRAM accesses, the micro-ops of each GEMM/ALU
``capture``    a device run recorded as a program (``open_device(..., capture=DIR)``)
``replay``     a program run on a fresh device; outputs compared
``lint``       races, token-protocol errors and deadlocks found without running
``tokenorder`` the token protocol played out: happens-before with vector clocks
``diverge``    the first divergence between two backends on one program
``handbuilt``  programs written directly as instructions (the tiled matmul)
============== ===================================================================

The names below are the file format's API; the tools are imported as modules
(``from vta.progfile import lint``).  Devices are taken as they come (duck-typed
:class:`vta.device.Device` objects): this package sits below the device API,
which records its runs through :mod:`.capture`.
"""

from .analysis import Access, accesses, compute_uops, follow_uops
from .capture import capture, capture_path, provenance, record_outputs
from .parse import load, parse
from .program import (
    FORMAT_VERSION,
    HEADER,
    PAGE,
    ROLES,
    SUFFIX,
    Program,
    Region,
    elem_bytes,
    format_program,
)
from .replay import Mismatch, Replay, compare, expectations, place, replay

__all__ = [
    "FORMAT_VERSION",
    "HEADER",
    "PAGE",
    "ROLES",
    "SUFFIX",
    "Access",
    "Mismatch",
    "Program",
    "Region",
    "Replay",
    "accesses",
    "capture",
    "capture_path",
    "compare",
    "compute_uops",
    "elem_bytes",
    "expectations",
    "follow_uops",
    "format_program",
    "load",
    "parse",
    "place",
    "provenance",
    "record_outputs",
    "replay",
]

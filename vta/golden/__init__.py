"""The NumPy golden model of the whole VTA device, as a specification and as a simulator.

Two models with one behaviour, like Sail beside Spike:

* :class:`SpecModel` (:mod:`vta.golden.spec`) -- the specification: one
  instruction, one micro-op at a time, instructions as :mod:`vta.isa` objects,
  no plans, caches or deferred work; the text to check against VTA's
  documentation.
* :class:`GoldenModel` (:mod:`vta.golden.fast`) -- the fast model everything
  else runs on (the golden backend, the references of the tests, the RTL's
  checks): whole loop nests as vectorised plans, copies and ALU epilogues
  gathered, instructions decoded in blocks.  It must give exactly what the
  specification gives -- memory, scratchpads, counters, tokens, traces and
  faults -- and ``tests/unit/test_golden_fast.py`` and ``vta regress --against
  spec`` check that it does.

Both own a byte-addressed device memory and the five scratchpads, run the load,
compute and store engines as in-order machines that meet only through the four
dependency-token queues, and report a run the same way (:mod:`vta.golden.common`).
Neither imports a simulator or a device: NumPy and the ISA tables only.
"""

from .common import Counters, RunTimeoutError, TraceEvent
from .fast import CHUNK_UOPS, PLAN_CACHE_UOPS, GoldenModel, Scratchpads
from .spec import SpecModel

__all__ = ["CHUNK_UOPS", "PLAN_CACHE_UOPS", "Counters", "GoldenModel", "RunTimeoutError",
           "Scratchpads", "SpecModel", "TraceEvent"]

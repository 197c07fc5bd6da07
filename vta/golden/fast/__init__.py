"""The fast golden model: the specification's behaviour, at the speed of vectorised NumPy.

:class:`GoldenModel` does exactly what :class:`vta.golden.spec.SpecModel` does --
the same memory, scratchpads, counters, tokens, traces and faults for every
stream -- and is what the rest of the project runs.  It owns a byte-addressed
device memory and the five scratchpads; :meth:`GoldenModel.run` fetches
``insn_count`` instructions from a device address, dispatches them to the load,
compute and store engines and interleaves the engines one instruction at a
time, so a stream that forgets a token misbehaves here as it would on hardware.

Where the specification runs one micro-op at a time, this model runs whole loop
nests through cached *plans* (:mod:`.plans`; nests larger than :data:`CHUNK_UOPS`
micro-ops run in pieces, so memory stays bounded whatever the loop counts),
gathers the ALU operations of an epilogue and runs of plain LOADs and STOREs into
one pass each (:mod:`.pending`), and decodes instructions in blocks
(:mod:`.decode`); :mod:`.model` is the model itself.  Every such fast path is
taken only where nothing could tell the difference, and
``tests/unit/test_golden_fast.py`` checks each one against the specification
(docs/design.md, "Golden model").

No simulator or device import happens here: the model depends on NumPy and the
ISA tables only.
"""

from .model import CHUNK_UOPS, PLAN_CACHE_UOPS, GoldenModel
from .pending import Scratchpads

__all__ = ["CHUNK_UOPS", "PLAN_CACHE_UOPS", "GoldenModel", "Scratchpads"]

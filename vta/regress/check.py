"""Running a case on a reference model and on a device, and comparing the two.

A :class:`Session` holds one open device (the backend under test, simulator
process included) and one reference model with the same memory size -- the
fast :class:`~vta.golden.GoldenModel`, or the specification
:class:`~vta.golden.SpecModel` (:data:`REFERENCES`, ``vta regress --against``)
-- and reuses both for every case of one configuration.
:meth:`Session.check` runs a case on both and compares, in this order:

1. the outcome: both finish, or both report the same fault (code, module and
   instruction, and a bus error's address; for a deadlock, an instruction the
   reference found stuck);
2. the arena's bytes after the run (every area: zeros, data, micro-ops,
   output, instructions);
3. the functional counters (every counter but the timing ones);
4. the normalised per-instruction traces (engine, index, token effects), when
   the device records one.

The first difference becomes a :class:`Mismatch` whose :attr:`~Mismatch.signature`
says *how* the case fails; the shrinker keeps a smaller case only if it fails
with the same signature.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..config import Config
from ..device import Device, open_device
from ..errors import DeadlockError, DeviceTimeoutError, ExecutionError
from ..golden import GoldenModel, SpecModel, TraceEvent
from ..isa import UOP_BYTES, GemmInsn, MemId, Opcode
from ..regs import TIMING_COUNTERS
from .generator import ARENA_BYTES, BUS_ERROR_WINDOW, Case, Generator

#: Backends a session can check against the reference (the f1/f2-sim: the AWS wrappers
#: simulated, with option ``simulator``).
BACKENDS = ("golden", "verilator", "icarus", "f1-sim", "f2-sim")
#: The models a device can be checked against: the fast golden model (the golden backend's
#: own), or the specification model, against which ``-b golden`` checks the fast one.
REFERENCES: dict[str, type] = {"golden": GoldenModel, "spec": SpecModel}


@dataclass
class Outcome:
    """What one run did: its fault (if any), the arena afterwards, counters, trace."""

    error: dict[str, Any] | None = None
    memory: np.ndarray | None = None
    counters: dict[str, int] = field(default_factory=dict)
    trace: list | None = None
    events: list[TraceEvent] = field(default_factory=list)
    monitor: list[str] = field(default_factory=list)
    cycles: int | None = None

    @property
    def code(self) -> str:
        """``"ok"`` or the fault's ErrorCode name."""
        return "ok" if self.error is None else self.error["code"]


def error_record(exc: Exception) -> dict[str, Any]:
    """The comparable facts of an ExecutionError or DeadlockError."""
    out: dict[str, Any] = {"code": exc.code.name, "message": str(exc).splitlines()[0][:300]}
    if isinstance(exc, DeadlockError):
        out["stuck"] = {m: idx for m, (idx, _) in exc.stuck.items()}
    else:
        out["module"], out["index"] = exc.module, exc.index
        if getattr(exc, "address", None) is not None:
            out["address"] = exc.address  # a bus error's failing burst
    return out


@dataclass(frozen=True)
class Mismatch:
    """How a device's run differed from the reference's.

    ``kind`` is ``outcome``, ``memory``, ``counter``, ``trace`` or ``hang``;
    ``detail`` narrows it (the two fault codes, the arena area, the counter).
    """

    kind: str
    detail: str
    message: str

    @property
    def signature(self) -> tuple[str, str]:
        return (self.kind, self.detail)

    def as_dict(self) -> dict[str, str]:
        return {"kind": self.kind, "detail": self.detail, "message": self.message}


def compare(case: Case, ref: Outcome, dut: Outcome, name: str = "golden") -> Mismatch | None:
    """The first difference between the reference's (called ``name`` in messages) and the
    device's runs of ``case``."""
    if ref.error is not None or dut.error is not None:
        return _compare_errors(ref, dut, name)
    diff = np.flatnonzero(ref.memory != dut.memory)
    if diff.size:
        first = int(diff[0])
        area = _area_of(case, first)
        return Mismatch("memory", area, (
            f"device memory differs at {diff.size} bytes; first at arena offset 0x{first:x} "
            f"({area} area): {name} {ref.memory[first]}, device {dut.memory[first]}"))
    for counter, value in ref.counters.items():
        if counter in dut.counters and dut.counters[counter] != value:
            return Mismatch("counter", counter,
                            f"counter {counter}: {name} {value}, device {dut.counters[counter]}")
    if ref.trace is not None and dut.trace is not None and ref.trace != dut.trace:
        pairs = [(a, b) for a, b in zip(ref.trace, dut.trace, strict=False) if a != b]
        text = "".join(f"\n  {name} {_step(a)}\n  device {_step(b)}" for a, b in pairs[:3])
        if not pairs:
            text = f" ({name} {len(ref.trace)} records, device {len(dut.trace)})"
        return Mismatch("trace", "trace", "traces differ:" + text)
    return None


def trace_steps(records) -> list[tuple]:
    """``(index, engine, popped, pushed)`` per retired instruction, by index.

    The instruction word is the stream's at that index, so these four say
    everything a normalised trace (:func:`vta.trace.normalise`) says; golden
    events and RTL trace records both have the attributes.
    """
    return sorted((r.index, r.module, tuple(r.popped), tuple(r.pushed)) for r in records)


def _step(step: tuple) -> str:
    index, engine, popped, pushed = step
    return (f"instruction {index} on {engine}: pop={','.join(popped) or '-'} "
            f"push={','.join(pushed) or '-'}")


def _compare_errors(ref: Outcome, dut: Outcome, name: str) -> Mismatch | None:
    detail = f"{ref.code}/{dut.code}"
    if ref.code != dut.code:
        return Mismatch("outcome", detail, f"{name}: {_says(ref)}; device: {_says(dut)}")
    g, d = ref.error, dut.error
    if "stuck" in g:
        stuck = d.get("stuck", {})
        if not any(g["stuck"].get(m) == i for m, i in stuck.items()):
            return Mismatch("outcome", detail + " (where)",
                            f"{name}: {_says(ref)}; device: {_says(dut)}")
    elif (g["module"], g["index"]) != (d.get("module"), d.get("index")):
        return Mismatch("outcome", detail + " (where)",
                        f"{name}: {_says(ref)}; device: {_says(dut)}")
    elif "address" in g and "address" in d and g["address"] != d["address"]:
        return Mismatch("outcome", detail + " (address)",
                        f"{name}: {_says(ref)}; device: {_says(dut)}")
    return None


def _says(out: Outcome) -> str:
    if out.error is None:
        return "finished"
    return out.error["message"]


def _area_of(case: Case, offset: int) -> str:
    for name, (lo, size) in case.layout.areas().items():
        if lo <= offset < lo + size:
            return name
    return "insns"


# --------------------------------------------------------------------- session
class Session:
    """One device under test and one reference model for a configuration.

    Parameters
    ----------
    backend : str
        One of :data:`BACKENDS`.
    cfg : Config
        The configuration.
    reference : type, optional
        The reference model class (default :class:`~vta.golden.GoldenModel`, or one of
        :data:`REFERENCES`; tests pass a deliberately broken subclass).
    trace : bool
        Record the device's per-instruction trace and compare it.
    **options
        Further options for :func:`vta.open_device` (``stall``, ``latency``,
        ``watchdog`` ...).
    """

    def __init__(self, backend: str, cfg: Config, *, reference: type = GoldenModel,
                 trace: bool = True, run_timeout: float = 300.0, **options: Any):
        if backend not in BACKENDS:
            raise ValueError(f"backend must be one of {', '.join(BACKENDS)}, not {backend!r}")
        self.backend, self.cfg = backend, cfg
        if trace:
            options["trace"] = True
        if backend != "golden":
            # the window the fault-BUS_ERROR programs reach (no other program goes there);
            # the golden models get it only for a program that reaches it (check): with a
            # window set, the fast model leaves its fast paths for plain LOADs and STOREs
            options["bus_error"] = BUS_ERROR_WINDOW
        self.dut: Device = open_device(backend, cfg, run_timeout=run_timeout, **options)
        try:
            self.mem_size = self.dut.driver.transport.mem_size
            self.arena = self.dut.alloc(ARENA_BYTES)
        except BaseException:
            self.dut.close()
            raise
        self.base = self.arena.addr
        self.trace = trace
        self.reference = reference
        #: what messages call the reference: its name in REFERENCES
        self.ref_name = next((name for name, cls in REFERENCES.items()
                              if issubclass(reference, cls)), reference.__name__)
        self.ref = reference(cfg, np.zeros(self.mem_size, dtype=np.uint8))

    def close(self) -> None:
        self.dut.close()

    # ------------------------------------------------------------------ runs
    def run_reference(self, case: Case, image: bytes | None = None) -> Outcome:
        image = np.frombuffer(bytes(case.image()) if image is None else image, dtype=np.uint8)
        mem = self.ref.mem
        mem[self.base:self.base + image.size] = image
        out = Outcome()
        try:
            counters = self.ref.run(case.insn_addr, case.insn_count, trace=out.events.append)
        except (ExecutionError, DeadlockError) as exc:
            out.error = error_record(exc)
        else:
            out.counters = {k: v for k, v in counters.as_dict().items()
                            if k not in TIMING_COUNTERS}
            out.trace = trace_steps(out.events)
        out.memory = mem[self.base:self.base + image.size].copy()
        return out

    def run_device(self, case: Case, image: bytes | None = None) -> Outcome:
        """Run ``case`` on the device; a hang (watchdog) becomes a ``HANG`` error record."""
        image = bytes(case.image()) if image is None else image
        dev = self.dut
        dev.write(self.arena, image)
        out = Outcome()
        transport = dev.driver.transport
        try:
            stats = dev.run(case.insn_addr, case.insn_count)
        except (ExecutionError, DeadlockError) as exc:
            out.error = error_record(exc)
        except DeviceTimeoutError as exc:
            if type(exc).__name__ != "WatchdogError":
                raise  # the simulator did not answer: a crash, not a result
            out.error = {"code": "HANG", "message": str(exc).splitlines()[0][:300]}
        else:
            out.counters = {k: v for k, v in stats.counters.items()
                            if k not in TIMING_COUNTERS and v is not None}
            out.cycles = stats.cycles
            out.trace = self._device_trace()
        out.monitor = list(getattr(transport, "last_monitor", []))
        out.memory = dev.read(self.arena, len(image))
        return out

    def _device_trace(self) -> list | None:
        return trace_steps(self.dut.driver.transport.last_trace) if self.trace else None

    def check(self, case: Case) -> tuple[Outcome, Outcome, Mismatch | None]:
        """Run ``case`` on both and compare (:func:`compare`)."""
        lo, nbytes = BUS_ERROR_WINDOW
        window = (lo, lo + nbytes) if case.reaches(lo, lo + nbytes) else None
        self.ref.bus_error = window
        if self.backend == "golden":
            self.dut.driver.transport.model.bus_error = window
        image = bytes(case.image())
        ref = self.run_reference(case, image)
        dut = self.run_device(case, image)
        if dut.code == "HANG":
            return ref, dut, Mismatch("hang", "", f"{self.ref_name}: {_says(ref)}; device: "
                                                  f"{dut.error['message']}")
        return ref, dut, compare(case, ref, dut, self.ref_name)

    def scrub(self) -> None:
        """Zero every scratchpad (UOP, INP, WGT, ACC, OUT) on both sides.

        The shrinker runs this before each candidate, so that a candidate
        without the prologue still starts from the same state on both.  The
        reference is made anew (a new model's scratchpads are zero and it has
        no plans cached): a reference whose loops do not reach every entry the
        scrub program names would otherwise keep what earlier programs left
        there, and whether a candidate fails would depend on them.
        """
        self.ref = self.reference(self.cfg, self.ref.mem)
        case = scrub_case(self.cfg, self.base)
        ref, dut, mismatch = self.check(case)
        if ref.error or dut.error or mismatch:
            raise RuntimeError(f"the scrub program failed: {self.ref_name} {_says(ref)}, device "
                               f"{_says(dut)}, {mismatch}")


def scrub_case(cfg: Config, base: int) -> Case:
    """A program that zeroes every scratchpad (OUT through an ALU ADD of 0 over ACC)."""
    gen = Generator(cfg, 0, base)
    kernels: list = []
    insns = gen.prologue(kernels)  # INP, WGT, ACC zeroed; ALU ADD 0 writes OUT
    # then the micro-op buffer: all zeros, so the ALU's micro-op (dst 0, src 0) stays valid
    insns.append(gen._mem(Opcode.LOAD, MemId.UOP, 0, (base + gen.lay.zeros) // UOP_BYTES, 1,
                          cfg.UOP_BUFF_DEPTH, cfg.UOP_BUFF_DEPTH))
    insns.append(GemmInsn(opcode=Opcode.FINISH))
    kernels += [None, None]
    return Case(cfg, 0, "scrub", base, insns, kernels, b"", ["zeroes every scratchpad"])

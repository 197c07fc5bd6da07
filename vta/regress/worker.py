"""What a regression worker runs: one program per task, with cached sessions.

Each worker process keeps its open :class:`~vta.regress.check.Session` objects
(one simulator process and one reference model per backend, configuration and
options) in :data:`_SESSIONS` and reuses them for every task, so a simulator
starts once per worker, not once per program.  Simulator builds are cached per
machine (``~/.cache/vta``, one builder at a time), so they too happen once per
worker machine.

A task never raises for what the device did: a mismatch is a ``fail``
record, and a simulator that crashes or stops answering is closed, reopened
and the program retried once before it becomes a ``crash`` record with its
seed.  A worker process that dies is the engine's business: Dask reschedules
its task on another worker.
"""

from __future__ import annotations

import os
import socket
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..config import Config
from ..errors import DeviceError
from ..golden import GoldenModel
from ..hdltools.build import SimulatorError
from ..isa import dispatch_engine
from . import shrink as shrinker
from .check import Session
from .coverage import collect
from .generator import VERSION, Case, generate, kind_of_seed
from .rtlcov import read_dat
from .timing import device_settings
from .triage import signature

_SESSIONS: dict[tuple, Session] = {}
_LOCK = threading.Lock()
#: Seconds this worker spent opening sessions (simulator builds and start-ups) since its
#: last result was made; the next result carries it as ``setup``.
_SETUP = threading.local()
#: Seconds between the RTL coverage writes of a session (also written at the run's end).
COVERAGE_EVERY = 300.0
_COVERAGE_SENT: dict[tuple, float] = {}
#: Coverage of sessions closed after a failure, not yet sent with a result.
_PENDING: dict[str, int] = {}


def _add(total: dict[str, int], counts: dict[str, int]) -> None:
    for k, v in counts.items():
        total[k] = total.get(k, 0) + v


@dataclass(frozen=True)
class Job:
    """One program to check: everything a worker needs, picklable.

    ``config`` holds the configuration's keys (``Config.to_dict()`` plus
    ``name``); ``options`` go to :func:`vta.open_device`.
    """

    backend: str
    config: dict[str, Any]
    seed: int
    kind: str | None = None
    options: dict[str, Any] = field(default_factory=dict)
    reference: type = GoldenModel
    timing: dict[str, Any] | None = None  # the DRAM timing of this program (RTL)
    generator: int = VERSION  # whose schedule gives the seed's kind

    @property
    def cfg(self) -> Config:
        keys = dict(self.config)
        return Config.from_dict(keys, name=keys.pop("name", "custom"))

    @property
    def key(self) -> tuple[str, int]:
        """(configuration name, seed): what identifies a result in a run."""
        return (self.config.get("name", "custom"), self.seed)


def config_dict(cfg: Config) -> dict[str, Any]:
    """A configuration as a :class:`Job` carries it."""
    return {**cfg.to_dict(), "name": cfg.name}


#: Where this worker imported ``vta`` from (the installed package or a shipped copy).
PACKAGE = str(Path(__file__).resolve().parents[1])


def where() -> str:
    """``host:pid`` of this worker."""
    return f"{socket.gethostname()}:{os.getpid()}"


def session_for(job: Job) -> Session:
    """This thread's open session for the job's backend, configuration and options."""
    key = (threading.get_ident(), job.backend, tuple(sorted(job.config.items())),
           tuple(sorted(job.options.items())), job.reference)
    with _LOCK:
        session = _SESSIONS.get(key)
    if session is None:
        start = time.perf_counter()
        session = Session(job.backend, job.cfg, reference=job.reference, **job.options)
        _SETUP.seconds = getattr(_SETUP, "seconds", 0.0) + time.perf_counter() - start
        with _LOCK:
            _SESSIONS[key] = session
            _COVERAGE_SENT[key] = time.monotonic()
    return session


def drop_session(job: Job) -> None:
    """Close and forget this thread's session for ``job`` (after a crash); its RTL coverage
    since the last write, if the simulator still answers, goes with the next result."""
    with _LOCK:
        keys = [k for k in _SESSIONS if k[0] == threading.get_ident() and k[1] == job.backend
                and k[2] == tuple(sorted(job.config.items()))]
        sessions = [_SESSIONS.pop(k) for k in keys]
    for s in sessions:
        try:
            _add(_PENDING, _write_coverage(s) or {})
        except Exception:  # noqa: BLE001 -- a crashed simulator writes nothing
            pass
        try:
            s.close()
        except Exception:  # noqa: BLE001 -- a crashed simulator may fail to close cleanly
            pass


def _write_coverage(session: Session) -> dict[str, int] | None:
    """The RTL coverage counts of ``session`` since its last write (restarted after)."""
    transport = session.dut.driver.transport
    if not getattr(transport, "coverage", False):
        return None
    with tempfile.TemporaryDirectory(prefix="vta-cov-") as tmp:
        path = Path(tmp) / "coverage.dat"
        if not transport.write_coverage(path, zero=True):
            return None
        return read_dat(path)


def _coverage_due(session: Session) -> dict | None:
    """This session's coverage increment when :data:`COVERAGE_EVERY` seconds have passed."""
    key = next((k for k, s in _SESSIONS.items() if s is session), None)
    now = time.monotonic()
    if key is None or now - _COVERAGE_SENT.get(key, now) < COVERAGE_EVERY:
        return None
    _COVERAGE_SENT[key] = now
    return _write_coverage(session)


def flush_coverage() -> dict[str, int]:
    """Every open session's coverage since its last write, added up (the run's end; called
    with ``client.run`` while no task runs)."""
    total: dict[str, int] = {}
    with _LOCK:
        sessions = list(_SESSIONS.values())
    _add(total, _PENDING)
    _PENDING.clear()
    for s in sessions:
        _add(total, _write_coverage(s) or {})
    return total


def close_sessions() -> int:
    """Close every session of this worker process; returns how many were open."""
    with _LOCK:
        sessions = list(_SESSIONS.values())
        _SESSIONS.clear()
    for s in sessions:
        s.close()
    return len(sessions)


#: What a broken simulator raises (crash, no answer, failed build or start).
SIMULATOR_FAILURES = (DeviceError, SimulatorError, OSError)


def _attempt(job: Job, work, retries: int = 1):
    """``work(session)`` with one fresh-session retry after a simulator failure; returns
    (result or None, attempts, the failures' messages)."""
    failures: list[str] = []
    for attempt in range(retries + 1):
        try:
            return work(session_for(job)), attempt + 1, failures
        except SIMULATOR_FAILURES as exc:
            drop_session(job)
            failures.append(f"{type(exc).__name__}: {exc}"[:500])
    return None, retries + 1, failures


def run_job(job: Job) -> dict[str, Any]:
    """Check one program; returns its result record (see docs/regress.md)."""
    start = time.perf_counter()
    kind = job.kind or kind_of_seed(job.seed, job.generator)
    record: dict[str, Any] = {"type": "result", "config": job.key[0], "seed": job.seed,
                              "kind": kind, "worker": where(), "package": PACKAGE}
    if job.timing is not None:
        record["timing"] = job.timing
    used: list[Session] = []

    def work(session: Session):
        used.append(session)
        case = generate(session.cfg, job.seed, session.base, kind, mem_size=session.mem_size)
        apply_timing(session, job.timing)
        return case, *session.check(case)

    _SETUP.seconds = 0.0
    result, attempts, failures = _attempt(job, work)
    record["attempts"] = attempts
    if failures and result is not None:
        record["retried"] = failures[0]  # what the first attempt ran into
    setup = getattr(_SETUP, "seconds", 0.0)
    record["seconds"] = round(time.perf_counter() - start - setup, 4)
    if setup:
        record["setup"] = round(setup, 3)  # simulator build and start-up, apart
    counts = dict(_PENDING)
    _PENDING.clear()
    if used and result is not None:
        _add(counts, _coverage_due(used[-1]) or {})
    if counts:
        record["rtl_coverage"] = counts
    if result is None:
        record.update(status="crash", message=failures[-1])
        return record
    case, ref, dut, mismatch = result
    engines = [dispatch_engine(i) for i in case.insns]
    hit = collect(ref.events, None if ref.error is None else ref.error["code"], dut.monitor,
                  engines)
    record.update(status="pass" if mismatch is None else "fail", outcome=ref.code,
                  insns=case.insn_count, cycles=dut.cycles, coverage=sorted(hit))
    if mismatch is not None:
        record["mismatch"] = mismatch.as_dict()
        record["signature"] = signature(case, ref, dut, mismatch)
        record["device_outcome"] = dut.code
    return record


def apply_timing(session: Session, timing: dict[str, Any] | None) -> None:
    """Set the device's DRAM timing for the next program (RTL backends; else nothing)."""
    if timing is None:
        return
    transport = session.dut.driver.transport
    if hasattr(transport, "set_timing"):
        transport.set_timing(**device_settings(timing))


def shrink_job(job: Job, budget: float = 120.0) -> dict[str, Any]:
    """Reproduce a failing program after zeroing every scratchpad, and shrink it.

    Returns ``{"status", "original", "case", "stats", "signature", "message",
    "original_out", "case_out"}`` where status is ``shrunk``, ``no-repro``
    (it passes from zeroed scratchpads: it depends on what ran before) or
    ``crash``, and ``*_out`` are the reference's output areas (expectations).
    """
    kind = job.kind or kind_of_seed(job.seed, job.generator)

    def work(session: Session):
        case = generate(session.cfg, job.seed, session.base, kind, mem_size=session.mem_size)
        apply_timing(session, job.timing)
        session.scrub()
        ref, dut, mismatch = session.check(case)
        out = {"status": "no-repro", "original": case, "case": None, "stats": {},
               "original_out": _out_area(case, ref)}
        if mismatch is None:
            return out
        fine = signature(case, ref, dut, mismatch)
        result = shrinker.shrink(case, shrinker.same_failure(session, mismatch, fine),
                                 budget=budget)
        small = result.case
        out.update(status="shrunk", case=small, stats=result.stats, signature=fine,
                   message=mismatch.message,
                   case_out=_out_area(small, session.run_reference(small)))
        return out

    result, _, failures = _attempt(job, work, retries=0)
    if result is None:
        return {"status": "crash", "message": failures[-1], "case": None, "original": None,
                "stats": {}}
    return result


def _out_area(case: Case, outcome) -> bytes | None:
    """The output area after the reference's run, if it finished."""
    if outcome.error is not None:
        return None
    lo, size = case.layout.areas()["out"]
    return bytes(outcome.memory[lo:lo + size])

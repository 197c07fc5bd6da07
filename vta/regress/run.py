"""Running a regression on a Dask cluster, results streamed to a JSON-lines file.

:func:`regress` turns a :class:`Plan` (backend, configurations, seeds) into one
task per (configuration, seed), runs them on a Dask cluster -- a local cluster
of this machine's cores by default, or an existing cluster given by its
scheduler address -- and appends each result to ``results.jsonl`` in the
output folder as it arrives.  The file's first line is the plan, so an
interrupted run resumes from the file alone (``resume=True``): finished
programs are skipped, the others run.  After the run, failing programs are
shrunk on the workers (:mod:`vta.regress.shrink`) and written next to the
report.

Dask is the engine (why: docs/design.md); it comes with the ``regress`` extra.
A worker that dies is replaced and its task rescheduled once
(``distributed.scheduler.allowed-failures``); a second death makes the program
a ``crash`` result with its seed, and the run goes on.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import threading
import time
import uuid
import warnings
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from ..config import Config
from ..errors import VTAError
from ..isa import AluOp
from .check import BACKENDS, REFERENCES
from .coverage import Coverage, Cross
from .generator import VERSION, VERSIONS, kind_of_seed, schedule
from .record import diff_command, provenance, repro
from .reports import write_reports
from .rtlcov import FILE as RTL_COVERAGE
from .rtlcov import RtlCoverage
from .timing import RANGES, timing_of
from .triage import Group, group, record_signature
from .worker import Job, close_sessions, config_dict, flush_coverage, run_job, shrink_job

#: The generator version of new runs (:data:`vta.regress.generator.VERSIONS`: each a schedule
#: of kinds; a results file records its version and resumes with it).
GENERATOR_VERSION = VERSION
#: Failing programs of a signature tried in turn (smallest first) until one fails from
#: zeroed scratchpads, to shrink it.
SHRINK_TRIES = 3
RESULTS = "results.jsonl"
SUMMARY = "summary.json"
log = logging.getLogger(__name__)


class RegressError(VTAError):
    """A regression that cannot start or resume: names what is wrong."""


@dataclass
class Plan:
    """What a regression runs: ``programs`` seeds from ``seed`` on every configuration."""

    backend: str
    configs: list[dict[str, Any]]
    programs: int
    seed: int = 0
    kind: str | None = None
    options: dict[str, Any] = field(default_factory=dict)
    generator: int = GENERATOR_VERSION
    reference: str = "golden"  # the model the device is checked against (REFERENCES)
    #: ``random``: each program's DRAM timing drawn from its seed (vta.regress.timing;
    #: RTL backends); ``fixed``: the session's (options ``latency``, ``stall``)
    timing: str = "fixed"
    timing_ranges: dict[str, Any] | None = None
    #: what made the run (vta.regress.record.provenance), filled in when it starts
    provenance: dict[str, Any] = field(default_factory=dict)
    #: coverage-directed: each program's kind chosen toward the open bins (:class:`Director`)
    directed: bool = False

    def __post_init__(self) -> None:
        if self.backend not in BACKENDS:
            raise RegressError(f"backend must be one of {', '.join(BACKENDS)}, "
                               f"not {self.backend!r}")
        if self.programs < 1:
            raise RegressError(f"programs must be at least 1, not {self.programs}")
        if self.seed < 0:
            raise RegressError(f"seed must be >= 0, not {self.seed}")
        if self.generator not in VERSIONS:
            raise RegressError(f"generator version must be one of "
                               f"{', '.join(map(str, VERSIONS))}, not {self.generator!r}")
        if self.kind is not None and self.kind not in VERSIONS[self.generator]:
            raise RegressError(f"kind must be one of {', '.join(VERSIONS[self.generator])}, "
                               f"not {self.kind!r}")
        if self.reference not in REFERENCES:
            raise RegressError(f"reference must be one of {', '.join(REFERENCES)}, "
                               f"not {self.reference!r}")
        if self.directed and self.kind is not None:
            raise RegressError("a directed run chooses each program's kind: not with a kind")
        if self.timing not in ("fixed", "random"):
            raise RegressError(f"timing must be fixed or random, not {self.timing!r}")
        if self.timing == "random":
            if self.backend == "golden":
                raise RegressError("random DRAM timing applies to the RTL backends, not golden")
            if {"stall", "latency"} & set(self.options):
                raise RegressError("random DRAM timing draws latency and stalls per program: "
                                   "give --stall/--latency only with fixed timing")
            self.timing_ranges = self.timing_ranges or RANGES

    @classmethod
    def of(cls, backend: str, configs: list[Config], programs: int, **kw: Any) -> Plan:
        return cls(backend, [config_dict(c) for c in configs], programs, **kw)

    @property
    def config_names(self) -> list[str]:
        return [c["name"] for c in self.configs]

    def jobs(self, reference: type | None = None) -> list[Job]:
        """Every job, seed by seed (each seed on every configuration in turn), checked
        against ``reference`` (default: the plan's)."""
        reference = reference or REFERENCES[self.reference]
        return [Job(self.backend, cfg, seed, self.kind, dict(self.options), reference,
                    timing_of(seed) if self.timing == "random" else None, self.generator)
                for seed in range(self.seed, self.seed + self.programs)
                for cfg in self.configs]

    def header(self) -> dict[str, Any]:
        return {"type": "run", **asdict(self)}


@dataclass
class Summary:
    """What a regression found."""

    plan: Plan
    counts: Counter = field(default_factory=Counter)
    seconds: float = 0.0  # from the cluster being up to the last result
    startup: float = 0.0  # starting or reaching the cluster
    ran: int = 0  # programs run now (not taken from a resumed file)
    setup: dict[str, float] = field(default_factory=dict)  # per worker: builds, start-ups
    stopped: str | None = None  # why the run stopped before its plan's end
    coverage: Coverage | None = None
    config_coverage: dict[str, Coverage] = field(default_factory=dict)
    cross: Cross | None = None
    rtl: RtlCoverage | None = None
    failures: list[dict[str, Any]] = field(default_factory=list)
    per_config: dict[str, Counter] = field(default_factory=dict)
    per_worker: dict[str, list[float]] = field(default_factory=dict)
    shrunk: list[dict[str, Any]] = field(default_factory=list)
    workers: int = 0
    out: Path | None = None
    known: dict[str, str] | None = None  # signature -> note (--known)
    previous: set[str] | None = None  # signatures of the previous results file (--previous)

    @property
    def groups(self) -> list[Group]:
        """The failures by signature (:mod:`vta.regress.triage`)."""
        return group(self.failures, self.known, self.previous)

    @property
    def unknown(self) -> int:
        """Failing programs whose signature is not in the known-failures file."""
        return sum(g.count for g in self.groups if g.known is None)

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    @property
    def ok(self) -> bool:
        return self.total > 0 and self.counts["pass"] == self.total

    @property
    def rate(self) -> float:
        """Programs per second of this run's wall time, simulator builds included."""
        return self.ran / self.seconds if self.seconds else 0.0

    @property
    def setup_seconds(self) -> float:
        """Wall time the workers spent opening sessions (builds, simulator start-ups): their
        setup seconds over the worker count (they open in parallel)."""
        return sum(self.setup.values()) / max(1, self.workers)

    @property
    def steady_rate(self) -> float:
        """Programs per second with the workers' setup time taken out of the wall time."""
        wall = self.seconds - self.setup_seconds
        return self.ran / wall if wall > 0 else 0.0

    def add(self, record: dict[str, Any], *, new: bool) -> None:
        status = record["status"]
        self.counts[status] += 1
        self.per_config.setdefault(record["config"], Counter())[status] += 1
        if self.coverage is not None and "coverage" in record:
            self.coverage.add(record["coverage"])
            self.config_coverage.setdefault(record["config"], Coverage(self.plan.backend)).add(
                record["coverage"])
            if self.cross is not None:
                self.cross.add(record)
        if status != "pass":
            self.failures.append(record)
        if new:
            self.ran += 1
            worker = record.get("worker", "?")
            self.per_worker.setdefault(worker, []).append(record.get("seconds", 0.0))
            if record.get("setup"):
                self.setup[worker] = self.setup.get(worker, 0.0) + record["setup"]

    def as_dict(self) -> dict[str, Any]:
        return {
            "plan": asdict(self.plan), "counts": dict(self.counts), "total": self.total,
            "ran": self.ran, "seconds": round(self.seconds, 3),
            "startup_seconds": round(self.startup, 3),
            "programs_per_second": round(self.rate, 3), "workers": self.workers,
            "setup_seconds": round(self.setup_seconds, 3),
            "programs_per_second_without_setup": round(self.steady_rate, 3),
            "stopped": self.stopped,
            "per_config": {k: dict(v) for k, v in self.per_config.items()},
            "per_worker": {w: {"programs": len(t), "busy_seconds": round(sum(t), 3)}
                           for w, t in self.per_worker.items()},
            "failures": [{k: r.get(k) for k in ("config", "seed", "kind", "status", "mismatch",
                                                "message", "outcome", "device_outcome",
                                                "timing", "repro") if k in r}
                         for r in self.failures],
            "signatures": [g.as_dict() for g in self.groups],
            "shrunk": self.shrunk,
            "coverage": None if self.coverage is None else self.coverage.as_dict(),
            "coverage_per_config": {c: {k: v for k, v in cov.as_dict().items() if k != "bins"}
                                    for c, cov in self.config_coverage.items()},
            "cross": None if self.cross is None else self.cross.as_dict(),
            "rtl_coverage": None if self.rtl is None else self.rtl.as_dict(),
        }


class Director:
    """Coverage-directed kinds: each program's kind drawn with weights toward the bins
    its configuration has not hit yet.

    The first period of the run's generator version's schedule (41 or 49 programs per
    configuration) runs as scheduled: it tries every kind and, on the presets, already
    hits every bin. Then, while some bin of the configuration is still open (a
    functional bin or one of its ALU cross bins), each program's kind is the one most
    likely to hit the open bins by what the run has seen: for every kind and bin, the
    share of its programs that hit the bin (hits + 1/2 over programs + 3/2, so kinds
    tried less look more promising for bins nobody has hit yet), summed over the open
    bins; ties are broken by a draw from the seed. Once every bin is hit, the schedule
    takes over again. (Thompson sampling from the first program did worse than the
    schedule in the measurements of docs/regress.md: the kinds to learn cost more
    programs than the schedule needs.)
    """

    PRIOR = 0.5

    def __init__(self, summary: Summary):
        self.summary = summary
        self.runs: Counter = Counter()
        self.version = summary.plan.generator
        self.kinds = tuple(VERSIONS[self.version])
        self.hits: dict[str, Counter] = {k: Counter() for k in self.kinds}

    def observe(self, record: dict[str, Any]) -> None:
        kind = record.get("kind")
        if kind in self.hits and "coverage" in record:
            self.runs[kind] += 1
            self.hits[kind].update(record["coverage"])

    def open_bins(self, config: str) -> list[str]:
        cov = self.summary.config_coverage.get(config)
        holes = list(cov.holes) if cov is not None else list(
            Coverage(self.summary.plan.backend).bins)
        counts = cov.counts if cov is not None else Counter()
        alu = [f"alu:{op.name}.{how}" for op in AluOp for how in ("imm", "tensor")]
        return holes + [b for b in alu if not counts[b] and b not in holes]

    def choose(self, job: Job) -> Job:
        cov = self.summary.config_coverage.get(job.key[0])
        holes = self.open_bins(job.key[0])
        if not holes or cov is None or cov.programs < len(schedule(self.version)):
            return replace(job, kind=kind_of_seed(job.seed, self.version))
        rng = np.random.default_rng([job.seed, 0xD1EC7])
        hits = np.array([[self.hits[k][b] for b in holes] for k in self.kinds], dtype=float)
        runs = np.array([self.runs[k] for k in self.kinds], dtype=float)[:, None]
        score = ((hits + self.PRIOR) / (runs + 1 + self.PRIOR)).sum(axis=1)
        score += rng.random(len(self.kinds)) * 1e-9  # ties
        return replace(job, kind=self.kinds[int(np.argmax(score))])


# ------------------------------------------------------------------ results file
def read_results(path: Path) -> tuple[Plan, list[dict[str, Any]]]:
    """The plan and the result records of a results file (a torn last line is dropped)."""
    try:
        lines = path.read_text().splitlines()
    except OSError as exc:
        raise RegressError(f"cannot read the results file {path}: {exc.strerror}") from None
    if not lines:
        raise RegressError(f"{path} is empty: it holds no run to resume")
    try:
        header = json.loads(lines[0])
    except json.JSONDecodeError:
        raise RegressError(f"{path}: line 1 is not a run header (JSON)") from None
    if header.get("type") != "run":
        raise RegressError(f"{path}: line 1 must be the run header, not {lines[0][:80]!r}")
    header.pop("type")
    if header.get("generator") not in VERSIONS:
        raise RegressError(f"{path} was written by generator version {header.get('generator')}"
                           f"; this vta knows versions {', '.join(map(str, VERSIONS))}: "
                           "start a new run")
    plan = Plan(**header)
    records = []
    for number, line in enumerate(lines[1:], start=2):
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            if number != len(lines):
                raise RegressError(f"{path}: line {number} is not JSON") from None
            log.warning("%s: dropping the torn last line %d", path, number)
    return plan, records


def _drop_torn_line(path: Path) -> None:
    """Cut a results file after its last complete line (a run killed mid-write)."""
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        with open(path, "r+b") as f:
            f.truncate(data.rfind(b"\n") + 1)


# ------------------------------------------------------------------ cluster
class _SyncCancelRace(logging.Filter):
    """Drops the one log record of a race inside Dask's ``distributed.utils.sync``.

    When Ctrl-C interrupts the client while ``sync`` waits, it schedules a ``cancel``
    of its future on the event loop; if the interrupt came before that future was
    assigned, ``cancel`` raises NameError, which tornado logs with a traceback
    (distributed 2026.8.0).  The run is being interrupted anyway and nothing is lost,
    so that record alone is dropped; every other record passes.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info
        if not exc or exc[0] is not NameError or exc[2] is None:
            return True
        tb = exc[2]
        while tb.tb_next is not None:
            tb = tb.tb_next
        code = tb.tb_frame.f_code
        return not (code.co_name == "cancel"
                    and Path(code.co_filename).parts[-2:] == ("distributed", "utils.py"))


_SYNC_CANCEL_RACE = _SyncCancelRace()


@contextlib.contextmanager
def connect(workers: int | None = None, cluster: str | None = None, *,
            processes: bool = True, ship: bool = True) -> Iterator[Any]:
    """A Dask client: a local cluster of ``workers`` processes, or the scheduler ``cluster``.

    With ``cluster`` and ``ship``, this vta package (its HDL and testbench
    included) is uploaded to every worker (:mod:`vta.regress.ship`), so the
    workers run exactly this version, and removed again at the end.
    """
    try:
        import dask
        from dask.distributed import Client, LocalCluster
    except ImportError:
        raise RegressError("vta regress needs Dask: pip install 'vta[regress]'") from None
    tornado_log = logging.getLogger("tornado.application")
    if _SYNC_CANCEL_RACE not in tornado_log.filters:
        tornado_log.addFilter(_SYNC_CANCEL_RACE)
    # one task per worker thread at a time: a worker that dies then takes only the
    # task it was running with it (which is retried once, then reported as a crash)
    with dask.config.set({"distributed.scheduler.allowed-failures": 1,
                          "distributed.scheduler.worker-saturation": 1.0,
                          "distributed.worker.daemon": False,
                          "distributed.admin.tick.limit": "60s"}):
        if cluster:
            try:
                client = Client(cluster, timeout="30s")
            except (OSError, TimeoutError) as exc:
                raise RegressError(f"cannot reach the Dask scheduler at {cluster!r}: {exc}") \
                    from None
            from .ship import ship as upload
            from .ship import shipped_elsewhere, unship

            shipped = False
            try:
                if ship:
                    upload(client)
                    shipped = True
                elif not unship(client) and shipped_elsewhere(client):
                    client.restart()  # workers still importing a copy shipped before
                yield client
            finally:
                with contextlib.suppress(Exception):
                    client.run(close_sessions)
                if shipped:
                    with contextlib.suppress(Exception):
                        unship(client)
                client.close()
        else:
            n = workers or os.cpu_count() or 1
            # the worker processes inherit it: one BLAS thread each (see tests/conftest.py)
            for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
                os.environ.setdefault(var, "1")
            with _sigint_ignored(), warnings.catch_warnings():
                # the workers inherit SIGINT's disposition: Ctrl-C is the client's alone; the
                # scheduler's HTTP server takes another port when another cluster on this
                # machine has Dask's 8787, and says so in a warning that means nothing here
                warnings.filterwarnings("ignore", message="Port .* is already in use")
                local = LocalCluster(n_workers=n, threads_per_worker=1, processes=processes,
                                     dashboard_address=None, silence_logs=logging.ERROR)
            client = Client(local)
            try:
                yield client
            finally:
                with contextlib.suppress(Exception):
                    client.run(close_sessions)
                client.close()
                local.close()


@contextlib.contextmanager
def _sigint_ignored() -> Iterator[None]:
    """Ignore SIGINT while worker processes start (they keep ignoring it), if we can."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def worker_count(client) -> int:
    return max(1, len(client.scheduler_info().get("workers", {})))


# ------------------------------------------------------------------ the run
def regress(plan: Plan, out: str | Path, *, workers: int | None = None,
            cluster: str | None = None, resume: bool = False, shrink: int = 3,
            shrink_budget: float = 120.0, reference: type | None = None,
            processes: bool = True, ship: bool = True, max_time: float | None = None,
            max_failures: int | None = None, known: dict[str, str] | None = None,
            previous: set[str] | None = None, history: Sequence[Path] = (),
            on_result: Callable[[dict[str, Any], int, int], None] | None = None) -> Summary:
    """Run ``plan`` (see the module docstring); returns the :class:`Summary`.

    ``out`` is the output folder (``results.jsonl``, ``summary.json``,
    shrunk programs).  With ``resume`` the plan is read from its results file
    and the ``plan`` argument must be ``None``.  ``on_result(record, done,
    total)`` is called for every result (progress display).  ``reference`` is
    the reference model class (default: the plan's, from
    :data:`~vta.regress.check.REFERENCES`); ``processes=False`` runs the local
    cluster's workers as threads of this process.  ``max_time``
    (seconds of running programs) and ``max_failures`` (non-passing results)
    stop the run early: programs in flight are cancelled, and ``resume``
    finishes the plan later.  Failures are grouped by signature; ``shrink``
    groups (the most frequent first) get their smallest program shrunk.
    ``known`` (signature -> note) and ``previous`` (the signatures of an
    earlier run) mark groups known and new.  ``junit.xml`` and ``report.html``
    (:mod:`vta.regress.reports`) are written too, the latter with the trend
    across the ``history`` results files.
    """
    out = Path(out)
    path = out / RESULTS
    earlier: list[dict[str, Any]] = []  # the results file's records (resume)
    if resume:
        plan, earlier = read_results(path)
        _drop_torn_line(path)
    elif path.exists() and path.stat().st_size:
        raise RegressError(f"{path} exists: resume it (--resume {path}) or choose another "
                           "output folder")
    out.mkdir(parents=True, exist_ok=True)
    reference = reference or REFERENCES[plan.reference]
    if not plan.provenance:
        plan.provenance = provenance(plan.backend)
    summary = Summary(plan, coverage=Coverage(plan.backend), out=out, known=known,
                      previous=previous, cross=Cross(plan.config_names, plan.timing == "random"))
    if plan.options.get("coverage"):
        summary.rtl = (RtlCoverage.load(out / RTL_COVERAGE) if (out / RTL_COVERAGE).exists()
                       else RtlCoverage(plan.provenance.get("hdl"), sources=[str(out)]))
    done = set()
    for record in earlier:
        if record.get("type") == "result":
            summary.add(record, new=False)
            done.add((record["config"], record["seed"]))
    jobs = [j for j in plan.jobs(reference) if j.key not in done]
    total = len(done) + len(jobs)
    with open(path, "a") as results:
        if not earlier:
            results.write(json.dumps(plan.header()) + "\n")
            results.flush()
        start = time.perf_counter()
        with connect(workers, cluster, processes=processes, ship=ship) as client:
            summary.workers = worker_count(client)
            summary.startup = time.perf_counter() - start
            start = time.perf_counter()

            def record_result(record: dict[str, Any]) -> None:
                counts = record.pop("rtl_coverage", None)
                if counts and summary.rtl is not None:
                    summary.rtl.add(counts)
                    summary.rtl.save(out / RTL_COVERAGE)
                record["at"] = round(time.time(), 3)
                if record["status"] != "pass":
                    record["repro"] = repro(record, plan, out)
                results.write(json.dumps(record) + "\n")
                results.flush()
                summary.add(record, new=True)
                if on_result is not None:
                    on_result(record, summary.total, total)

            def stop() -> str | None:
                if max_time is not None and time.perf_counter() - start > max_time:
                    return f"--max-time {max_time:g} s reached"
                bad = summary.total - summary.counts["pass"]
                if max_failures is not None and bad >= max_failures:
                    return f"--max-failures {max_failures} reached ({bad} failed)"
                return None

            director = Director(summary) if plan.directed else None
            for record in earlier:
                if director is not None and record.get("type") == "result":
                    director.observe(record)

            def record_and_learn(record: dict[str, Any]) -> None:
                record_result(record)
                if director is not None:
                    director.observe(record)

            summary.stopped = _run_jobs(client, jobs, record_and_learn,
                                        window=4 * summary.workers + 2, stop=stop,
                                        choose=None if director is None else director.choose)
            summary.seconds = time.perf_counter() - start
            if summary.rtl is not None:
                with contextlib.suppress(Exception):
                    _wait_idle(client)  # a cancelled program may still be using its simulator
                    for counts in client.run(flush_coverage).values():
                        summary.rtl.add(counts)
                summary.rtl.save(out / RTL_COVERAGE)
            failed = [g.by_size()[:SHRINK_TRIES] for g in summary.groups
                      if any(r["status"] == "fail" for r in g.records)][:shrink]
            summary.shrunk = _shrink_failures(client, plan, failed, reference, out,
                                              shrink_budget)
    (out / SUMMARY).write_text(json.dumps(summary.as_dict(), indent=1) + "\n")
    _, records = read_results(path)
    write_reports(summary, [r for r in records if r.get("type") == "result"], out,
                  [(_label(h), summary_of(h)[0]) for h in history])
    return summary


def _label(path: Path) -> str:
    return path.parent.name or str(path)


def summary_of(path: Path | Sequence[Path], *, known: dict[str, str] | None = None,
               previous: set[str] | None = None) -> tuple[Summary, list[dict[str, Any]]]:
    """The summary of a results file, or of several merged (without running anything),
    and the result records: counts, coverage (functional, per configuration, cross), failures
    by signature, and from the files' folders the RTL coverage (``rtl-coverage.json``,
    added up), the shrunk programs and the worker count (``summary.json``).  Merged files
    must be of one backend; the first one's plan heads the summary, with the configurations
    of all of them."""
    paths = [path] if isinstance(path, Path) else list(path)
    plans, records = [], []
    for p in paths:
        plan, recs = read_results(p)
        if plans and plan.backend != plans[0].backend:
            raise RegressError(f"{p} is a {plan.backend} run, {paths[0]} a "
                               f"{plans[0].backend} one: only runs of one backend merge")
        plans.append(plan)
        records += [r for r in recs if r.get("type") == "result"]
    plan = plans[0]
    for other in plans[1:]:
        plan.configs += [c for c in other.configs if c["name"] not in plan.config_names]
    random_timing = any(p.timing == "random" for p in plans)
    summary = Summary(plan, coverage=Coverage(plan.backend), out=paths[0].parent, known=known,
                      previous=previous, cross=Cross(plan.config_names, random_timing))
    for record in records:
        summary.add(record, new=True)
    for p in paths:
        with contextlib.suppress(OSError, ValueError, KeyError):
            data = json.loads((p.parent / SUMMARY).read_text())
            summary.shrunk += data.get("shrunk", [])
            summary.workers = max(summary.workers, data.get("workers", 0))
        if (p.parent / RTL_COVERAGE).exists():
            rtl = RtlCoverage.load(p.parent / RTL_COVERAGE)
            if summary.rtl is None:
                summary.rtl = rtl
            else:
                try:
                    summary.rtl.merge(rtl)
                except ValueError as exc:
                    raise RegressError(f"{p.parent / RTL_COVERAGE}: {exc}") from None
    times = [r["at"] for r in records if "at" in r]
    summary.seconds = max(times) - min(times) if len(times) > 1 else 0.0
    return summary, records


def _run_jobs(client, jobs: list[Job], record: Callable[[dict[str, Any]], None],
              window: int, stop: Callable[[], str | None] = lambda: None,
              choose: Callable[[Job], Job] | None = None) -> str | None:
    """Submit ``jobs`` keeping at most ``window`` in flight; ``record`` each result.

    ``choose`` may change a job as it is submitted (its kind: :class:`Director`).
    Stops submitting when ``stop()`` gives a reason (returned, after the programs in
    flight are cancelled); None when every job ran.
    """
    from dask.distributed import as_completed

    pending = iter(jobs)
    futures: dict[Any, Job] = {}

    def submit() -> Any:
        job = next(pending, None)
        if job is None:
            return None
        if choose is not None:
            job = choose(job)
        future = client.submit(run_job, job, pure=False,
                               key=f"vta-regress-{job.key[0]}-{job.seed}-{uuid.uuid4().hex[:6]}")
        futures[future] = job
        return future

    first = [f for f in (submit() for _ in range(window)) if f is not None]
    stream = as_completed(first)
    reason = None
    try:
        for future in stream:
            job = futures.pop(future)
            record(_result_of(client, future, job))
            reason = reason or stop()
            if reason is not None:
                client.cancel(list(futures))
                futures.clear()
                break
            nxt = submit()
            if nxt is not None:
                stream.add(nxt)
    except BaseException:
        client.cancel(list(futures))
        raise
    return reason


def _wait_idle(client, timeout: float = 600.0) -> None:
    """Wait until no worker runs a task (at most ``timeout`` seconds)."""
    deadline = time.monotonic() + timeout
    while any(client.processing().values()) and time.monotonic() < deadline:
        time.sleep(0.2)


def _deaths(client, key: str) -> int:
    """How many workers died running task ``key`` (the scheduler's count)."""
    def count(dask_scheduler, key):
        ts = dask_scheduler.tasks.get(key)
        return ts.suspicious if ts is not None else 0

    try:
        return int(client.run_on_scheduler(count, key=key))
    except Exception:  # noqa: BLE001 -- a lost count only loses the mark
        return 0


def _result_of(client, future, job: Job) -> dict[str, Any]:
    """The task's record (``attempts`` counting workers that died running it), or a
    crash/error record naming the seed."""
    base = {"type": "result", "config": job.key[0], "seed": job.seed,
            "kind": job.kind or kind_of_seed(job.seed, job.generator)}
    if job.timing is not None:
        base["timing"] = job.timing
    try:
        record = future.result()
    except Exception as exc:  # noqa: BLE001 -- every failure becomes a record
        from dask.distributed import KilledWorker

        if isinstance(exc, KilledWorker):
            return {**base, "status": "crash", "attempts": max(2, _deaths(client, future.key)),
                    "message": f"the worker running it died twice: {exc}"}
        return {**base, "status": "error", "message": f"{type(exc).__name__}: {exc}"}
    died = _deaths(client, future.key)
    if died:
        record["attempts"] = record.get("attempts", 1) + died
        record["rescheduled"] = died
    return record


def _shrink_failures(client, plan: Plan, failed: list[list[dict[str, Any]]], reference: type,
                     out: Path, budget: float) -> list[dict[str, Any]]:
    """Shrink one program of each group: ``failed`` has each group's candidates, tried in
    turn while the one before does not fail from zeroed scratchpads (``no-repro``)."""
    from .report import write_case

    by_key = {j.key: j for j in plan.jobs(reference)}

    def submit(r: dict[str, Any]):
        return client.submit(shrink_job, replace(by_key[(r["config"], r["seed"])],
                                                 kind=r.get("kind")), budget, pure=False)

    firsts = [submit(tries[0]) for tries in failed]  # the groups' shrinks run in parallel
    shrunk = []
    for tries, future in zip(failed, firsts, strict=True):
        record, no_repro = tries[0], []
        try:
            result = future.result()
            for other in tries[1:]:
                if result["status"] != "no-repro":
                    break
                no_repro.append(record["seed"])
                record = other  # (an error then names this one)
                result = submit(other).result()
        except Exception as exc:  # noqa: BLE001
            result = {"status": "error", "message": f"{type(exc).__name__}: {exc}"}
        name = f"{record['config']}-seed{record['seed']}"
        entry: dict[str, Any] = {"config": record["config"], "seed": record["seed"],
                                 "signature": record_signature(record)}
        if no_repro:
            entry["no_repro"] = no_repro  # smaller programs that pass from zeroed scratchpads
        entry["status"] = result["status"]
        if result["status"] == "error":
            entry["message"] = result["message"]
            shrunk.append(entry)
            continue
        why = [f"{plan.backend} against the {plan.reference} model: "
               f"{result.get('message') or record.get('message', '')}"]
        if result.get("original") is not None:
            entry["program"] = str(write_case(result["original"], out / name, notes=why,
                                              expect_out=result.get("original_out")))
        if result.get("case") is not None:
            entry["shrunk"] = str(write_case(result["case"], out / f"{name}.min", notes=why,
                                             expect_out=result.get("case_out")))
            entry["stats"] = result["stats"]
            diff = diff_command(entry["shrunk"], plan.backend, record.get("timing"))
            if diff:
                entry["diff"] = diff
        if result.get("message"):
            entry["message"] = result["message"]
        shrunk.append(entry)
    return shrunk

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
import shutil
import signal
import tempfile
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..config import Config
from ..errors import VTAError
from .check import BACKENDS, REFERENCES
from .coverage import Coverage
from .generator import KINDS
from .worker import Job, close_sessions, config_dict, run_job, shrink_job

#: Bump when the generator makes a different program for some seed; a results
#: file of another version cannot be resumed.
GENERATOR_VERSION = 1
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

    def __post_init__(self) -> None:
        if self.backend not in BACKENDS:
            raise RegressError(f"backend must be one of {', '.join(BACKENDS)}, "
                               f"not {self.backend!r}")
        if self.programs < 1:
            raise RegressError(f"programs must be at least 1, not {self.programs}")
        if self.seed < 0:
            raise RegressError(f"seed must be >= 0, not {self.seed}")
        if self.kind is not None and self.kind not in KINDS:
            raise RegressError(f"kind must be one of {', '.join(KINDS)}, not {self.kind!r}")
        if self.reference not in REFERENCES:
            raise RegressError(f"reference must be one of {', '.join(REFERENCES)}, "
                               f"not {self.reference!r}")

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
        return [Job(self.backend, cfg, seed, self.kind, dict(self.options), reference)
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
    coverage: Coverage | None = None
    failures: list[dict[str, Any]] = field(default_factory=list)
    per_config: dict[str, Counter] = field(default_factory=dict)
    per_worker: dict[str, list[float]] = field(default_factory=dict)
    shrunk: list[dict[str, Any]] = field(default_factory=list)
    workers: int = 0
    out: Path | None = None

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    @property
    def ok(self) -> bool:
        return self.total > 0 and self.counts["pass"] == self.total

    @property
    def rate(self) -> float:
        """Programs per second of this run's wall time."""
        return self.ran / self.seconds if self.seconds else 0.0

    def add(self, record: dict[str, Any], *, new: bool) -> None:
        status = record["status"]
        self.counts[status] += 1
        self.per_config.setdefault(record["config"], Counter())[status] += 1
        if self.coverage is not None and "coverage" in record:
            self.coverage.add(record["coverage"])
        if status != "pass":
            self.failures.append(record)
        if new:
            self.ran += 1
            self.per_worker.setdefault(record.get("worker", "?"), []).append(
                record.get("seconds", 0.0))

    def as_dict(self) -> dict[str, Any]:
        return {
            "plan": asdict(self.plan), "counts": dict(self.counts), "total": self.total,
            "ran": self.ran, "seconds": round(self.seconds, 3),
            "startup_seconds": round(self.startup, 3),
            "programs_per_second": round(self.rate, 3), "workers": self.workers,
            "per_config": {k: dict(v) for k, v in self.per_config.items()},
            "per_worker": {w: {"programs": len(t), "busy_seconds": round(sum(t), 3)}
                           for w, t in self.per_worker.items()},
            "failures": [{k: r.get(k) for k in ("config", "seed", "kind", "status", "mismatch",
                                                "message", "outcome", "device_outcome")}
                         for r in self.failures],
            "shrunk": self.shrunk,
            "coverage": None if self.coverage is None else self.coverage.as_dict(),
        }


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
    if header.get("generator") != GENERATOR_VERSION:
        raise RegressError(f"{path} was written by generator version {header.get('generator')}"
                           f"; this vta generates version {GENERATOR_VERSION}, whose programs "
                           "differ: start a new run")
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
    included) is uploaded to every worker with Dask's UploadDirectory plugin,
    so the workers run exactly this version.
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
            staged = None
            try:
                if ship:
                    staged = _stage_package()
                    from dask.distributed import UploadDirectory

                    client.register_plugin(UploadDirectory(staged, update_path=True,
                                                           restart_workers=True))
                yield client
            finally:
                with contextlib.suppress(Exception):
                    client.run(close_sessions)
                client.close()
                if staged:
                    shutil.rmtree(Path(staged).parent, ignore_errors=True)
        else:
            n = workers or os.cpu_count() or 1
            # the worker processes inherit it: one BLAS thread each (see tests/conftest.py)
            for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
                os.environ.setdefault(var, "1")
            with _sigint_ignored():  # the workers inherit it: Ctrl-C is the client's alone
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


def _stage_package() -> str:
    """A temporary folder holding this ``vta`` package laid out as the wheel lays it out."""
    from ..hdltools.build import hdl_dir, sim_dir

    src = Path(__file__).resolve().parents[1]  # the vta package
    root = Path(tempfile.mkdtemp(prefix="vta-ship-"))
    stage = root / f"vta-{uuid.uuid4().hex[:8]}"
    shutil.copytree(src, stage / "vta", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    if not (stage / "vta" / "hdl").is_dir():
        shutil.copytree(hdl_dir(), stage / "vta" / "hdl")
    if not (stage / "vta" / "sim_assets").is_dir():
        shutil.copytree(sim_dir(), stage / "vta" / "sim_assets")
    return str(stage)


def worker_count(client) -> int:
    return max(1, len(client.scheduler_info().get("workers", {})))


# ------------------------------------------------------------------ the run
def regress(plan: Plan, out: str | Path, *, workers: int | None = None,
            cluster: str | None = None, resume: bool = False, shrink: int = 3,
            shrink_budget: float = 120.0, reference: type | None = None,
            processes: bool = True, ship: bool = True,
            on_result: Callable[[dict[str, Any], int, int], None] | None = None) -> Summary:
    """Run ``plan`` (see the module docstring); returns the :class:`Summary`.

    ``out`` is the output folder (``results.jsonl``, ``summary.json``,
    shrunk programs).  With ``resume`` the plan is read from its results file
    and the ``plan`` argument must be ``None``.  ``on_result(record, done,
    total)`` is called for every result (progress display).  ``reference`` is
    the reference model class (default: the plan's, from
    :data:`~vta.regress.check.REFERENCES`); ``processes=False`` runs the local
    cluster's workers as threads of this process.
    """
    out = Path(out)
    path = out / RESULTS
    previous: list[dict[str, Any]] = []
    if resume:
        plan, previous = read_results(path)
        _drop_torn_line(path)
    elif path.exists() and path.stat().st_size:
        raise RegressError(f"{path} exists: resume it (--resume {path}) or choose another "
                           "output folder")
    out.mkdir(parents=True, exist_ok=True)
    reference = reference or REFERENCES[plan.reference]
    summary = Summary(plan, coverage=Coverage(plan.backend), out=out)
    done = set()
    for record in previous:
        if record.get("type") == "result":
            summary.add(record, new=False)
            done.add((record["config"], record["seed"]))
    jobs = [j for j in plan.jobs(reference) if j.key not in done]
    total = len(done) + len(jobs)
    with open(path, "a") as results:
        if not previous:
            results.write(json.dumps(plan.header()) + "\n")
            results.flush()
        start = time.perf_counter()
        with connect(workers, cluster, processes=processes, ship=ship) as client:
            summary.workers = worker_count(client)
            summary.startup = time.perf_counter() - start
            start = time.perf_counter()

            def record_result(record: dict[str, Any]) -> None:
                results.write(json.dumps(record) + "\n")
                results.flush()
                summary.add(record, new=True)
                if on_result is not None:
                    on_result(record, summary.total, total)

            _run_jobs(client, jobs, record_result, window=4 * summary.workers + 2)
            summary.seconds = time.perf_counter() - start
            failed = [r for r in summary.failures if r["status"] == "fail"][:shrink]
            summary.shrunk = _shrink_failures(client, plan, failed, reference, out,
                                              shrink_budget)
    (out / SUMMARY).write_text(json.dumps(summary.as_dict(), indent=1) + "\n")
    return summary


def _run_jobs(client, jobs: list[Job], record: Callable[[dict[str, Any]], None],
              window: int) -> None:
    """Submit ``jobs`` keeping at most ``window`` in flight; ``record`` each result."""
    from dask.distributed import as_completed

    pending = iter(jobs)
    futures: dict[Any, Job] = {}

    def submit() -> Any:
        job = next(pending, None)
        if job is None:
            return None
        future = client.submit(run_job, job, pure=False,
                               key=f"vta-regress-{job.key[0]}-{job.seed}-{uuid.uuid4().hex[:6]}")
        futures[future] = job
        return future

    first = [f for f in (submit() for _ in range(window)) if f is not None]
    stream = as_completed(first)
    try:
        for future in stream:
            job = futures.pop(future)
            record(_result_of(future, job))
            nxt = submit()
            if nxt is not None:
                stream.add(nxt)
    except BaseException:
        client.cancel(list(futures))
        raise


def _result_of(future, job: Job) -> dict[str, Any]:
    """The task's record, or a crash/error record naming the seed."""
    base = {"type": "result", "config": job.key[0], "seed": job.seed, "kind": job.kind}
    try:
        return future.result()
    except Exception as exc:  # noqa: BLE001 -- every failure becomes a record
        from dask.distributed import KilledWorker

        if isinstance(exc, KilledWorker):
            return {**base, "status": "crash",
                    "message": f"the worker running it died twice: {exc}"}
        return {**base, "status": "error", "message": f"{type(exc).__name__}: {exc}"}


def _shrink_failures(client, plan: Plan, failed: list[dict[str, Any]], reference: type,
                     out: Path, budget: float) -> list[dict[str, Any]]:
    from .report import write_case

    by_key = {j.key: j for j in plan.jobs(reference)}
    futures = [(r, client.submit(shrink_job, by_key[(r["config"], r["seed"])], budget,
                                 pure=False)) for r in failed]
    shrunk = []
    for record, future in futures:
        name = f"{record['config']}-seed{record['seed']}"
        entry: dict[str, Any] = {"config": record["config"], "seed": record["seed"]}
        try:
            result = future.result()
        except Exception as exc:  # noqa: BLE001
            entry.update(status="error", message=f"{type(exc).__name__}: {exc}")
            shrunk.append(entry)
            continue
        entry["status"] = result["status"]
        why = [f"{plan.backend} against the {plan.reference} model: "
               f"{result.get('message') or record.get('message', '')}"]
        if result.get("original") is not None:
            entry["program"] = str(write_case(result["original"], out / name, notes=why,
                                              expect_out=result.get("original_out")))
        if result.get("case") is not None:
            entry["shrunk"] = str(write_case(result["case"], out / f"{name}.min", notes=why,
                                             expect_out=result.get("case_out")))
            entry["stats"] = result["stats"]
        if result.get("message"):
            entry["message"] = result["message"]
        shrunk.append(entry)
    return shrunk

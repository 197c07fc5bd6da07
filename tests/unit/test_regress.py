"""``vta regress``: generator, coverage, race check, shrinking, the Dask engine and the CLI.

Most tests use the golden backend (the device under test is then a second
golden model behind the host driver) and reference models patched in the
test; one slice runs the tiny preset on Verilator.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path

import needs
import numpy as np
import pytest
from click.testing import CliRunner

import vta
from vta.backends import golden as golden_backend
from vta.cli import main
from vta.errors import ConfigError, ErrorCode, ExecutionError
from vta.golden import GoldenModel
from vta.isa import AluInsn, AluOp, GemmInsn, MemId, MemInsn, Opcode, encode_stream
from vta.progfile.lint import lint
from vta.regress import coverage, races, run, triage
from vta.regress.check import Session
from vta.regress.configs import parse_configs, random_config
from vta.regress.generator import (
    FAULTS,
    KINDS,
    WEIGHTS,
    Case,
    generate,
    kind_of_seed,
    schedule,
)
from vta.regress.report import to_program
from vta.regress.shrink import same_failure, shrink

TINY = vta.Config.load("tiny")
BASE = 0x1000

dask = pytest.importorskip("dask.distributed")


# ------------------------------------------------------------------ references
class MaxImmOffByOne(GoldenModel):
    """A plausible model bug: ALU MAX with an immediate uses imm + 1."""

    def _alu(self, engine, index, insn, deadline):
        alu_opcode, use_imm, imm = insn[14:]  # the model's decoded AluInsn: its fields in order
        if use_imm and alu_opcode == AluOp.MAX:
            insn = [*insn[:16], imm + 1]
        return super()._alu(engine, index, insn, deadline)


class Killer(GoldenModel):
    """Kills its worker process: at every program without FINISH, and once (per marker
    file ``$VTA_TEST_KILL_MARKER``) at the first other program."""

    def run(self, insn_addr, insn_count, *, trace=None):
        if self.mem[insn_addr + (insn_count - 1) * 16] & 7 != Opcode.FINISH:
            os._exit(3)
        marker = Path(os.environ["VTA_TEST_KILL_MARKER"])
        if not marker.exists():
            marker.touch()
            os._exit(3)
        return super().run(insn_addr, insn_count, trace=trace)


# ------------------------------------------------------------------ generator
def _digest(cfg: vta.Config, seeds) -> str:
    h = hashlib.sha256()
    for s in seeds:
        h.update(bytes(generate(cfg, s, BASE).image()))
    return h.hexdigest()


def test_seeds_name_programs():
    """A seed is a complete bug report: the same seed gives the same bytes, across versions.

    A change of the generator that alters any program must bump
    GENERATOR_VERSION (results files of another version are not resumed).
    """
    assert run.GENERATOR_VERSION == 1
    assert _digest(TINY, range(41)) == (
        "c297caee660daaa057cdafc79ee96e30554cb467fa588a919d3699a5200d0a5d")
    a, b = generate(TINY, 5, BASE), generate(TINY, 6, BASE)
    assert bytes(a.image()) != bytes(b.image())


def test_schedule_has_every_kind_by_weight():
    period = schedule()
    assert len(period) == sum(WEIGHTS.values())
    assert {k: period.count(k) for k in KINDS} == WEIGHTS
    assert [kind_of_seed(s) for s in range(len(period))] == list(period)
    assert kind_of_seed(len(period) + 3) == period[3]


@pytest.mark.parametrize("cfg", [TINY, random_config(4)], ids=["tiny", "rand4-batch4"])
def test_every_kind_ends_as_designed(cfg):
    """Valid kinds finish; each fault kind ends with its fault, at the instruction it names."""
    session = Session("golden", cfg)
    try:
        for kind in KINDS:
            for seed in (0, 1):
                case = generate(cfg, seed, session.base, kind)
                ref, dut, mismatch = session.check(case)
                assert mismatch is None, f"{case.describe()}: {mismatch.message}"
                want = kind.removeprefix("fault-") if kind.startswith("fault-") else "ok"
                assert ref.code == want, f"{case.describe()}: {ref.error}"
                note = case.notes[-1]
                if want not in ("ok", "DEADLOCK", "NO_FINISH", "TOKEN_OVERFLOW"):
                    assert note == f"{want} at instruction {ref.error['index']}"
    finally:
        session.close()


def test_generated_programs_are_race_free_and_defined():
    for kind in KINDS:
        if kind.startswith("fault-"):
            continue
        for seed in range(12 if kind in ("normal", "edge") else 1):
            case = generate(TINY, seed, BASE, kind)
            assert races.races(case) == [], case.describe()
            assert races.undefined_reads(case) == [], case.describe()


def test_reads_of_unwritten_entries_are_found():
    """Without the prologue's INP zeroing, a GEMM reads INP entries no LOAD wrote."""
    case = generate(TINY, 3, BASE, "normal")
    assert case.insns[0].memory_type == MemId.INP and case.insns[0].x_size == TINY.INP_BUFF_DEPTH
    del case.insns[0], case.kernels[0]
    found = races.undefined_reads(case)
    assert found and all(what.startswith("INP entry") for _, what in found)
    assert all(case.insns[i].opcode == Opcode.GEMM for i, _ in found)


def test_race_check_finds_an_unordered_store():
    """Without its token, a STORE is no longer ordered after the compute writing its OUT rows."""
    case = generate(TINY, 3, BASE, "normal")
    first_store = next(i for i, insn in enumerate(case.insns) if insn.opcode == Opcode.STORE)
    assert case.insns[first_store].pop_prev_dep
    racy = case.copy()
    racy.insns[first_store] = racy.insns[first_store].replace(pop_prev_dep=0)
    found = races.races(racy)
    assert found and found[0].second == first_store and "OUT" in found[0].what


# ------------------------------------------------------------------ coverage
def test_instruction_bins():
    load = MemInsn(opcode=Opcode.LOAD, memory_type=MemId.WGT, x_size=2, y_size=3, x_stride=1,
                   y_pad_1=15)
    assert coverage.insn_bins(load, "load") == {
        "insn:LOAD.WGT", "pad:WGT.y_pad_1", "load:pad-15", "stride:LOAD.overlap"}
    shr = AluInsn(opcode=Opcode.ALU, alu_opcode=AluOp.SHR, use_imm=1, imm=-40, uop_bgn=3,
                  uop_end=5, iter_out=2, iter_in=1, src_factor_out=1)
    assert coverage.insn_bins(shr, "compute") == {
        "insn:ALU", "alu:SHR.imm", "shr:imm<=-32", "nest:ALU.factor_out", "nest:ALU.multi-uop"}
    empty = GemmInsn(opcode=Opcode.GEMM, reset_reg=1, uop_bgn=4, uop_end=4, iter_out=0,
                     iter_in=3)
    assert coverage.insn_bins(empty, "compute") == {
        "insn:GEMM", "insn:GEMM.reset", "nest:GEMM.iter_out=0", "nest:GEMM.no-uops"}
    noop = MemInsn(opcode=Opcode.STORE, memory_type=6, y_size=2)
    assert coverage.insn_bins(noop, "store") == {"noop:store", "noop:junk"}


def test_token_bins_of_fill_programs():
    session = Session("golden", TINY)
    try:
        for queue in ("l2g", "g2l", "g2s", "s2g"):
            ref = session.run_reference(generate(TINY, 0, session.base, f"fill-{queue}"))
            hit = coverage.collect(ref.events)
            assert {f"token:{queue}.full", f"token:{queue}.empty-wait"} <= hit
        ref = session.run_reference(generate(TINY, 0, session.base, "normal"))
        assert not any(b.endswith(".full") for b in coverage.collect(ref.events))
    finally:
        session.close()


def test_backpressure_bins_from_monitor_events():
    engines = ["compute"] + ["store"] * 600
    lines = ["10 compute 0 start"] + [f"{20 + i} fetch {i} dispatch" for i in range(1, 600)]
    assert coverage.backpressure_bins(lines, engines) == {"backpressure:store"}
    started = [f"{20 + i} fetch {i} dispatch\n{21 + i} store {i} start" for i in range(1, 600)]
    assert coverage.backpressure_bins("\n".join(started).splitlines(), engines) == set()


# ------------------------------------------------------------------ configurations
def test_random_configurations():
    cfgs = [random_config(s) for s in range(30)]
    assert random_config(7) == cfgs[7]
    assert {c.BATCH for c in cfgs} == {1, 2, 4}
    assert {c.BUS_WIDTH for c in cfgs} == {64, 128, 256, 512}
    assert all(c.INP_BUFF_DEPTH <= 256 and c.ACC_BUFF_DEPTH <= 256 for c in cfgs)
    got = parse_configs("tiny, random:2", 3)
    assert [c.name for c in got] == ["tiny", "rand3000", "rand3001"]
    assert got[1] == random_config(3000)
    with pytest.raises(ConfigError, match="random:N with N >= 1, not 'random:x'"):
        parse_configs("random:x", 0)
    with pytest.raises(ConfigError, match="not 'nosuch'"):
        parse_configs("tiny,nosuch", 0)
    with pytest.raises(ConfigError, match="'tiny' is named twice"):
        parse_configs("tiny,tiny", 0)


# ------------------------------------------------------------------ shrinking
def test_seeded_failure_shrinks_to_a_few_instructions():
    session = Session("golden", TINY, reference=MaxImmOffByOne)
    try:
        for seed in range(50):
            case = generate(TINY, seed, session.base, "normal")
            session.scrub()
            _, _, mismatch = session.check(case)
            if mismatch is not None:
                break
        else:
            pytest.fail("the patched model never differed")
        assert mismatch.signature == ("memory", "out")
        result = shrink(case, same_failure(session, mismatch), budget=60)
        small = result.case
        assert result.stats["complete"]
        assert small.insn_count <= 5 < case.insn_count
        assert races.races(small) == [] and races.undefined_reads(small) == []
        # vta lint (its own token analysis) finds no error either
        errors = [f for f in lint(to_program(small)) if f.severity == "error"]
        assert errors == [], [f.line() for f in errors]
        assert any(i.opcode == Opcode.ALU and i.alu_opcode == AluOp.MAX and i.use_imm
                   for i in small.insns)
        session.scrub()
        assert session.check(small)[2].signature == mismatch.signature
    finally:
        session.close()
    honest = Session("golden", TINY)  # the unpatched model: the small case passes
    try:
        honest.scrub()
        assert honest.check(small)[2] is None
    finally:
        honest.close()


class CountsOneMoreGemm(GoldenModel):
    def run(self, *args, **kw):
        counters = super().run(*args, **kw)
        counters.gemm_uops += 1
        return counters


class FaultOneLater(GoldenModel):
    def run(self, *args, **kw):
        try:
            return super().run(*args, **kw)
        except ExecutionError as exc:
            exc.index += 1
            raise


def test_counter_and_fault_differences_are_mismatches():
    session = Session("golden", TINY, reference=CountsOneMoreGemm)
    try:
        mismatch = session.check(generate(TINY, 0, session.base, "normal"))[2]
        assert mismatch.signature == ("counter", "gemm_uops")
    finally:
        session.close()
    session = Session("golden", TINY, reference=FaultOneLater)
    try:
        ref, dut, mismatch = session.check(generate(TINY, 0, session.base, "fault-STORE_PAD"))
        assert ref.code == dut.code == "STORE_PAD"
        assert mismatch.signature == ("outcome", "STORE_PAD/STORE_PAD (where)")
    finally:
        session.close()


def test_a_crashing_simulator_is_reopened_and_the_program_retried(monkeypatch):
    from vta.backends.rtl import SimulatorCrashError
    from vta.regress import worker

    opened = []

    class Flaky(Session):
        def check(self, case):
            if len(opened) == 1:
                raise SimulatorCrashError("the simulator exited (code -9)")
            return super().check(case)

    def session_for(job):
        opened.append(Flaky("golden", job.cfg))
        return opened[-1]

    monkeypatch.setattr(worker, "session_for", session_for)
    job = worker.Job("golden", worker.config_dict(TINY), 3)
    record = worker.run_job(job)
    assert record["status"] == "pass" and record["attempts"] == 2 and len(opened) == 2
    assert "code -9" in record["retried"]  # what the first attempt ran into
    monkeypatch.setattr(Flaky, "check", lambda self, case: (_ for _ in ()).throw(
        SimulatorCrashError("the simulator exited (code -9)")))
    record = worker.run_job(job)
    assert record["status"] == "crash" and "code -9" in record["message"]
    assert record["seed"] == 3 and record["attempts"] == 2


# ------------------------------------------------------------------ engine and CLI
def _records(out: Path) -> tuple[dict, list[dict]]:
    lines = (out / "results.jsonl").read_text().splitlines()
    return json.loads(lines[0]), [json.loads(x) for x in lines[1:]]


def test_cli_golden_local_cluster(tmp_path):
    """One period of the schedule on a local 2-process cluster covers every golden bin."""
    out = tmp_path / "r"
    res = CliRunner().invoke(main, ["regress", "-b", "golden", "-n", str(len(schedule())),
                                    "--configs", "tiny", "-w", "2", "-o", str(out)])
    assert res.exit_code == 0, res.output
    header, records = _records(out)
    assert header["type"] == "run" and header["backend"] == "golden"
    assert sorted(r["seed"] for r in records) == list(range(len(schedule())))
    assert {r["status"] for r in records} == {"pass"}
    assert len({r["worker"] for r in records}) == 2
    summary = json.loads((out / "summary.json").read_text())
    assert summary["coverage"]["holes"] == []
    assert summary["coverage"]["total"] == len(coverage.GOLDEN_BINS)
    assert "holes: none" in res.output and "programs/s" in res.output


def test_against_spec_checks_the_fast_model(tmp_path, monkeypatch):
    """``--against spec``: the golden backend (the fast model behind the host driver) against
    the specification model.  One period of the schedule (every kind) passes; with a bug in
    the fast model, the programs it matters to fail, named against the spec."""
    out = tmp_path / "r"
    res = CliRunner().invoke(main, ["regress", "--against", "spec", "-n", str(len(schedule())),
                                    "--configs", "tiny", "-w", "1", "-o", str(out)])
    assert res.exit_code == 0, res.output
    header, records = _records(out)
    assert (header["backend"], header["reference"]) == ("golden", "spec")
    assert {r["status"] for r in records} == {"pass"}
    assert {r["kind"] for r in records} == set(KINDS)
    assert "golden against spec" in res.output
    monkeypatch.setattr(golden_backend, "GoldenModel", MaxImmOffByOne)  # the device's model
    plan = run.Plan.of("golden", [TINY], 3, kind="normal", reference="spec")
    summary = run.regress(plan, tmp_path / "bug", workers=1, processes=False, shrink=0)
    assert summary.failures and all(
        r["mismatch"]["kind"] == "memory" and ": spec " in r["mismatch"]["message"]
        for r in summary.failures), summary.failures
    with pytest.raises(run.RegressError, match="reference must be one of golden, spec, not "
                       "'fsim'"):
        run.Plan.of("golden", [TINY], 1, reference="fsim")


def test_resume_runs_only_what_is_missing(tmp_path):
    plan = run.Plan.of("golden", [TINY], 16)
    first = run.regress(plan, tmp_path, workers=1, processes=False)
    assert first.ran == 16 and first.ok
    path = tmp_path / "results.jsonl"
    lines = path.read_text().splitlines()
    kept = {json.loads(x)["seed"] for x in lines[1:7]}
    path.write_text("\n".join(lines[:7]) + "\n" + lines[7][:25])  # interrupted mid-line
    resumed = run.regress(None, tmp_path, workers=1, processes=False, resume=True)
    assert resumed.ran == 10 and resumed.total == 16 and resumed.ok
    _, records = _records(tmp_path)
    seeds = [r["seed"] for r in records if "status" in r]
    assert sorted(seeds) == list(range(16)) and kept < set(seeds)
    again = run.regress(None, tmp_path, workers=1, processes=False, resume=True)
    assert again.ran == 0 and again.total == 16
    with pytest.raises(run.RegressError, match="exists: resume it"):
        run.regress(plan, tmp_path, workers=1, processes=False)
    lines = path.read_text().splitlines()
    header = json.loads(lines[0])
    header["generator"] = 0
    path.write_text(json.dumps(header) + "\n")
    with pytest.raises(run.RegressError, match="generator version 0"):
        run.regress(None, tmp_path, resume=True)


def test_failures_are_reported_and_shrunk(tmp_path, monkeypatch):
    monkeypatch.setitem(run.REFERENCES, "golden", MaxImmOffByOne)
    res = CliRunner().invoke(main, ["regress", "-b", "golden", "-n", "3", "--configs", "tiny",
                                    "-w", "1", "-o", str(tmp_path), "--shrink", "1",
                                    "--kind", "normal"])
    assert res.exit_code == 3, res.output
    _, records = _records(tmp_path)
    failed = [r for r in records if r["status"] == "fail"]
    assert failed and all(r["mismatch"]["kind"] == "memory" for r in failed)
    summary = json.loads((tmp_path / "summary.json").read_text())
    (entry,) = summary["shrunk"]
    assert entry["status"] == "shrunk" and entry["stats"]["insns"][1] <= 5
    assert entry["shrunk"].endswith(".min.vtaprog") and entry["program"].endswith(".vtaprog")
    assert f"seed {failed[0]['seed']}" in res.output
    # the files replay: the real golden model differs from the patched one's expectation
    for path in (entry["shrunk"], entry["program"]):
        replay = CliRunner().invoke(main, ["run", path, "-b", "golden"])
        assert replay.exit_code == 3, replay.output
    assert Path(entry["shrunk"]).read_text().count("MAX") == 1


def test_killed_workers_lose_no_result(tmp_path, monkeypatch):
    """A task whose worker dies is retried on another; dying twice makes it a crash record."""
    marker = tmp_path / "killed"
    monkeypatch.setenv("VTA_TEST_KILL_MARKER", str(marker))  # the workers inherit it
    assert kind_of_seed(40) == "fault-NO_FINISH"
    plan = run.Plan.of("golden", [TINY], 4, seed=38)
    summary = run.regress(plan, tmp_path / "r", workers=2, reference=Killer)
    assert marker.exists()  # a worker died once, and that program passed on the retry
    assert summary.counts == {"pass": 3, "crash": 1}
    (crash,) = summary.failures
    assert crash["seed"] == 40 and "died" in crash["message"] and crash["attempts"] == 2
    _, records = _records(tmp_path / "r")
    assert sorted(r["seed"] for r in records) == [38, 39, 40, 41]
    # the programs the dead worker held are marked: a second attempt, rescheduled once
    # (the one it was running; the scheduler may have given it the next one already)
    retried = [r for r in records if r["status"] == "pass" and r["attempts"] > 1]
    assert 1 <= len(retried) <= 2
    assert all(r["attempts"] == 2 and r["rescheduled"] == 1 for r in retried)
    assert all("rescheduled" not in r for r in records if r not in retried and
               r["status"] == "pass")


@pytest.fixture
def dask_processes(tmp_path):
    """A real ``dask scheduler`` and two ``dask worker --nworkers 1`` processes on this
    machine, sharing one scratch folder (and one temporary folder); yields
    ``(address, scratch, tmp)``."""
    import subprocess
    import time

    scratch, tmp = tmp_path / "scratch", tmp_path / "tmp"
    tmp.mkdir()
    sched_file = tmp_path / "scheduler.json"
    env = {**os.environ, "TMPDIR": str(tmp), "OPENBLAS_NUM_THREADS": "1"}
    dask_bin = Path(sys.executable).parent / "dask"
    procs = [subprocess.Popen([str(dask_bin), "scheduler", "--port", "0", "--scheduler-file",
                               str(sched_file), "--no-dashboard"], env=env, cwd=tmp_path,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    try:
        deadline = time.monotonic() + 60
        while not sched_file.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert sched_file.exists(), "the dask scheduler did not start"
        for _ in range(2):
            procs.append(subprocess.Popen(
                [str(dask_bin), "worker", "--scheduler-file", str(sched_file), "--nworkers", "1",
                 "--nthreads", "1", "--no-dashboard", "--local-directory", str(scratch)],
                env=env, cwd=tmp_path,
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        address = json.loads(sched_file.read_text())["address"]
        from dask.distributed import Client

        with Client(address, timeout="30s") as client:
            client.wait_for_workers(2, timeout=120)
        yield address, scratch, tmp
    finally:
        for proc in reversed(procs):
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()


def test_separate_worker_processes_get_the_package_shipped(tmp_path, dask_processes):
    """--cluster with a real scheduler and two worker processes of one machine: every
    --ship run passes on both workers with the uploaded vta (each unpacked on its own, so
    the two never race), leaves no copy behind on the scheduler or in the scratch and
    temporary folders, and a --no-ship run afterwards imports the installed package."""
    from dask.distributed import Client

    address, scratch, tmp = dask_processes
    installed = str(Path(vta.__file__).resolve().parent)
    runner = CliRunner()
    for n in range(3):
        out = tmp_path / f"ship{n}"
        res = runner.invoke(main, ["regress", "-b", "golden", "--cluster", address, "-n", "4",
                                   "--configs", "tiny", "-o", str(out)])
        assert res.exit_code == 0, res.output
        _, records = _records(out)
        assert len({r["worker"] for r in records}) == 2
        packages = {r["package"] for r in records}
        assert len(packages) == 2 and all("/vta-ship-" in p and p != installed
                                          for p in packages), packages
        with Client(address) as client:
            assert client.run_on_scheduler(lambda dask_scheduler: list(
                dask_scheduler.nanny_plugins)) == []
            assert set(client.run(lambda: "vta" in sys.modules).values()) == {False}
        assert list(tmp.glob("vta-ship-*")) == []
        assert [p.name for p in scratch.iterdir() if "vta" in p.name] == []
    out = tmp_path / "noship"
    res = runner.invoke(main, ["regress", "-b", "golden", "--cluster", address, "-n", "4",
                               "--configs", "tiny", "-o", str(out), "--no-ship"])
    assert res.exit_code == 0, res.output
    _, records = _records(out)
    assert {r["package"] for r in records} == {installed}


def test_ctrl_c_keeps_the_results_written(tmp_path):
    """Ctrl-C mid-run (SIGINT to the whole process group, as a terminal sends it): exit 130
    with one line and no worker tracebacks, every result so far intact (resumable)."""
    import signal
    import subprocess
    import time

    out = tmp_path / "r"
    proc = subprocess.Popen(
        [sys.executable, "-m", "vta.cli", "regress", "-b", "golden", "-n", "1000", "--configs",
         "tiny", "-w", "1", "-o", str(out), "--json"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not (
                (out / "results.jsonl").exists()
                and len((out / "results.jsonl").read_text().splitlines()) > 5):
            time.sleep(0.2)
        os.killpg(proc.pid, signal.SIGINT)
        code = proc.wait(timeout=30)
    finally:
        proc.kill()
    err = proc.stderr.read()
    assert code == 130, err
    assert "Traceback" not in err and "interrupted" in err
    header, records = _records(out)
    assert header["programs"] == 1000 and 5 <= len(records) < 1000
    assert all(r["status"] == "pass" for r in records)


def test_ctrl_c_race_inside_dask_sync_is_not_logged():
    """The record tornado logs when Dask's ``sync`` cancels a future it never assigned
    (a NameError in ``cancel`` of distributed/utils.py, after Ctrl-C) is dropped; the same
    error from another function or file, and any other error, still are logged."""
    import logging

    from vta.regress import run

    def record_of(filename: str, func: str, error: str) -> logging.LogRecord:
        scope: dict = {}
        exec(compile(f"def {func}():\n    raise {error}('x')\n", filename, "exec"), scope)
        try:
            scope[func]()
        except Exception:
            exc_info = sys.exc_info()
        return logging.LogRecord("tornado.application", logging.ERROR, filename, 1,
                                 "Exception in callback", None, exc_info)

    dask_utils = os.path.join(os.sep, "site-packages", "distributed", "utils.py")
    race = run._SyncCancelRace()
    assert not race.filter(record_of(dask_utils, "cancel", "NameError"))
    assert race.filter(record_of(dask_utils, "wait", "NameError"))
    assert race.filter(record_of(dask_utils, "cancel", "ValueError"))
    assert race.filter(record_of(os.path.join(os.sep, "app", "utils.py"), "cancel", "NameError"))
    assert race.filter(logging.LogRecord("tornado.application", logging.ERROR, "f", 1, "plain",
                                         None, None))
    with run.connect(workers=1, processes=False):
        filters = logging.getLogger("tornado.application").filters
        assert any(isinstance(f, run._SyncCancelRace) for f in filters)


def test_bad_options(tmp_path):
    runner = CliRunner()
    res = runner.invoke(main, ["regress", "-b", "golden", "--stall", "0.1", "-o", str(tmp_path)])
    assert res.exit_code == 2 and "apply to the RTL backends" in res.output
    res = runner.invoke(main, ["regress", "-b", "golden", "--kind", "nope", "-o", str(tmp_path)])
    assert res.exit_code == 1 and "kind must be one of normal, edge" in res.output
    res = runner.invoke(main, ["regress", "--configs", "tiny,huge", "-o", str(tmp_path)])
    assert res.exit_code == 1 and "not 'huge'" in res.output


@pytest.mark.sim
def test_verilator_tiny_slice_covers_every_bin(tmp_path):
    """One period on the RTL (tiny): no mismatch, and every bin, back-pressure included."""
    needs.simulator("verilator")
    res = CliRunner().invoke(main, ["regress", "-n", str(len(schedule())), "--configs", "tiny",
                                    "-w", "2", "-o", str(tmp_path)])
    assert res.exit_code == 0, res.output
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["counts"] == {"pass": len(schedule())}
    assert summary["coverage"]["holes"] == []
    assert summary["coverage"]["total"] == len(coverage.GOLDEN_BINS) + 3
    _, records = _records(tmp_path)
    assert all(r["cycles"] for r in records if r["outcome"] == "ok")


def test_load_of_padding_only_zeroes_its_entries():
    """Found by vta regress (edge programs): a LOAD with y_size 0 writes its pads as zeros."""
    model = GoldenModel(TINY, 1 << 20)
    elem = TINY.INP_ELEM_BYTES
    model.mem[0x2000:0x2000 + 4 * elem] = np.arange(1, 4 * elem + 1, dtype=np.uint8)
    stream = [MemInsn(opcode=Opcode.LOAD, memory_type=MemId.INP, sram_base=0,
                      dram_base=0x2000 // elem, y_size=1, x_size=4, x_stride=4),
              MemInsn(opcode=Opcode.LOAD, memory_type=MemId.INP, sram_base=1,
                      dram_base=0x2000 // elem, y_size=0, x_size=2, x_stride=2, y_pad_0=1),
              GemmInsn(opcode=Opcode.FINISH)]
    model.mem[0x1000:0x1000 + 48] = np.frombuffer(encode_stream(stream, TINY), np.uint8)
    counters = model.run(0x1000, 3)
    inp = model.sp.raw["inp"]
    assert inp[0].tolist() == list(range(1, elem + 1))
    assert not inp[1:3].any()
    assert inp[3].tolist() == list(range(3 * elem + 1, 4 * elem + 1))
    assert counters.inp_load_bytes == 4 * elem


@pytest.mark.sim
@pytest.mark.slow
def test_seeded_failure_shrinks_on_the_rtl():
    """The same patched reference against Verilator (tiny): the shrunk case still fails there."""
    needs.simulator("verilator")
    session = Session("verilator", TINY, reference=MaxImmOffByOne)
    try:
        case = generate(TINY, 0, session.base, "normal")
        session.scrub()
        mismatch = session.check(case)[2]
        assert mismatch.signature == ("memory", "out")
        result = shrink(case, same_failure(session, mismatch), budget=300)
        assert result.case.insn_count <= 5 and result.stats["complete"]
        assert session.check(result.case)[2].signature == mismatch.signature
    finally:
        session.close()


def test_fault_names_are_error_codes():
    # every code but NONE and BUS_ERROR (which comes from the memory, not from a stream)
    assert set(FAULTS) == {c.name for c in ErrorCode} - {"NONE", "BUS_ERROR"}
    case = generate(TINY, 0, BASE, "fault-NO_FINISH")
    assert isinstance(case, Case) and case.insns[-1].opcode != Opcode.FINISH


# ------------------------------------------------------------------ issue 23: timing, records
def test_timing_is_drawn_from_the_seed():
    from vta.regress import timing

    draws = [timing.timing_of(s) for s in range(300)]
    assert timing.timing_of(7) == draws[7] and draws[7] != draws[8]
    classes = {d["class"] for d in draws}
    assert len(classes) == 9  # every latency class with every stall class
    for d in draws:
        lat, stall = d["class"].split("/")
        lo, hi = timing.LATENCY_CLASSES[lat.removesuffix("-latency")]
        assert all(lo <= x <= hi for x in d["latency"])
        lo, hi = timing.STALL_CLASSES[stall.removesuffix("-stall")]
        assert lo <= round(d["stall"] * 256) <= hi and d["outstanding"] in (1, 2, 4, 8)
    plan = run.Plan.of("verilator", [TINY], 3, timing="random")
    assert [j.timing for j in plan.jobs()] == draws[:3]
    assert plan.timing_ranges == timing.RANGES
    assert all(j.timing is None for j in run.Plan.of("verilator", [TINY], 2).jobs())
    with pytest.raises(run.RegressError, match="not golden"):
        run.Plan.of("golden", [TINY], 3, timing="random")
    with pytest.raises(run.RegressError, match="only with fixed timing"):
        run.Plan.of("icarus", [TINY], 3, timing="random", options={"stall": 0.1})


def _verilator_or_skip():
    from vta.hdltools.build import SimulatorError, simulator_version

    try:
        simulator_version("verilator")
    except SimulatorError as exc:
        pytest.skip(str(exc))


@pytest.mark.sim
def test_dram_timing_changes_between_programs_without_a_restart():
    """set_timing: the same program under the same timing takes the same cycles (the
    stall generator restarts from the timing's seed), longer latency and stalls take more,
    and the result never changes."""
    _verilator_or_skip()
    from vta.regress.worker import apply_timing

    session = Session("verilator", TINY)
    try:
        case = generate(TINY, 3, session.base, "normal")
        fast = {"latency": [0, 0], "stall": 0.0, "reorder": False, "outstanding": 8, "seed": 5}
        slow = {"latency": [40, 30], "stall": 0.3, "reorder": True, "outstanding": 1,
                "seed": 9}
        cycles = []
        for timing in (fast, slow, fast, slow):
            apply_timing(session, timing)
            _, dut, mismatch = session.check(case)
            assert mismatch is None
            cycles.append(dut.cycles)
        assert cycles[0] == cycles[2] and cycles[1] == cycles[3]
        assert cycles[1] > 1.3 * cycles[0]  # measured: 1,756 against 1,050
        # a run that faults leaves DRAM requests in flight: the next timing waits for them
        for kind in ("fault-BAD_OPCODE", "fault-DRAM_RANGE", "normal"):
            apply_timing(session, slow)
            ref, dut, mismatch = session.check(generate(TINY, 1, session.base, kind))
            assert mismatch is None and ref.code == dut.code
            apply_timing(session, fast)
        _, dut, mismatch = session.check(case)
        assert mismatch is None and dut.cycles == cycles[0]
    finally:
        session.close()


def test_records_carry_what_reproduces_them(tmp_path, monkeypatch):
    """Provenance in the plan; every failure a repro command that repeats it alone; the
    JUnit XML and the HTML report of the run."""
    import xml.etree.ElementTree as ET

    monkeypatch.setitem(run.REFERENCES, "golden", MaxImmOffByOne)
    out = tmp_path / "r"
    res = CliRunner().invoke(main, ["regress", "-b", "golden", "-n", "6", "--configs", "tiny",
                                    "-w", "1", "-o", str(out), "--kind", "normal",
                                    "--shrink", "0"])
    assert res.exit_code == 3, res.output
    header, records = _records(out)
    prov = header["provenance"]
    assert prov["vta"] == vta.__version__ and prov["hdl"] and prov["testbench"]
    assert prov["commit"] is None or len(prov["commit"]) == 40
    failed = [r for r in records if r["status"] == "fail"]
    assert failed and all(r["signature"] == "memory/out ALU.MAX.imm" for r in failed)
    cmd = failed[0]["repro"]["regress"].split()
    assert cmd[:3] == ["vta", "regress", "-b"] and f"{failed[0]['seed']}" in cmd
    again = CliRunner().invoke(main, cmd[1:])
    assert again.exit_code == 3, again.output
    _, rerun = _records(Path(cmd[cmd.index("-o") + 1]))
    assert [(r["seed"], r["signature"]) for r in rerun] == [(failed[0]["seed"],
                                                             failed[0]["signature"])]
    suites = ET.parse(out / "junit.xml").getroot()
    cases = suites.findall(".//testcase")
    assert len(cases) == len(records)
    fails = suites.findall(".//failure")
    assert len(fails) == len(failed) and {f.get("message") for f in fails} == {
        "memory/out ALU.MAX.imm"}
    page = (out / "report.html").read_text()
    assert "memory/out ALU.MAX.imm" in page and "data:image/png;base64" in page


# ------------------------------------------------------------------ issue 23: triage
def test_signatures_name_the_first_divergence():
    session = Session("golden", TINY, reference=FaultOneLater)
    try:
        case = generate(TINY, 0, session.base, "fault-STORE_PAD")
        ref, dut, mismatch = session.check(case)
        # where the (patched) golden model says it faulted: the no-op after the STORE
        assert dut.error["index"] + 1 == ref.error["index"]
        assert case.insns[dut.error["index"]].opcode == Opcode.STORE
        assert triage.signature(case, ref, dut, mismatch) == \
            "fault STORE_PAD/STORE_PAD at store NOP (where)"
    finally:
        session.close()
    session = Session("golden", TINY, reference=CountsOneMoreGemm)
    try:
        case = generate(TINY, 0, session.base, "normal")
        ref, dut, mismatch = session.check(case)
        assert triage.signature(case, ref, dut, mismatch) == "counter gemm_uops"
    finally:
        session.close()


def test_failures_grouped_known_and_new(tmp_path, monkeypatch):
    """Failures by signature with counts; --previous marks them seen before, --known makes
    a run with only known failures pass; --max-failures stops early and --resume finishes."""
    monkeypatch.setitem(run.REFERENCES, "golden", MaxImmOffByOne)
    runner = CliRunner()
    first = tmp_path / "a"
    args = ["regress", "-b", "golden", "--configs", "tiny", "-w", "1", "--kind", "normal",
            "--shrink", "0"]
    res = runner.invoke(main, [*args, "-n", "8", "-o", str(first), "--max-failures", "2"])
    assert res.exit_code == 3, res.output
    summary = json.loads((first / "summary.json").read_text())
    assert summary["stopped"].startswith("--max-failures 2 reached")
    assert summary["total"] < 8 and "stopped early" in res.output
    (group,) = summary["signatures"]
    assert group["signature"] == "memory/out ALU.MAX.imm" and group["count"] == 2
    assert group["new"] is None
    res = runner.invoke(main, ["regress", "--resume", str(first / "results.jsonl"), "-w", "1",
                               "--shrink", "0"])
    _, records = _records(first)
    assert sorted(r["seed"] for r in records) == list(range(8))
    second = tmp_path / "b"
    known = tmp_path / "known.txt"
    known.write_text("# signature<TAB>note\nmemory/out ALU.MAX.imm\tMAX imm + 1 (planted)\n")
    res = runner.invoke(main, [*args, "-n", "4", "-o", str(second), "--previous",
                               str(first / "results.jsonl"), "--known", str(known)])
    assert res.exit_code == 0, res.output  # every failure is known
    (group,) = json.loads((second / "summary.json").read_text())["signatures"]
    assert group["new"] is False and group["known"] == "MAX imm + 1 (planted)"
    assert "failing programs have known signatures" in " ".join(res.output.split())
    res = runner.invoke(main, [*args, "-n", "2", "-o", str(tmp_path / "c"), "--max-time", "0"])
    summary = json.loads((tmp_path / "c" / "summary.json").read_text())
    assert summary["stopped"] == "--max-time 0 s reached" and summary["total"] == 1


def test_shrinker_cuts_ranges_from_both_ends():
    from vta.regress.shrink import _range_candidates

    store = MemInsn(opcode=Opcode.STORE, memory_type=MemId.OUT, sram_base=10, dram_base=100,
                    y_size=1, x_size=8, x_stride=8)
    cands = list(_range_candidates(store))
    assert {"x_size": 4, "x_stride": 4, "sram_base": 14, "dram_base": 104} in cands
    assert {"x_size": 1, "x_stride": 1, "sram_base": 17, "dram_base": 107} in cands
    rows = MemInsn(opcode=Opcode.STORE, memory_type=MemId.OUT, sram_base=0, dram_base=0,
                   y_size=4, x_size=2, x_stride=5)
    assert {"y_size": 1, "sram_base": 6, "dram_base": 15} in list(_range_candidates(rows))


def test_director_turns_to_the_kind_that_hits_the_open_bins():
    summary = run.Summary(run.Plan.of("golden", [TINY], 200), coverage=coverage.Coverage(
        "golden"))
    director = run.Director(summary)
    job = run.Plan.of("golden", [TINY], 1, seed=0).jobs()[0]
    assert director.choose(job).kind == kind_of_seed(0)  # the first period: the schedule
    everything = [b for b in coverage.GOLDEN_BINS if b != "load:pad-15"]
    for seed in range(len(schedule())):
        kind = kind_of_seed(seed)
        hit = everything + (["load:pad-15"] if kind == "edge" and seed % 3 == 0 else [])
        record = {"config": "tiny", "seed": seed, "kind": kind, "status": "pass",
                  "coverage": hit}
        summary.add(record, new=True)
        director.observe(record)
    summary.config_coverage["tiny"].counts["load:pad-15"] = 0  # pretend it is still open
    chosen = [director.choose(run.Plan.of("golden", [TINY], 1, seed=s).jobs()[0]).kind
              for s in range(100, 140)]
    assert chosen.count("edge") >= 30, chosen


def test_rtl_coverage_files_are_read_and_merged(tmp_path):
    from vta.regress import rtlcov

    def point(kind, page, line, comment, count, spans=""):
        s = f"\x01S\x02{spans}" if spans else ""
        return (f"C '\x01f\x02/x/hdl/vta_alu.v\x01l\x02{line}\x01n\x021\x01t\x02{kind}"
                f"\x01page\x02v_{kind}/{page}\x01o\x02{comment}{s}\x01h\x02vta_tb.dut.alu' "
                f"{count}\n")

    dat = tmp_path / "a.dat"
    dat.write_text("# SystemC::Coverage-3\n" + point("line", "vta_alu__L4", 10, "block", 3,
                                                     "10-12")
                   + point("line", "vta_alu__L4", 20, "block", 0, "20-21")
                   + point("branch", "vta_alu__L4", 30, "if", 0)
                   + point("toggle", "vta_alu__L4", 5, "x[0]:0->1", 1)
                   + point("toggle", "vta_alu__L4", 5, "x[0]:1->0", 0))
    counts = rtlcov.read_dat(dat)
    cov = rtlcov.RtlCoverage("h", sources=["a"])
    cov.add(counts)
    m = cov.per_module()["vta_alu"]
    assert m["line"] == [1, 3] and m["toggle"] == [1, 2]
    assert m["uncovered_lines"] == ["vta_alu.v:20-21", "vta_alu.v:30"]
    other = rtlcov.RtlCoverage("h", {k: 1 for k in counts}, ["b"])
    cov.merge(other)  # another worker's or run's counts: every point hit now
    assert cov.per_module()["vta_alu"]["uncovered_lines"] == [] and cov.sources == ["a", "b"]
    cov.save(tmp_path / "c.json")
    assert rtlcov.RtlCoverage.load(tmp_path / "c.json").counts == cov.counts
    with pytest.raises(ValueError, match="another design"):
        cov.merge(rtlcov.RtlCoverage("other"))


@pytest.mark.sim
def test_verilator_rtl_coverage_and_timing_per_program(tmp_path):
    """--rtl-coverage on Verilator (tiny): per-module line and toggle coverage of hdl/
    merged from both workers, every program under its own recorded DRAM timing."""
    _verilator_or_skip()
    out = tmp_path / "r"
    res = CliRunner().invoke(main, ["regress", "-n", "12", "--configs", "tiny", "-w", "2",
                                    "-o", str(out), "--rtl-coverage"])
    assert res.exit_code == 0, res.output
    header, records = _records(out)
    assert header["timing"] == "random" and header["options"] == {"coverage": True}
    assert header["provenance"]["simulator"].startswith("verilator")
    assert [r["timing"] for r in sorted(records, key=lambda r: r["seed"])] == [
        run.timing_of(s) for s in range(12)]
    summary = json.loads((out / "summary.json").read_text())
    modules = summary["rtl_coverage"]["modules"]
    assert {"vta_top", "vta_alu", "vta_compute", "vta_load", "vta_store", "vta_fetch"} <= \
        set(modules)
    assert not any(m.startswith("vta_dram") or m == "vta_tb" for m in modules)
    line, toggle = summary["rtl_coverage"]["totals"]["line"], \
        summary["rtl_coverage"]["totals"]["toggle"]
    assert 0.5 * line[1] < line[0] < line[1] and 0.3 * toggle[1] < toggle[0] < toggle[1]
    assert "vta_top" in res.output and "uncovered lines" in res.output
    # a second run, then both merged: every point's count is the sum of the two runs'
    more = tmp_path / "more"
    res = CliRunner().invoke(main, ["regress", "-n", "3", "--seed", "50", "--configs", "tiny",
                                    "-w", "1", "-o", str(more), "--rtl-coverage"])
    assert res.exit_code == 0, res.output
    merged = tmp_path / "merged"
    res = CliRunner().invoke(main, ["regress", "--report", str(out / "results.jsonl"),
                                    "--report", str(more / "results.jsonl"), "-o", str(merged)])
    assert res.exit_code == 0, res.output
    from vta.regress.rtlcov import RtlCoverage

    a, b = (RtlCoverage.load(d / "rtl-coverage.json").counts for d in (out, more))
    total = RtlCoverage.load(merged / "rtl-coverage.json").counts
    assert set(total) == set(a) | set(b)
    assert all(total[k] == a.get(k, 0) + b.get(k, 0) for k in total)
    assert (merged / "junit.xml").read_text().count("<testcase ") == 15

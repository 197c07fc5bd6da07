"""``vta regress``: generator, coverage, race check, shrinking, the Dask engine and the CLI.

Most tests use the golden backend (the device under test is then a second
golden model behind the host driver) and reference models patched in the
test; one slice runs the tiny preset on Verilator.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sys
from pathlib import Path

import needs
import numpy as np
import pytest
from click.testing import CliRunner
from interrupt import ctrl_c, lines_at_least

import vta
from vta.backends import golden as golden_backend
from vta.cli import main
from vta.errors import ConfigError, ErrorCode, ExecutionError
from vta.golden import GoldenModel, SpecModel
from vta.isa import AluInsn, AluOp, GemmInsn, MemId, MemInsn, Opcode, Uop, encode_stream
from vta.progfile import elem_bytes
from vta.progfile.lint import lint
from vta.regress import coverage, races, reports, run, triage
from vta.regress.check import Session
from vta.regress.configs import parse_configs, random_config
from vta.regress.generator import (
    DATA_BYTES,
    FAULTS,
    KINDS,
    OUTCOMES,
    VERSION,
    VERSIONS,
    WEIGHTS,
    Case,
    Layout,
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
#: The tests that draw the HTML report's figures; elsewhere each is a placeholder, since
#: matplotlib takes about 1.2 s a run to draw them and most tests here start several runs.
DRAWS_FIGURES = {"test_records_carry_what_reproduces_them"}


@pytest.fixture(autouse=True)
def _figures_drawn_where_checked(request, monkeypatch):
    if request.node.originalname in DRAWS_FIGURES:
        return

    def placeholder(fig) -> str:
        import matplotlib.pyplot as plt

        plt.close(fig)
        return '<img alt="figure not drawn in this test">'

    monkeypatch.setattr(reports, "_png", placeholder)


def _digest(cfg: vta.Config, seeds, version: int = VERSION) -> str:
    h = hashlib.sha256()
    for s in seeds:
        h.update(bytes(generate(cfg, s, BASE, version=version, mem_size=1 << 24).image()))
    return h.hexdigest()


def test_seeds_name_programs():
    """A seed is a complete bug report: the same seed gives the same bytes, across versions.

    A kind's programs never change; a new kind goes into a new version of the schedule
    (GENERATOR_VERSION), and the schedules of earlier versions stay (results files record
    theirs).  Version 1's digest is that of every release before version 2.
    """
    assert run.GENERATOR_VERSION == 2
    assert _digest(TINY, range(41), version=1) == (
        "c297caee660daaa057cdafc79ee96e30554cb467fa588a919d3699a5200d0a5d")
    assert _digest(TINY, range(49)) == (
        "2021591488370f58a3469dce53f0de23e4fd04320962ce0b558fd9a3b576f03c")
    a, b = generate(TINY, 5, BASE), generate(TINY, 6, BASE)
    assert bytes(a.image()) != bytes(b.image())


@pytest.mark.parametrize("version", [1, 2])
def test_schedule_has_every_kind_by_weight(version):
    weights = VERSIONS[version]
    period = schedule(version)
    assert len(period) == sum(weights.values()) == (41, 49)[version - 1]
    assert {k: period.count(k) for k in weights} == weights
    assert [kind_of_seed(s, version) for s in range(len(period))] == list(period)
    assert kind_of_seed(len(period) + 3, version) == period[3]
    assert set(WEIGHTS) <= set(weights) <= set(KINDS)


@pytest.mark.parametrize("cfg", [TINY, random_config(4)], ids=["tiny", "rand4-batch4"])
def test_every_kind_ends_as_designed(cfg):
    """Valid kinds finish; each fault kind ends with its fault, at the instruction it names."""
    session = Session("golden", cfg)
    try:
        for kind in KINDS:
            for seed in (0, 1):
                case = generate(cfg, seed, session.base, kind, mem_size=session.mem_size)
                ref, dut, mismatch = session.check(case)
                assert mismatch is None, f"{case.describe()}: {mismatch.message}"
                want = OUTCOMES[kind]
                assert ref.code == want, f"{case.describe()}: {ref.error}"
                note = case.notes[-1]
                if want not in ("ok", "DEADLOCK", "NO_FINISH", "TOKEN_OVERFLOW"):
                    assert note == f"{want} at instruction {ref.error['index']}"
    finally:
        session.close()


def test_generated_programs_are_race_free_and_defined():
    for kind in KINDS:
        if OUTCOMES[kind] != "ok":
            continue
        for seed in range(12 if kind in ("normal", "edge", "chain") else 2):
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


# The local minima the first shrinker stopped in (the planted-bug table of docs/regress.md):
# each a specification model with one plausible bug, and the program it stopped at.
class Acc8Unsigned(SpecModel):
    """ACC_8BIT LOADs zero-extended into the accumulator instead of sign-extended."""

    def load(self, engine, index, insn):
        counts = super().load(engine, index, insn)
        if insn.memory_type == MemId.ACC_8BIT and insn.x_size:
            n = (insn.y_pad_0 + insn.y_size + insn.y_pad_1) * (
                insn.x_pad_0 + insn.x_size + insn.x_pad_1)
            self.sp.acc[insn.sram_base:insn.sram_base + n] &= 0xFF
        return counts


class FirstStoreRowWins(SpecModel):
    """Overlapping STORE rows written last row first, so that the first row wins."""

    def store(self, index, insn):
        counts = super().store(index, insn)
        if insn.x_size and insn.y_size > 1:
            elem = self.sp.out[0].nbytes
            for y, (lo, hi) in reversed(list(enumerate(
                    self.dram_rows("store", index, insn, elem)))):
                rows = self.sp.out[insn.sram_base + y * insn.x_size:][:insn.x_size]
                self.mem[lo:hi] = rows.reshape(-1).view(np.uint8)
        return counts


class ResetZeroesOut(SpecModel):
    """A GEMM reset zeroes OUT as well as ACC."""

    def gemm(self, index, insn, deadline):
        counts = super().gemm(index, insn, deadline)
        if insn.reset_reg:
            uops = self.micro_ops(index, insn, "GEMM", [("dst_idx", "acc")])
            for dst, _, _ in self.nest(index, insn, uops, deadline):
                self.sp.out[dst] = 0
        return counts


def _stuck_case(insns: list, kernels: list, data: bytes) -> Case:
    """A case of ``insns`` (addresses relative to the arena's areas: ``("zeros", n)``...)."""
    lay = Layout.of(TINY)

    def place(insn):
        if isinstance(getattr(insn, "dram_base", None), tuple):
            area, n = insn.dram_base
            e = elem_bytes(TINY, insn.memory_type)
            return insn.replace(dram_base=(BASE + getattr(lay, area)) // e + n)
        return insn

    return Case(TINY, 0, "stuck", BASE, [place(i) for i in insns], kernels, data)


def _ld(mem, sram, area, n, y=1, x=1, stride=None, pads=(0, 0, 0, 0), **deps):
    op = Opcode.STORE if mem == MemId.OUT else Opcode.LOAD
    return MemInsn(opcode=op, memory_type=mem, sram_base=sram, dram_base=(area, n), y_size=y,
                   x_size=x, x_stride=x if stride is None else stride, y_pad_0=pads[0],
                   y_pad_1=pads[1], x_pad_0=pads[2], x_pad_1=pads[3], **deps)


def _uop_load(sram):
    return MemInsn(opcode=Opcode.LOAD, memory_type=MemId.UOP, sram_base=sram, y_size=1,
                   x_size=1, x_stride=1)


def _alu(op, bgn, **kw):
    return AluInsn(opcode=Opcode.ALU, alu_opcode=op, uop_bgn=bgn, uop_end=bgn + 1,
                   **{"iter_out": 1, "iter_in": 1, **kw})


FINISH = GemmInsn(opcode=Opcode.FINISH)

# (reference, the case, the fewest instructions its signature needs)
STUCK = {
    # an ACC_8BIT block's pad entry can be MAX's destination: the ACC LOAD of 76 goes
    "acc8-sign": (Acc8Unsigned, lambda: _stuck_case(
        [_ld(MemId.ACC, 76, "zeros", 76), _ld(MemId.OUT, 76, "out", 70, pop_prev_dep=1),
         _ld(MemId.ACC_8BIT, 80, "data", 1230, y=3, x=4, pads=(1, 0, 1, 2)),
         _uop_load(182), _alu(AluOp.MAX, 182, push_next_dep=1), FINISH],
        [None, None, None, [Uop(dst_idx=76, src_idx=102)], None, None],
        b"\xf0" * DATA_BYTES), 5),
    # random ACC values tell the two rows apart without a MIN (and its micro-op LOAD)
    "store-row-order": (FirstStoreRowWins, lambda: _stuck_case(
        [_ld(MemId.ACC, 0, "zeros", 0, x=16), _uop_load(26),
         _alu(AluOp.ADD, 26, iter_out=16, dst_factor_out=1, use_imm=1),
         _ld(MemId.OUT, 11, "out", 25, y=2, x=2, stride=0, pop_prev_dep=1), _uop_load(45),
         _alu(AluOp.MIN, 45, use_imm=1, imm=-822, push_next_dep=1), FINISH],
        [None, [Uop()], None, None, [Uop(dst_idx=12, src_idx=19)], None, None],
        bytes(DATA_BYTES)), 5),
    # generator version 2's planted-bug run stopped here (7): the MIN's micro-op LOAD goes
    # once the ADD's brings both micro-ops (6)
    "store-row-order-two-kernels": (FirstStoreRowWins, lambda: _stuck_case(
        [_ld(MemId.ACC, 0, "zeros", 0, x=32), _uop_load(150),
         _alu(AluOp.ADD, 150, iter_out=32, dst_factor_out=1, use_imm=1),
         _ld(MemId.OUT, 16, "out", 14, y=2, x=4, stride=2, pop_prev_dep=1), _uop_load(104),
         _alu(AluOp.MIN, 104, use_imm=1, imm=-25797, push_next_dep=1), FINISH],
        [None, [Uop()], None, None, [Uop(dst_idx=21, src_idx=31)], None, None],
        bytes(DATA_BYTES)), 6),
    # the reset can use MAX's micro-op: its own micro-op LOAD goes (6: an ACC LOAD, the
    # micro-op, MAX writing OUT, the reset, the STORE and FINISH)
    "reset-writes-out": (ResetZeroesOut, lambda: _stuck_case(
        [_ld(MemId.ACC, 37, "zeros", 37), _uop_load(95),
         _alu(AluOp.MAX, 95, use_imm=1, imm=14340), _uop_load(195),
         GemmInsn(opcode=Opcode.GEMM, reset_reg=1, uop_bgn=195, uop_end=196, iter_out=1,
                  iter_in=1, push_next_dep=1),
         _ld(MemId.OUT, 37, "out", 45, pop_prev_dep=1), FINISH],
        [None, [Uop(dst_idx=37, src_idx=42)], None, [Uop(dst_idx=37, src_idx=54, wgt_idx=17)],
         None, None, None], bytes(DATA_BYTES)), 6),
}


@pytest.mark.parametrize("name", list(STUCK))
def test_shrinker_leaves_the_first_rounds_local_minima(name):
    """The moves (data instead of zeros, shared or joined micro-ops, renamed entries) take
    the programs the shrinker stopped at down to the size given (what their signature needs,
    but for store-row-order-two-kernels: one above the other store-row-order case); each
    result still fails the same way, replays anywhere and passes on the specification
    model."""
    reference, make, least = STUCK[name]
    case = make()
    assert races.races(case) == [] and races.undefined_reads(case) == []
    session = Session("golden", TINY, reference=reference)
    try:
        session.scrub()
        ref, dut, mismatch = session.check(case)
        assert mismatch is not None and mismatch.signature == ("memory", "out")
        fine = triage.signature(case, ref, dut, mismatch)
        result = shrink(case, same_failure(session, mismatch, fine), budget=60)
        small = result.case
        assert result.stats["complete"]
        assert small.insn_count == least < case.insn_count, [str(i) for i in small.insns]
        assert races.races(small) == [] and races.undefined_reads(small) == []
        session.scrub()
        ref, dut, again = session.check(small)
        assert triage.signature(small, ref, dut, again) == fine
    finally:
        session.close()
    honest = Session("golden", TINY, reference=SpecModel)
    try:
        honest.scrub()
        assert honest.check(small)[2] is None
    finally:
        honest.close()


class FactorsSwapped(SpecModel):
    """The destination takes the inner loop's factor on the outer loop and vice versa."""

    @staticmethod
    def factors(insn):
        out = SpecModel.factors(insn)
        (do, di) = out["dst_idx"]
        return {**out, "dst_idx": (di, do)}


def test_scrub_zeroes_the_reference_whatever_its_loops_do():
    """A reference whose ALU loops do not reach every entry the scrub program names is made
    anew: nothing an earlier program left stays (its failures would not replay)."""
    session = Session("golden", TINY, reference=FactorsSwapped)
    try:
        session.check(generate(TINY, 0, session.base, "normal"))
        assert np.count_nonzero(session.ref.sp.out)
        session.scrub()
        assert not any(np.count_nonzero(b) for b in session.ref.sp.buffers().values())
    finally:
        session.close()


class AluLeavesOut(SpecModel):
    """An ALU operation writes ACC but not OUT (scripts/mutate.py's spec_alu_no_out): OUT
    keeps what earlier programs' GEMMs wrote, so some failures need them to show."""

    def alu(self, index, insn, deadline):
        out = self.sp.out.copy()
        counts = super().alu(index, insn, deadline)
        self.sp.out[:] = out
        return counts


def test_a_signature_whose_smallest_program_needs_earlier_ones_shrinks_another(tmp_path):
    """Seeds 1 and 2 (normal) fail with one signature after seed 0 ran on the worker; seed
    2, the smaller, passes from zeroed scratchpads (its stale OUT rows were zeros), so the
    shrink turns to seed 1, which fails alone too, and shrinks it."""
    plan = run.Plan.of("golden", [TINY], 3, kind="normal")
    summary = run.regress(plan, tmp_path, workers=1, processes=False, reference=AluLeavesOut,
                          shrink=1, shrink_budget=30)
    assert [(r["seed"], r["signature"]) for r in summary.failures] == [
        (0, "memory/out ALU.MAX.imm"), (1, "memory/out ALU.ADD.imm"),
        (2, "memory/out ALU.ADD.imm")]
    (entry,) = summary.shrunk
    assert (entry["seed"], entry["no_repro"], entry["status"]) == (1, [2], "shrunk")
    assert entry["stats"]["insns"][1] <= 5
    assert entry["program"].endswith("tiny-seed1.vtaprog") and Path(entry["shrunk"]).exists()


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


def test_a_session_closed_after_a_failure_sends_its_coverage_first(monkeypatch, tmp_path):
    """RTL coverage is not lost with a session dropped after a simulator failure: its counts
    since the last write go with the worker's next result (af7e206), so the run's total
    counts every program once."""
    from vta.backends.rtl import SimulatorCrashError
    from vta.regress import worker

    point = ("C '\x01f\x02/x/hdl/vta_alu.v\x01l\x0210\x01n\x021\x01t\x02line"
             "\x01page\x02v_line/vta_alu\x01o\x02block\x01h\x02vta_tb.dut.alu' {}\n")
    crashed = []

    class Counting(Session):
        """A golden session whose transport counts programs as one coverage point."""

        def __init__(self, *args, **kw):
            super().__init__(*args, **kw)
            self.programs = 0
            transport = self.dut.driver.transport
            transport.coverage = True
            transport.write_coverage = self.write

        def write(self, path, *, zero=True):
            Path(path).write_text("# SystemC::Coverage-3\n" + point.format(self.programs))
            self.programs = 0 if zero else self.programs
            return True

        def check(self, case):
            if case.seed == 2 and not crashed:
                crashed.append(case.seed)
                raise SimulatorCrashError("the simulator stopped answering")
            self.programs += 1
            return super().check(case)

    monkeypatch.setattr(worker, "Session", Counting)
    monkeypatch.setattr(worker, "COVERAGE_EVERY", 1e9)  # written only when dropped, at the end
    try:
        records = [worker.run_job(worker.Job("golden", worker.config_dict(TINY), seed))
                   for seed in range(5)]
        at_end = worker.flush_coverage()
        # a shrink whose simulator fails: its session's counts wait for the run's end
        worker.run_job(worker.Job("golden", worker.config_dict(TINY), 5))
        crashed.clear()
        assert worker.shrink_job(worker.Job("golden", worker.config_dict(TINY), 2))[
            "status"] == "crash"
        after_shrink = worker.flush_coverage()
    finally:
        worker.close_sessions()
    assert [r["status"] for r in records] == ["pass"] * 5 and records[2]["attempts"] == 2
    # the dropped session's 2 programs ride with the retried program's record
    assert [sum(r.get("rtl_coverage", {}).values()) for r in records] == [0, 0, 2, 0, 0]
    assert sum(at_end.values()) == 3  # the reopened session's: seeds 2, 3 and 4
    assert sum(after_shrink.values()) == 2  # seed 5 and the shrink's scrub; then it failed


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


def test_a_second_cluster_on_the_machine_warns_of_nothing(tmp_path):
    """Dask's HTTP port (8787) taken, as by another run on this machine: the local cluster
    takes another one without a warning on the user's terminal."""
    import socket
    import warnings

    with socket.socket() as taken:
        taken.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        with contextlib.suppress(OSError):  # already taken by someone else: as good
            taken.bind(("", 8787))
            taken.listen()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            summary = run.regress(run.Plan.of("golden", [TINY], 2), tmp_path, workers=1,
                                  processes=False)
    assert summary.ok and summary.ran == 2
    assert not [w for w in caught if "already in use" in str(w.message)], \
        [str(w.message) for w in caught]


def test_generator_version_end_to_end(tmp_path):
    """--generator 1 gives each seed version 1's kind (seed 2: normal, where version 2 has
    a chain), a resumed file goes on with its own version, and --generator naming another
    version is refused with one line (exit 1)."""
    out = tmp_path / "r"
    args = ["regress", "-b", "golden", "--configs", "tiny", "-w", "1", "-o", str(out)]
    res = CliRunner().invoke(main, [*args, "-n", "4", "--generator", "1"])
    assert res.exit_code == 0, res.output
    header, records = _records(out)
    assert header["generator"] == 1
    assert [r["kind"] for r in records] == ["normal", "edge", "normal", "edge"]
    path = out / "results.jsonl"
    path.write_text("\n".join(path.read_text().splitlines()[:2]) + "\n")  # seed 0 only
    refused = CliRunner().invoke(main, ["regress", "--resume", str(path), "--generator", "2"])
    assert refused.exit_code == 1
    assert refused.output.strip().splitlines() == [
        f"Error: RegressError: {path} was written by generator version 1, not 2 "
        "(--generator): resume it without --generator (its own version), or start a new run"]
    for extra in ([], ["--generator", "1"]):
        path.write_text("\n".join(path.read_text().splitlines()[:2]) + "\n")
        res = CliRunner().invoke(main, ["regress", "--resume", str(path), "-w", "1", *extra])
        assert res.exit_code == 0, res.output
        _, records = _records(out)
        assert sorted((r["seed"], r["kind"]) for r in records) == [
            (0, "normal"), (1, "edge"), (2, "normal"), (3, "edge")]
    res = CliRunner().invoke(main, [*args, "-n", "1", "--generator", "1", "--kind", "chain",
                                    "-o", str(tmp_path / "v1chain")])
    assert res.exit_code == 1 and "kind must be one of normal, edge, flood-load" in res.output


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
    assert kind_of_seed(40, 1) == "fault-NO_FINISH"
    plan = run.Plan.of("golden", [TINY], 4, seed=38, generator=1)
    summary = run.regress(plan, tmp_path / "r", workers=2, reference=Killer)
    assert marker.exists()  # a worker died once, and that program passed on the retry
    assert summary.counts == {"pass": 3, "crash": 1}
    (crash,) = summary.failures
    assert crash["seed"] == 40 and "died" in crash["message"] and crash["attempts"] == 2
    _, records = _records(tmp_path / "r")
    assert sorted(r["seed"] for r in records) == [38, 39, 40, 41]
    # The programs a dead worker held are marked: one more attempt per death that
    # rescheduled it.  Three workers die (the marker's program, then seed 40 twice), and the
    # scheduler hands each worker the next task before the current one ends, so which of
    # the other passes a death catches is the scheduler's timing: at least the marker's
    # program, at most every pass, each at most once per death.
    retried = [r for r in records if r["status"] == "pass" and r["attempts"] > 1]
    assert retried
    assert all(1 <= r["rescheduled"] <= 3 and r["attempts"] == r["rescheduled"] + 1
               for r in retried)
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
    out = tmp_path / "r"
    code, err = ctrl_c(["regress", "-b", "golden", "-n", "1000", "--configs", "tiny", "-w", "1",
                        "-o", out, "--json"], lines_at_least(out / "results.jsonl", 6),
                       ready_within=120, stop_within=30)
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
                                    "--shrink", "0", "--generator", "1"])
    assert res.exit_code == 3, res.output
    header, records = _records(out)
    assert header["generator"] == 1
    prov = header["provenance"]
    assert prov["vta"] == vta.__version__ and prov["hdl"] and prov["testbench"]
    assert prov["commit"] is None or len(prov["commit"]) == 40
    failed = [r for r in records if r["status"] == "fail"]
    assert failed and all(r["signature"] == "memory/out ALU.MAX.imm" for r in failed)
    cmd = failed[0]["repro"]["regress"].split()
    assert cmd[:3] == ["vta", "regress", "-b"] and f"{failed[0]['seed']}" in cmd
    again = CliRunner().invoke(main, cmd[1:])
    assert again.exit_code == 3, again.output
    rerun_header, rerun = _records(Path(cmd[cmd.index("-o") + 1]))
    assert [(r["seed"], r["signature"]) for r in rerun] == [(failed[0]["seed"],
                                                             failed[0]["signature"])]
    assert rerun_header["generator"] == 1  # the version of the run it repeats
    suites = ET.parse(out / "junit.xml").getroot()
    assert {p.get("value") for p in suites.findall(".//property[@name='generator']")} == {"1"}
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

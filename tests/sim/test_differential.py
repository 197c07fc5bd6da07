"""Differential test: random valid programs, golden model against the RTL simulation.

Each seed generates a ``normal`` program of :mod:`vta.regress.generator`, the
generator ``vta regress`` draws from (random shapes, padding, strides, memory
types, GEMM and ALU micro-op loops, every ALU op with and without immediates,
sync no-ops carrying tokens), arranged in double-buffered iterations whose tokens let
load, compute and store overlap while keeping every scratchpad and DRAM access
race-free, so the result is defined by the golden model alone.  The program
runs on the golden model and on the simulator (:class:`vta.regress.check.Session`);
the program's arena, the functional counters and the normalised
per-instruction traces must be identical.  A failure prints the seed and the
first difference.  ``vta regress`` runs the same check on every program kind,
at scale.

    pytest tests/sim/test_differential.py                   # a few seeds per simulator
    pytest -m slow tests/sim/test_differential.py           # many seeds
    VTA_DIFF_SEEDS=100-199 pytest -m slow tests/sim/test_differential.py -k verilator-default
"""

from __future__ import annotations

import os

import needs
import pytest

import vta
from vta.regress.check import Session
from vta.regress.generator import generate


def seeds(default: str) -> list[int]:
    text = os.environ.get("VTA_DIFF_SEEDS", default)
    out: list[int] = []
    for part in text.split(","):
        if "-" in part:
            lo, hi = part.split("-")
            out += list(range(int(lo), int(hi) + 1))
        elif part:
            out.append(int(part))
    return out


CASES = [("icarus", "tiny"), ("verilator", "tiny"), ("verilator", "default")]


@pytest.fixture(scope="module")
def sessions():
    """A reference model and an RTL device per (simulator, preset), opened once for the module."""
    opened: dict = {}

    def get(sim: str, preset: str) -> Session:
        key = (sim, preset)
        if key not in opened:
            needs.simulator(sim.split(":")[1] if ":" in sim else
                            "verilator" if sim.endswith("-sim") else sim)
            backend, _, simulator = sim.partition(":")  # "f1-sim:icarus": an AWS wrapper
            options = {"simulator": simulator} if simulator else {}
            opened[key] = Session(backend, vta.Config.load(preset), **options)
        return opened[key]

    yield get
    for session in opened.values():
        session.close()


def _check_seed(sessions, sim: str, preset: str, seed: int) -> None:
    session = sessions(sim, preset)
    case = generate(session.cfg, seed, session.base, kind="normal")
    ref, dut, mismatch = session.check(case)
    assert ref.error is None, f"seed {seed}: the generator made a faulty program: {ref.error}"
    assert mismatch is None, (f"{sim}-{preset} {case.describe()}: {mismatch.message} "
                              f"(rerun: VTA_DIFF_SEEDS={seed})")
    assert dut.cycles and dut.cycles > 0
    assert dut.trace and len(dut.trace) == case.insn_count


@pytest.mark.parametrize("sim,preset", CASES, ids=[f"{s}-{p}" for s, p in CASES])
def test_random_programs(sessions, sim, preset):
    for seed in seeds("1-3"):
        _check_seed(sessions, sim, preset, seed)


#: Through the AWS wrappers (the f1/f2 transport, the shell models): "backend[:simulator]",
#: with the seeds of the default run (Icarus simulates the 512-bit fabric slowly).
AWS_CASES = [("f1-sim", "default", "1-2"), ("f2-sim:icarus", "tiny", "1")]


@pytest.mark.parametrize("sim,preset,default_seeds", AWS_CASES,
                         ids=[f"{s}-{p}" for s, p, _ in AWS_CASES])
def test_random_programs_through_the_aws_wrappers(sessions, sim, preset, default_seeds):
    for seed in seeds(default_seeds):
        _check_seed(sessions, sim, preset, seed)


SLOW_CASES = [*CASES, ("verilator", "aws"),  # aws: 512-bit bus
              *((s, p) for s, p, _ in AWS_CASES), ("f1-sim:icarus", "tiny"),
              ("f2-sim", "default"), ("f2-sim", "aws"), ("f2-sim", "aws32")]


@pytest.mark.slow
@pytest.mark.parametrize("sim,preset", SLOW_CASES, ids=[f"{s}-{p}" for s, p in SLOW_CASES])
def test_random_programs_long(sessions, sim, preset):
    for seed in seeds("1000-1199"):
        _check_seed(sessions, sim, preset, seed)


def test_generator_programs_run_on_golden():
    """The generator's programs are valid: they run to DONE on the golden model."""
    cfg = vta.Config.load("tiny")
    with vta.open_device("golden", cfg, mem_size=1 << 24) as dev:
        arena = dev.alloc(1 << 20)
        for seed in range(20):
            case = generate(cfg, seed, arena.addr, kind="normal")
            dev.write(arena, bytes(case.image()))
            stats = dev.run(case.insn_addr, case.insn_count)
            assert stats.gemm_uops > 0 and stats.store_insns > 0

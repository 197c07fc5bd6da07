"""Progress reports of simulated runs (``vta.backends.rtl.run_progress``): what they say, that
they change nothing about the run, and that timeouts, the watchdog and Ctrl-C still hold."""

from __future__ import annotations

import logging
import time

import needs
import pytest

import vta
from vta import progfile
from vta.backends import rtl
from vta.errors import DeviceError, DeviceTimeoutError

SIMS = ("icarus", "verilator")
#: GEMM iterations (iter_out = iter_in = N, one micro-op: N * N cycles) lasting about a
#: second on each simulator (tiny preset).
LONG_N = {"icarus": 150, "verilator": 1000}


def gemm_program(n: int) -> progfile.Program:
    return progfile.parse(f""".config tiny
.run @code
.region kernels
UOP
.region code
LOAD UOP dram_base=@kernels y_size=1 x_size=1 x_stride=1
GEMM uop_end=1 iter_out={n} iter_in={n}
FINISH
""")


def _require(sim: str) -> None:
    needs.simulator(sim)


@pytest.fixture
def often(monkeypatch):
    """Reports every 50 ms instead of every half second."""
    monkeypatch.setattr(rtl, "PROGRESS_INTERVAL", 0.05)


@pytest.mark.parametrize("sim", SIMS)
def test_a_long_run_reports_progress_and_runs_the_same(sim, often, caplog):
    """Reports come while the run runs (cycles rising, instructions retired from the device's
    counters), none after it; the run with reports has the same cycles and counters as the
    run without (and a short run, one slice, too)."""
    _require(sim)
    prog = gemm_program(LONG_N[sim])
    reports: list[rtl.RunProgress] = []
    with vta.open_device(sim, prog.cfg) as dev:
        quiet = progfile.replay(prog, dev).stats  # nobody listens: one piece, no reports
        quiet_end = dev.driver.transport.last_cycles
        caplog.set_level(logging.DEBUG, logger="vta.backends.rtl")
        with rtl.run_progress(reports.append):
            reported = progfile.replay(prog, dev).stats
            # the harness saw irq when it rose (give or take one report's register reads)
            assert abs(dev.driver.transport.last_cycles - quiet_end) <= 64
            count = len(reports)
            short = progfile.replay(gemm_program(2), dev).stats
        assert len(reports) == count  # the short run finished before any report was due
        progfile.replay(prog, dev)  # outside the block: nobody is told
    assert len(reports) == count >= 3, reports
    assert reported.counters == quiet.counters  # cycles, busy/stall, retired, tokens
    assert short.gemm_uops == 4
    cycles = [r.cycles for r in reports]
    assert cycles == sorted(set(cycles)) and 0 < cycles[-1] < quiet.cycles
    assert [r.seconds for r in reports] == sorted(r.seconds for r in reports)
    for r in reports:
        assert (r.backend, r.insn_count) == (sim, 3)
        assert r.dispatched == 3 and r.retired == 1  # the LOAD UOP; the GEMM is running
    line = reports[-1].describe()
    assert f"{reports[-1].cycles:,} cycles in " in line and "1 of 3 instructions retired" in line
    logged = [r.getMessage() for r in caplog.records if "run in progress" in r.getMessage()]
    assert logged and logged[0].startswith(f"{sim} run in progress: ")  # -v in the CLI
    assert logged[0].endswith(", 1 of 3 instructions retired, 3 dispatched")


def test_reports_do_not_extend_the_run_timeout(often):
    """A hung run (DRAM never answers, watchdog off) still ends at the host's run timeout
    while reports keep arriving: the deadline is the run's, not each message's."""
    _require("icarus")
    reports = []
    dev = vta.open_device("icarus", "tiny", stall=1.0, watchdog=0, run_timeout=2)
    proc = dev.driver.transport._proc
    start = time.monotonic()

    def report(progress):
        reports.append(progress)
        assert time.monotonic() - start < 20, "the run timeout of 2 s never fired"

    with rtl.run_progress(report), pytest.raises(
            DeviceTimeoutError, match=r"did not answer run request within 2 s; it was killed"):
        progfile.replay(gemm_program(4), dev)
    assert time.monotonic() - start < 10
    assert len(reports) >= 5 and {r.retired for r in reports} == {0}  # stuck on the LOAD
    assert proc.poll() is not None
    dev.close()


def test_watchdog_fires_with_reports_on(often):
    """The watchdog counts in the testbench, slices or not: a stalled DRAM is reported."""
    _require("verilator")
    reports = []
    with vta.open_device("verilator", "tiny", stall=1.0, watchdog=300_000) as dev, \
            rtl.run_progress(reports.append):
        with pytest.raises(rtl.WatchdogError, match="for 300000 cycles"):
            progfile.replay(gemm_program(4), dev)
        assert reports and all(r.retired == 0 for r in reports)
    assert all(r.cycles < 400_000 for r in reports)


@pytest.mark.parametrize("sim", SIMS)
def test_ctrl_c_during_a_run_kills_the_simulator(sim, often):
    """KeyboardInterrupt while waiting for a run (here raised by the progress callback, as
    a Ctrl-C would arrive) kills the simulator at once and removes its session folder; the
    device then says it is closed instead of mixing up replies."""
    _require(sim)
    dev = vta.open_device(sim, "tiny")
    t = dev.driver.transport
    proc, workdir = t._proc, t.workdir

    def interrupt(progress):
        raise KeyboardInterrupt

    with rtl.run_progress(interrupt), pytest.raises(KeyboardInterrupt):
        progfile.replay(gemm_program(LONG_N[sim] * 4), dev)
    assert proc.poll() is not None and not workdir.exists()
    with pytest.raises(DeviceError, match=f"the {sim} device is closed"):
        dev.driver.read_reg("STATUS")
    dev.close()

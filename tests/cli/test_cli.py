"""The `vta` command line, through click's test runner."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner
from hand_programs import GEMM_1X4 as HAND

from vta import isa
from vta import trace as vtrace
from vta.cli import main
from vta.config import Config


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def test_help_lists_commands():
    result = invoke("--help")
    assert result.exit_code == 0
    for command in ("demo", "config", "disasm", "asm", "regs", "run"):
        assert command in result.output
    assert "3 a difference was found" in result.output


def _commands(group, path=()):
    import click

    for name, command in group.commands.items():
        if isinstance(command, click.Group):
            yield from _commands(command, (*path, name))
        yield (*path, name)


# graph, aws and regress have their own issues (and tests)
ISSUE_8_COMMANDS = [c for c in _commands(main) if c[0] not in ("graph", "aws", "regress")]


@pytest.mark.parametrize("command", ISSUE_8_COMMANDS, ids=" ".join)
def test_every_command_help_shows_an_example(command):
    """`vta CMD --help` shows a runnable example: `vta CMD ...` after an Example(s): line."""
    result = invoke(*command, "--help")
    assert result.exit_code == 0
    text = result.output.split("Example", 1)
    assert len(text) == 2, f"vta {' '.join(command)} --help has no example"
    assert f"vta {command[0]} " in text[1], text[1]  # (vta trace PROG = vta trace run PROG)


def test_demo_runs_and_checks_against_numpy():
    result = invoke("demo", "--backend", "golden", "--config", "tiny", "--shape", "9", "13", "6",
                    "--seed", "3")
    assert result.exit_code == 0, result.output
    assert "PASS: all 54 outputs equal NumPy's" in result.output
    assert "GEMM micro-ops" in result.output
    assert "n/a (functional model)" in result.output


@pytest.mark.sim
def test_demo_runs_on_the_rtl_by_default():
    result = invoke("demo", "--config", "tiny", "--shape", "5", "9", "7")
    assert result.exit_code == 0, result.output
    assert "backend verilator" in result.output
    assert "PASS: all 35 outputs equal NumPy's" in result.output
    cycles = next(line for line in result.output.splitlines() if "cycles" in line)
    assert any(ch.isdigit() for ch in cycles)  # a real cycle count, not n/a


def test_demo_rejects_bad_shape_and_config():
    result = invoke("demo", "--shape", "4", "0", "4")
    assert result.exit_code == 2
    assert "Invalid value for '--shape': 0 is not in the range x>=1" in result.output
    result = invoke("demo", "--config", "nope")
    assert result.exit_code == 2 and "not 'nope'" in result.output


def test_demo_on_unknown_backend_lists_the_valid_ones():
    result = invoke("demo", "--backend", "nosuch")
    assert result.exit_code == 2
    assert "'nosuch' is not one of 'golden', 'verilator', 'icarus'" in result.output


def test_config_json_has_derived_constants():
    result = invoke("config", "tiny", "--json")
    info = json.loads(result.output)
    assert info["LOG_BLOCK"] == 2 and info["INP_BUFF_DEPTH"] == 128
    assert info["signature"] == f"0x{Config.load('tiny').signature:08x}"


def test_asm_then_disasm_round_trip(tmp_path):
    source = tmp_path / "prog.s"
    source.write_text("LOAD INP sram_base=4 dram_base=0x80 y_size=1 x_size=2 x_stride=2 "
                      "deps=push_next\n# compute waits\nADD uop_end=1 iter_out=1 iter_in=1 "
                      "use_imm=1 imm=-5 deps=pop_prev\nFINISH\n")
    binary = tmp_path / "prog.bin"
    result = invoke("asm", str(source), "-o", str(binary))
    assert result.exit_code == 0, result.output
    raw = binary.read_bytes()
    assert len(raw) == 48
    assert int.from_bytes(raw[32:], "little") == 3  # FINISH
    result = invoke("disasm", str(binary))
    assert result.output.splitlines() == [
        "     0: LOAD INP sram_base=4 dram_base=0x80 y_size=1 x_size=2 x_stride=2 deps=push_next",
        "     1: ADD uop_end=1 iter_out=1 iter_in=1 use_imm=1 imm=-5 deps=pop_prev",
        "     2: FINISH",
    ]
    result = invoke("disasm", str(binary), "--start", "2", "--count", "1")
    assert result.output == "     2: FINISH\n"


def test_asm_error_names_file_and_line(tmp_path):
    source = tmp_path / "bad.s"
    source.write_text("FINISH\nGEMM iter_out=99999\n")
    result = CliRunner().invoke(main, ["asm", str(source), "-o", str(tmp_path / "x.bin")])
    assert result.exit_code == 1
    assert "bad.s: line 2: GEMM field 'iter_out' is 14 bits wide and holds 0..16383, not 99999" \
        in result.output


def test_disasm_rejects_partial_instruction(tmp_path):
    path = tmp_path / "odd.bin"
    path.write_bytes(bytes(20))
    result = CliRunner().invoke(main, ["disasm", str(path)])
    assert result.exit_code == 1
    assert "20 bytes is not a whole number of 16-byte instructions" in result.output


def test_regs_verilog_header():
    result = invoke("regs", "--format", "verilog")
    assert "`define VTA_REG_STATUS 12'h004" in result.output


# ------------------------------------------------------- error cases of a new user
def run_cli(*args):
    """Invoke without re-raising: the exit code and the one-line message are what count."""
    return CliRunner().invoke(main, [str(a) for a in args])


def one_line_error(result, code: int, *fragments: str) -> None:
    assert result.exit_code == code, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in result.output
    for fragment in fragments:
        assert fragment in result.output, result.output


def test_demo_shape_beyond_the_stride_field_is_refused():
    one_line_error(run_cli("demo", "-b", "golden", "-c", "tiny", "--shape", 70000, 4, 4), 2,
                   "M = 70000 needs 70000 input columns, more than a LOAD's 16-bit x_stride "
                   "field reaches (65535 for BATCH 1); use M <= 65535")


def test_demo_too_big_is_refused_up_front_naming_the_memory():
    result = run_cli("demo", "-b", "golden", "--shape", 100000, 100000, 100000)
    one_line_error(result, 2, "dense 100000x100000x100000 needs 27.9 GiB of device memory",
                   "the golden device has 256.0 MiB; a device has at most 4 GiB (32-bit DRAM "
                   "addresses): a smaller shape")
    one_line_error(run_cli("demo", "-b", "golden", "--shape", 20000, 20000, 200), 2,
                   "dense 20000x20000x200 needs 391.4 MiB of device memory",
                   "the golden device has 256.0 MiB; give --mem-size 536870912")
    result = run_cli("demo", "-b", "golden", "-c", "tiny", "--shape", 200, 300, 100,
                     "--mem-size", 1 << 16)
    one_line_error(result, 2, "needs 2.1 MiB of device memory", "has 64.0 KiB; give "
                   "--mem-size 4194304")


def test_demo_negative_seed():
    one_line_error(run_cli("demo", "--seed", -5), 2, "-5 is not in the range x>=0")


@pytest.mark.parametrize("where", ["golden", pytest.param("verilator", marks=pytest.mark.sim),
                                   pytest.param("icarus", marks=pytest.mark.sim)])
def test_simulation_flags_follow_the_library_rule(hand_program, where):
    """Every backend takes every flag (vta.device's rule): the simulators apply them (a
    5-cycle watchdog fires while a LOAD waits 60 cycles for DRAM), golden ignores them
    with a note; a bad value is refused by the library's check, naming the flag."""
    flags = ["--latency", 60, "--watchdog", 5, "--stall", 0.5, "--seed", 2, "--timeout", 60]
    result = run_cli("run", hand_program, "-b", where, *flags)
    if where == "golden":
        assert result.exit_code == 0, result.output
        assert "output out: 4 bytes" in result.stdout
        for flag in ("--latency", "--watchdog", "--stall", "--seed"):
            assert f"vta: {flag} has no meaning on the golden backend: ignored" in \
                result.stderr
        assert "--timeout" not in result.stderr  # a run timeout means something everywhere
    else:
        one_line_error(result, 1, f"WatchdogError: {where} run of 7 instructions",
                       "for 5 cycles", "hint: a stream that waits forever: `vta lint PROG`")
        assert "has no meaning" not in result.stderr
    for flag, value, message in [
            ("--stall", 1.5, "stall must be a probability in 0..1, not 1.5"),
            ("--watchdog", -1, "watchdog must be an integer >= 0, not -1"),
            ("--latency", "-1,3", "latency must be cycles >= 0 or a (read, write) pair"),
            ("--mem-size", 1000, "mem_size must be a power of two in 2**16..2**32, not 1000"),
            ("--timeout", 0, "run_timeout must be a positive number of seconds, not 0.0")]:
        one_line_error(run_cli("run", hand_program, "-b", where, flag, value), 2,
                       f"Invalid value for {flag}: {message}")


@pytest.mark.sim
def test_demo_without_the_sim_extra_gives_a_hint(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "cocotb", None)  # as if cocotb were not installed
    one_line_error(run_cli("demo", "-b", "icarus", "-c", "tiny"), 1,
                   "the icarus backend needs cocotb, which is not installed",
                   "hint: the RTL backends need the sim extra: pip install 'vta[sim]'")


def test_demo_json(tmp_path):
    result = invoke("demo", "-b", "golden", "-c", "tiny", "--shape", 3, 5, 4, "--json")
    assert result.exit_code == 0, result.output
    info = json.loads(result.output)
    assert info["ok"] and info["outputs"] == 12 and info["mismatches"] == 0
    assert info["stats"]["cycles"] is None and info["stats"]["gemm_uops"] > 0


def test_asm_refuses_binary_input(tmp_path):
    binary = tmp_path / "prog.bin"
    binary.write_bytes(bytes([0x80, 0xff, 0x00, 0x21]) * 4)
    one_line_error(run_cli("asm", binary, "-o", tmp_path / "x"), 1,
                   "prog.bin: not assembly text (binary data at byte 0); `vta disasm` reads "
                   "binary streams")


def test_asm_duplicate_and_unknown_fields(tmp_path):
    source = tmp_path / "p.s"
    source.write_text("GEMM iter_out=2 iter_out=3\n")
    one_line_error(run_cli("asm", source, "-o", tmp_path / "x.bin"), 1,
                   "line 1: field 'iter_out' is given twice")
    source.write_text("LOAD INP foo=1\n")
    one_line_error(run_cli("asm", source, "-o", tmp_path / "x.bin"), 1,
                   "line 1: LOAD INP has no field 'foo' (its fields: sram_base, "
                   "dram_base, y_size, x_size, x_stride, y_pad_0, y_pad_1, x_pad_0, x_pad_1, "
                   "deps)")


def test_disasm_ranges_are_checked(tmp_path):
    stream = tmp_path / "p.bin"
    stream.write_bytes(bytes(16) * 2 + (3).to_bytes(16, "little"))
    one_line_error(run_cli("disasm", stream, "--start", -3), 2, "-3 is not in the range x>=0")
    one_line_error(run_cli("disasm", stream, "--count", -1), 2, "-1 is not in the range x>=1")
    one_line_error(run_cli("disasm", stream, "--start", 3), 2,
                   "3 is past the end of the 3-instruction stream (indices 0..2)")
    assert invoke("disasm", stream, "--start", 1, "--count", 5).output == \
        "     1: LOAD UOP\n     2: FINISH\n"
    empty = tmp_path / "empty.bin"
    empty.write_bytes(b"")
    one_line_error(run_cli("disasm", empty), 1, "the stream is empty (no instructions)")


def test_config_takes_the_config_option_too():
    by_option = invoke("config", "--config", "tiny", "--json")
    assert json.loads(by_option.output) == json.loads(invoke("config", "tiny", "--json").output)
    one_line_error(run_cli("config", "tiny", "-c", "default"), 2,
                   "give the configuration once")


def test_isa_and_regs_json():
    layout = json.loads(invoke("isa", "-c", "tiny", "--json").output)
    acc_bits = (Config.load("tiny").ACC_BUFF_DEPTH - 1).bit_length()  # 128 entries: 7 bits
    assert layout["uop"][0] == {"name": "dst_idx", "lo": 0, "width": acc_bits, "signed": False}
    registers = json.loads(invoke("regs", "--json").output)
    assert registers[1]["name"] == "STATUS" and registers[1]["offset"] == 4




@pytest.fixture
def hand_program(tmp_path):
    source = tmp_path / "hand.s"
    source.write_text(HAND)
    prog = tmp_path / "hand.vtaprog"
    result = invoke("asm", source, "-o", prog)
    assert result.exit_code == 0, result.output
    assert "program file, 7 instructions, 5 regions" in result.output
    return prog


def test_disasm_program_file_shows_micro_ops_and_hex(hand_program):
    lines = invoke("disasm", hand_program, "--hex").output.splitlines()
    # region kernels is the fourth page (0x4000): dram_base 0x4000 / 4 bytes per micro-op
    first = isa.MemInsn(opcode=isa.Opcode.LOAD, memory_type=isa.MemId.UOP, dram_base=0x1000,
                        y_size=1, x_size=2, x_stride=2)
    word = int.from_bytes(isa.encode(first, Config.load("tiny")), "little")
    assert lines[0] == f"     0: {word:032x}  {isa.disassemble(first)}"
    assert "GEMM uop_bgn=1 uop_end=2" in lines[5]
    assert lines[6].strip() == "# uop 1: UOP"  # wgt_idx=0, src_idx=0, dst_idx=0
    data = json.loads(invoke("disasm", hand_program, "--json", "--start", 3).output)
    assert data[0]["index"] == 3 and data[0]["uops"] == [
        {"entry": 0, "dst_idx": 0, "src_idx": 0, "wgt_idx": 0}]
    assert data[0]["fields"]["reset_reg"] == 1


def test_run_program_file_and_write_outputs(hand_program, tmp_path):
    result = invoke("run", hand_program, "-b", "golden", "--out", tmp_path / "res")
    assert result.exit_code == 0, result.output
    out = np.frombuffer((tmp_path / "res" / "out.bin").read_bytes(), dtype=np.int8)
    w = np.array([[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [2, 2, 2, 2]])
    assert out.tolist() == list(w @ np.array([1, -2, 3, 4]))
    assert "7 instructions" in result.output and "n/a (functional model)" in result.output


def test_run_reports_a_mismatch_with_exit_3(tmp_path):
    captured = tmp_path / "runs"
    assert invoke("demo", "-b", "golden", "-c", "tiny", "--shape", 2, 4, 4,
                  "--capture", captured).exit_code == 0
    path = captured / "run-0001.vtaprog"
    result = invoke("run", path, "-b", "golden", "--json")
    assert result.exit_code == 0 and json.loads(result.output)["outputs"]["out"]["matches"]
    text = path.read_text()
    head, expect = text.split(".expect out\n")
    first = expect.splitlines()[0]  # "+0000: b0 b1 ..."
    flipped = first[:7] + f"{int(first[7:9], 16) ^ 1:02x}" + first[9:]
    path.write_text(head + ".expect out\n" + expect.replace(first, flipped, 1))
    result = run_cli("run", path, "-b", "golden")
    one_line_error(result, 3, "outputs differ from the recorded run: region out: 1 byte(s) "
                              "differ; first at byte 0 (OUT element 0, lane 0)")


@pytest.mark.sim
def test_run_rtl_with_simulation_flags(hand_program, tmp_path):
    trace = tmp_path / "t.trace"
    result = invoke("run", hand_program, "-b", "verilator", "--stall", "0.3", "--latency", "9,4",
                    "--seed", 5, "--watchdog", 100000, "--trace", trace, "--json")
    assert result.exit_code == 0, result.output
    info = json.loads(result.output)
    assert info["stats"]["cycles"] > 0 and info["stats"]["gemm_uops"] == 1
    records = vtrace.read_trace(trace)
    assert [r.index for r in sorted(records, key=lambda r: r.index)] == list(range(7))
    for r in records:
        assert r.dispatch <= r.start <= r.cycle  # dispatch, start and retire cycles


# ---------------------------------------------------------------- Ctrl-C
LONG = """\
.config tiny
.run @code
.region kernels
UOP
.region code
LOAD UOP dram_base=@kernels y_size=1 x_size=1 x_stride=1
GEMM uop_end=1 iter_out=16383 iter_in=16383
FINISH
"""


def _read_until(fd: int, text: str, limit: float = 120.0) -> str:
    """What ``fd`` gives until ``text`` appears (escape sequences and line breaks of a
    terminal display taken out); fails the test after ``limit`` seconds or at EOF."""
    import os
    import re
    import select
    import time

    seen = ""
    deadline = time.monotonic() + limit
    while text not in re.sub(r"\x1b\[[0-9;?]*[A-Za-z]|[\r\n]", "", seen):
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            pytest.fail(f"{text!r} did not appear within {limit} s; got: {seen[-2000:]!r}")
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # a pty whose other end is closed
            chunk = b""
        if not chunk:
            pytest.fail(f"{text!r} never appeared (end of output): {seen[-2000:]!r}")
        seen += chunk.decode(errors="replace")
    return seen


@pytest.mark.sim
def test_long_run_in_a_pipe_reports_progress(tmp_path, monkeypatch):
    """Not a terminal, no -v: a progress line on stderr now and then (every 15 s; here
    every report), none on stdout."""
    from vta.cli import common as cli_common

    monkeypatch.setattr(cli_common, "PIPE_PROGRESS_EVERY", 0.0)
    source = tmp_path / "medium.s"
    source.write_text(LONG.replace("iter_out=16383 iter_in=16383", "iter_out=3000 iter_in=1000"))
    prog = tmp_path / "medium.vtaprog"
    assert invoke("asm", source, "-o", prog).exit_code == 0
    result = invoke("run", prog, "-b", "verilator")  # 3 M cycles: seconds
    assert result.exit_code == 0, result.output
    lines = [line for line in result.stderr.splitlines() if "run in progress" in line]
    assert lines and all(line.startswith("vta: verilator run in progress: ") and
                         " of 3 instructions retired" in line for line in lines), lines
    assert "in progress" not in result.stdout
    assert "3,000,000 (48,000,000 MACs)" in result.stdout  # the whole GEMM ran


@pytest.mark.sim
@pytest.mark.parametrize("where, sim", [("pipe", "verilator"), ("terminal", "verilator"),
                                        ("pipe", "icarus")])
def test_ctrl_c_stops_the_simulator_at_once(tmp_path, where, sim):
    """SIGINT during a long RTL run: exit 130 within seconds, no simulator or folder left.

    The signal is sent once the run is known to be in the simulator: its first progress
    report has arrived (in a pipe with -v, the log line; on a terminal, the spinner's text).
    """
    import os
    import signal
    import subprocess
    import sys
    import time

    source = tmp_path / "long.s"
    source.write_text(LONG)
    prog = tmp_path / "long.vtaprog"
    assert invoke("asm", source, "-o", prog).exit_code == 0
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    env = {**os.environ, "TMPDIR": str(scratch), "COLUMNS": "200"}
    if where == "pipe":
        reader, writer = os.pipe()
        verbose = ["-v"]
    else:
        reader, writer = os.openpty()
        verbose = []
    proc = subprocess.Popen(  # 268 M GEMM cycles: minutes of simulation
        [sys.executable, "-m", "vta.cli", *verbose, "run", str(prog), "-b", sim,
         "--watchdog", "0"], env=env, stderr=writer, stdout=subprocess.DEVNULL,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))  # see interrupt.py
    os.close(writer)
    try:
        if where == "pipe":
            seen = _read_until(reader, f"vta: {sim} run in progress: ")
            assert "1 of 3 instructions retired, 3 dispatched" in seen  # the LOAD UOP
        else:
            seen = _read_until(reader, " of 3 instructions retired")
            assert f"{sim}: " in seen and " cycles in " in seen
        assert list(scratch.glob(f"vta-{sim}-*"))  # the session folder exists meanwhile
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        code = proc.wait(timeout=30)
        elapsed = time.monotonic() - sent
    finally:
        proc.kill()
        os.close(reader)
    assert code == 130
    assert elapsed < 5, f"took {elapsed:.1f} s to stop"
    assert list(scratch.iterdir()) == []  # the session folder is gone
    left = []
    for pid in os.listdir("/proc"):
        try:
            if os.readlink(f"/proc/{pid}/cwd").startswith(str(scratch)):
                left.append(pid)
        except OSError:
            continue
    assert left == [], f"simulator processes left: {left}"


@pytest.mark.sim
def test_diff_of_golden_against_itself_is_refused(hand_program, monkeypatch):
    """Golden against golden is refused; golden against an RTL reference opens the simulator
    first, with its own default memory (each size is a build), and golden gets its size."""
    from vta import device

    one_line_error(run_cli("diff", hand_program, "-b", "golden"), 2,
                   "the golden model against itself compares nothing; give -b verilator")
    opened = []
    real = device.open_device
    monkeypatch.setattr(device, "open_device", lambda backend, cfg, **options: (
        opened.append((backend, options.get("mem_size"))), real(backend, cfg, **options))[1])
    result = run_cli("diff", hand_program, "-b", "golden", "--reference", "verilator")
    assert result.exit_code == 0, result.output
    assert "golden agrees with verilator" in result.output
    assert opened == [("verilator", None), ("golden", 64 << 20)]

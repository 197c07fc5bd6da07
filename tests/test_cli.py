"""The `vta` command line, through click's test runner."""

from __future__ import annotations

import json

from click.testing import CliRunner

from vta.cli import main
from vta.config import Config


def invoke(*args):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def test_help_lists_commands():
    result = invoke("--help")
    assert result.exit_code == 0
    for command in ("demo", "config", "disasm", "asm", "regs"):
        assert command in result.output


def test_demo_runs_and_checks_against_numpy():
    result = invoke("demo", "--backend", "golden", "--config", "tiny", "--shape", "9", "13", "6",
                    "--seed", "3")
    assert result.exit_code == 0, result.output
    assert "PASS: all 54 outputs equal NumPy's" in result.output
    assert "GEMM micro-ops" in result.output
    assert "n/a (functional model)" in result.output


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
    assert "M, K and N must be positive, not 4 0 4" in result.output
    result = invoke("demo", "--config", "nope")
    assert result.exit_code == 2 and "not 'nope'" in result.output


def test_demo_on_unknown_backend_lists_the_valid_ones():
    result = invoke("demo", "--backend", "nosuch")
    assert result.exit_code == 2
    assert "'nosuch' is not one of 'golden', 'verilator', 'icarus', 'f1', 'f2'" in result.output


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

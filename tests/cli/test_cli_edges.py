"""The rough edges a new user found in the command line (issue 22, section 5), each as the
user met it, with the message it gives now pinned word for word."""

from __future__ import annotations

import json
import re
from pathlib import Path

import click
import numpy as np
import pytest
from click.testing import CliRunner
from hand_programs import GEMM_1X4, STORE_FIRST, STORED_TWICE

import vta
from vta import golden, progfile
from vta.cli import main
from vta.cli.common import OutputPath
from vta.errors import AssemblyError
from vta.isa import AluOp, dispatch_engine
from vta.progfile import diverge, lint, tokenorder


def run_cli(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def error_line(result, code: int) -> str:
    """The one error line of a command that failed with exit status ``code``."""
    assert result.exit_code == code, result.output
    assert "Traceback" not in result.output and (
        result.exception is None or isinstance(result.exception, SystemExit)), result.exception
    lines = [ln for ln in result.output.splitlines() if ln.startswith("Error: ")]
    assert len(lines) == 1, result.output
    return lines[0].removeprefix("Error: ")


def assembled(tmp_path: Path, text: str, name: str = "p") -> Path:
    (tmp_path / f"{name}.s").write_text(text)
    out = tmp_path / f"{name}.vtaprog"
    result = run_cli("asm", tmp_path / f"{name}.s", "-o", out)
    assert result.exit_code == 0, result.output
    return out


# ------------------------------------------------------ output paths, one rule for all
@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> dict[str, Path]:
    """An existing file for every input the commands below take (their contents do not
    matter: the output options are refused before any input is read)."""
    folder = tmp_path_factory.mktemp("inputs")
    prog = assembled(folder, GEMM_1X4)
    files = {"prog": prog, "src": folder / "p.s", "trace": folder / "p.trace",
             "model": folder / "m.onnx", "x": folder / "x.npy"}
    for name in ("trace", "model"):
        files[name].write_text("")
    np.save(files["x"], np.zeros(3))
    return files


#: Every output option of every command: (the arguments before it, the option, how click
#: names it, the output's name).  A FILE option's folder must exist; a folder option's
#: parent must (the command creates the folder itself, never the ones above it).
OUTPUTS = [
    (["run", "{prog}", "-b", "golden"], "--out", "'--out'", "results"),
    (["run", "{prog}", "-b", "golden"], "--trace", "'--trace'", "x.trace"),
    (["run", "{prog}", "-b", "verilator"], "--waves", "'--waves'", "x.fst"),
    (["trace", "{prog}", "-b", "golden"], "--out", "'--out'", "x.trace"),
    (["trace", "{prog}", "-b", "golden"], "--perfetto", "'--perfetto'", "x.json"),
    (["trace", "{prog}", "-b", "golden"], "--png", "'--png'", "x.png"),
    (["trace", "show", "{trace}"], "--perfetto", "'--perfetto'", "x.json"),
    (["trace", "show", "{trace}"], "--png", "'--png'", "x.png"),
    (["waves", "{prog}"], "-o", "'--output' / '-o'", "x.fst"),
    (["waves", "{prog}", "--insns", "1:2"], "-o", "'--output' / '-o'", "x.vcd"),
    (["demo", "-b", "golden", "-c", "tiny"], "--trace", "'--trace'", "x.trace"),
    (["demo", "-b", "icarus", "-c", "tiny"], "--waves", "'--waves'", "x.fst"),
    (["demo", "-b", "golden", "-c", "tiny"], "--capture", "'--capture'", "runs"),
    (["graph", "run", "{model}", "--input", "{x}"], "-o", "'--output' / '-o'", "y.npz"),
    (["graph", "run", "{model}", "--input", "{x}"], "--trace", "'--trace'", "x.trace"),
    (["graph", "quantize", "{model}", "--calib", "{x}"], "-o", "'--output' / '-o'", "q.onnx"),
    (["asm", "{src}"], "-o", "'--output' / '-o'", "x.vtaprog"),
    (["regress", "-b", "golden", "-n", "1"], "--out", "'--out' / '-o'", "results"),
    (["tune", "{model}"], "--log", "'--log'", "t.jsonl"),
]


@pytest.mark.parametrize("before, option, hint, name", OUTPUTS,
                         ids=[" ".join(o[0][:2]) + " " + o[1] for o in OUTPUTS])
def test_every_output_option_needs_its_folder(inputs, tmp_path, monkeypatch, before, option,
                                              hint, name):
    """`vta trace P --out no/dir/x.trace` gave a traceback, `vta run P -b verilator --waves
    no/dir/x.fst` exited 0 and wrote nothing: now every output option of every command
    gives the same usage error, naming the option and the missing folder, before any work
    (no device is opened, no simulator built)."""
    def no_work(*args, **kwargs):
        raise AssertionError("a device was opened before the output path was checked")

    monkeypatch.setattr(vta.device, "open_device", no_work)
    args = [a.format(**inputs) for a in before]
    missing = tmp_path / "no" / "dir"
    result = run_cli(*args, option, missing / name)
    assert error_line(result, 2) == (f"Invalid value for {hint}: folder {missing} does not "
                                     f"exist (create it first: mkdir -p {missing})")
    assert not (tmp_path / "no").exists()
    blocker = tmp_path / "file"
    blocker.write_text("")  # a file where the folder should be
    result = run_cli(*args, option, blocker / name)
    assert error_line(result, 2) == f"Invalid value for {hint}: {blocker} is not a folder"


def _output_params(command: click.Command, path=()):
    if isinstance(command, click.Group):
        for name, sub in command.commands.items():
            yield from _output_params(sub, (*path, name))
        return
    for param in command.params:
        yield path, param


#: Inputs the command itself checks when it reads them (one line naming the option).
READ_LATER = {(("graph", "quantize"), "--calib"), (("graph", "quantize"), "--eval"),
              (("graph", "quantize"), "--labels")}


def test_the_table_covers_every_output_option_of_every_command():
    """A new output option cannot slip past the rule: every path parameter of every command
    is an input (that must exist, or that the command reads and checks itself), or an
    OutputPath, and every OutputPath is in OUTPUTS."""
    outputs = set()
    for path, param in _output_params(main):
        if isinstance(param.type, OutputPath):
            outputs.add((path, param.opts[0]))
        elif isinstance(param.type, click.Path) and (path, param.opts[0]) not in READ_LATER:
            assert param.type.exists, f"vta {' '.join(path)} {param.opts[0]} writes?"
    table = set()
    for before, option, _, _ in OUTPUTS:
        words = [w for w in before if not w.startswith(("{", "-")) and w not in
                 ("golden", "verilator", "icarus", "tiny", "1", "1:2")]
        if words == ["trace"]:
            words = ["trace", "run"]  # `vta trace PROG` is `vta trace run PROG`
        long = {"-o": "--output"}.get(option, option)
        table.add((tuple(words), long))
    aws = (("aws", "build"), "--hdk")  # a checkout written into: it must exist (below)
    assert outputs == table | {aws}


def test_relative_output_in_the_current_folder_and_a_folder_created_once(inputs, tmp_path,
                                                                         monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = run_cli("run", inputs["prog"], "-b", "golden", "--trace", "x.trace", "--out",
                     "results")
    assert result.exit_code == 0, result.output
    assert Path("x.trace").stat().st_size and Path("results/out.bin").read_bytes() == \
        bytes([1, 0xfe, 3, 12])  # w @ x of GEMM_1X4, low 8 bits


def test_an_unwritable_folder_and_the_aws_checkout(inputs, tmp_path, monkeypatch):
    import os

    monkeypatch.setattr(os, "access", lambda path, mode: not mode & os.W_OK)  # root may write
    result = run_cli("run", inputs["prog"], "-b", "golden", "--trace", tmp_path / "x.trace")
    assert error_line(result, 2) == f"Invalid value for '--trace': folder {tmp_path} is not " \
                                    "writable"
    result = run_cli("aws", "build", "--hdk", tmp_path, "--dry-run")
    assert error_line(result, 2) == f"Invalid value for '--hdk': folder {tmp_path} is not " \
                                    "writable"
    monkeypatch.undo()
    result = run_cli("aws", "build", "--hdk", tmp_path / "none", "--dry-run")
    assert error_line(result, 2) == f"Invalid value for '--hdk': Directory " \
                                    f"'{tmp_path / 'none'}' does not exist."


@pytest.mark.parametrize("option", ["waves", "trace"])
def test_the_library_refuses_a_file_in_a_missing_folder(tmp_path, option):
    """open_device(..., waves=PATH) wrote nothing on Verilator when PATH's folder was
    missing: the common check refuses it on every backend (golden ignores waves, but a
    path that can never be written is an error anywhere)."""
    path = tmp_path / "no" / "x.out"
    with pytest.raises(ValueError, match=re.escape(
            f"{option} file {path}: folder {path.parent} does not exist")):
        vta.open_device("golden", "tiny", **{option: path})


@pytest.mark.sim
def test_a_waveform_the_simulator_did_not_write_is_reported(tmp_path, caplog):
    """The last safety net: a waveform missing at close is a warning, not silence."""
    import logging

    caplog.set_level(logging.WARNING, logger="vta.backends.rtl")
    dev = vta.open_device("icarus", "tiny", waves=tmp_path / "w.fst")
    dev.driver.transport.waves_file = tmp_path / "elsewhere.fst"  # never written
    dev.close()
    warned = [r.getMessage() for r in caplog.records if r.name == "vta.backends.rtl"]
    assert warned and warned[0].startswith(
        f"the icarus simulator wrote no waveform to {tmp_path / 'elsewhere.fst'}")
    assert (tmp_path / "w.fst").stat().st_size  # where it did write


# ------------------------------------------------------ a program file cut short
@pytest.mark.parametrize("region, index", [("code", 1), ("kernels", 0)])
@pytest.mark.parametrize("command", [["asm", "-o", "{out}"], ["lint"], ["run", "-b", "golden"],
                                     ["disasm"]])
def test_a_file_cut_after_an_index_names_the_line(tmp_path, command, region, index):
    """`  1:` at the end of the file was an IndexError in asm, lint, run and disasm."""
    lines = assembled(tmp_path, GEMM_1X4).read_text().splitlines()
    start = lines.index(next(ln for ln in lines if ln.startswith(f".region {region} ")))
    cut = next(i for i in range(start, len(lines)) if lines[i].strip().startswith(f"{index}:"))
    path = tmp_path / "cut.vtaprog"
    path.write_text("\n".join(lines[:cut] + [f"{index:6d}:"]) + "\n")
    args = [command[0], path, *[a.format(out=tmp_path / "x.vtaprog") for a in command[1:]]]
    assert error_line(run_cli(*args), 1) == (
        f"AssemblyError: {path}: line {cut + 1}: '{index}:' has no instruction or micro-op "
        "after its index (is the file cut short?)")


# ------------------------------------------------------ each location said once
ONCE = [  # a change to GEMM_1X4, and the error it gives (the line is the changed one)
    ("LOAD INP dram_base=@x", "LOAD INP dram_base=@nope",
     "line 14: dram_base names region 'nope', which is not defined"),
    ("LOAD INP dram_base=@x", "LOAD INP dram_base=@",
     "line 14: expected dram_base=@REGION or @REGION+ELEMENTS, not 'dram_base=@'"),
    ("LOAD INP dram_base=@x", "LOAD INP dram_base=@w+1x",
     "line 14: expected dram_base=@REGION or @REGION+ELEMENTS, not 'dram_base=@w+1x'"),
    ("LOAD INP dram_base=@x", "LOAD INP foo=1 dram_base=@x",
     "line 14: LOAD INP has no field 'foo' (its fields: sram_base, dram_base, y_size, x_size, "
     "x_stride, y_pad_0, y_pad_1, x_pad_0, x_pad_1, deps)"),
    ("uop_end=2 iter_out=1", "uop_end=2 iter_out=99999",
     "line 17: GEMM field 'iter_out' is 14 bits wide and holds 0..16383, not 99999"),
    ("UOP wgt_idx=0", "UOP wgt_idx=99999",
     "line 11: micro-op field 'wgt_idx' is 6 bits wide and holds 0..63, not 99999"),
    (".run @code", ".run @", "line 3: expected @REGION or @REGION+BYTES, not '@'"),
    (".config tiny", '.config {"name": "tiny", LOG_BATCH: 0}',
     "line 2: .config JSON is not valid at column 26: Expecting property name enclosed in "
     "double quotes"),
    (".config tiny", ".config " + "x" * 300, "line 2: configuration must be a preset name "
     "(default, tiny, aws, aws32) or the path of a vta_config.json file, not '{folder}/"
     + "x" * 300 + "'"),
]


@pytest.mark.parametrize("old, new, message", ONCE, ids=[m[:30] for _, _, m in ONCE])
def test_errors_name_their_location_once(tmp_path, old, new, message):
    """"x.vtaprog: line 4: x.vtaprog: line 4: ..." came from a parse error raised inside
    the block that located the assembler's errors; the JSON error had a second "line";
    a long .config value was an OSError."""
    assert old in GEMM_1X4
    path = tmp_path / "x.vtaprog"
    path.write_text(GEMM_1X4.replace(old, new, 1))
    assert error_line(run_cli("lint", path), 1) == \
        f"AssemblyError: {path}: {message.replace('{folder}', str(tmp_path))}"


def test_no_broken_line_locates_its_error_twice():
    """Every way of breaking each line (cut, a word replaced) gives an AssemblyError that
    names the file once and at most one line, never another exception."""
    lines = GEMM_1X4.splitlines()
    words = ["", "x", "7", "-1", "=", "@", "@nope", "dram_base=@", "1:", "UOP", "GEMM", ".org",
             ".zero -1"]
    broken = 0
    for i, line in enumerate(lines):
        tokens = line.split()
        variants = [line[:k] for k in range(0, len(line), 3)]
        variants += [" ".join(tokens[:j] + [w] + tokens[j + 1:])
                     for j in range(len(tokens)) for w in words]
        for variant in variants:
            try:
                progfile.parse("\n".join(lines[:i] + [variant] + lines[i + 1:]),
                               where="x.vtaprog").insns()
            except AssemblyError as exc:
                broken += 1
                text = str(exc)
                assert text.count("x.vtaprog") == 1 and text.startswith("x.vtaprog: "), text
                assert len(re.findall(r"\bline \d", text)) <= 1, text
    assert broken > 300


def test_a_bad_trace_file_names_its_line_once(tmp_path):
    good = tmp_path / "good.trace"
    assert run_cli("trace", assembled(tmp_path, GEMM_1X4), "-b", "golden", "--out",
                   good).exit_code == 0
    bad = tmp_path / "bad.trace"
    lines = good.read_text().splitlines()
    assert lines[0].startswith("#") and "\tload\t" in lines[1]
    lines[1] = lines[1].replace("\tload\t", "\tfetch\t")
    bad.write_text("\n".join(lines) + "\n")
    message = (f"{bad}: line 2: module column must be one of load, compute, store, not "
               "'fetch'")
    assert error_line(run_cli("trace", "show", bad), 1) == message
    assert error_line(run_cli("trace", "diff", good, bad), 1) == message
    binary = tmp_path / "bin.trace"
    binary.write_bytes(bytes(range(256)))
    assert error_line(run_cli("trace", "show", binary), 1) == \
        f"{binary}: not a trace file (binary data)"


# ------------------------------------------------------ vta diff on a deadlock
DEADLOCK = GEMM_1X4.replace("deps=pop_prev,push_next", "deps=pop_prev,pop_next,push_next")


def test_both_devices_deadlocking_agree_and_say_where(tmp_path):
    prog = progfile.load(assembled(tmp_path, DEADLOCK))
    with vta.open_device("golden", prog.cfg) as ref, vta.open_device("golden", prog.cfg) as dut:
        result = diverge.compare(prog, ref, dut)
    assert result.divergence is None
    assert result.reference.error == result.device.error == \
        "DEADLOCK in compute at instruction 4"
    assert "compute at instruction 4 waits on s2g (empty); store at instruction 5 waits on " \
           "g2s (empty)" in result.reference.message


@pytest.mark.sim
def test_diff_of_a_program_deadlocking_on_both_says_so(tmp_path):
    """`vta diff` said they agree, exit 0, and never mentioned the deadlock."""
    path = assembled(tmp_path, DEADLOCK, "dl")
    result = run_cli("diff", path, "-b", "icarus")
    assert error_line(result, 1) == ("dl.vtaprog deadlocks on both golden and icarus, the same "
                                     "way: they agree, but it never runs to its end")
    lines = result.stdout.splitlines()  # (a simulator build logs on stderr)
    assert re.fullmatch(r"dl\.vtaprog: icarus agrees with golden \(memory, tokens, counters "
                        r"and the end of the run; [0-9.]+ s\); both deadlock:", lines[0])
    assert lines[1:5] == [
        "  #4 (compute) waits forever on s2g: all 0 token(s) the stream pushes onto s2g are "
        "taken by the 0 pop(s) before it, and no instruction left pushes s2g",
        "      GEMM uop_bgn=1 uop_end=2 iter_out=1 iter_in=1 deps=pop_prev,pop_next,push_next",
        "  #5 (store) waits forever on g2s: the next push of g2s is #4 (compute), behind #4, "
        "where the compute engine is itself stuck",
        "      STORE OUT dram_base=0xc00 y_size=1 x_size=1 x_stride=1 deps=pop_prev"]
    assert lines[5].startswith("golden: run of 7 instructions at 0x5000 stopped with DEADLOCK "
                               "in the compute module at instruction 4")
    assert lines[6].startswith("icarus: run of 7 instructions at 0x5000 stopped with DEADLOCK "
                               "in the compute module at instruction 4")
    info = json.loads(run_cli("diff", path, "-b", "icarus", "--json").stdout)
    assert info["agree"] and info["end"] == "DEADLOCK in compute at instruction 4"
    assert [(f["index"], f["engine"]) for f in info["deadlock"]] == [(4, "compute"), (5, "store")]
    # a fault on both is no success either; without FINISH the fault names no instruction
    for old, new, end in (("LOAD INP dram_base=@x", "LOAD INP sram_base=600 dram_base=@x",
                           "SRAM_RANGE in load at instruction 1"),
                          ("FINISH", "", "NO_FINISH in compute")):
        path = assembled(tmp_path, GEMM_1X4.replace(old, new), "fault")
        result = run_cli("diff", path, "-b", "icarus")
        assert error_line(result, 1) == (f"fault.vtaprog stops with {end} on both golden and "
                                         "icarus, the same way: they agree, but it never runs "
                                         "to its end")
        assert result.stdout.splitlines()[0].endswith(f" s); both stop with {end}:")


# ------------------------------------------------------ token order, not stream order
def played(prog):
    insns = prog.insns()
    return insns, tokenorder.play(insns, [dispatch_engine(i) for i in insns])


def test_a_store_reads_the_writer_that_happens_before_it(tmp_path):
    """STORED_TWICE: #6 comes before #7 in the stream but pops #7's g2s token, so it stores
    #7's result; #5 stores #4's.  STORE_FIRST: #3 stores #5's, two instructions later."""
    for text, want in ((STORED_TWICE, {5: [4], 6: [7]}), (STORE_FIRST, {3: [5]})):
        prog = progfile.parse(text)
        insns, play = played(prog)
        sources = lint.store_sources(insns, progfile.compute_uops(prog), play, prog.cfg)
        assert {k: v.tolist() for k, v in sources.items()} == want
    assert play.needs(3) == 5  # the prefix ending after #5 runs STORE #3 to its end


def test_lint_follows_tokens_not_the_stream():
    """Both are legal: lint warned store-unwritten on STORE_FIRST."""
    for text in (STORE_FIRST, STORED_TWICE):
        assert lint.lint(progfile.parse(text)) == []


def test_store_race_names_the_last_writer():
    """Three instructions write OUT entry 0 and no token orders the STORE after any of
    them: a token from the last orders it after all three, so the race names the last."""
    text = GEMM_1X4.replace("deps=pop_prev,push_next", "deps=pop_prev").replace(
        "STORE OUT dram_base=@out y_size=1 x_size=1 x_stride=1 deps=pop_prev",
        "ADD uop_bgn=1 uop_end=2 iter_out=1 iter_in=1 use_imm=1 imm=1\n"
        "ADD uop_bgn=1 uop_end=2 iter_out=1 iter_in=1 use_imm=1 imm=2\n"
        "STORE OUT dram_base=@out y_size=1 x_size=1 x_stride=1")
    races = [f for f in lint.lint(progfile.parse(text)) if f.check == "race"]
    assert [(f.index, f.engine) for f in races] == [(7, "store")]
    assert races[0].message.startswith("stores OUT entry 0 that #6 (compute) may not have "
                                       "written yet: no token orders the two")


def test_diff_names_the_writer_the_store_read(tmp_path, monkeypatch):
    """The device under test adds wrong (a golden model whose ADD flips a bit, only for its
    runs): the STORE of out2 (#6) differs, and the value came from the ADD #7 after it in
    the stream, not from the GEMM #4 before it.  The prefixes bisected end where a STORE
    can finish (#5 after itself, #6 after the ADD #7 it waits for): none deadlocks."""
    prog = progfile.parse(STORED_TWICE)
    ends = []
    observe = diverge.observe

    def watched(prog, device, count=None):
        outcome = observe(prog, device, count)
        ends.append((count, outcome.error))
        return outcome

    monkeypatch.setattr(diverge, "observe", watched)
    real = golden.spec.ALU_FUNCTIONS[AluOp.ADD]

    def flipped(x, y):
        out = np.array(real(x, y), dtype=np.int32)
        out[..., 0] ^= 1
        return out

    with vta.open_device("golden", prog.cfg) as ref, vta.open_device("golden", prog.cfg) as dut:
        run = dut.run

        def wrong_run(*args, **kwargs):
            with monkeypatch.context() as m:
                m.setitem(golden.spec.ALU_FUNCTIONS, AluOp.ADD, flipped)
                return run(*args, **kwargs)

        dut.run = wrong_run
        found = diverge.compare(prog, ref, dut).divergence
    assert (found.after, found.region, found.element, found.lane) == (6, "out2", 0, 0)
    assert (found.expected, found.actual) == (2, 3)  # lane 0 of w @ x is 1, plus 1; bit 0 flipped
    assert found.producers == [(7, "ADD uop_bgn=1 uop_end=2 iter_out=1 iter_in=1 use_imm=1 "
                                   "imm=1 deps=pop_next,push_next")]
    assert sorted({count for count, _ in ends} - {None}) == [6, 8]
    assert all(error is None for _, error in ends), ends

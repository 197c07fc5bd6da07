"""`vta lint`: deliberately broken programs are caught, runtime programs pass clean."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner
from hand_programs import GEMM_1X4 as GOOD

import vta
from vta import ops, progfile
from vta.cli import main
from vta.progfile import lint


def findings(text: str, **kw) -> list[lint.Finding]:
    return lint.lint(progfile.parse(text), **kw)


def only(text: str, check: str) -> lint.Finding:
    found = [f for f in findings(text) if f.check == check]
    assert len(found) == 1, [f.line() for f in findings(text)]
    return found[0]


def test_good_program_is_clean_and_runs():
    assert findings(GOOD) == []
    with vta.open_device("golden", "tiny") as dev:
        progfile.replay(progfile.parse(GOOD), dev)


def test_runtime_programs_are_clean(tmp_path):
    """Double-buffered conv2d and dense streams from the runtime: no finding at all."""
    rng = np.random.default_rng(1)
    with vta.open_device("golden", "tiny", capture=tmp_path) as dev:
        ops.dense(dev, rng.integers(-128, 128, (20, 30), dtype=np.int8),
                  rng.integers(-128, 128, (18, 30), dtype=np.int8), shift=4, relu=True,
                  bias=np.arange(18, dtype=np.int32))
        ops.conv2d(dev, rng.integers(-128, 128, (1, 8, 9, 9), dtype=np.int8),
                   rng.integers(-128, 128, (8, 8, 3, 3), dtype=np.int8), padding=1, shift=6)
    files = sorted(tmp_path.iterdir())
    assert len(files) == 2
    for path in files:
        prog = progfile.load(path)
        insns = prog.insns()
        g2l = sum(i.push_prev_dep for i in insns if i.opcode == vta.isa.Opcode.GEMM)
        l2g = sum(i.push_next_dep for i in insns if i.opcode == vta.isa.Opcode.LOAD
                  and i.memory_type == vta.isa.MemId.INP)
        assert g2l >= 2 and l2g >= 2  # tiled, double-buffered: tokens both ways, every step
        assert lint.lint(prog) == [], path


def test_deadlock_names_the_waiting_instruction_and_queue():
    text = GOOD.replace("deps=pop_prev,push_next", "deps=pop_prev,pop_next")
    found = [f for f in findings(text) if f.check == "deadlock"]
    assert [(f.index, f.engine, f.field) for f in found] == [
        (4, "compute", "pop_next_dep"), (5, "store", "pop_prev_dep")]
    assert "waits forever on s2g: all 0 token(s) the stream pushes onto s2g are taken by the " \
           "0 pop(s) before it, and no instruction left pushes s2g" in found[0].message
    assert "waits forever on g2s: the next push of g2s is #4 (compute), behind #4, where the " \
           "compute engine is itself stuck" not in found[1].message  # #4 pushes nothing now
    assert "waits forever on g2s" in found[1].message
    with vta.open_device("golden", "tiny") as dev, pytest.raises(vta.errors.DeadlockError):
        progfile.replay(progfile.parse(text), dev)  # the golden model agrees


def test_out_of_bounds_sram_and_dram():
    sram = only(GOOD.replace("LOAD INP dram_base=@x", "LOAD INP sram_base=127 dram_base=@x")
                .replace("x_size=1 x_stride=1\nLOAD WGT", "x_size=2 x_stride=2\nLOAD WGT"),
                "sram")
    assert (sram.index, sram.engine, sram.field) == (1, "load", "sram_base")
    assert "INP entries 127..128 reach beyond the 128-entry INP buffer" in sram.message
    nest = only(GOOD.replace("GEMM uop_bgn=1 uop_end=2 iter_out=1",
                             "GEMM uop_bgn=1 uop_end=2 dst_factor_out=1 iter_out=200"), "sram")
    assert (nest.index, nest.field) == (4, "dst_idx")
    assert "dst_idx reaches ACC entry 199" in nest.message
    dram = [f for f in findings(GOOD.replace("STORE OUT dram_base=@out",
                                             "STORE OUT dram_base=0x1000000"), mem_size=1 << 24)
            if f.check == "dram"]
    assert [(f.severity, f.index, f.field) for f in dram] == [("error", 5, "dram_base")]
    assert "reach beyond the 16777216-byte device memory" in dram[0].message
    outside = only(GOOD.replace("STORE OUT dram_base=@out", "STORE OUT dram_base=0x2000"),
                   "dram")
    assert outside.severity == "warning" and "not all inside the program's regions" in \
        outside.message


def test_unordered_overwrite_is_a_race():
    """The load engine reloads INP entry 0 while the GEMM may still be reading it."""
    text = GOOD.replace("STORE OUT", "LOAD INP dram_base=@w y_size=1 x_size=1 x_stride=1\n"
                                     "STORE OUT")
    race = only(text, "race")
    assert (race.severity, race.index, race.engine, race.field) == ("error", 5, "load",
                                                                   "sram_base")
    assert "overwrites INP entry 0 (of 0..0) that #4 (compute) may still be reading" in \
        race.message
    ordered = GOOD.replace("STORE OUT", "LOAD INP dram_base=@w y_size=1 x_size=1 x_stride=1 "
                                        "deps=pop_next\nSTORE OUT").replace(
        "deps=pop_prev,push_next", "deps=pop_prev,push_next,push_prev")
    assert [f.check for f in findings(ordered)] == []  # a g2l token orders them: clean


def test_read_before_the_load_is_a_race():
    text = GOOD.replace("LOAD WGT dram_base=@w y_size=1 x_size=1 x_stride=1 deps=push_next",
                        "LOAD WGT dram_base=@w y_size=1 x_size=1 x_stride=1").replace(
        "LOAD INP dram_base=@x y_size=1 x_size=1 x_stride=1",
        "LOAD INP dram_base=@x y_size=1 x_size=1 x_stride=1 deps=push_next")
    race = only(text, "race")
    assert race.index == 2 and "loads WGT entry 0 that #4 (compute) may read before the load " \
                               "writes it" in race.message


def test_flags_shift_hazards_and_unwritten_stores():
    flag = only(GOOD.replace("LOAD INP dram_base=@x y_size=1 x_size=1 x_stride=1",
                             "LOAD INP dram_base=@x y_size=1 x_size=1 x_stride=1 "
                             "deps=pop_prev"), "deps")
    assert (flag.index, flag.engine, flag.field) == (1, "load", "pop_prev_dep")
    shift = only(GOOD.replace("FINISH", "SHR uop_end=1 iter_out=1 iter_in=1 use_imm=1 imm=40\n"
                                        "FINISH"), "shift")
    assert (shift.severity, shift.index, shift.field) == ("warning", 6, "imm")
    hazard = only(GOOD.replace("GEMM uop_bgn=1 uop_end=2", "GEMM uop_bgn=0 uop_end=2"),
                  "uop-hazard")
    assert (hazard.index, hazard.field) == (4, "dst_idx")
    assert "micro-op 1 writes dst_idx 0 like micro-op 0 1 before it" in hazard.message
    unwritten = only(GOOD.replace("GEMM uop_bgn=1 uop_end=2 iter_out=1 iter_in=1",
                                  "GEMM reset_reg=1 uop_bgn=1 uop_end=2 iter_out=1 iter_in=1"),
                     "store-unwritten")
    assert (unwritten.index, unwritten.engine) == (5, "store")
    left = only(GOOD.replace("STORE OUT dram_base=@out y_size=1 x_size=1 x_stride=1 "
                             "deps=pop_prev", "STORE OUT dram_base=@out y_size=1 x_size=1 "
                             "x_stride=1 deps=pop_prev,push_prev"), "tokens-left")
    assert "1 token(s) pushed onto s2g are never popped (the first by #5)" in left.message


def test_lint_command(tmp_path):
    (tmp_path / "bad.s").write_text(GOOD.replace("deps=pop_prev,push_next",
                                                 "deps=pop_prev,pop_next"))
    assert CliRunner().invoke(main, ["asm", str(tmp_path / "bad.s"), "-o",
                                     str(tmp_path / "bad.vtaprog")]).exit_code == 0
    result = CliRunner().invoke(main, ["lint", str(tmp_path / "bad.vtaprog")])
    assert result.exit_code == 3
    assert "error: #4 (compute) [deadlock] pop_next_dep: waits forever on s2g" in result.output
    assert "    4: GEMM uop_bgn=1 uop_end=2 iter_out=1 iter_in=1 deps=pop_prev,pop_next" in \
        result.output
    assert "bad.vtaprog: 7 instructions, 2 error(s), 0 warning(s)" in result.output
    data = json.loads(CliRunner().invoke(main, ["lint", str(tmp_path / "bad.vtaprog"),
                                                "--json"]).stdout)
    assert data["errors"] == 2 and data["findings"][0]["check"] == "deadlock"


@pytest.mark.sim
def test_readme_debugging_example(tmp_path):
    """The README's walk: the race misbehaves with slow DRAM; lint names it; the fix is clean."""
    from pathlib import Path

    example = Path(__file__).parents[2] / "examples" / "dense-race.vtaprog"
    races = [f for f in lint.lint(progfile.load(example)) if f.severity == "error"]
    assert [(f.check, f.index) for f in races] == [("race", 9), ("race", 10), ("race", 11)]
    assert all("#13 (compute) may read before the load writes it" in f.message for f in races)
    text = example.read_text()
    fixed = text.replace(" x_stride=9 deps=push_next\n     9:", " x_stride=9\n     9:", 1).replace(
        "dram_base=@data+27 y_size=1 x_size=9 x_stride=9\n",
        "dram_base=@data+27 y_size=1 x_size=9 x_stride=9 deps=push_next\n", 1)
    assert fixed != text and lint.lint(progfile.parse(fixed)) == []
    (tmp_path / "fixed.vtaprog").write_text(fixed)
    slow = ["-b", "verilator", "--latency", "60"]  # (the broken run: the test below)
    good = CliRunner().invoke(main, ["run", str(tmp_path / "fixed.vtaprog"), *slow])
    assert good.exit_code == 0 and "outputs match the recorded run" in good.output


def _readme_commands() -> list[tuple[str, list[str]]]:
    """The README's "Debugging a VTA program" shell commands, each with the output lines
    shown under it (``# text``; ``...`` stands for text left out; ``# ...`` is prose)."""
    import re
    from pathlib import Path

    readme = (Path(__file__).parents[2] / "README.md").read_text()
    section = readme.split("\n## Debugging a VTA program\n", 1)[1].split("\n## ", 1)[0]
    commands = []
    for block in re.findall(r"```sh\n(.*?)```", section, re.S):
        for line in block.replace("\\\n", " ").splitlines():
            if not line.startswith("#"):
                command, _, inline = line.partition("  #")
                commands.append((command.strip(), [inline.strip()] if inline else []))
            elif not line.startswith("# ..."):
                commands[-1][1].append(line[1:].strip())
    return commands


@pytest.mark.sim
def test_readme_debugging_commands_run_verbatim(tmp_path, monkeypatch):
    """Each command of the README's debugging walk, copied as it is, gives the exit status and
    the output the README shows (whitespace aside), and writes the files it names."""
    import re
    import shlex
    import shutil
    from pathlib import Path

    (tmp_path / "examples").mkdir()
    shutil.copy(Path(__file__).parents[2] / "examples" / "dense-race.vtaprog",
                tmp_path / "examples")
    monkeypatch.chdir(tmp_path)
    commands = _readme_commands()
    assert [c.split()[:2] for c, _ in commands] == [
        ["vta", "run"], ["vta", "run"], ["vta", "diff"], ["vta", "trace"], ["vta", "lint"],
        ["vta", "waves"]]
    for (command, shown), status in zip(commands, [0, 3, 3, 0, 3, 0], strict=True):
        result = CliRunner().invoke(main, shlex.split(command)[1:])
        assert result.exit_code == status, (command, result.output)
        output = re.sub(r"\s+", " ", result.output)
        at = 0
        for fragment in re.sub(r"\s+", " ", " ".join(shown)).split("..."):
            found = output.find(fragment.strip(), at)
            assert found >= 0, f"README shows {fragment.strip()!r} for `{command}`; got " \
                               f"{output[at:]!r}"
            at = found + len(fragment.strip())
    for written in ("trace.png", "trace.json", "race.vcd"):
        assert (tmp_path / written).stat().st_size > 1000, written

"""The custom-logic folder `vta aws build` writes, checked the way the HDK's scripts use it.

Without Vivado: the generated encrypt and synthesis scripts run in ``tclsh`` with Vivado's
commands stubbed (every design module read exactly once, every `include resolved, the user
constraints read); ``cl_id_defines.vh`` is parsed as AWS's F1 shell script (grep, sed and
awk, run here) and F2 Python script (its regular expression) parse it; the generated top is
elaborated with the shell's ``cl_ports.vh`` port list in Verilator and yosys.  The stand-in
checkout: tests/aws/hdk_standin.py.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections import Counter
from pathlib import Path

import needs
import pytest
from hdk_standin import fake_hdk, ports

import vta
from vta.aws import hdk as hdkmod
from vta.aws import regs as clregs
from vta.backends.aws_sim import aws_sources
from vta.hdltools import hdlgen

SHELLS = ("f1", "f2")

#: Vivado's commands as the file handling sees them: reads are recorded, the rest ignored.
TCL_STUBS = r"""
proc read_verilog {args} {
    set sv 0
    foreach a $args {
        if {$a eq "-sv"} { set sv 1 } elseif {![string match -* $a]} {
            foreach f $a { puts "READ $sv [file normalize $f]" }
        }
    }
}
proc read_xdc {args} {
    set skip 0
    foreach a $args {
        if {$skip} { set skip 0 } elseif {$a eq "-ref"} { set skip 1 } elseif {
                ![string match -* $a]} {
            foreach f $a { puts "XDC [file normalize $f]" }
        }
    }
}
proc set_property {name value args} {
    if {$name eq "include_dirs"} { foreach d $value { puts "INCDIR [file normalize $d]" } }
}
proc print {args} {}
proc unknown {args} { return "" }
"""

#: How the HDK's build enters the scripts (create_dcp_from_cl.tcl on F1, build_all.tcl on F2).
TCL_ENTRY = {
    "f1": r"""
set CL_DIR $::env(CL_DIR)
set HDK_SHELL_DIR $::env(HDK_SHELL_DIR)
set HDK_SHELL_DESIGN_DIR $::env(HDK_SHELL_DESIGN_DIR)
set CL_MODULE cl_vta
set VDEFINES ""
set synth_options "-keep_equivalent_registers"
cd $CL_DIR/build/scripts
source encrypt.tcl
source synth_${CL_MODULE}.tcl
""",
    "f2": r"""
set CL_DIR $::env(CL_DIR)
set HDK_SHELL_DIR $::env(HDK_SHELL_DIR)
set HDK_SHELL_DESIGN_DIR $::env(HDK_SHELL_DESIGN_DIR)
set HDK_IP_SRC_DIR $::env(HDK_SHELL_DIR)/../ip
set CL cl_vta
set DEVICE_TYPE xcvu47p-fsvh2892-2-e
set build_dir $CL_DIR/build
set design_dir $CL_DIR/design
set constraints_dir $build_dir/constraints
set src_post_enc_dir $build_dir/src_post_encryption
file mkdir $src_post_enc_dir
cd $build_dir/scripts
source encrypt.tcl
source synth_${CL}.tcl
""",
}

_COMMENTS = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_MODULE = re.compile(r"^\s*module\s+(\w+)", re.M)
_INCLUDE = re.compile(r'^\s*`include\s+"([^"]+)"', re.M)


def _build(tmp_path: Path, shell: str, preset: str = "tiny"):
    hdk = fake_hdk(tmp_path / "aws-fpga", shell)
    plan = hdkmod.plan_build(shell, hdk, vta.Config.load(preset))
    hdkmod.execute(plan, run=False)
    return hdk, plan


def _file_handling(hdk: Path, plan) -> dict:
    """Run the generated encrypt + synthesis scripts in tclsh; what they read."""
    tclsh = needs.tool("tclsh", "runs the HDK's Tcl scripts (Debian: apt-get install tcl)")
    shell_dir = (hdk / "hdk" / "common" / "shell_stable").resolve()
    env = {**os.environ, "CL_DIR": str(plan.cl_dir), "HDK_SHELL_DIR": str(shell_dir),
           "HDK_SHELL_DESIGN_DIR": str(shell_dir / "design")}
    script = plan.cl_dir / "run_file_handling.tcl"
    script.write_text(TCL_STUBS + TCL_ENTRY[plan.shell])
    out = subprocess.run([tclsh, str(script)], env=env, capture_output=True, text=True,
                         check=False)
    assert out.returncode == 0, out.stdout + out.stderr
    seen = {"reads": [], "incdirs": [], "xdc": []}
    for line in out.stdout.splitlines():
        kind, _, rest = line.partition(" ")
        if kind == "READ":
            sv, path = rest.split(" ", 1)
            seen["reads"].append((sv == "1", Path(path)))
        elif kind == "INCDIR":
            seen["incdirs"].append(Path(rest))
        elif kind == "XDC":
            seen["xdc"].append(Path(rest))
    return seen


def _text(path: Path) -> str:
    return _COMMENTS.sub("", path.read_text())


@pytest.mark.parametrize("shell", SHELLS)
def test_synthesis_reads_every_module_once_and_resolves_every_include(tmp_path, shell):
    hdk, plan = _build(tmp_path, shell)
    seen = _file_handling(hdk, plan)
    enc = plan.cl_dir / "build" / "src_post_encryption"
    ours = {p.name for p in [*hdlgen.hdl_sources(), *aws_sources()]} | {"cl_vta.sv"}
    read_ours = Counter(p.name for _, p in seen["reads"] if p.parent == enc)
    assert set(read_ours) == ours, (sorted(ours - set(read_ours)), sorted(set(read_ours) - ours))
    assert all(n == 1 for n in read_ours.values()), read_ours
    for sv, path in seen["reads"]:
        if path.parent == enc:  # Verilog-2005 files as Verilog, the top as SystemVerilog
            assert sv == (path.suffix == ".sv"), path
    # every module of the design (ours and the shell's) defined exactly once in what is read
    modules = Counter(m for _, p in seen["reads"] if p.suffix in (".v", ".sv")
                      for m in _MODULE.findall(_text(p)))
    design = {m for name in ours for m in _MODULE.findall(_text(enc / name))}
    assert "cl_vta" in design and "vta_top" in design and "vta_aws_f1" in design
    assert all(modules[m] == 1 for m in design), {m: modules[m] for m in design}
    assert modules["sh_ddr"] == 1
    # every `include (and the headers' own) resolves: an include folder the script sets, or
    # a header read into the project (as the shell's cl_ports.vh is)
    assert seen["incdirs"] == [enc]
    headers = {p.name: p for _, p in seen["reads"] if p.suffix == ".vh"}
    todo = [p for _, p in seen["reads"] if p.suffix in (".v", ".sv")]
    done: set[Path] = set()
    while todo:
        path = todo.pop()
        done.add(path)
        for name in _INCLUDE.findall(_text(path)):
            found = [d / name for d in seen["incdirs"] if (d / name).is_file()]
            found += [headers[name]] if name in headers else []
            assert found, f"`include \"{name}\" in {path.name} resolves nowhere"
            if found[0] not in done:
                todo.append(found[0])
    assert {"cl_ports.vh", "vta_cfg.vh", "vta_aws_regs.vh"} <= {p.name for p in done}
    if shell == "f1":
        assert "unused_ddr_a_b_d_template.inc" in {p.name for p in done}
    # the user constraints are ours and are read where the HDK reads them
    constraints = plan.cl_dir / "build" / "constraints"
    synth_xdc = ("cl_synth_user.xdc",) if shell == "f1" else ("cl_synth_user.xdc",
                                                              "cl_timing_user.xdc")
    for name in synth_xdc:
        assert constraints / name in seen["xdc"], name
    for name, text in hdkmod.XDC[shell].items():
        assert (constraints / name).read_text() == text


def _aws_parse_f1(path: Path, key: str) -> str:
    """aws_build_dcp_from_cl.sh (F1, b39a904): its grep / sed / awk pipeline, run in bash."""
    cmd = (f"grep -v '^\\//' {path} | grep '{key}' | grep 'define' | sed 's/_//g' | "
           "awk -F \"h\" '{print $2}'")
    return subprocess.run(["bash", "-c", cmd], capture_output=True, text=True,
                          check=True).stdout.rstrip("\n")


def _aws_parse_f2(path: Path) -> dict[str, str]:
    """aws_build_dcp_from_cl.py (F2, 91c0150), get_pcie_ids: its pattern and splitting."""
    ids = {}
    for line in path.read_text().splitlines():
        for key, (hi, lo) in (("CL_SH_ID0", ("pci_device_id", "pci_vendor_id")),
                              ("CL_SH_ID1", ("pci_subsystem_id", "pci_subsystem_vendor_id"))):
            if re.search(r"\s*`define\s*" + key, line):
                ids[hi] = "0x" + line.split()[2].lstrip("32'h").split("_")[0]
                ids[lo] = "0x" + line.split()[2].lstrip("32'h").split("_")[1]
    return ids


@pytest.mark.parametrize("shell", SHELLS)
def test_cl_id_defines_read_as_the_build_scripts_read_it(tmp_path, shell):
    hdk, plan = _build(tmp_path, shell)
    path = plan.cl_dir / "design" / "cl_id_defines.vh"
    id0, id1 = clregs.pci_ids(shell)  # what the wrapper drives on cl_sh_id0 / cl_sh_id1
    want = {"pci_device_id": id0 >> 16, "pci_vendor_id": id0 & 0xFFFF,
            "pci_subsystem_id": id1 >> 16, "pci_subsystem_vendor_id": id1 & 0xFFFF}
    if shell == "f1":
        v0, v1 = _aws_parse_f1(path, "CL_SH_ID0"), _aws_parse_f1(path, "CL_SH_ID1")
        got = {"pci_device_id": "0x" + v0[0:4], "pci_vendor_id": "0x" + v0[4:8],
               "pci_subsystem_id": "0x" + v1[0:4], "pci_subsystem_vendor_id": "0x" + v1[4:8]}
    else:
        got = _aws_parse_f2(path)
    assert {k: int(v, 16) for k, v in got.items()} == want
    assert all(want.values()), want  # AFI_Manifest.md: no zero ID
    # the dry run shows the same manifest fields
    for key, value in got.items():
        assert plan.manifest[key].lower() == value.lower()


def test_manifest_ids_follow_the_scripts_quirks():
    """What the parser for the dry run reproduces: the F2 script strips 3, 2, ' and h from
    the left (a subsystem ID 0x3000 reads 0x000), the F1 script keeps commented-out lines
    that do not start with //."""
    text = "`define CL_SH_ID0 32'hF07B_1D0F\n`define CL_SH_ID1 32'h3000_1D0F\n"
    assert hdkmod.manifest_ids(text, "f2")["pci_subsystem_id"] == "0x000"
    assert hdkmod.manifest_ids(text, "f1")["pci_subsystem_id"] == "0x3000"
    doubled = text + "  // `define CL_SH_ID0 32'hF000_1D0F\n"
    assert hdkmod.manifest_ids(doubled, "f1")["pci_device_id"] == "0xF07B"
    assert hdkmod.manifest_ids(doubled, "f1")["pci_vendor_id"] == "0x1D0F"
    assert _aws_parse_f1_text(doubled) == "F07B1D0F\nF0001D0F"


def _aws_parse_f1_text(text: str) -> str:
    cmd = ("grep -v '^\\//' | grep 'CL_SH_ID0' | grep 'define' | sed 's/_//g' | "
           "awk -F \"h\" '{print $2}'")
    return subprocess.run(["bash", "-c", cmd], input=text, capture_output=True, text=True,
                          check=True).stdout.rstrip("\n")


@pytest.mark.parametrize("shell", SHELLS)
def test_dry_run_shows_the_manifest(tmp_path, shell):
    from click.testing import CliRunner

    from vta.cli import main

    hdk = fake_hdk(tmp_path / "aws-fpga", shell)
    out = CliRunner().invoke(main, ["aws", "build", "--hdk", str(hdk), "--shell", shell,
                                    "--dry-run"])
    assert out.exit_code == 0, out.output
    script = hdkmod.BUILD_SCRIPT[shell]
    lines = out.output.split(f"manifest the build writes into the tarball ({script}):\n")[1]
    fields = dict(line.strip().split("=", 1) for line in lines.splitlines())
    id0, id1 = clregs.pci_ids(shell)
    assert int(fields["pci_device_id"], 16) == id0 >> 16
    assert int(fields["pci_subsystem_id"], 16) == id1 >> 16 != 0
    assert int(fields["pci_subsystem_vendor_id"], 16) == id1 & 0xFFFF != 0
    if shell == "f1":
        assert fields["shell_version"] == "0x04261818" and fields["hdk_version"] == "1.4.standin"
        assert (fields["clock_recipe_a"], fields["clock_recipe_b"]) == ("A0", "B0")
    else:
        assert fields["shell_version"] == "0x10212415" and fields["hdk_version"] == "2.standin"
        assert fields["clock_recipe_a"] == "A1" and fields["clock_recipe_hbm"] == "H2"
    assert fields["dcp_hash"] == "(computed by the build)"


# ------------------------------------------------------------------ elaboration
def _elaboration_inputs(tmp_path: Path, shell: str):
    hdk, plan = _build(tmp_path, shell)
    seen = _file_handling(hdk, plan)
    sources = [(sv, p) for sv, p in seen["reads"] if p.suffix in (".v", ".sv")]
    incdirs = seen["incdirs"] + sorted({p.parent for _, p in seen["reads"] if p.suffix == ".vh"})
    return plan, sources, incdirs


@pytest.mark.parametrize("shell", SHELLS)
def test_top_elaborates_with_the_shell_ports_in_verilator(tmp_path, shell, verilator):
    exe, env = verilator
    plan, sources, incdirs = _elaboration_inputs(tmp_path, shell)
    cmd = [exe, "--lint-only", "-Wall", "--top-module", "cl_vta", "-Wno-fatal",
           *(f"-I{d}" for d in incdirs), *(str(p) for _, p in sources)]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    # what this run is for: the top, cl_ports.vh and the wrapper agree port by port (names
    # by .*, widths), and every output of the custom logic is driven -- but for F1's DIMM
    # resets, which AWS's unused-DDR template leaves open too
    found: dict[str, set[str]] = {}
    for m in re.finditer(r"%Warning-(\w+): [^\n]*?'(\w+)'", out.stderr):
        found.setdefault(m.group(1), set()).add(m.group(2))
    for kind in ("WIDTH", "WIDTHEXPAND", "WIDTHTRUNC", "PINMISSING", "PINNOCONNECT",
                 "IMPLICIT", "MULTIDRIVEN"):
        assert kind not in found, (kind, found[kind])
    undriven = {n for n in found.get("UNDRIVEN", ()) if n in {p[2] for p in ports(shell)}}
    allowed = {f"cl_RST_DIMM_{x}_N" for x in "ABD"} if shell == "f1" else set()
    assert undriven == allowed, undriven


@pytest.mark.parametrize("shell", SHELLS)
def test_top_elaborates_with_the_shell_ports_in_yosys(tmp_path, shell):
    exe = needs.tool("yosys", "elaborates the design (Debian: apt-get install yosys)")
    plan, sources, incdirs = _elaboration_inputs(tmp_path, shell)
    inc = " ".join(f"-I{d}" for d in incdirs)
    lines = [f"read_verilog -defer {'-sv ' if sv else ''}{inc} {p}" for sv, p in sources]
    lines += ["hierarchy -check -top cl_vta", "proc", "flatten",
              # the register cl_pnr_user.xdc (F1) names: WRAPPER_INST/CL/VTA/cl/vled_q_reg*
              "select -assert-min 1 w:VTA.cl.vled_q %ci1 t:$dff %i"]
    script = tmp_path / "elab.ys"
    script.write_text("\n".join(lines) + "\n")
    out = subprocess.run([exe, "-q", "-s", str(script)], capture_output=True, text=True,
                         check=False)
    assert out.returncode == 0, (out.stdout + out.stderr)[-3000:]


def test_aws_sh_ddr_exception_hides_no_vta_path():
    """F2's cl_ddr_timing_aws.xdc (read for the whole CL) sets a false path to every cell
    named *rd_do_reg[*]: no register of the VTA design may be named so (Vivado names a
    register rd_do as rd_do_reg)."""
    for path in [*hdlgen.hdl_sources(), *aws_sources()]:
        assert not re.search(r"\brd_do\b", _text(path)), path

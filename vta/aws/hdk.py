"""``vta aws build``: VTA and its wrapper as a custom-logic folder of an aws-fpga HDK checkout.

The plan (:func:`plan_build`) is data -- folders copied from the HDK's own example,
files written, edits to copied scripts, the build command -- so ``--dry-run`` prints
exactly what :func:`execute` would do.

=========== =================================================================
F2          ``hdk/cl/examples/<cl>`` from the HDK's ``CL_TEMPLATE`` (its encrypt
            script copies everything in ``design/``); ``synth_<cl>.tcl`` reads
            our sources, sets their include folder and reads the DDR4 IP;
            build: ``./aws_build_dcp_from_cl.py -c <cl> --mode small_shell``
F1          ``hdk/cl/developer_designs/<cl>`` from ``cl_hello_world``'s build
            folder, ``cl_hello_world`` renamed in its scripts, the file list of
            ``encrypt.tcl`` replaced; build: ``./aws_build_dcp_from_cl.sh
            -clock_recipe_a <A0|A1|A2> -foreground``
=========== =================================================================

``design/`` receives ``hdl/*.v``, ``hdl/aws/*.v``, the generated headers,
``cl_id_defines.vh`` (the PCI IDs the build scripts copy into the AFI's manifest)
and a top-level module named after the CL (``<cl>.sv``): it includes the shell's
``cl_ports.vh``, instantiates AWS's ``sh_ddr`` (F1: DDR A, B, D absent, through
AWS's ``unused_ddr_a_b_d_template.inc``; F2: the DDR4 controller present) and
connects ``vta_aws_f1`` / ``vta_aws_f2`` by port name.  ``build/constraints/``
receives the user constraint files the HDK's scripts read (:data:`XDC`).

The templates' synthesis scripts read the design with ``glob .../*.?v``, which
matches ``x.sv`` and not ``x.v``: the generated script reads every ``*.v`` (as
Verilog) and every ``*.sv`` (as SystemVerilog) of the encrypted-source folder
once, and names that folder as the include folder.  Written against the HDK
commits named in docs/aws.md; not run here (no Vivado): tests/aws/test_aws_hdk.py
runs the scripts' file handling in ``tclsh`` with Vivado's commands stubbed.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from ..config import Config
from ..errors import VTAError
from . import regs as clregs

#: Markers around the developer's file list in the F1 example's encrypt.tcl.
F1_ENCRYPT_BEGIN = "#---- Developr would replace this section with design files ----"
F1_ENCRYPT_END = "#---- End of section replaced by Developr ---"
F1_TEMPLATE = "cl_hello_world"
F2_TEMPLATE = "CL_TEMPLATE"
#: DDR4 IP the F2 build reads for sh_ddr (as AWS's cl_mem_perf example does).
F2_DDR_IP = ("cl_ddr4_32g", "cl_ddr4_32g_ap", "cl_ddr4", "cl_ddr4_64g_ap")
CLOCK_RECIPES = ("A0", "A1", "A2")
#: The templates' line that reads the design, and the folder it reads (encrypted sources).
TEMPLATE_READ = {"f1": "read_verilog -sv [glob $ENC_SRC_DIR/*.?v]",
                 "f2": "read_verilog -sv [glob ${src_post_enc_dir}/*.?v]"}
SOURCE_DIR = {"f1": "$ENC_SRC_DIR", "f2": "${src_post_enc_dir}"}
#: The build scripts: what they are called with, and the manifest they write.
BUILD_SCRIPT = {"f1": "aws_build_dcp_from_cl.sh", "f2": "aws_build_dcp_from_cl.py"}
#: Clock recipes the F2 script records when not given (it refuses recipes without
#: ``--aws_clk_gen``; clk_main_a0 is then the shell's 250 MHz) and F1's B/C defaults.
F2_RECIPES = {"clock_recipe_a": "A1", "clock_recipe_b": "B2", "clock_recipe_c": "C0",
              "clock_recipe_hbm": "H2"}
F1_RECIPES_BC = {"clock_recipe_b": "B0", "clock_recipe_c": "C0"}


class HdkError(VTAError):
    """The HDK checkout or the build request is not usable."""


@dataclass
class BuildPlan:
    """Everything ``vta aws build`` does, in order."""

    shell: str
    cl_name: str
    hdk: Path
    cl_dir: Path
    copy_tree: tuple[Path, Path] | None = None
    remove: list[Path] = field(default_factory=list)
    files: dict[Path, str] = field(default_factory=dict)
    copies: list[tuple[Path, Path]] = field(default_factory=list)
    renames: list[tuple[Path, Path, str, str]] = field(default_factory=list)
    command: list[str] = field(default_factory=list)
    #: manifest fields the HDK's build script will write, as far as known before the build
    manifest: dict[str, str] = field(default_factory=dict)

    def describe(self) -> str:
        """The plan as text (what ``--dry-run`` prints)."""
        out = [f"# vta aws build: {self.shell} custom logic {self.cl_name} in {self.cl_dir}"]
        if self.copy_tree:
            out.append(f"copy folder {self.copy_tree[0]} -> {self.copy_tree[1]}")
        for path in self.remove:
            out.append(f"remove {path}")
        for src, dst, old, new in self.renames:
            out.append(f"rewrite {src} -> {dst} (every {old!r} -> {new!r})")
        for src, dst in self.copies:
            out.append(f"copy {src} -> {dst}")
        for path, text in self.files.items():
            out.append(f"write {path} ({len(text.splitlines())} lines)")
        out.append("run: " + " ".join(_quote(a) for a in self.command))
        out.append(f"manifest the build writes into the tarball ({BUILD_SCRIPT[self.shell]}):")
        out += [f"  {k}={v}" for k, v in self.manifest.items()]
        return "\n".join(out) + "\n"


def _quote(arg: str) -> str:
    return arg if arg and all(c.isalnum() or c in "-_./=:,+@" for c in arg) else repr(arg)


def _top_f1(cl: str, params: dict[str, int]) -> str:
    plist = ",\n    ".join(f".{k}({v})" for k, v in params.items())
    return f"""// Generated by `vta aws build` for the F1 shell; do not edit.
// The custom logic: AWS's sh_ddr (DDR A, B, D absent; DDR C is in the shell) and VTA.
module {cl} (
`include "cl_ports.vh"
);

// sh_ddr's reset (the name AWS's template uses)
logic rst_main_n_sync;
always_ff @(posedge clk_main_a0) rst_main_n_sync <= rst_main_n;

// sh_ddr with no controller, its AXI and stats interfaces tied off
`include "unused_ddr_a_b_d_template.inc"

// VTA, connected to the shell by port name (hdl/aws/vta_aws_f1.v)
vta_aws_f1 #(
    {plist},
    .LOG_MEM_BYTES({clregs.SHELLS["f1"].log_mem_bytes})
) VTA (.*);

endmodule
"""


_F2_DDR_AXI = (("awid", 16), ("awaddr", 64), ("awlen", 8), ("awsize", 3), ("awburst", 2),
               ("awvalid", 1), ("awready", 1), ("wdata", 512), ("wstrb", 64), ("wlast", 1),
               ("wvalid", 1), ("wready", 1), ("bid", 16), ("bresp", 2), ("bvalid", 1),
               ("bready", 1), ("arid", 16), ("araddr", 64), ("arlen", 8), ("arsize", 3),
               ("arburst", 2), ("arvalid", 1), ("arready", 1), ("rid", 16), ("rdata", 512),
               ("rresp", 2), ("rlast", 1), ("rvalid", 1), ("rready", 1))
_F2_DDR_PINS = ("CLK_DIMM_DP", "CLK_DIMM_DN", "M_ACT_N", "M_MA", "M_BA", "M_BG", "M_CKE", "M_ODT",
                "M_CS_N", "M_CLK_DN", "M_CLK_DP", "M_PAR", "M_DQ", "M_ECC", "M_DQS_DP",
                "M_DQS_DN")


def _top_f2(cl: str, params: dict[str, int]) -> str:
    plist = ",\n    ".join(f".{k}({v})" for k, v in params.items())
    wires = "\n".join(f"logic [{w - 1}:0] cl_sh_ddr_axi_{n};" if w > 1
                      else f"logic cl_sh_ddr_axi_{n};" for n, w in _F2_DDR_AXI)
    pins = ",\n    ".join(f".{p}({p})" for p in _F2_DDR_PINS)
    axi = ",\n    ".join(f".cl_sh_ddr_axi_{n}(cl_sh_ddr_axi_{n})" for n, _ in _F2_DDR_AXI)
    return f"""// Generated by `vta aws build` for the F2 Small Shell; do not edit.
// The custom logic: AWS's sh_ddr with the DDR4 controller present, and VTA.
module {cl} (
`include "cl_ports.vh"
);

logic rst_main_n_sync;
always_ff @(posedge clk_main_a0) rst_main_n_sync <= rst_main_n;

// card memory: the DDR4 DIMM through sh_ddr's AXI4 port
{wires}
logic sh_cl_ddr_is_ready;

sh_ddr #(.DDR_PRESENT(1)) SH_DDR (
    .clk(clk_main_a0),
    .rst_n(rst_main_n_sync),
    .stat_clk(clk_main_a0),
    .stat_rst_n(rst_main_n_sync),
    {pins},
    .cl_RST_DIMM_N(RST_DIMM_N),
    {axi},
    .cl_sh_ddr_axi_awuser(1'b0),
    .cl_sh_ddr_axi_aruser(1'b0),
    .sh_ddr_stat_bus_addr(sh_cl_ddr_stat_addr),
    .sh_ddr_stat_bus_wdata(sh_cl_ddr_stat_wdata),
    .sh_ddr_stat_bus_wr(sh_cl_ddr_stat_wr),
    .sh_ddr_stat_bus_rd(sh_cl_ddr_stat_rd),
    .sh_ddr_stat_bus_ack(cl_sh_ddr_stat_ack),
    .sh_ddr_stat_bus_rdata(cl_sh_ddr_stat_rdata),
    .ddr_sh_stat_int(cl_sh_ddr_stat_int),
    .sh_cl_ddr_is_ready(sh_cl_ddr_is_ready)
);

// VTA, connected to the shell and to sh_ddr by port name (hdl/aws/vta_aws_f2.v)
vta_aws_f2 #(
    {plist},
    .LOG_MEM_BYTES({clregs.SHELLS["f2"].log_mem_bytes})
) VTA (.*);

endmodule
"""


def _synth(template_text: str, shell: str, template: str) -> str:
    """``synth_<cl>.tcl`` from the template's: every source once, the include folder; F2
    also reads the DDR4 IP sh_ddr needs."""
    read, src = TEMPLATE_READ[shell], SOURCE_DIR[shell]
    if read not in template_text:
        raise HdkError(f"the HDK's {template} synthesis script no longer contains {read!r}; "
                       "this version of vta aws build does not know its layout")
    ours = ["# VTA: every Verilog file (*.v) and the SystemVerilog top (*.sv) once each",
            "# (the template's *.?v matches only *.sv); the headers lie beside them",
            f"set_property include_dirs {src} [current_fileset]",
            f"read_verilog [glob {src}/*.v]",
            f"read_verilog -sv [glob {src}/*.sv]"]
    if shell == "f2":
        ip = " \\\n".join(f"  ${{HDK_IP_SRC_DIR}}/{n}/{n}.xci" for n in F2_DDR_IP)
        ours += ["# VTA: sh_ddr's DDR4 controller", f"read_ip [ list \\\n{ip}\n]"]
    return template_text.replace(read, "\n".join(ours), 1)


def _f1_encrypt(template_text: str, files: list[str]) -> str:
    """encrypt.tcl with the developer section listing VTA's files (and sh_ddr's template)."""
    if F1_ENCRYPT_BEGIN not in template_text or F1_ENCRYPT_END not in template_text:
        raise HdkError(f"the HDK's {F1_TEMPLATE} encrypt.tcl has no developer section markers; "
                       "this version of vta aws build does not know its layout")
    head, rest = template_text.split(F1_ENCRYPT_BEGIN, 1)
    _, tail = rest.split(F1_ENCRYPT_END, 1)
    lines = [f"file copy -force $CL_DIR/design/{name} $TARGET_DIR" for name in files]
    lines.append("file copy -force $UNUSED_TEMPLATES_DIR/unused_ddr_a_b_d_template.inc "
                 "$TARGET_DIR")
    return head + F1_ENCRYPT_BEGIN + "\n" + "\n".join(lines) + "\n" + F1_ENCRYPT_END + tail


def manifest_ids(text: str, shell: str) -> dict[str, str]:
    """The PCI IDs ``shell``'s build script takes from a ``cl_id_defines.vh``, as it does.

    F1 (``aws_build_dcp_from_cl.sh``): of the lines not starting with ``//`` those
    naming ``CL_SH_ID0`` (``CL_SH_ID1``) and ``define``, underscores deleted, the text
    between the first and second ``h``; its first four characters are the device
    (subsystem) ID, the next four the vendor (subsystem vendor) ID.  F2
    (``aws_build_dcp_from_cl.py``): each line where ``\\s*`define\\s*CL_SH_ID0`` is
    found, its third word with the characters ``3``, ``2``, ``'`` and ``h`` stripped
    from the left, split at ``_``.  (A value starting with 2 or 3 loses digits there:
    :func:`render_id_defines` is checked against this.)
    """
    names = (("pci_device_id", "pci_vendor_id"), ("pci_subsystem_id", "pci_subsystem_vendor_id"))
    out: dict[str, str] = {}
    for k, (hi, lo) in enumerate(names):
        key = f"CL_SH_ID{k}"
        if shell == "f1":
            found = [ln.replace("_", "").split("h")[1] if ln.count("h") else ""
                     for ln in text.splitlines()
                     if not ln.startswith("//") and key in ln and "define" in ln]
            value = "\n".join(found)
            out[hi], out[lo] = "0x" + value[0:4], "0x" + value[4:8]
        else:
            for ln in text.splitlines():
                if re.search(r"\s*`define\s*" + key, ln):
                    parts = ln.split()[2].lstrip("32'h").split("_")
                    out[hi], out[lo] = "0x" + parts[0], "0x" + parts[1]
    return out


def render_id_defines(shell: str) -> str:
    """``design/cl_id_defines.vh`` for ``shell``, checked to read back as the wrapper's IDs."""
    text = clregs.render_id_defines(shell)
    id0, id1 = clregs.pci_ids(shell)
    want = {"pci_device_id": id0 >> 16, "pci_vendor_id": id0 & 0xFFFF,
            "pci_subsystem_id": id1 >> 16, "pci_subsystem_vendor_id": id1 & 0xFFFF}
    got = manifest_ids(text, shell)
    for key, value in want.items():
        if not value or got.get(key, "").lower() != f"0x{value:04x}":
            raise HdkError(f"cl_id_defines.vh would give {key}={got.get(key)!r} in the "
                           f"manifest, not 0x{value:04X} (a zero ID, or a value the build "
                           "script misreads)")
    return text


#: User constraint files the HDK's scripts read (build/constraints/), per shell.  Every
#: port of the custom logic is synchronous to clk_main_a0, rst_main_n included (the
#: shells' interface specifications), and the shell's clock constraints come with the
#: HDK: there is no reset synchronizer and no clock crossing to except.
_XDC_HEAD = ("# Written by `vta aws build` for the VTA custom logic (docs/aws.md, \"Timing "
             "constraints\").\n")
XDC = {
    "f1": {
        "cl_synth_user.xdc": _XDC_HEAD + """\
# Synthesis: nothing to add.  Every shell port is synchronous to clk_main_a0 (rst_main_n
# too), so there is no reset synchronizer and no clock crossing; the clock itself is
# constrained by the HDK's cl_clocks_aws.xdc.  The reset tree (hdl/aws/vta_aws_cl.v, one
# register per block) survives synthesis through the build's -keep_equivalent_registers.
""",
        "cl_pnr_user.xdc": _XDC_HEAD + """\
# The shell samples the virtual LEDs (cl_sh_status_vled) in a clock domain of its own, as
# AWS's cl_hello_world constrains it: the one exception, from the LED register of
# vta_aws_cl (instance VTA/cl of the top) to the shell.  Floorplan: none (docs/aws.md).
set_false_path -from [get_cells WRAPPER_INST/CL/VTA/cl/vled_q_reg*]
""",
    },
    "f2": {
        "cl_synth_user.xdc": _XDC_HEAD + """\
# Synthesis: nothing to add (see cl_timing_user.xdc).  The reset tree (hdl/aws/
# vta_aws_cl.v, one register per block) survives synthesis through the build's
# -keep_equivalent_registers.
""",
        "cl_timing_user.xdc": _XDC_HEAD + """\
# No exceptions.  Every port of the custom logic is synchronous to clk_main_a0 (250 MHz),
# rst_main_n included: no reset synchronizer, no clock crossing; clk_hbm_ref is unused.
# sh_ddr's own exceptions come with the HDK (cl_ddr_timing_aws.xdc, read with -ref for the
# CL): its false path ends at cells named *rd_do_reg[*], a name the VTA design never
# uses, so it hides no VTA path.
""",
        "small_shell_cl_pnr_user.xdc": _XDC_HEAD + """\
# Floorplan: none -- the design takes at most a seventh of any resource the Small Shell
# leaves and the build's SSI_SpreadLogic_high placement spreads it; docs/aws.md
# ("Timing constraints and floorplan") says which pblocks to try if the timing report
# shows SLR crossings on failing paths.
""",
    },
}


def _version_file(path: Path, key: str) -> str:
    """The value of ``key=`` (``key`` followed by = or spaces) in an HDK version file."""
    if path.is_file():
        for line in path.read_text().splitlines():
            if line.startswith(key):
                return line[len(key):].lstrip("= \t").strip()
    return f"(read by the build from {path})"


def _manifest(shell: str, hdk: Path, ids_text: str, clock_recipe: str) -> dict[str, str]:
    """The manifest fields the build script writes, in its order, as far as known now."""
    shell_version = hdk / "hdk" / "common" / "shell_stable" / "shell_version.txt"
    later = "(computed by the build)"
    ids = manifest_ids(ids_text, shell)
    if shell == "f1":
        return {"manifest_format_version": "2",
                **{k: ids[k] for k in ("pci_vendor_id", "pci_device_id", "pci_subsystem_id",
                                       "pci_subsystem_vendor_id")},
                "dcp_hash": later,
                "shell_version": _version_file(shell_version, "SHELL_VERSION"),
                "dcp_file_name": later,
                "hdk_version": _version_file(hdk / "hdk" / "hdk_version.txt", "HDK_VERSION"),
                "tool_version": later, "date": later, "clock_recipe_a": clock_recipe,
                **F1_RECIPES_BC}
    return {**ids, "manifest_format_version": "2", "dcp_hash": later,
            "shell_version": _version_file(shell_version, "small_shell"),
            "hdk_version": _version_file(hdk / "release_version.txt", "RELEASE_VERSION"),
            "tool_version": later, "date": later, **F2_RECIPES, "dcp_file_name": later}


def plan_build(shell: str, hdk: Path | str, cfg: Config, *, cl_name: str = "cl_vta",
               clock_recipe: str = "A0", force: bool = False) -> BuildPlan:
    """The plan that builds ``cfg`` as ``shell`` custom logic ``cl_name`` in checkout ``hdk``."""
    from ..backends.aws_sim import aws_sources
    from ..hdltools import hdlgen

    if shell not in clregs.SHELLS:
        raise HdkError(f"shell must be one of {', '.join(clregs.SHELLS)}, not {shell!r}")
    if not cl_name.isidentifier():
        raise HdkError(f"the CL name must be a Verilog identifier, not {cl_name!r}")
    if clock_recipe not in CLOCK_RECIPES:
        raise HdkError(f"clock recipe must be one of {', '.join(CLOCK_RECIPES)}, not "
                       f"{clock_recipe!r}")
    if shell == "f2" and clock_recipe != "A0":
        raise HdkError("the F2 build runs VTA on clk_main_a0 (250 MHz): --clock-recipe applies "
                       "to F1 only")
    hdk = Path(hdk).expanduser().resolve()
    if not (hdk / "hdk_setup.sh").is_file():
        raise HdkError(f"{hdk} is not an aws-fpga checkout (no hdk_setup.sh)")
    template = F1_TEMPLATE if shell == "f1" else F2_TEMPLATE
    examples = hdk / "hdk" / "cl" / "examples"
    if not (examples / template).is_dir():
        raise HdkError(f"{examples / template} does not exist: {hdk} is not the aws-fpga "
                       f"branch for {shell.upper()} ({'master' if shell == 'f1' else 'f2'})")
    parent = hdk / "hdk" / "cl" / ("developer_designs" if shell == "f1" else "examples")
    cl_dir = parent / cl_name
    if cl_dir.exists() and not force:
        raise HdkError(f"{cl_dir} exists; pass --force to replace it")

    params = {k: v for k, v in hdlgen.top_parameters(cfg).items()
              if k not in ("MEM_SIZE", "ADDR_WIDTH", "ID_WIDTH")}
    plan = BuildPlan(shell, cl_name, hdk, cl_dir)
    if cl_dir.exists():
        plan.remove.append(cl_dir)
    design = cl_dir / "design"
    scripts = cl_dir / "build" / "scripts"
    sources = [*hdlgen.hdl_sources(), *aws_sources()]
    plan.copies += [(src, design / src.name) for src in sources]
    headers = {**hdlgen.render_headers(cfg), "vta_aws_regs.vh": clregs.render_verilog()}
    for name, text in headers.items():
        plan.files[design / name] = text
    top = _top_f1(cl_name, params) if shell == "f1" else _top_f2(cl_name, params)
    plan.files[design / f"{cl_name}.sv"] = top
    ids = render_id_defines(shell)
    plan.files[design / "cl_id_defines.vh"] = ids
    for name, text in XDC[shell].items():
        plan.files[cl_dir / "build" / "constraints" / name] = text
    plan.manifest = _manifest(shell, hdk, ids, clock_recipe)
    setup = f"cd {_quote(str(hdk))} && source hdk_setup.sh && export CL_DIR={_quote(str(cl_dir))}"
    if shell == "f2":
        plan.copy_tree = (examples / template, cl_dir)
        plan.remove += [cl_dir / "design", cl_dir / "verif",
                        scripts / f"synth_{template}.tcl"]
        synth = (examples / template / "build" / "scripts" / f"synth_{template}.tcl").read_text()
        plan.files[scripts / f"synth_{cl_name}.tcl"] = _synth(synth, shell, template)
        build = f"./aws_build_dcp_from_cl.py -c {cl_name} --mode small_shell"
    else:
        plan.copy_tree = (examples / template / "build", cl_dir / "build")
        synth_name = f"synth_{template}.tcl"
        for path in sorted((examples / template / "build" / "scripts").iterdir()):
            if path.suffix in (".tcl", ".sh") and path.name not in ("encrypt.tcl", synth_name):
                dst = scripts / path.name.replace(template, cl_name)
                plan.renames.append((scripts / path.name, dst, template, cl_name))
        synth = (examples / template / "build" / "scripts" / synth_name).read_text()
        plan.remove.append(scripts / synth_name)
        plan.files[scripts / f"synth_{cl_name}.tcl"] = _synth(synth.replace(template, cl_name),
                                                              shell, template)
        encrypt = (examples / template / "build" / "scripts" / "encrypt.tcl").read_text()
        names = ([p.name for p in sources] + list(headers)
                 + ["cl_id_defines.vh", f"{cl_name}.sv"])
        plan.files[scripts / "encrypt.tcl"] = _f1_encrypt(encrypt, names)
        build = f"./aws_build_dcp_from_cl.sh -clock_recipe_a {clock_recipe} -foreground"
    plan.command = ["bash", "-c", f"{setup} && cd {_quote(str(scripts))} && {build}"]
    return plan


def execute(plan: BuildPlan, run: bool = True) -> int:
    """Carry out ``plan``; with ``run`` start the build command (its exit status is returned)."""
    import subprocess

    for path in plan.remove:
        if path == plan.cl_dir and path.exists():
            shutil.rmtree(path)
    if plan.copy_tree is not None:
        src, dst = plan.copy_tree
        shutil.copytree(src, dst, symlinks=True)
    for path in plan.remove:
        if path != plan.cl_dir and path.exists():
            shutil.rmtree(path) if path.is_dir() and not path.is_symlink() else path.unlink()
    for src, dst, old, new in plan.renames:
        text = src.read_text()
        src.unlink()
        dst.write_text(text.replace(old, new))
        dst.chmod(0o755 if dst.suffix == ".sh" else 0o644)
    for src, dst in plan.copies:
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dst)
    for path, text in plan.files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.is_symlink():
            path.unlink()
        path.write_text(text)
    if not run:
        return 0
    return subprocess.run(plan.command, check=False).returncode

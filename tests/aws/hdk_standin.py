"""A stand-in aws-fpga checkout for `vta aws build`, one per branch (F1: master, F2: f2).

It holds what the build reads and what the HDK's scripts use from it, laid out as in
aws/aws-fpga at the commits docs/aws.md names: the CL templates' synthesis, encrypt and
build scripts (stand-ins written for these tests: the lines `vta aws build` rewrites are
AWS's, the rest does what AWS's scripts do with files -- copy the design into the
encrypted-source folder, read it, read the shell's files and the user constraints -- and
records how the build script was called), the shell's ``cl_ports.vh`` (its port list:
tests/aws/data/cl_ports_*.txt, facts from aws-fpga), a blackbox ``sh_ddr`` with the ports
the tops connect (AWS's is encrypted), and F1's ``unused_ddr_a_b_d_template.inc`` role
(sh_ddr without DDR A, B, D; the stats interfaces answered).
"""

from __future__ import annotations

import stat
from pathlib import Path

from vta.aws import hdk as hdkmod

DATA = Path(__file__).parent / "data"
#: The templates' lines `vta aws build` replaces (AWS's, verbatim).
READ_LINE = hdkmod.TEMPLATE_READ


def ports(shell: str) -> list[tuple[str, str, str]]:
    """The shell's custom-logic ports: (direction, width, name), in cl_ports.vh's order."""
    out = []
    for line in (DATA / f"cl_ports_{shell}.txt").read_text().splitlines():
        if line and not line.startswith("#"):
            direction, width, name = line.split()
            out.append((direction, width, name))
    return out


def _range(width: str) -> str:
    if width.startswith("["):
        return width + " "
    return "" if width == "1" else f"[{int(width) - 1}:0] "


def cl_ports_vh(shell: str) -> str:
    """``cl_ports.vh``: the port declarations the CL top includes inside ``module x (...)``."""
    decl = []
    for direction, width, name in ports(shell):
        kind = "wire" if direction == "inout" else "logic"
        decl.append(f"  {direction} {kind} {_range(width)}{name}")
    return "// stand-in: the shell's custom-logic ports (tests/aws/data)\n" + ",\n".join(decl) \
        + "\n"


def sh_ddr_sv(shell: str) -> str:
    """A blackbox ``sh_ddr`` with the ports the generated top (F2) or the unused-DDR
    template (F1) connects."""
    pin = {name: (direction, width) for direction, width, name in ports(shell)}

    def pins(names):  # DIMM pins: sh_ddr drives / takes them as the CL's ports do
        return [f"{pin[p][0]} wire {_range(pin[p][1])}{p}" for p in names]

    if shell == "f1":
        params = "parameter DDR_A_PRESENT = 1, parameter DDR_B_PRESENT = 1, " \
                 "parameter DDR_D_PRESENT = 1"
        decl = ["input wire clk", "input wire rst_n",
                *pins([n for n in pin if n.startswith(("CLK_300M_DIMM", "M_A_", "M_B_",
                                                       "M_D_"))])]
    else:
        params = "parameter DDR_PRESENT = 1"
        decl = ["input wire clk", "input wire rst_n", "input wire stat_clk",
                "input wire stat_rst_n", *pins(hdkmod._F2_DDR_PINS)]
        decl.append("output wire cl_RST_DIMM_N")
        to_slave = ("aw", "w", "ar", "bready", "rready")
        for n, w in hdkmod._F2_DDR_AXI:
            io = "input" if n.startswith(to_slave) and not n.endswith("ready") or \
                n in ("bready", "rready") else "output"
            decl.append(f"{io} wire {_range(str(w))}cl_sh_ddr_axi_{n}")
        decl += ["input wire cl_sh_ddr_axi_awuser", "input wire cl_sh_ddr_axi_aruser",
                 "input wire [7:0] sh_ddr_stat_bus_addr", "input wire [31:0] sh_ddr_stat_bus_wdata",
                 "input wire sh_ddr_stat_bus_wr", "input wire sh_ddr_stat_bus_rd",
                 "output wire sh_ddr_stat_bus_ack", "output wire [31:0] sh_ddr_stat_bus_rdata",
                 "output wire [7:0] ddr_sh_stat_int", "output wire sh_cl_ddr_is_ready"]
    outs = "".join(f"assign {d.split()[-1]} = '0;\n" for d in decl if d.startswith("output"))
    return (f"// stand-in: AWS's sh_ddr (encrypted in the HDK): its ports, outputs at 0\n"
            f"(* blackbox *)\nmodule sh_ddr #({params}) (\n  " + ",\n  ".join(decl)
            + f"\n);\n{outs}endmodule\n")


def unused_ddr_abd_inc() -> str:
    """F1's ``unused_ddr_a_b_d_template.inc`` role: sh_ddr with DDR A, B, D absent, its
    DIMM pins on the CL's ports, and the three stats interfaces answered (ack high)."""
    pins = [n for _, _, n in ports("f1") if n.startswith(("CLK_300M_DIMM", "M_A_", "M_B_",
                                                           "M_D_"))]
    conns = ",\n  ".join(f".{p}({p})" for p in pins)
    stats = "".join(f"assign ddr_sh_stat_ack{i} = 1'b1;\nassign ddr_sh_stat_rdata{i} = 32'd0;\n"
                    f"assign ddr_sh_stat_int{i} = 8'd0;\n" for i in range(3))
    return ("// stand-in for AWS's unused_ddr_a_b_d_template.inc\n"
            "sh_ddr #(.DDR_A_PRESENT(0), .DDR_B_PRESENT(0), .DDR_D_PRESENT(0)) SH_DDR (\n"
            f"  .clk(clk_main_a0), .rst_n(rst_main_n_sync),\n  {conns}\n);\n" + stats)


def _write(path: Path, text: str, executable: bool = False) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    if executable:
        path.chmod(path.stat().st_mode | stat.S_IXUSR)


# ------------------------------------------------------------------ the templates' scripts
_F1_ENCRYPT = f"""\
# stand-in: cl_hello_world's encrypt.tcl (copies the developer's files, then encrypts)
set HDK_SHELL_DIR $::env(HDK_SHELL_DIR)
set HDK_SHELL_DESIGN_DIR $::env(HDK_SHELL_DESIGN_DIR)
set CL_DIR $::env(CL_DIR)
set TARGET_DIR $CL_DIR/build/src_post_encryption
set UNUSED_TEMPLATES_DIR $HDK_SHELL_DESIGN_DIR/interfaces
file mkdir $TARGET_DIR
if {{[llength [glob -nocomplain -dir $TARGET_DIR *]] != 0}} {{
  eval file delete -force [glob $TARGET_DIR/*]
}}
{hdkmod.F1_ENCRYPT_BEGIN}
file copy -force $CL_DIR/design/cl_hello_world.sv $TARGET_DIR
{hdkmod.F1_ENCRYPT_END}
encrypt -k $HDK_SHELL_DIR/build/scripts/vivado_keyfile_2017_4.txt -lang verilog \
  [glob -nocomplain -- $TARGET_DIR/*.{{v,sv}}] [glob -nocomplain -- $TARGET_DIR/*.vh]
"""

_F1_SYNTH = f"""\
# stand-in: synth_cl_hello_world.tcl (sourced by create_dcp_from_cl.tcl from build/scripts)
set CL_MODULE $CL_MODULE
create_project -in_memory -part [DEVICE_TYPE] -force
source $HDK_SHELL_DIR/build/scripts/aws_gen_clk_constraints.tcl
set ENC_SRC_DIR $CL_DIR/build/src_post_encryption
#---- User would replace this section -----
{READ_LINE["f1"]}
#---- End of section replaced by User ----
read_verilog -sv [ list \\
  $HDK_SHELL_DESIGN_DIR/sh_ddr/synth/sh_ddr.sv \\
  $HDK_SHELL_DESIGN_DIR/interfaces/cl_ports.vh
]
read_xdc [ list \\
   $CL_DIR/build/constraints/cl_clocks_aws.xdc \\
   $HDK_SHELL_DIR/build/constraints/cl_synth_aws.xdc \\
   $CL_DIR/build/constraints/cl_synth_user.xdc
]
eval [concat synth_design -top $CL_MODULE $VDEFINES -mode out_of_context $synth_options]
"""

_F2_HEADER = """\
# stand-in: shell_stable/build/scripts/synth_cl_header.tcl
create_project -in_memory -part $DEVICE_TYPE -force
read_verilog -sv [ list \\
  ${HDK_SHELL_DESIGN_DIR}/sh_ddr/synth/sh_ddr.sv \\
  ${HDK_SHELL_DESIGN_DIR}/interfaces/cl_ports.vh
]
read_xdc ${CL_DIR}/build/constraints/generated_cl_clocks_aws.xdc
read_xdc -ref ${CL} ${HDK_SHELL_DIR}/build/constraints/cl_ddr_timing_aws.xdc
"""

_F2_ENCRYPT = """\
# stand-in: shell_stable/build/scripts/encrypt.tcl (the templates' encrypt.tcl links here)
if {[llength [glob -nocomplain -dir ${src_post_enc_dir} *]] != 0} {
  eval file delete -force [glob ${src_post_enc_dir}/*]
}
foreach f [glob -directory ${HDK_SHELL_DESIGN_DIR}/interfaces *.inc] {
  file copy -force $f ${src_post_enc_dir}/
}
foreach f [glob -directory ${design_dir} *.{v,sv,vh,svh,inc}] {
  file copy -force $f ${src_post_enc_dir}/
}
encrypt -lang verilog [glob -nocomplain -- ${src_post_enc_dir}/*.{v,sv,vh,inc}]
"""

_F2_SYNTH = f"""\
# stand-in: CL_TEMPLATE's synth_CL_TEMPLATE.tcl (sourced by build_all.tcl)
source ${{HDK_SHELL_DIR}}/build/scripts/synth_cl_header.tcl
#---- User would replace this section -----
{READ_LINE["f2"]}
#---- End of section replaced by User ----
read_xdc [ list \\
  ${{constraints_dir}}/cl_synth_user.xdc \\
  ${{constraints_dir}}/cl_timing_user.xdc
]
synth_design -mode out_of_context -top ${{CL}} -part ${{DEVICE_TYPE}}
"""


def fake_hdk(root: Path, shell: str = "f2") -> Path:
    """An aws-fpga checkout of the ``shell``'s branch with what `vta aws build` and the
    HDK's file handling use; the build scripts record how they were called."""
    root.mkdir(parents=True)
    _write(root / "hdk_setup.sh", "export HDK_SETUP_SOURCED=1\n")
    common = root / "hdk" / "common"
    if shell == "f1":
        shell_dir = common / "shell_v04261818"
        (common / "shell_stable").parent.mkdir(parents=True, exist_ok=True)
        _write(shell_dir / "shell_version.txt", "SHELL_VERSION=0x04261818\n")
        (common / "shell_stable").symlink_to("shell_v04261818")
        _write(root / "hdk" / "hdk_version.txt", "HDK_VERSION=1.4.standin\n")
        _write(shell_dir / "design" / "interfaces" / "unused_ddr_a_b_d_template.inc",
               unused_ddr_abd_inc())
        _write(shell_dir / "build" / "scripts" / "aws_gen_clk_constraints.tcl", "# clocks\n")
        t1 = root / "hdk" / "cl" / "examples" / "cl_hello_world"
        _write(t1 / "design" / "cl_hello_world.sv", "module cl_hello_world; endmodule\n")
        scripts = t1 / "build" / "scripts"
        _write(scripts / "encrypt.tcl", _F1_ENCRYPT)
        _write(scripts / "synth_cl_hello_world.tcl", _F1_SYNTH)
        _write(scripts / "create_dcp_from_cl.tcl", "set CL_MODULE cl_hello_world\n")
        _write(scripts / "aws_build_dcp_from_cl.sh",
               "#!/bin/sh\necho cl_hello_world \"$@\" > ../../called.txt\n", executable=True)
        _write(t1 / "build" / "constraints" / "cl_synth_user.xdc", "# hello world\n")
        _write(t1 / "build" / "constraints" / "cl_pnr_user.xdc", "# hello world\n")
        (root / "hdk" / "cl" / "developer_designs").mkdir(parents=True)
    else:
        shell_dir = common / "shell_stable"
        _write(shell_dir / "shell_version.txt", "small_shell=0x10212415\n")
        _write(root / "release_version.txt", "RELEASE_VERSION=2.standin\n")
        _write(shell_dir / "design" / "interfaces" / "unused_example_template.inc", "// inc\n")
        _write(shell_dir / "build" / "scripts" / "synth_cl_header.tcl", _F2_HEADER)
        _write(shell_dir / "build" / "scripts" / "encrypt.tcl", _F2_ENCRYPT)
        t2 = root / "hdk" / "cl" / "examples" / "CL_TEMPLATE"
        _write(t2 / "design" / "CL_TEMPLATE.sv", "module CL_TEMPLATE; endmodule\n")
        _write(t2 / "verif" / "README", "tests\n")
        for name in ("cl_synth_user.xdc", "cl_timing_user.xdc", "small_shell_cl_pnr_user.xdc"):
            _write(t2 / "build" / "constraints" / name, "# template\n")
        scripts = t2 / "build" / "scripts"
        _write(scripts / "synth_CL_TEMPLATE.tcl", _F2_SYNTH)
        (scripts / "encrypt.tcl").symlink_to(
            "../../../../../common/shell_stable/build/scripts/encrypt.tcl")
        _write(scripts / "aws_build_dcp_from_cl.py",
               "#!/bin/sh\necho \"$@|$CL_DIR|$HDK_SETUP_SOURCED|$(pwd)\" > ../../called.txt\n",
               executable=True)
    interfaces = shell_dir / "design" / "interfaces"
    _write(interfaces / "cl_ports.vh", cl_ports_vh(shell))
    _write(shell_dir / "design" / "sh_ddr" / "synth" / "sh_ddr.sv", sh_ddr_sv(shell))
    return root

"""Lint: the AWS wrappers are clean under ``verilator --lint-only -Wall`` and ``iverilog -Wall``.

Linted as each shell's top (vta_aws_f1, vta_aws_f2) for a 64-bit VTA bus (the
upsizer's narrow path) and the 512-bit ``aws`` preset (its pass-through path).
"""

from __future__ import annotations

import subprocess

import needs
import pytest

import vta
from vta.aws.regs import SHELLS
from vta.backends.aws_sim import aws_sources, write_aws_header
from vta.hdltools import hdlgen

CASES = [(shell.module, preset) for shell in SHELLS.values() for preset in ("tiny", "aws")]


def _setup(preset):
    cfg = vta.Config.load(preset)
    params = {k: v for k, v in hdlgen.top_parameters(cfg).items()
              if k not in ("MEM_SIZE", "ADDR_WIDTH", "ID_WIDTH")}
    hdr = hdlgen.header_dir(cfg)
    write_aws_header(hdr)
    sources = [str(p) for p in [*hdlgen.hdl_sources(), *aws_sources()]]
    return hdr, params, sources


@pytest.mark.sim
@pytest.mark.parametrize("top,preset", CASES)
def test_verilator_lint(top, preset, verilator):
    exe, env = verilator
    hdr, params, sources = _setup(preset)
    cmd = [exe, "--lint-only", "-Wall", f"-I{hdr}", "--top-module", top,
           *(f"-G{k}={v}" for k, v in params.items()), *sources]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    assert out.returncode == 0 and "%Warning" not in out.stderr, out.stderr


@pytest.mark.sim
@pytest.mark.parametrize("top,preset", CASES)
def test_iverilog_lint(top, preset, tmp_path):
    exe = needs.tool("iverilog", "lints the design")
    hdr, params, sources = _setup(preset)
    cmd = [exe, "-g2005", "-Wall", f"-I{hdr}", "-s", top, "-o", str(tmp_path / "lint.vvp"),
           *(f"-P{top}.{k}={v}" for k, v in params.items()), *sources]
    out = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert out.returncode == 0 and not out.stderr.strip() and not out.stdout.strip(), (
        out.stdout + out.stderr)


def test_register_header_and_docs_match_python():
    """vta_aws_regs.vh and docs/aws.md carry vta.aws.regs's offsets and constants."""
    from pathlib import Path

    from vta.aws import regs

    docs = (Path(__file__).resolve().parents[2] / "docs" / "aws.md").read_text()
    assert regs.render_markdown() in docs

    text = regs.render_verilog()
    for reg in regs.REGISTERS:
        assert f"`define VTA_AWS_REG_{reg.name} 12'h{reg.offset:03X}" in text
    assert f"`define VTA_AWS_CL_MAGIC 32'h{regs.CL_MAGIC:08X}" in text
    assert f"`define VTA_AWS_CL_WINDOW 32'h{regs.CL_WINDOW:08X}" in text


def test_reset_tree_registers_each_block(tmp_path):
    """vta_aws_cl's reset: rst_n -> one root register -> one register per block (VTA, OCL
    decoder, upsizer, ID queue, crossbar, VTA's request slices), every block the same
    number of stages from rst_n.  Checked on the elaborated netlist (yosys, the blocks as
    black boxes)."""
    import json

    exe = needs.tool("yosys", "elaborates the design (Debian: apt-get install yosys)")
    hdr, params, sources = _setup("tiny")
    cl = [s for s in sources if s.endswith("vta_aws_cl.v")]
    blackboxes = [s for s in sources if s not in cl]
    netlist = tmp_path / "cl.json"
    script = tmp_path / "cl.ys"
    script.write_text("\n".join([
        f"read_verilog -lib -defer -DSYNTHESIS -I{hdr} {' '.join(blackboxes)}",
        f"read_verilog -defer -I{hdr} {cl[0]}",
        "hierarchy -top vta_aws_cl " + " ".join(f"-chparam {k} {v}" for k, v in params.items()),
        "proc", "opt_clean", f"write_json {netlist}", ""]))
    out = subprocess.run([exe, "-q", "-s", str(script)], capture_output=True, text=True,
                         check=False)
    assert out.returncode == 0, out.stdout + out.stderr
    mod = json.loads(netlist.read_text())["modules"]["vta_aws_cl"]
    rst_n = mod["ports"]["rst_n"]["bits"][0]
    flop = {}  # Q bit -> D bit of every flip-flop bit
    for cell in mod["cells"].values():
        if cell["type"] in ("$dff", "$sdff", "$dffe"):
            flop.update(zip(cell["connections"]["Q"], cell["connections"]["D"], strict=True))
    blocks = {name: cell["connections"]["rst"][0] for name, cell in mod["cells"].items()
              if "rst" in cell["connections"] and not name.startswith("$")}
    slices = {"ar_slice", "aw_slice", "w_slice"}  # VTA's request slices: one block
    assert set(blocks) == {"vta", "ocl", "upsize", "idq", "xbar", *slices}
    assert len({blocks[s] for s in slices}) == 1
    own = {name: bit for name, bit in blocks.items() if name not in slices}
    own["slices"] = blocks["ar_slice"]
    assert len(set(own.values())) == len(own), blocks  # a register bit of its own each
    roots = {flop.get(bit) for bit in blocks.values()}  # each fed by a flip-flop ...
    assert len(roots) == 1 and None not in roots, roots  # ... from the same root register
    root = roots.pop()
    assert root in flop  # the root is a flip-flop: two stages from rst_n for every block

    def cone(bit, seen):  # the combinational input cone of a bit (stops at flip-flops)
        if bit in seen or bit in flop or isinstance(bit, str):
            return seen
        seen.add(bit)
        for cell in mod["cells"].values():
            conns, dirs = cell["connections"], cell.get("port_directions", {})
            if cell["type"].startswith("$") and any(
                    bit in conns[p] for p in conns if dirs.get(p) == "output"):
                for p in conns:
                    if dirs.get(p) == "input":
                        for b in conns[p]:
                            cone(b, seen)
        return seen

    assert rst_n in cone(flop[root], set())

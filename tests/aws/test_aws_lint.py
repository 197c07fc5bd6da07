"""Lint: the AWS wrappers are clean under ``verilator --lint-only -Wall`` and ``iverilog -Wall``.

Linted as each shell's top (vta_aws_f1, vta_aws_f2) for a 64-bit VTA bus (the
upsizer's narrow path) and the 512-bit ``aws`` preset (its pass-through path).
"""

from __future__ import annotations

import os
import subprocess

import needs
import pytest

import vta
from vta.aws.regs import SHELLS
from vta.backends.aws_sim import aws_sources, write_aws_header
from vta.hdltools import hdlgen
from vta.hdltools.build import sim_env

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
def test_verilator_lint(top, preset):
    env = {**os.environ, **sim_env()}
    exe = needs.tool("verilator", "lints the design", path=env["PATH"])
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

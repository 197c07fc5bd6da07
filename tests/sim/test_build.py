"""vta.sim.build: quiet cached builds, and failed builds reported with their log."""

from __future__ import annotations

import pytest

from vta.sim import build as simbuild


def test_icarus_build_is_cached_and_a_broken_source_is_reported(tmp_path, monkeypatch, capfd):
    monkeypatch.setenv("VTA_CACHE_DIR", str(tmp_path / "cache"))
    good = tmp_path / "count.v"
    good.write_text("`timescale 1ns/1ps\nmodule count(input wire clk, output reg [3:0] q);\n"
                    "  always @(posedge clk) q <= q + 1;\nendmodule\n")
    first = simbuild.build("icarus", "count", [good])
    second = simbuild.build("icarus", "count", [good])
    assert not first.cached and second.cached and first.build_dir == second.build_dir
    assert first.build_dir.parent == tmp_path / "cache" / "sim"
    bad = tmp_path / "bad.v"
    bad.write_text("module bad(input wire clk); assign x = ; endmodule\n")
    capfd.readouterr()
    with pytest.raises(simbuild.SimulatorError, match=r"(?s)icarus build of bad failed .*"
                       r"bad\.v:1: syntax error.*full log: .*bad-icarus-.*\.log"):
        simbuild.build("icarus", "bad", [bad])
    out, err = capfd.readouterr()
    assert "syntax error" not in out + err  # the compiler's chatter went to the log

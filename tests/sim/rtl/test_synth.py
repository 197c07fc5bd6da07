"""Synthesis figures (vta.hdltools.synth, scripts/synth/synth.py) with yosys synth_xilinx.

The fast tests map small circuits (one yosys run, about 20 s) whose depth and
structure are known by construction and check what the analysis reports
about them: a registered 32-bit adder is one LUT level plus 32 bits of carry
(2 levels); logic on a block-RAM or DSP output is reported, a register
straight after either is not.  The slow test synthesises vta_top for the
default preset (about 10-20 minutes here).
"""

from __future__ import annotations

import shutil

import pytest

from vta.hdltools import synth

pytestmark = pytest.mark.skipif(shutil.which("yosys") is None, reason="yosys not installed")

# one yosys run for every probe (synth_xilinx has a fixed start-up cost)
PROBES = """
module adder (input wire clk, input wire [31:0] x, input wire [31:0] y, output reg [31:0] s);
reg [31:0] a, b;
always @(posedge clk) begin
    a <= x;
    b <= y;
    s <= a + b;
end
endmodule

// a block RAM read, then logic (XOR) or a register; a 16x16 multiplier whose
// product goes through logic or straight into a register
module mems #(parameter LOGIC = 1) (
    input wire clk, input wire we, input wire [9:0] wa, input wire [9:0] ra,
    input wire [63:0] wd, input wire [63:0] k, input wire signed [15:0] m,
    input wire signed [15:0] n, output reg [63:0] q, output reg signed [31:0] p);
reg [63:0] mem [0:1023];
reg [63:0] rd;
reg signed [15:0] m_q, n_q;
always @(posedge clk) begin
    if (we) mem[wa] <= wd;
    rd <= mem[ra];
    q <= LOGIC ? rd ^ k : rd;
    m_q <= m;
    n_q <= n;
    p <= LOGIC ? m_q * n_q + k[31:0] : m_q * n_q;
end
endmodule

module probes (
    input wire clk, input wire [31:0] x, input wire [31:0] y, input wire we,
    input wire [9:0] wa, input wire [9:0] ra, input wire [63:0] wd, input wire [63:0] k,
    input wire signed [15:0] m, input wire signed [15:0] n,
    output wire [31:0] s, output wire [63:0] q0, output wire [63:0] q1,
    output wire [31:0] p0, output wire [31:0] p1);
adder u_add (.clk(clk), .x(x), .y(y), .s(s));
mems #(.LOGIC(0)) u_reg (.clk(clk), .we(we), .wa(wa), .ra(ra), .wd(wd), .k(k), .m(m), .n(n),
                         .q(q0), .p(p0));
mems #(.LOGIC(1)) u_logic (.clk(clk), .we(we), .wa(wa), .ra(ra), .wd(wd), .k(k), .m(m), .n(n),
                           .q(q1), .p(p1));
endmodule
"""


@pytest.fixture(scope="module")
def probes(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("synth")
    src = tmp / "probes.v"
    src.write_text(PROBES)
    return synth.analyse(synth.run_yosys("probes", [src], tmp / "work"), "probes")


def test_adder_depth(probes):
    # 32-bit add between registers: one LUT level, then 32 bits of carry chain = 1 level
    assert probes.deepest_by_instance["u_add"] == pytest.approx(2.0), probes.deepest_by_instance
    assert probes.instances["u_add"]["FF"] == 96
    assert probes.instances["u_add"].get("DSP", 0) == 0


def test_registered_outputs(probes):
    for inst in ("u_reg", "u_logic"):
        counts = probes.instances[inst]
        assert counts.get("BRAM36", 0) + counts.get("BRAM18", 0) >= 1, counts
        assert counts.get("DSP", 0) >= 1, counts
    brams = {p.split(".")[0] for p in probes.unregistered_brams}
    dsps = {p.split(".")[0] for p in probes.unregistered_dsps}
    assert brams == {"u_logic"}, probes.unregistered_brams
    assert dsps == {"u_logic"}, probes.unregistered_dsps
    assert probes.deepest.levels >= 2.0


@pytest.mark.slow
def test_vta_top_default():
    """The default preset as synthesised (figures and targets in BENCHMARKS.md).

    Met targets are asserted; the depth bound is today's figure (a regression
    guard), above the 8-level target, which BENCHMARKS.md reports as not met.
    """
    r = synth.synthesize("default")
    summary = synth.format_report(r, detail=False)
    assert r.scratchpads_in_bram, r.scratchpads
    assert r.unregistered_brams == [], r.unregistered_brams
    # at least 30% below the first design's 61k (66k in the review's count)
    assert r.total["LUT"] <= 42_000, summary
    # the GEMM array's 256 DSPs all feed registers; only the ALU multiplier and the
    # range-check / byte-count products of the loaders, load and store reach logic
    allowed = ("compute.pipe.alu.", "compute.loader.", "load.", "store.")
    assert all(p.startswith(allowed) for p in r.unregistered_dsps), r.unregistered_dsps
    assert r.deepest.levels <= 16.5, summary


def test_paths_are_named_and_grouped(probes, tmp_path):
    """The deepest path of an instance names the registers it starts and ends in, and
    ``level`` groups the figures one instance deeper (cells above it: "<instance> glue")."""
    path = probes.paths_by_instance["u_add"]
    assert path.start.split("[")[0] in ("u_add.a", "u_add.b"), path.start
    assert path.end.split("[")[0] in ("u_add.s", "s"), path.end
    assert synth._group("u_add", 2) == "u_add glue"
    assert synth._group("cl.vta.compute", 2) == "cl.vta"
    assert synth._group("", 1) == "(top glue)"

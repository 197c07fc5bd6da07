`resetall
`timescale 1ns / 1ps
`default_nettype none

/*
 * vta_alu: the vector ALU, LANES int32 lanes (vta-reference 3.4).  Three
 * combinational units and a registered multiplier, each with operands of its
 * own that are zero while the unit is not used:
 *   min/max  r = min(x, y), or max(x, y) with `max` high (signed);
 *   adder    r = x + y (wrapping); its operands are also the multiplier's;
 *   shifter  r = x shifted by the signed amount y (decision 3): 0 <= y <= 31
 *            arithmetic right shift by y; y >= 32 right shift by 31;
 *            -31 <= y <= -1 left shift by -y (wrapping); y <= -32 gives 0;
 *   MUL      mul_r = the low 32 bits of x * y of the adder's operands one
 *            clock edge after they were given with `mul_en` high (held
 *            while it is low).
 * `r` is the OR of the three combinational results: the result of the one
 * unit in use (f(0, 0) = 0 for each), meaningless while the adder's operands
 * are a MUL's.  No operation multiplexer: after the comparator's carry chain
 * one LUT per bit selects and merges.
 *
 * The shifter is one funnel shifter: the low 32 bits of {hi, lo} >> y[4:0],
 * with {hi, lo} = {sign(x), x} for a right shift and {x, 0} for a left shift
 * (then y[4:0] = 32 + y, and x * 2**32 >> (32 + y) = x << -y); only y's sign
 * chooses the operand, and the saturating classes (y >= 32, y <= -32)
 * replace the shifted word afterwards.  No subtractor for -y, one shifter.
 *
 * MUL: the low 32 bits of x * y are xl*yl + ((xh*yl + xl*yh) << 16) mod 2**32
 * (xl, xh the 16-bit halves): three 16x16 products per lane, one DSP48E2
 * each, registered right at the DSP's output (flip-flops fed by nothing else:
 * yosys 0.23 leaves them beside the DSP, Vivado can pull them into its PREG),
 * summed (16-bit adds) in the next cycle.  The operand multiplexers before
 * the DSPs and the sum after them each take a part of a cycle, so no
 * multiplier output reaches logic before a register.
 */
module vta_alu #(
    // number of int32 lanes
    parameter LANES = 16
) (
    input  wire                clk,
    // min/max unit
    input  wire                max,
    input  wire [LANES*32-1:0] mm_a,
    input  wire [LANES*32-1:0] mm_b,
    // adder (and multiplier)
    input  wire [LANES*32-1:0] add_a,
    input  wire [LANES*32-1:0] add_b,
    // shifter
    input  wire [LANES*32-1:0] shr_a,
    input  wire [LANES*32-1:0] shr_b,
    // min/max | sum | shift
    output reg  [LANES*32-1:0] r,
    // registers the partial products of add_a * add_b
    input  wire                mul_en,
    // low 32 bits of add_a * add_b as given with mul_en one cycle before
    output reg  [LANES*32-1:0] mul_r
);

integer n;
reg signed [31:0] x, y;
reg [63:0] funnel;
reg [31:0] shifted, mm, sh;
always @* begin
    for (n = 0; n < LANES; n = n + 1) begin
        // min / max: one comparator
        x = mm_a[n*32 +: 32];
        y = mm_b[n*32 +: 32];
        mm = ((x < y) ^ max) ? x : y;
        // shift
        x = shr_a[n*32 +: 32];
        y = shr_b[n*32 +: 32];
        funnel = y[31] ? {x, 32'd0} : {{32{x[31]}}, x};
        shifted = funnel[{1'b0, y[4:0]} +: 32];
        if (!y[31]) begin
            // y >= 32: by 31, every bit the sign
            sh = (|y[30:5]) ? {32{x[31]}} : shifted;
        end else begin
            // y <= -32: 0
            sh = (&y[30:5] && |y[4:0]) ? shifted : 32'd0;
        end
        r[n*32 +: 32] = mm | (add_a[n*32 +: 32] + add_b[n*32 +: 32]) | sh;
    end
end

// the three 16x16 products of each lane, registered, and their sum
reg [LANES*32-1:0] pp_ll_reg;            // xl * yl
reg [LANES*16-1:0] pp_hl_reg, pp_lh_reg; // low halves of xh * yl and xl * yh
always @(posedge clk) begin
    if (mul_en) begin
        for (n = 0; n < LANES; n = n + 1) begin
            pp_ll_reg[n*32 +: 32] <= add_a[n*32 +: 16] * add_b[n*32 +: 16];
            pp_hl_reg[n*16 +: 16] <= add_a[n*32 + 16 +: 16] * add_b[n*32 +: 16];
            pp_lh_reg[n*16 +: 16] <= add_a[n*32 +: 16] * add_b[n*32 + 16 +: 16];
        end
    end
end

always @* begin
    for (n = 0; n < LANES; n = n + 1) begin
        mul_r[n*32 +: 32] = pp_ll_reg[n*32 +: 32]
            + {pp_hl_reg[n*16 +: 16] + pp_lh_reg[n*16 +: 16], 16'd0};
    end
end

endmodule

`resetall

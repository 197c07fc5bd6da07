`resetall
`timescale 1ns / 1ps
`default_nettype none

/*
 * vta_alu: the vector ALU, LANES int32 lanes (vta-reference 3.4), on operands
 * x = a, y = b of each lane.  Three combinational units, each contributing to
 * `r` only while its enable is on (at most one is), and a registered
 * multiplier:
 *   min/max  min(x, y), or max(x, y) with `max` high (signed; one comparator);
 *   adder    x + y (wrapping);
 *   shifter  x shifted by the signed amount y (decision 3): 0 <= y <= 31
 *            arithmetic right shift by y; y >= 32 right shift by 31;
 *            -31 <= y <= -1 left shift by -y (wrapping); y <= -32 gives 0;
 *   MUL      mul_r = the low 32 bits of x * y one clock edge after they were
 *            given with `mul_en` high; zero in the other cycles.
 * `r` (and `mul_r`) are zero unless used, so the pipeline ORs its result
 * sources.  The enables are registered and skip the unused units in a
 * simulator; in logic each is one more input to its unit's last LUT.
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
    // the operands (x, y of every lane)
    input  wire [LANES*32-1:0] a,
    input  wire [LANES*32-1:0] b,
    // the unit in use: min/max (MAX with max, else MIN), adder, shifter (at most one)
    input  wire                mm_on,
    input  wire                max,
    input  wire                add_on,
    input  wire                shr_on,
    // the result of the unit in use (zero if none)
    output reg  [LANES*32-1:0] r,
    // registers the partial products of a * b
    input  wire                mul_en,
    // low 32 bits of a * b as given with mul_en one cycle before (else zero)
    output reg  [LANES*32-1:0] mul_r
);

integer n;
reg signed [31:0] x, y;
reg [63:0] funnel;
reg [31:0] shifted, sh;
always @* begin
    funnel = 64'd0;
    shifted = 32'd0;
    sh = 32'd0;
    x = 32'sd0;
    y = 32'sd0;
    r = {LANES*32{1'b0}};
    // each unit only while used (a simulator skips the others)
    if (mm_on) begin
        for (n = 0; n < LANES; n = n + 1) begin
            // one comparator
            x = a[n*32 +: 32];
            y = b[n*32 +: 32];
            r[n*32 +: 32] = ((x < y) ^ max) ? x : y;
        end
    end
    if (add_on) begin
        for (n = 0; n < LANES; n = n + 1) begin
            r[n*32 +: 32] = r[n*32 +: 32] | (a[n*32 +: 32] + b[n*32 +: 32]);
        end
    end
    if (shr_on) begin
        for (n = 0; n < LANES; n = n + 1) begin
            x = a[n*32 +: 32];
            y = b[n*32 +: 32];
            funnel = y[31] ? {x, 32'd0} : {{32{x[31]}}, x};
            shifted = funnel[{1'b0, y[4:0]} +: 32];
            if (!y[31]) begin
                // y >= 32: by 31, every bit the sign
                sh = (|y[30:5]) ? {32{x[31]}} : shifted;
            end else begin
                // y <= -32: 0
                sh = (&y[30:5] && |y[4:0]) ? shifted : 32'd0;
            end
            r[n*32 +: 32] = r[n*32 +: 32] | sh;
        end
    end
end

// the three 16x16 products of each lane, registered, and their sum
reg [LANES*32-1:0] pp_ll_reg;            // xl * yl
reg [LANES*16-1:0] pp_hl_reg, pp_lh_reg; // low halves of xh * yl and xl * yh
always @(posedge clk) begin
    if (mul_en) begin
        for (n = 0; n < LANES; n = n + 1) begin
            pp_ll_reg[n*32 +: 32] <= a[n*32 +: 16] * b[n*32 +: 16];
            pp_hl_reg[n*16 +: 16] <= a[n*32 + 16 +: 16] * b[n*32 +: 16];
            pp_lh_reg[n*16 +: 16] <= a[n*32 +: 16] * b[n*32 + 16 +: 16];
        end
    end
end

reg mul_on_reg;
always @(posedge clk) begin
    mul_on_reg <= mul_en;
end

always @* begin
    mul_r = {LANES*32{1'b0}};
    if (mul_on_reg) begin
        for (n = 0; n < LANES; n = n + 1) begin
            mul_r[n*32 +: 32] = pp_ll_reg[n*32 +: 32]
                + {pp_hl_reg[n*16 +: 16] + pp_lh_reg[n*16 +: 16], 16'd0};
        end
    end
end

endmodule

`resetall

`resetall
`timescale 1ns / 1ps
`default_nettype none

/*
 * vta_alu: the vector ALU, LANES int32 lanes, combinational.  Per lane
 * r = f(a, b) with f one of the ALU opcodes (vta-reference 3.4):
 *   MIN, MAX (signed), ADD (wrapping), MUL (low 32 bits),
 *   SHR by the signed amount y = b (decision 3): 0 <= y <= 31 arithmetic
 *   right shift by y; y >= 32 right shift by 31; -31 <= y <= -1 left shift
 *   by -y (wrapping); y <= -32 gives 0.
 * Opcodes 5..7 never reach here (vta_compute faults them); they yield a.
 */
module vta_alu #(
    // number of int32 lanes
    parameter LANES = 16
) (
    input  wire [2:0]          op,
    input  wire [LANES*32-1:0] a,
    input  wire [LANES*32-1:0] b,
    output reg  [LANES*32-1:0] r
);

`include "vta_isa.vh"

integer n;
reg signed [31:0] x, y;
reg [4:0] neg;
always @* begin
    r = a;
    for (n = 0; n < LANES; n = n + 1) begin
        x = a[n*32 +: 32];
        y = b[n*32 +: 32];
        neg = 5'd0 - y[4:0];
        case (op)
            `VTA_ALU_MIN: r[n*32 +: 32] = (x < y) ? x : y;
            `VTA_ALU_MAX: r[n*32 +: 32] = (x > y) ? x : y;
            `VTA_ALU_ADD: r[n*32 +: 32] = x + y;
            `VTA_ALU_MUL: r[n*32 +: 32] = x * y;
            `VTA_ALU_SHR: begin
                if (!y[31]) begin
                    r[n*32 +: 32] = (y > 32'sd31) ? (x >>> 31) : (x >>> y[4:0]);
                end else if (y >= -32'sd31) begin
                    r[n*32 +: 32] = x << neg;
                end else begin
                    r[n*32 +: 32] = 32'd0;
                end
            end
            default: r[n*32 +: 32] = x;
        endcase
    end
end

endmodule

`resetall

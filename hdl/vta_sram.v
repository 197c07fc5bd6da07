`resetall
`timescale 1ns / 1ps
`default_nettype none

/*
 * vta_sram: one scratchpad, a simple dual-port block RAM (one write port, one
 * read port, one clock).  The read is synchronous: rdata holds mem[raddr] one
 * cycle after re.  A read and a write of the same entry in the same cycle
 * return the old contents (read-first); the compute pipeline forwards around
 * that case itself.  No reset and no initial contents, so synthesis infers
 * block RAM (or UltraRAM for the deep ones).
 */
module vta_sram #(
    // Bits per entry.
    parameter WIDTH = 128,
    // log2 of the number of entries.
    parameter LOG_DEPTH = 11
) (
    input  wire                 clk,

    input  wire                 we,
    input  wire [LOG_DEPTH-1:0] waddr,
    input  wire [WIDTH-1:0]     wdata,

    input  wire                 re,
    input  wire [LOG_DEPTH-1:0] raddr,
    output reg  [WIDTH-1:0]     rdata
);

initial begin
    if (WIDTH < 1 || LOG_DEPTH < 1) begin
        $display("%m: WIDTH (%0d) and LOG_DEPTH (%0d) must be at least 1", WIDTH, LOG_DEPTH);
        $finish;
    end
end

reg [WIDTH-1:0] mem [0:(1 << LOG_DEPTH)-1];

always @(posedge clk) begin
    if (we) begin
        mem[waddr] <= wdata;
    end
    if (re) begin
        rdata <= mem[raddr];
    end
end

endmodule

`resetall

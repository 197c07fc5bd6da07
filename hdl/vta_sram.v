`resetall
`timescale 1ns / 1ps
`default_nettype none

/*
 * vta_sram: one scratchpad, a simple dual-port block RAM (one write port, one
 * read port, one clock).  The read is synchronous: rdata holds mem[raddr] one
 * cycle after re, or with OUTPUT_REG two cycles after (the block RAM's output
 * register, so the data leaves the RAM from a flip-flop).  A read and a
 * write of the same entry in the same cycle return the old contents
 * (read-first); the compute pipeline forwards around that case itself.  No
 * reset and no initial contents, so synthesis infers block RAM (or UltraRAM
 * for the deep ones).
 */
module vta_sram #(
    // Bits per entry.
    parameter WIDTH = 128,
    // log2 of the number of entries.
    parameter LOG_DEPTH = 11,
    // 1: a second, output register (read latency 2); 0: read latency 1.
    parameter OUTPUT_REG = 0
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
reg [WIDTH-1:0] ram_q;

always @(posedge clk) begin
    if (we) begin
        mem[waddr] <= wdata;
    end
    if (re) begin
        ram_q <= mem[raddr];
    end
end

generate
if (OUTPUT_REG) begin : out_reg
    // loads the cycle after a read, so it holds like ram_q does
    reg re_q;
    always @(posedge clk) begin
        re_q <= re;
        if (re_q) begin
            rdata <= ram_q;
        end
    end
end else begin : no_out_reg
    always @* begin
        rdata = ram_q;
    end
end
endgenerate

endmodule

`resetall

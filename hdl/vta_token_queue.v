`resetall
`timescale 1ns / 1ps
`default_nettype none

/*
 * vta_token_queue: one dependency-token queue (l2g, g2l, g2s or s2g).  Tokens
 * carry no data, so the queue is a counter of capacity DEPTH
 * (vta.config.TOKEN_QUEUE_DEPTH).  The consumer pops only while `nonempty`;
 * the producer checks `full` before pushing and reports TOKEN_OVERFLOW itself
 * instead of pushing (decision 7).  A push and a pop in the same cycle leave
 * the count unchanged.  The queue starts empty and `clear` empties it.
 */
module vta_token_queue #(
    // Capacity in tokens.
    parameter DEPTH = 512
) (
    input  wire                     clk,
    input  wire                     rst,
    input  wire                     clear,

    input  wire                     push,
    input  wire                     pop,

    output wire                     nonempty,
    output wire                     full,
    output wire [$clog2(DEPTH+1)-1:0] count
);

localparam CW = $clog2(DEPTH + 1);

initial begin
    if (DEPTH < 1) begin
        $display("%m: DEPTH must be at least 1, not %0d", DEPTH);
        $finish;
    end
end

reg [CW-1:0] count_reg, count_next;

wire do_push = push && (count_reg != DEPTH[CW-1:0] || pop);
wire do_pop = pop && count_reg != {CW{1'b0}};

assign nonempty = count_reg != {CW{1'b0}};
assign full = count_reg == DEPTH[CW-1:0];
assign count = count_reg;

always @* begin
    count_next = count_reg;
    if (do_push && !do_pop) begin
        count_next = count_reg + 1'b1;
    end else if (do_pop && !do_push) begin
        count_next = count_reg - 1'b1;
    end
end

always @(posedge clk) begin
    count_reg <= count_next;
    if (rst || clear) begin
        count_reg <= {CW{1'b0}};
    end
end

endmodule

`resetall

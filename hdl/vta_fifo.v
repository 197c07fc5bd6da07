`resetall
`timescale 1ns / 1ps
`default_nettype none

/*
 * vta_fifo: a first-word-fall-through FIFO on a block RAM.  Used for the
 * command queues between fetch and the load/compute/store engines (512 deep,
 * as upstream).  The memory is read synchronously into an output register,
 * so it infers block RAM; an entry written at cycle t is visible on
 * out_data at t+2.  `count` is the number of entries held (memory plus the
 * output register); `clear` empties the FIFO.
 */
module vta_fifo #(
    // Bits per entry.
    parameter WIDTH = 160,
    // log2 of the memory depth (the FIFO holds up to 2**LOG_DEPTH + 1 entries).
    parameter LOG_DEPTH = 9
) (
    input  wire               clk,
    input  wire               rst,
    input  wire               clear,

    input  wire               in_valid,
    output wire               in_ready,
    input  wire [WIDTH-1:0]   in_data,

    output wire               out_valid,
    input  wire               out_ready,
    output wire [WIDTH-1:0]   out_data,

    output wire [LOG_DEPTH+1:0] count
);

localparam integer DEPTH = 1 << LOG_DEPTH;

initial begin
    if (LOG_DEPTH < 1) begin
        $display("%m: LOG_DEPTH must be at least 1, not %0d", LOG_DEPTH);
        $finish;
    end
end

reg [WIDTH-1:0] mem [0:DEPTH-1];

reg [LOG_DEPTH-1:0] wr_ptr_reg, wr_ptr_next;
reg [LOG_DEPTH-1:0] rd_ptr_reg, rd_ptr_next;
reg [LOG_DEPTH:0]   mem_count_reg, mem_count_next;
reg                 out_valid_reg, out_valid_next;
reg [WIDTH-1:0]     out_data_reg;

wire push = in_valid && in_ready;
wire pop_out = out_valid_reg && out_ready;
// move the oldest memory entry into the output register
wire load_out = (mem_count_reg != 0) && (!out_valid_reg || out_ready);

assign in_ready = mem_count_reg != DEPTH[LOG_DEPTH:0];
assign out_valid = out_valid_reg;
assign out_data = out_data_reg;
assign count = {1'b0, mem_count_reg} + {{(LOG_DEPTH+1){1'b0}}, out_valid_reg};

always @* begin
    wr_ptr_next = wr_ptr_reg;
    rd_ptr_next = rd_ptr_reg;
    mem_count_next = mem_count_reg;
    out_valid_next = out_valid_reg;

    if (push) begin
        wr_ptr_next = wr_ptr_reg + 1'b1;
    end
    if (load_out) begin
        rd_ptr_next = rd_ptr_reg + 1'b1;
        out_valid_next = 1'b1;
    end else if (pop_out) begin
        out_valid_next = 1'b0;
    end
    mem_count_next = mem_count_reg + {{LOG_DEPTH{1'b0}}, push} - {{LOG_DEPTH{1'b0}}, load_out};
end

always @(posedge clk) begin
    if (push) begin
        mem[wr_ptr_reg] <= in_data;
    end
    if (load_out) begin
        out_data_reg <= mem[rd_ptr_reg];
    end
end

always @(posedge clk) begin
    wr_ptr_reg <= wr_ptr_next;
    rd_ptr_reg <= rd_ptr_next;
    mem_count_reg <= mem_count_next;
    out_valid_reg <= out_valid_next;

    if (rst || clear) begin
        wr_ptr_reg <= {LOG_DEPTH{1'b0}};
        rd_ptr_reg <= {LOG_DEPTH{1'b0}};
        mem_count_reg <= {(LOG_DEPTH+1){1'b0}};
        out_valid_reg <= 1'b0;
    end
end

endmodule

`resetall

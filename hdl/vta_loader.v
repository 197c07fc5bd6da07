`resetall
`timescale 1ns / 1ps
`default_nettype none

/*
 * vta_loader: the 2-D LOAD sequencer shared by the load engine (INP, WGT) and
 * the compute engine (UOP, ACC, ACC_8BIT).  For one LOAD with x_size > 0 it
 *
 *   1. checks the SRAM range (sram_base + x_total * y_total <= depth) and
 *      then the DRAM range (last element byte <= MEM_SIZE), as the golden
 *      model does, and reports SRAM_RANGE or DRAM_RANGE without moving data
 *      (four cycles from start: products, checks, verdict; the fault is
 *      reported from a register in the cycle after the verdict, when the
 *      sequencer is already idle, so the engine's fault logic starts at a
 *      flip-flop);
 *   2. requests the DRAM rows from the element stream selected outside
 *      (one request per row, or one for the whole block when the rows are
 *      contiguous);
 *   3. writes x_total * y_total consecutive SRAM entries from sram_base:
 *      y_pad_0 zero rows, then per data row x_pad_0 zeros, x_size elements
 *      and x_pad_1 zeros, then y_pad_1 zero rows (vta-reference 3.2).
 *
 * The range checks and the row requests are vta_row_walk's (shared with
 * vta_store); this module adds the padded writes.  It serves N memory types,
 * chosen at run time by the one-hot `sel` (their element sizes and depths
 * are parameters); the data path stays outside: wr_pad says "write zero",
 * otherwise the entry is the element being handed over.
 */
`include "vta_isa.vh"

module vta_loader #(
    // AXI address width
    parameter ADDR_WIDTH = 32,
    // device-memory bytes; an access beyond is DRAM_RANGE
    parameter [63:0] MEM_SIZE = 64'h10000000,
    // memory types served (1..4)
    parameter N = 1,
    // per memory type m, bits [8*m +: 8]: log2 of its element size in bytes
    parameter [8*N-1:0] LOG_ELEM_BYTES = 8'd4,
    // per memory type m, bits [8*m +: 8]: log2 of its scratchpad depth in entries
    parameter [8*N-1:0] LOG_DEPTH = 8'd11
) (
    input  wire                  clk,
    input  wire                  rst,
    input  wire                  halt,

    // one LOAD (fields held stable while busy)
    input  wire                  start,
    input  wire [N-1:0]          sel,
    input  wire [`VTA_MEM_SRAM_BASE_W-1:0] sram_base,
    input  wire [`VTA_MEM_DRAM_BASE_W-1:0] dram_base,
    input  wire [`VTA_MEM_Y_SIZE_W-1:0]    y_size,
    input  wire [`VTA_MEM_X_SIZE_W-1:0]    x_size,
    input  wire [`VTA_MEM_X_STRIDE_W-1:0]  x_stride,
    input  wire [`VTA_MEM_Y_PAD_0_W-1:0]   y_pad_0,
    input  wire [`VTA_MEM_Y_PAD_1_W-1:0]   y_pad_1,
    input  wire [`VTA_MEM_X_PAD_0_W-1:0]   x_pad_0,
    input  wire [`VTA_MEM_X_PAD_1_W-1:0]   x_pad_1,
    output wire                  busy,
    output reg                   done,
    // x_size * y_size, registered (valid from the second cycle after start; byte counters)
    output wire [`VTA_MEM_X_SIZE_W+`VTA_MEM_Y_SIZE_W-1:0] elems,
    output wire                  err,
    output wire [7:0]            err_code,

    // element requests to the selected stream
    output wire                  req_valid,
    input  wire                  req_ready,
    output wire [ADDR_WIDTH-1:0] req_addr,
    output wire [`VTA_MEM_X_SIZE_W+`VTA_MEM_Y_SIZE_W-1:0] req_n,

    // elements of the selected stream
    input  wire                  data_valid,
    output wire                  data_ready,

    // SRAM writes
    output wire                  wr_en,
    output wire [`VTA_MEM_SRAM_BASE_W-1:0] wr_idx,
    output wire                  wr_pad
);

`include "vta_regs.vh"

localparam XW = `VTA_MEM_X_SIZE_W;
localparam YW = `VTA_MEM_Y_SIZE_W;
localparam SW = `VTA_MEM_SRAM_BASE_W;
// a padded row or column count (one bit more than the size)
localparam XTW = XW + 1;
localparam YTW = YW + 1;

localparam STATE_IDLE  = 2'd0;
localparam STATE_SIZE  = 2'd1;
localparam STATE_CHECK = 2'd2;
localparam STATE_RUN   = 2'd3;

// The fields are stable while busy, so everything derived from them is
// computed into registers: STATE_SIZE takes the products (vta_row_walk; DSP
// outputs registered) and the row and column bounds, STATE_CHECK the range
// checks, and the writer keeps flags for its current entry (pad, last column,
// last row), so a handshake with the element stream is a few gates deep.
reg [1:0]  state_reg, state_next;
// the verdict's fault, and its report a cycle later (from flip-flops)
reg        fault;
reg [7:0]  fault_code;
reg        err_reg;
reg [7:0]  err_code_reg;
// writer: position, and flags for the entry at it
reg [YTW-1:0] wy_reg, wy_next;
reg [XTW-1:0] wx_reg, wx_next;
reg [SW-1:0]  widx_reg, widx_next;
reg        col_in_reg, col_in_next;      // a data column
reg        row_in_reg, row_in_next;      // a data row
reg        last_x_reg, last_x_next;
reg        last_y_reg, last_y_next;

// ------------------------------------------------------------ range checks and row requests
wire [XTW-1:0] x_total = {{(XTW-`VTA_MEM_X_PAD_0_W){1'b0}}, x_pad_0} + {1'b0, x_size}
                         + {{(XTW-`VTA_MEM_X_PAD_1_W){1'b0}}, x_pad_1};
wire [YTW-1:0] y_total = {{(YTW-`VTA_MEM_Y_PAD_0_W){1'b0}}, y_pad_0} + {1'b0, y_size}
                         + {{(YTW-`VTA_MEM_Y_PAD_1_W){1'b0}}, y_pad_1};
wire        checked;
wire        sram_bad;
wire        dram_bad;

vta_row_walk #(
    .ADDR_WIDTH(ADDR_WIDTH), .MEM_SIZE(MEM_SIZE), .N(N),
    .LOG_ELEM_BYTES(LOG_ELEM_BYTES), .LOG_DEPTH(LOG_DEPTH), .PADS(1)
) walk (
    .clk(clk), .rst(rst),
    .sel(sel), .sram_base(sram_base), .dram_base(dram_base),
    .y_size(y_size), .x_size(x_size), .x_stride(x_stride),
    .x_total(x_total), .y_total(y_total),
    .size(state_reg == STATE_SIZE), .check(state_reg == STATE_CHECK),
    .run(state_reg == STATE_RUN),
    .elems(elems), .checked(checked), .sram_bad(sram_bad), .dram_bad(dram_bad),
    .req_valid(req_valid), .req_ready(req_ready), .req_addr(req_addr), .req_n(req_n)
);

// registered in STATE_SIZE: the writer's bounds (columns and rows counted from 0)
reg  [XTW-1:0] x_m2_reg;                 // x_total - 2
reg  [YTW-1:0] y_m2_reg;                 // y_total - 2
reg            x_one_reg, y_one_reg;     // x_total == 1, y_total == 1
reg            empty_reg;                // x_total * y_total == 0: nothing to write
reg  [XTW-1:0] col_a_reg, col_b_reg;     // last column before the data, last data column
reg  [YTW-1:0] row_a_reg, row_b_reg;     // likewise for rows

assign busy = state_reg != STATE_IDLE;
assign err = err_reg && !halt;
assign err_code = err_code_reg;

assign wr_pad = !(row_in_reg && col_in_reg);
assign data_ready = state_reg == STATE_RUN && !wr_pad;
assign wr_en = state_reg == STATE_RUN && (wr_pad || data_valid);
assign wr_idx = widx_reg;

always @* begin
    state_next = state_reg;
    wy_next = wy_reg;
    wx_next = wx_reg;
    widx_next = widx_reg;
    col_in_next = col_in_reg;
    row_in_next = row_in_reg;
    last_x_next = last_x_reg;
    last_y_next = last_y_reg;
    done = 1'b0;
    fault = 1'b0;
    fault_code = `VTA_ERR_NONE;

    case (state_reg)
        STATE_IDLE: begin
            // waits for a LOAD
            if (start) begin
                state_next = STATE_SIZE;
            end
        end
        STATE_SIZE: begin
            // the block's area, row span and bounds (registered)
            state_next = STATE_CHECK;
        end
        STATE_CHECK: begin
            // first cycle: the range checks (registered); second: their verdict
            wy_next = {YTW{1'b0}};
            wx_next = {XTW{1'b0}};
            widx_next = sram_base;
            col_in_next = x_pad_0 == 0;
            row_in_next = y_pad_0 == 0 && y_size != 0;
            last_x_next = x_one_reg;
            last_y_next = y_one_reg;
            if (!checked) begin
                state_next = STATE_CHECK;
            end else if (sram_bad) begin
                fault = 1'b1;
                fault_code = `VTA_ERR_SRAM_RANGE;
                state_next = STATE_IDLE;
            end else if (dram_bad) begin
                fault = 1'b1;
                fault_code = `VTA_ERR_DRAM_RANGE;
                state_next = STATE_IDLE;
            end else if (empty_reg) begin
                // y_size 0 and no pad rows: nothing to write
                done = 1'b1;
                state_next = STATE_IDLE;
            end else begin
                state_next = STATE_RUN;
            end
        end
        STATE_RUN: begin
            // writes every entry (vta_row_walk requests the rows)
            if (wr_en) begin
                widx_next = widx_reg + 1'b1;
                if (last_x_reg) begin
                    wx_next = {XTW{1'b0}};
                    wy_next = wy_reg + 1'b1;
                    col_in_next = x_pad_0 == 0;
                    last_x_next = x_one_reg;
                    if (wy_reg == row_a_reg) begin
                        row_in_next = y_size != 0;
                    end else if (wy_reg == row_b_reg) begin
                        row_in_next = 1'b0;
                    end
                    last_y_next = wy_reg == y_m2_reg;
                    if (last_y_reg) begin
                        done = 1'b1;
                        state_next = STATE_IDLE;
                    end
                end else begin
                    wx_next = wx_reg + 1'b1;
                    if (wx_reg == col_a_reg) begin
                        col_in_next = 1'b1;
                    end else if (wx_reg == col_b_reg) begin
                        col_in_next = 1'b0;
                    end
                    last_x_next = wx_reg == x_m2_reg;
                end
            end
        end
        default: begin
            state_next = STATE_IDLE;
        end
    endcase

    if (halt) begin
        state_next = STATE_IDLE;
        done = 1'b0;
        fault = 1'b0;
    end
end

always @(posedge clk) begin
    if (state_reg == STATE_SIZE) begin
        x_m2_reg <= x_total - 2;
        y_m2_reg <= y_total - 2;
        x_one_reg <= x_total == 1;
        y_one_reg <= y_total == 1;
        empty_reg <= x_total == 0 || y_total == 0;
        col_a_reg <= {{(XTW-`VTA_MEM_X_PAD_0_W){1'b0}}, x_pad_0} - 1'b1;
        col_b_reg <= {{(XTW-`VTA_MEM_X_PAD_0_W){1'b0}}, x_pad_0} + {1'b0, x_size} - 1'b1;
        row_a_reg <= {{(YTW-`VTA_MEM_Y_PAD_0_W){1'b0}}, y_pad_0} - 1'b1;
        row_b_reg <= {{(YTW-`VTA_MEM_Y_PAD_0_W){1'b0}}, y_pad_0} + {1'b0, y_size} - 1'b1;
    end
end

always @(posedge clk) begin
    state_reg <= state_next;
    err_reg <= fault;
    err_code_reg <= fault_code;
    wy_reg <= wy_next;
    wx_reg <= wx_next;
    widx_reg <= widx_next;
    col_in_reg <= col_in_next;
    row_in_reg <= row_in_next;
    last_x_reg <= last_x_next;
    last_y_reg <= last_y_next;
    if (rst) begin
        state_reg <= STATE_IDLE;
        err_reg <= 1'b0;
    end
end

endmodule

`resetall

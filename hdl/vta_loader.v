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
 * The element size and the SRAM depth are run-time inputs (log2), so one
 * sequencer serves several memory types; the data path stays outside: wr_pad
 * says "write zero", otherwise the entry is the element being handed over.
 */
module vta_loader #(
    // AXI address width.
    parameter ADDR_WIDTH = 32,
    // Device-memory bytes; an access beyond is DRAM_RANGE.
    parameter [63:0] MEM_SIZE = 64'h10000000
) (
    input  wire                  clk,
    input  wire                  rst,
    input  wire                  halt,

    // one LOAD (fields held stable while busy)
    input  wire                  start,
    input  wire [15:0]           sram_base,
    input  wire [31:0]           dram_base,
    input  wire [15:0]           y_size,
    input  wire [15:0]           x_size,
    input  wire [15:0]           x_stride,
    input  wire [3:0]            y_pad_0,
    input  wire [3:0]            y_pad_1,
    input  wire [3:0]            x_pad_0,
    input  wire [3:0]            x_pad_1,
    input  wire [3:0]            log_elem_bytes,
    input  wire [4:0]            log_depth,
    output wire                  busy,
    output reg                   done,
    output wire                  err,
    output wire [7:0]            err_code,

    // element requests to the selected stream
    output wire                  req_valid,
    input  wire                  req_ready,
    output wire [ADDR_WIDTH-1:0] req_addr,
    output wire [31:0]           req_n,

    // elements of the selected stream
    input  wire                  data_valid,
    output wire                  data_ready,

    // SRAM writes
    output wire                  wr_en,
    output wire [15:0]           wr_idx,
    output wire                  wr_pad
);

`include "vta_regs.vh"

localparam STATE_IDLE  = 2'd0;
localparam STATE_SIZE  = 2'd1;
localparam STATE_CHECK = 2'd2;
localparam STATE_RUN   = 2'd3;

// The fields are stable while busy, so everything derived from them is
// computed into registers: STATE_SIZE takes the products (DSP outputs
// registered) and the row and column bounds, STATE_CHECK the range checks,
// and the writer keeps flags for its current entry (pad, last column, last
// row), so a handshake with the element stream is a few gates deep.
reg [1:0]  state_reg, state_next;
reg        checked_reg;                  // STATE_CHECK: the range flags are valid
// the verdict's fault, and its report a cycle later (from flip-flops)
reg        fault;
reg [7:0]  fault_code;
reg        err_reg;
reg [7:0]  err_code_reg;
// request generator
reg        rq_active_reg, rq_active_next;
reg [15:0] rq_rows_reg, rq_rows_next;
reg [63:0] rq_byte_reg, rq_byte_next;   // byte address of the next request
reg [31:0] rq_n_reg;
reg [63:0] stride_bytes_reg;             // x_stride in bytes
// writer: position, and flags for the entry at it
reg [16:0] wy_reg, wy_next;
reg [16:0] wx_reg, wx_next;
reg [15:0] widx_reg, widx_next;
reg        col_in_reg, col_in_next;      // a data column
reg        row_in_reg, row_in_next;      // a data row
reg        last_x_reg, last_x_next;
reg        last_y_reg, last_y_next;

wire [16:0] x_total = {13'd0, x_pad_0} + {1'b0, x_size} + {13'd0, x_pad_1};
wire [16:0] y_total = {13'd0, y_pad_0} + {1'b0, y_size} + {13'd0, y_pad_1};
wire [15:0] y_minus_1 = y_size - 16'd1;
// registered in STATE_SIZE: products (multipliers) and bounds (columns/rows counted from 0)
reg  [33:0] area_reg;
reg  [31:0] rows_span_reg;
reg  [31:0] block_n_reg;
reg         merged_reg;
reg  [16:0] x_m2_reg, y_m2_reg;          // x_total - 2, y_total - 2
reg         x_one_reg, y_one_reg;        // x_total == 1, y_total == 1
reg  [16:0] col_a_reg, col_b_reg;        // last column before the data, last data column
reg  [16:0] row_a_reg, row_b_reg;        // likewise for rows
// registered in STATE_CHECK: the range checks
reg         sram_bad_reg, dram_bad_reg;

wire [34:0] sram_end = {19'd0, sram_base} + {1'b0, area_reg};
wire [34:0] depth = 35'd1 << log_depth;
wire [33:0] dram_end_elem = (y_size == 16'd0) ? {2'b0, dram_base}
                           : {2'b0, dram_base} + {2'b0, rows_span_reg} + {18'd0, x_size};
// last element byte <= MEM_SIZE, compared in elements: end * 2**k > MEM_SIZE
// exactly when end > floor(MEM_SIZE / 2**k)
wire [63:0] mem_elems = MEM_SIZE >> log_elem_bytes;

assign busy = state_reg != STATE_IDLE;
assign err = err_reg && !halt;
assign err_code = err_code_reg;
assign req_valid = state_reg == STATE_RUN && rq_active_reg;
assign req_addr = rq_byte_reg[ADDR_WIDTH-1:0];
// bytes beyond ADDR_WIDTH fail the DRAM range check first
wire _unused_ok = &{1'b0, rq_byte_reg, 1'b0};
assign req_n = rq_n_reg;

assign wr_pad = !(row_in_reg && col_in_reg);
assign data_ready = state_reg == STATE_RUN && !wr_pad;
assign wr_en = state_reg == STATE_RUN && (wr_pad || data_valid);
assign wr_idx = widx_reg;

always @* begin
    state_next = state_reg;
    rq_active_next = rq_active_reg;
    rq_rows_next = rq_rows_reg;
    rq_byte_next = rq_byte_reg;
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
            wy_next = 17'd0;
            wx_next = 17'd0;
            widx_next = sram_base;
            col_in_next = x_pad_0 == 4'd0;
            row_in_next = y_pad_0 == 4'd0 && y_size != 16'd0;
            last_x_next = x_one_reg;
            last_y_next = y_one_reg;
            rq_byte_next = {32'd0, dram_base} << log_elem_bytes;
            rq_rows_next = merged_reg ? 16'd1 : y_size;
            rq_active_next = y_size != 16'd0;
            if (!checked_reg) begin
                state_next = STATE_CHECK;
            end else if (sram_bad_reg) begin
                fault = 1'b1;
                fault_code = `VTA_ERR_SRAM_RANGE;
                state_next = STATE_IDLE;
            end else if (dram_bad_reg) begin
                fault = 1'b1;
                fault_code = `VTA_ERR_DRAM_RANGE;
                state_next = STATE_IDLE;
            end else if (area_reg == 34'd0) begin
                // y_size 0 and no pad rows: nothing to write
                done = 1'b1;
                state_next = STATE_IDLE;
            end else begin
                state_next = STATE_RUN;
            end
        end
        STATE_RUN: begin
            // requests rows and writes every entry
            if (req_valid && req_ready) begin
                rq_byte_next = rq_byte_reg + stride_bytes_reg;
                rq_rows_next = rq_rows_reg - 16'd1;
                if (rq_rows_reg == 16'd1) begin
                    rq_active_next = 1'b0;
                end
            end
            if (wr_en) begin
                widx_next = widx_reg + 16'd1;
                if (last_x_reg) begin
                    wx_next = 17'd0;
                    wy_next = wy_reg + 17'd1;
                    col_in_next = x_pad_0 == 4'd0;
                    last_x_next = x_one_reg;
                    if (wy_reg == row_a_reg) begin
                        row_in_next = y_size != 16'd0;
                    end else if (wy_reg == row_b_reg) begin
                        row_in_next = 1'b0;
                    end
                    last_y_next = wy_reg == y_m2_reg;
                    if (last_y_reg) begin
                        done = 1'b1;
                        state_next = STATE_IDLE;
                    end
                end else begin
                    wx_next = wx_reg + 17'd1;
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
    state_reg <= state_next;
    checked_reg <= state_reg == STATE_CHECK && !halt;
    err_reg <= fault;
    err_code_reg <= fault_code;
    if (state_reg == STATE_SIZE) begin
        area_reg <= {17'd0, x_total} * {17'd0, y_total};
        rows_span_reg <= {16'd0, y_minus_1} * {16'd0, x_stride};
        block_n_reg <= {16'd0, x_size} * {16'd0, y_size};
        merged_reg <= (y_size == 16'd1) || (x_stride == x_size);
        stride_bytes_reg <= {48'd0, x_stride} << log_elem_bytes;
        x_m2_reg <= x_total - 17'd2;
        y_m2_reg <= y_total - 17'd2;
        x_one_reg <= x_total == 17'd1;
        y_one_reg <= y_total == 17'd1;
        col_a_reg <= {13'd0, x_pad_0} - 17'd1;
        col_b_reg <= {13'd0, x_pad_0} + {1'b0, x_size} - 17'd1;
        row_a_reg <= {13'd0, y_pad_0} - 17'd1;
        row_b_reg <= {13'd0, y_pad_0} + {1'b0, y_size} - 17'd1;
    end
    if (state_reg == STATE_CHECK) begin
        sram_bad_reg <= sram_end > depth;
        dram_bad_reg <= {30'd0, dram_end_elem} > mem_elems;
        rq_n_reg <= merged_reg ? block_n_reg : {16'd0, x_size};
    end
    rq_active_reg <= rq_active_next;
    rq_rows_reg <= rq_rows_next;
    rq_byte_reg <= rq_byte_next;
    wy_reg <= wy_next;
    wx_reg <= wx_next;
    widx_reg <= widx_next;
    col_in_reg <= col_in_next;
    row_in_reg <= row_in_next;
    last_x_reg <= last_x_next;
    last_y_reg <= last_y_next;
    if (rst) begin
        state_reg <= STATE_IDLE;
        checked_reg <= 1'b0;
        err_reg <= 1'b0;
        rq_active_reg <= 1'b0;
    end
end

endmodule

`resetall

`resetall
`timescale 1ns / 1ps
`default_nettype none

/*
 * vta_row_walk: the DRAM side of one LOAD or STORE, shared by vta_loader and
 * vta_store: its range checks and its row requests.  The block is y_size rows
 * of x_size elements, x_stride elements apart from dram_base in DRAM, and
 * area consecutive scratchpad entries from sram_base: with PADS (a LOAD) the
 * padded x_total * y_total, else (a STORE) x_size * y_size.
 *
 *   size   (a cycle with the fields valid; repeating it is harmless) the
 *          products, registered (DSP outputs): area, elems =
 *          x_size * y_size, the span of the rows (y_size - 1) * x_stride,
 *          whether the rows are contiguous, x_stride in bytes.
 *   check  (the cycles after the last size cycle) in the first, the range
 *          checks into registers and the walk back to its first row; from
 *          the second on, `checked` and the verdict: sram_bad when
 *          sram_base + area > the scratchpad's depth, dram_bad when the last
 *          element's end lies beyond MEM_SIZE (compared in elements: end *
 *          2**k > MEM_SIZE exactly when end > floor(MEM_SIZE / 2**k)).
 *   run    requests go out on req_valid / req_ready: one per row of x_size
 *          elements, or one of x_size * y_size for the whole block when the
 *          rows are contiguous (one row, or x_stride == x_size).
 *
 * The element size and the scratchpad depth come from parameters, one per
 * memory type the walk serves (N of them, chosen at run time by the one-hot
 * `sel`; with N = 1 they are constants and `sel` is ignored).  Byte addresses
 * are kept in RW = log2(MEM_SIZE) bits: every request of a block that passed
 * the DRAM check lies below MEM_SIZE.
 */
`include "vta_isa.vh"

module vta_row_walk #(
    // AXI address width
    parameter ADDR_WIDTH = 32,
    // device-memory bytes; a block reaching beyond is dram_bad
    parameter [63:0] MEM_SIZE = 64'h10000000,
    // memory types served (1..4)
    parameter N = 1,
    // per memory type m, bits [8*m +: 8]: log2 of its element size in bytes
    parameter [8*N-1:0] LOG_ELEM_BYTES = 8'd4,
    // per memory type m, bits [8*m +: 8]: log2 of its scratchpad depth in entries
    parameter [8*N-1:0] LOG_DEPTH = 8'd11,
    // 1: the scratchpad block includes the pads (LOAD); 0: it is x_size * y_size (STORE)
    parameter PADS = 1
) (
    input  wire                  clk,
    input  wire                  rst,

    // the instruction's fields (stable from the first size cycle to the end of run)
    input  wire [N-1:0]          sel,
    input  wire [`VTA_MEM_SRAM_BASE_W-1:0] sram_base,
    input  wire [`VTA_MEM_DRAM_BASE_W-1:0] dram_base,
    input  wire [`VTA_MEM_Y_SIZE_W-1:0]    y_size,
    input  wire [`VTA_MEM_X_SIZE_W-1:0]    x_size,
    input  wire [`VTA_MEM_X_STRIDE_W-1:0]  x_stride,
    // the padded block's width and height (PADS; unused without)
    input  wire [`VTA_MEM_X_SIZE_W:0]      x_total,
    input  wire [`VTA_MEM_Y_SIZE_W:0]      y_total,

    // phases (see above)
    input  wire                  size,
    input  wire                  check,
    input  wire                  run,

    // registered results
    output wire [`VTA_MEM_X_SIZE_W+`VTA_MEM_Y_SIZE_W-1:0] elems,
    output wire                  checked,
    output wire                  sram_bad,
    output wire                  dram_bad,

    // row requests: byte address (element aligned), elements
    output wire                  req_valid,
    input  wire                  req_ready,
    output wire [ADDR_WIDTH-1:0] req_addr,
    output wire [`VTA_MEM_X_SIZE_W+`VTA_MEM_Y_SIZE_W-1:0] req_n
);

localparam XW = `VTA_MEM_X_SIZE_W;
localparam YW = `VTA_MEM_Y_SIZE_W;
localparam SW = `VTA_MEM_SRAM_BASE_W;
localparam BW = `VTA_MEM_DRAM_BASE_W;
localparam TW = `VTA_MEM_X_STRIDE_W;
localparam AW = XW + YW + 2;                      // area (padded sizes: one bit more each)
localparam EW = XW + YW;                          // elems, req_n
localparam PW = YW + TW;                          // span of the rows
localparam NW = ((BW > PW) ? BW : PW) + 2;        // last element's end, in elements
localparam DW = ((SW > AW) ? SW : AW) + 1;        // sram_base + area
// bits of a byte address below MEM_SIZE (at least 12: a page)
localparam MB = $clog2(MEM_SIZE);
localparam RW = (MB < 12) ? 12 : MB;

integer c;
initial begin
    if (N < 1 || N > 4) begin
        $display("%m: N must be in 1..4, not %0d", N);
        $finish;
    end
    if (PADS != 0 && PADS != 1) begin
        $display("%m: PADS must be 0 or 1, not %0d", PADS);
        $finish;
    end
    if (RW > ADDR_WIDTH) begin
        $display("%m: MEM_SIZE (%0d) exceeds the %0d-bit address space", MEM_SIZE, ADDR_WIDTH);
        $finish;
    end
    for (c = 0; c < N; c = c + 1) begin
        if (LOG_DEPTH[8*c +: 8] > SW || LOG_ELEM_BYTES[8*c +: 8] > 16) begin
            $display("%m: memory type %0d: LOG_DEPTH %0d (at most %0d) or LOG_ELEM_BYTES %0d",
                     c, LOG_DEPTH[8*c +: 8], SW, LOG_ELEM_BYTES[8*c +: 8]);
            $finish;
        end
    end
end

// ------------------------------------------------------------ per memory type
// (a one-hot choice among constants; with N = 1, the constants themselves)
reg [DW-1:0]    depth;                   // scratchpad entries
reg [63:0]      mem_elems;               // floor(MEM_SIZE / element bytes)
reg [RW+BW-1:0] base_wide;               // dram_base in bytes
reg [RW+TW-1:0] stride_wide;             // x_stride in bytes
integer m;
always @* begin
    depth = {DW{1'b0}};
    mem_elems = 64'd0;
    base_wide = {(RW+BW){1'b0}};
    stride_wide = {(RW+TW){1'b0}};
    for (m = 0; m < N; m = m + 1) begin
        if (N == 1 || sel[m]) begin
            depth = depth | ({{(DW-1){1'b0}}, 1'b1} << LOG_DEPTH[8*m +: 8]);
            mem_elems = mem_elems | (MEM_SIZE >> LOG_ELEM_BYTES[8*m +: 8]);
            base_wide = base_wide | ({{RW{1'b0}}, dram_base} << LOG_ELEM_BYTES[8*m +: 8]);
            stride_wide = stride_wide | ({{RW{1'b0}}, x_stride} << LOG_ELEM_BYTES[8*m +: 8]);
        end
    end
end
// (bytes at or beyond 2**RW: the block fails the DRAM check)
wire [RW-1:0] base_bytes = base_wide[RW-1:0];
wire [RW-1:0] stride_bytes = stride_wide[RW-1:0];

// ------------------------------------------------------------ size
reg [EW-1:0]  elems_reg;
reg [PW-1:0]  span_reg;                  // (y_size - 1) * x_stride
reg           merged_reg;                // one request for the whole block
reg [RW-1:0]  stride_bytes_reg;

wire [YW-1:0] y_minus_1 = y_size - 1'b1;

always @(posedge clk) begin
    if (size) begin
        elems_reg <= {{YW{1'b0}}, x_size} * {{XW{1'b0}}, y_size};
        span_reg <= {{TW{1'b0}}, y_minus_1} * {{YW{1'b0}}, x_stride};
        merged_reg <= y_size == 1 || x_stride == x_size;
        stride_bytes_reg <= stride_bytes;
    end
end

wire [AW-1:0] area;
generate
if (PADS) begin : padded
    reg [AW-1:0] area_reg;
    always @(posedge clk) begin
        if (size) begin
            area_reg <= {{(YW+1){1'b0}}, x_total} * {{(XW+1){1'b0}}, y_total};
        end
    end
    assign area = area_reg;
end else begin : unpadded
    assign area = {2'b00, elems_reg};
    wire _unused_totals = &{1'b0, x_total, y_total, 1'b0};
end
endgenerate
assign elems = elems_reg;

// ------------------------------------------------------------ check
reg          checked_reg;
reg          sram_bad_reg, dram_bad_reg;
reg [EW-1:0] req_n_reg;

wire [DW-1:0] sram_end = {{(DW-SW){1'b0}}, sram_base} + {{(DW-AW){1'b0}}, area};
// the end of the last row (in elements; dram_base for an empty block)
wire [NW-1:0] dram_end = (y_size == 0) ? {{(NW-BW){1'b0}}, dram_base}
                         : {{(NW-BW){1'b0}}, dram_base} + {{(NW-PW){1'b0}}, span_reg}
                           + {{(NW-XW){1'b0}}, x_size};

always @(posedge clk) begin
    checked_reg <= check;
    if (check) begin
        sram_bad_reg <= sram_end > depth;
        dram_bad_reg <= {{(64-NW){1'b0}}, dram_end} > mem_elems;
        req_n_reg <= merged_reg ? elems_reg : {{YW{1'b0}}, x_size};
    end
    if (rst) begin
        checked_reg <= 1'b0;
    end
end

assign checked = checked_reg;
assign sram_bad = sram_bad_reg;
assign dram_bad = dram_bad_reg;

// ------------------------------------------------------------ requests
reg          active_reg, active_next;
reg [YW-1:0] rows_reg, rows_next;        // requests left
reg [RW-1:0] byte_reg, byte_next;        // byte address of the next request

assign req_valid = run && active_reg;
assign req_n = req_n_reg;
// zero-extended to ADDR_WIDTH through a wider concatenation (RW <= ADDR_WIDTH)
wire [ADDR_WIDTH+RW-1:0] req_wide = {{ADDR_WIDTH{1'b0}}, byte_reg};
assign req_addr = req_wide[ADDR_WIDTH-1:0];
wire _unused_ok = &{1'b0, req_wide[ADDR_WIDTH+RW-1:ADDR_WIDTH], base_wide[RW+BW-1:RW],
                    stride_wide[RW+TW-1:RW], 1'b0};

always @* begin
    active_next = active_reg;
    rows_next = rows_reg;
    byte_next = byte_reg;
    if (check) begin
        // back to the first row
        active_next = y_size != 0;
        rows_next = merged_reg ? {{(YW-1){1'b0}}, 1'b1} : y_size;
        byte_next = base_bytes;
    end else if (req_valid && req_ready) begin
        // the next row
        byte_next = byte_reg + stride_bytes_reg;
        rows_next = rows_reg - 1'b1;
        if (rows_reg == 1) begin
            active_next = 1'b0;
        end
    end
end

always @(posedge clk) begin
    active_reg <= active_next;
    rows_reg <= rows_next;
    byte_reg <= byte_next;
    if (rst) begin
        active_reg <= 1'b0;
    end
end

endmodule

`resetall

`resetall
`timescale 1ns / 1ps
`default_nettype none

/*
 * vta_load: the load engine.  Executes, in order, the LOAD instructions with
 * memory_type INP or WGT that fetch dispatched to it: takes the g2l token
 * when pop_next_dep is set, moves the 2-D block (with zero padding) from DRAM
 * into the INP or WGT scratchpad through vta_loader and one DMA read stream
 * per memory type, and pushes an l2g token when push_next_dep is set.
 * x_size == 0 is a no-op that still honours its flags.  The *_prev flags do
 * not exist for this engine: a LOAD that sets one is a BAD_DEP_FLAG fault,
 * checked before any token is taken (as the golden model does).
 */
`include "vta_isa.vh"

module vta_load #(
    // log2 of the element widths in bits
    parameter LOG_INP_WIDTH = 3,
    parameter LOG_WGT_WIDTH = 3,
    // GEMM core shape: BATCH x BLOCK x BLOCK
    parameter LOG_BATCH = 0,
    parameter LOG_BLOCK = 4,
    // log2 of the INP and WGT scratchpad sizes in bytes
    parameter LOG_INP_BUFF_SIZE = 15,
    parameter LOG_WGT_BUFF_SIZE = 18,
    // log2 of the DRAM data-bus width in bits
    parameter LOG_BUS_WIDTH = 6,
    // AXI address width
    parameter ADDR_WIDTH = 32,
    // bits of a DMA beat count
    parameter BEATS_WIDTH = 48,
    // device-memory bytes (DRAM range check)
    parameter [63:0] MEM_SIZE = 64'h10000000
) (
    input  wire                  clk,
    input  wire                  rst,
    input  wire                  run,
    input  wire                  halt,

    // command queue: {index, instruction} (vta_isa.vh: VTA_CMD_*)
    input  wire                  cmd_valid,
    output wire                  cmd_ready,
    input  wire [`VTA_CMD_W-1:0] cmd_data,

    // tokens
    input  wire                  g2l_nonempty,
    output reg                   g2l_pop,
    input  wire                  l2g_full,
    output reg                   l2g_push,

    // DMA read clients: 0 INP, 1 WGT
    output wire [1:0]            dma_req_valid,
    input  wire [1:0]            dma_req_ready,
    output wire [2*ADDR_WIDTH-1:0] dma_req_addr,
    output wire [2*BEATS_WIDTH-1:0] dma_req_beats,
    input  wire [1:0]            dma_rd_valid,
    output wire [1:0]            dma_rd_ready,
    input  wire [(1<<LOG_BUS_WIDTH)-1:0] dma_rd_data,

    // scratchpad writes
    output wire                  inp_we,
    output wire [LOG_INP_BUFF_SIZE-(LOG_BATCH+LOG_BLOCK+LOG_INP_WIDTH-3)-1:0] inp_waddr,
    output wire [(1<<(LOG_BATCH+LOG_BLOCK+LOG_INP_WIDTH))-1:0] inp_wdata,
    output wire                  wgt_we,
    output wire [LOG_WGT_BUFF_SIZE-(2*LOG_BLOCK+LOG_WGT_WIDTH-3)-1:0] wgt_waddr,
    output wire [(1<<(2*LOG_BLOCK+LOG_WGT_WIDTH))-1:0] wgt_wdata,

    // faults, trace, status
    output reg                   err,
    output reg  [7:0]            err_code,
    output wire [31:0]           index,
    output reg                   evt_start,
    output reg                   evt_retire,
    output wire                  idle,
    output wire                  stall,
    output wire                  busy,
    output reg  [31:0]           inp_bytes,
    output reg  [31:0]           wgt_bytes
);

`include "vta_regs.vh"

localparam LOG_INP_BYTES = LOG_BATCH + LOG_BLOCK + LOG_INP_WIDTH - 3;
localparam LOG_WGT_BYTES = 2 * LOG_BLOCK + LOG_WGT_WIDTH - 3;
localparam LOG_INP_DEPTH = LOG_INP_BUFF_SIZE - LOG_INP_BYTES;
localparam LOG_WGT_DEPTH = LOG_WGT_BUFF_SIZE - LOG_WGT_BYTES;
localparam integer INP_W = 8 << LOG_INP_BYTES;
localparam integer WGT_W = 8 << LOG_WGT_BYTES;

localparam STATE_IDLE   = 3'd0;
localparam STATE_POP    = 3'd1;
localparam STATE_EXEC   = 3'd2;
localparam STATE_WAIT   = 3'd3;
localparam STATE_RETIRE = 3'd4;

reg [2:0]   state_reg, state_next;
reg [`VTA_INSN_W-1:0] insn_reg, insn_next;
reg [`VTA_CMD_INDEX_W-1:0] index_reg, index_next;

// the LOAD/STORE fields of insn_reg, one wire each (generated from vta/isa.py)
`include "vta_mem_fields.vh"
wire        is_wgt    = mem_type == `VTA_MEM_WGT;

// ------------------------------------------------------------ the sequencer
reg         ld_start;
wire        ld_done;
wire        ld_err;
wire [7:0]  ld_err_code;
wire        ld_req_valid;
wire        ld_req_ready;
wire [ADDR_WIDTH-1:0] ld_req_addr;
wire [`VTA_MEM_X_SIZE_W+`VTA_MEM_Y_SIZE_W-1:0] ld_req_n;
wire        ld_data_valid;
wire        ld_data_ready;
wire        ld_wr_en;
wire [`VTA_MEM_SRAM_BASE_W-1:0] ld_wr_idx;
wire        ld_wr_pad;
wire        ld_busy;
// elements moved, for the byte counters (the sequencer's registered product)
wire [`VTA_MEM_X_SIZE_W+`VTA_MEM_Y_SIZE_W-1:0] ld_elems;

vta_loader #(
    .ADDR_WIDTH(ADDR_WIDTH),
    .MEM_SIZE(MEM_SIZE),
    // memory types: 0 INP, 1 WGT
    .N(2),
    .LOG_ELEM_BYTES({LOG_WGT_BYTES[7:0], LOG_INP_BYTES[7:0]}),
    .LOG_DEPTH({LOG_WGT_DEPTH[7:0], LOG_INP_DEPTH[7:0]})
) loader (
    .clk(clk),
    .rst(rst),
    .halt(halt),
    .start(ld_start),
    .sel({is_wgt, !is_wgt}),
    .sram_base(sram_base),
    .dram_base(dram_base),
    .y_size(y_size),
    .x_size(x_size),
    .x_stride(x_stride),
    .y_pad_0(y_pad_0),
    .y_pad_1(y_pad_1),
    .x_pad_0(x_pad_0),
    .x_pad_1(x_pad_1),
    .busy(ld_busy),
    .done(ld_done),
    .elems(ld_elems),
    .err(ld_err),
    .err_code(ld_err_code),
    .req_valid(ld_req_valid),
    .req_ready(ld_req_ready),
    .req_addr(ld_req_addr),
    .req_n(ld_req_n),
    .data_valid(ld_data_valid),
    .data_ready(ld_data_ready),
    .wr_en(ld_wr_en),
    .wr_idx(ld_wr_idx),
    .wr_pad(ld_wr_pad)
);

// ------------------------------------------------------ DMA element streams
wire             inp_req_ready;
wire             inp_elem_valid;
wire [INP_W-1:0] inp_elem_data;
wire             wgt_req_ready;
wire             wgt_elem_valid;
wire [WGT_W-1:0] wgt_elem_data;

vta_dma_rd_port #(
    .LOG_ELEM_BYTES(LOG_INP_BYTES),
    .LOG_BUS_WIDTH(LOG_BUS_WIDTH),
    .ADDR_WIDTH(ADDR_WIDTH),
    .BEATS_WIDTH(BEATS_WIDTH)
) inp_port (
    .clk(clk),
    .rst(rst),
    .halt(halt),
    .req_valid(ld_req_valid && !is_wgt),
    .req_ready(inp_req_ready),
    .req_addr(ld_req_addr),
    .req_n(ld_req_n),
    .dma_req_valid(dma_req_valid[0]),
    .dma_req_ready(dma_req_ready[0]),
    .dma_req_addr(dma_req_addr[0 +: ADDR_WIDTH]),
    .dma_req_beats(dma_req_beats[0 +: BEATS_WIDTH]),
    .beat_valid(dma_rd_valid[0]),
    .beat_ready(dma_rd_ready[0]),
    .beat_data(dma_rd_data),
    .elem_valid(inp_elem_valid),
    .elem_ready(ld_data_ready && !is_wgt),
    .elem_data(inp_elem_data)
);

vta_dma_rd_port #(
    .LOG_ELEM_BYTES(LOG_WGT_BYTES),
    .LOG_BUS_WIDTH(LOG_BUS_WIDTH),
    .ADDR_WIDTH(ADDR_WIDTH),
    .BEATS_WIDTH(BEATS_WIDTH)
) wgt_port (
    .clk(clk),
    .rst(rst),
    .halt(halt),
    .req_valid(ld_req_valid && is_wgt),
    .req_ready(wgt_req_ready),
    .req_addr(ld_req_addr),
    .req_n(ld_req_n),
    .dma_req_valid(dma_req_valid[1]),
    .dma_req_ready(dma_req_ready[1]),
    .dma_req_addr(dma_req_addr[ADDR_WIDTH +: ADDR_WIDTH]),
    .dma_req_beats(dma_req_beats[BEATS_WIDTH +: BEATS_WIDTH]),
    .beat_valid(dma_rd_valid[1]),
    .beat_ready(dma_rd_ready[1]),
    .beat_data(dma_rd_data),
    .elem_valid(wgt_elem_valid),
    .elem_ready(ld_data_ready && is_wgt),
    .elem_data(wgt_elem_data)
);

assign ld_req_ready = is_wgt ? wgt_req_ready : inp_req_ready;
// indices beyond the buffer depth fail the range check first
wire _unused_ok = &{1'b0, ld_wr_idx, ld_done, 1'b0};
assign ld_data_valid = is_wgt ? wgt_elem_valid : inp_elem_valid;

assign inp_we = ld_wr_en && !is_wgt;
assign inp_waddr = ld_wr_idx[LOG_INP_DEPTH-1:0];
assign inp_wdata = ld_wr_pad ? {INP_W{1'b0}} : inp_elem_data;
assign wgt_we = ld_wr_en && is_wgt;
assign wgt_waddr = ld_wr_idx[LOG_WGT_DEPTH-1:0];
assign wgt_wdata = ld_wr_pad ? {WGT_W{1'b0}} : wgt_elem_data;

// ------------------------------------------------------------ instruction FSM
assign cmd_ready = state_reg == STATE_IDLE && run;
assign index = index_reg;
assign idle = state_reg == STATE_IDLE;
assign stall = state_reg == STATE_POP && !(pop_prev || push_prev) && pop_next && !g2l_nonempty;
assign busy = !idle && !stall;

always @* begin
    state_next = state_reg;
    insn_next = insn_reg;
    index_next = index_reg;
    g2l_pop = 1'b0;
    l2g_push = 1'b0;
    ld_start = 1'b0;
    err = 1'b0;
    err_code = `VTA_ERR_NONE;
    evt_start = 1'b0;
    evt_retire = 1'b0;
    inp_bytes = 32'd0;
    wgt_bytes = 32'd0;

    case (state_reg)
        STATE_IDLE: begin
            // waits for an instruction
            if (cmd_valid && cmd_ready) begin
                insn_next = cmd_data[`VTA_INSN_W-1:0];
                index_next = cmd_data[`VTA_CMD_INDEX_LO +: `VTA_CMD_INDEX_W];
                state_next = STATE_POP;
            end
        end
        STATE_POP: begin
            // checks the flags, then waits for the g2l token
            if (pop_prev || push_prev) begin
                err = 1'b1;
                err_code = `VTA_ERR_BAD_DEP_FLAG;
                state_next = STATE_IDLE;
            end else if (!pop_next || g2l_nonempty) begin
                g2l_pop = pop_next;
                evt_start = 1'b1;
                state_next = STATE_EXEC;
            end
        end
        STATE_EXEC: begin
            // starts the transfer (x_size 0: no-op)
            if (x_size == 0) begin
                state_next = STATE_RETIRE;
            end else begin
                ld_start = 1'b1;
                state_next = STATE_WAIT;
            end
        end
        STATE_WAIT: begin
            // waits for the sequencer (its fault comes a cycle after it went idle:
            // checked first)
            if (ld_err) begin
                err = 1'b1;
                err_code = ld_err_code;
                state_next = STATE_IDLE;
            end else if (!ld_busy) begin
                // (the sequencer is back in idle: done; a cycle after its last
                // write, so the read data's handshake does not reach this state)
                state_next = STATE_RETIRE;
            end
        end
        STATE_RETIRE: begin
            // pushes l2g and retires
            if (push_next && l2g_full) begin
                err = 1'b1;
                err_code = `VTA_ERR_TOKEN_OVERFLOW;
                state_next = STATE_IDLE;
            end else begin
                l2g_push = push_next;
                evt_retire = 1'b1;
                if (x_size != 0) begin
                    if (is_wgt) begin
                        wgt_bytes = ld_elems << LOG_WGT_BYTES;
                    end else begin
                        inp_bytes = ld_elems << LOG_INP_BYTES;
                    end
                end
                state_next = STATE_IDLE;
            end
        end
        default: begin
            state_next = STATE_IDLE;
        end
    endcase

    if (halt) begin
        state_next = STATE_IDLE;
    end
end

always @(posedge clk) begin
    state_reg <= state_next;
    insn_reg <= insn_next;
    index_reg <= index_next;
    if (rst) begin
        state_reg <= STATE_IDLE;
        insn_reg <= {`VTA_INSN_W{1'b0}};
        index_reg <= {`VTA_CMD_INDEX_W{1'b0}};
    end
end

endmodule

`resetall

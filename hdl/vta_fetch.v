`resetall
`timescale 1ns / 1ps
`default_nettype none

/*
 * vta_fetch: reads INSN_COUNT 128-bit instructions from INSN_ADDR through
 * one DMA read stream and dispatches each, in order, to the command queue of
 * its engine (vta-reference 3.8): STORE -> store; LOAD of INP or WGT ->
 * load; every other LOAD, GEMM, ALU and FINISH -> compute.  An undefined
 * opcode (5..7) is a BAD_OPCODE fault at that index, and nothing from it on
 * is dispatched.  A stream reaching beyond MEM_SIZE is a DRAM_RANGE fault
 * before anything is read (ERR_INDEX = 0xFFFFFFFF, as the golden model has
 * no index for it).  INSN_ADDR is taken as 16-byte aligned (bits 3:0 ignored).
 *
 * Reads go out in chunks of up to CHUNK instructions, only while every
 * command queue has room for all instructions requested and not yet
 * dispatched, so returning data never waits on an engine (the shared read
 * channel cannot block on a full queue).  Queue entries are {index, insn}.
 *
 * On a bus wider than an instruction (256 bits and up) the instructions pass a
 * register slice (vta_skid) between the read port's lane mux and the dispatch,
 * so the target queue's ready does not reach back through the lane mux to the
 * read engine in one cycle; it costs a cycle of latency, not throughput.
 */
`include "vta_isa.vh"

module vta_fetch #(
    // log2 of the DRAM data-bus width in bits
    parameter LOG_BUS_WIDTH = 6,
    // AXI address width
    parameter ADDR_WIDTH = 32,
    // bits of a DMA beat count
    parameter BEATS_WIDTH = 48,
    // log2 of the command-queue depth
    parameter LOG_QUEUE_DEPTH = 9,
    // instructions per read request
    parameter CHUNK = 16,
    // device-memory bytes (DRAM range check)
    parameter [63:0] MEM_SIZE = 64'h10000000
) (
    input  wire                  clk,
    input  wire                  rst,
    input  wire                  start,
    input  wire                  halt,
    input  wire [63:0]           insn_addr,
    input  wire [31:0]           insn_count,

    // DMA read client
    output wire                  dma_req_valid,
    input  wire                  dma_req_ready,
    output wire [ADDR_WIDTH-1:0] dma_req_addr,
    output wire [BEATS_WIDTH-1:0] dma_req_beats,
    input  wire                  dma_rd_valid,
    output wire                  dma_rd_ready,
    input  wire [(1<<LOG_BUS_WIDTH)-1:0] dma_rd_data,

    // command queues: {index, instruction}, and their occupancy
    output wire                  ld_valid,
    input  wire                  ld_ready,
    input  wire [LOG_QUEUE_DEPTH+1:0] ld_count,
    output wire                  cmp_valid,
    input  wire                  cmp_ready,
    input  wire [LOG_QUEUE_DEPTH+1:0] cmp_count,
    output wire                  st_valid,
    input  wire                  st_ready,
    input  wire [LOG_QUEUE_DEPTH+1:0] st_count,
    output wire [`VTA_CMD_W-1:0] cmd_data,

    // faults, trace, status
    output reg                   err,
    output reg  [7:0]            err_code,
    output reg  [31:0]           err_index,
    output wire                  evt_valid,
    output wire [31:0]           evt_index,
    output wire [31:0]           dispatched,
    output wire                  done,
    output wire                  quiet
);

`include "vta_regs.vh"

localparam integer DEPTH = 1 << LOG_QUEUE_DEPTH;
localparam QW = LOG_QUEUE_DEPTH + 2;

initial begin
    if (CHUNK < 1 || CHUNK > DEPTH) begin
        $display("%m: CHUNK (%0d) must be in 1..%0d", CHUNK, DEPTH);
        $finish;
    end
end

localparam STATE_IDLE  = 2'd0;
localparam STATE_CHECK = 2'd1;
localparam STATE_RUN   = 2'd2;

reg [1:0]  state_reg, state_next;
reg [31:0] requested_reg, requested_next;
reg [31:0] dispatched_reg, dispatched_next;
reg        done_reg, done_next;

// ------------------------------------------------------------ requests
wire [63:0] base = {insn_addr[63:4], 4'd0};
wire [63:0] req_byte = base + {28'd0, requested_reg, 4'd0};
wire [31:0] remaining = insn_count - requested_reg;
wire [31:0] req_n = (remaining < CHUNK) ? remaining : CHUNK;
wire [31:0] outstanding = requested_reg - dispatched_reg;

// INSN_ADDR is 16-byte aligned; addresses beyond ADDR_WIDTH fail the range check
// (widened first, so the range is not empty when ADDR_WIDTH is 64)
wire [127:0] req_byte_wide = {64'd0, req_byte};
wire _unused_ok = &{1'b0, insn_addr[3:0], req_byte_wide[127:ADDR_WIDTH], 1'b0};

// Room: every queue must have room for the instructions requested and not
// yet dispatched plus the new request: count_q + outstanding + req_n <= DEPTH
// for the fullest queue q.  The decision comes from registers, two stages:
// fill_reg = max count + outstanding, then go_reg.  count_q + outstanding
// never grows but by a request (a dispatch moves one instruction from
// `outstanding` into a queue, engines take them out), so values one or two
// cycles old are safe as long as no request went out in those cycles.
wire [QW-1:0] max_lc = (ld_count > cmp_count) ? ld_count : cmp_count;
wire [QW-1:0] max_count = (st_count > max_lc) ? st_count : max_lc;
reg  [32:0]  fill_reg;                   // max count + outstanding
reg          go_reg;                     // something remains, and room
reg  [31:0]  req_n_reg;
reg          took_reg, took2_reg;        // a request went out one / two cycles ago
// (req_n_reg: this cycle's req_n unless a request went out last cycle, which blocks anyway;
// req_n is 0 exactly when nothing remains)
wire room = {1'b0, fill_reg} + {2'b0, req_n_reg} <= {{(34-QW-1){1'b0}}, DEPTH[QW:0]};

// ------------------------------------------------------------ element stream
wire         req_valid = state_reg == STATE_RUN && go_reg && !took_reg && !took2_reg;
wire         req_ready;
// the port's instruction stream, and the one dispatched (through a slice on a wide bus)
wire         port_valid;
wire         port_ready;
wire [`VTA_INSN_W-1:0] port_insn;
wire         insn_valid;
wire         insn_ready;
wire [`VTA_INSN_W-1:0] insn;

vta_dma_rd_port #(
    .LOG_ELEM_BYTES(4),
    .LOG_BUS_WIDTH(LOG_BUS_WIDTH),
    .ADDR_WIDTH(ADDR_WIDTH),
    .BEATS_WIDTH(BEATS_WIDTH)
) port (
    .clk(clk),
    .rst(rst),
    .halt(halt),
    .req_valid(req_valid),
    .req_ready(req_ready),
    .req_addr(req_byte_wide[ADDR_WIDTH-1:0]),
    .req_n(req_n_reg),
    .dma_req_valid(dma_req_valid),
    .dma_req_ready(dma_req_ready),
    .dma_req_addr(dma_req_addr),
    .dma_req_beats(dma_req_beats),
    .beat_valid(dma_rd_valid),
    .beat_ready(dma_rd_ready),
    .beat_data(dma_rd_data),
    .elem_valid(port_valid),
    .elem_ready(port_ready),
    .elem_data(port_insn)
);

generate
if (LOG_BUS_WIDTH > 7) begin : slice
    vta_skid #(
        .WIDTH(`VTA_INSN_W)
    ) skid (
        .clk(clk),
        .rst(rst || halt),
        .s_valid(port_valid),
        .s_ready(port_ready),
        .s_data(port_insn),
        .m_valid(insn_valid),
        .m_ready(insn_ready),
        .m_data(insn)
    );
end else begin : direct
    assign insn_valid = port_valid;
    assign port_ready = insn_ready;
    assign insn = port_insn;
end
endgenerate

// ------------------------------------------------------------ dispatch
wire [`VTA_MEM_OPCODE_W-1:0] opcode = insn[`VTA_MEM_OPCODE_LO +: `VTA_MEM_OPCODE_W];
wire [`VTA_MEM_MEMORY_TYPE_W-1:0] mem_type = insn[`VTA_MEM_MEMORY_TYPE_LO +: `VTA_MEM_MEMORY_TYPE_W];
wire to_st = opcode == `VTA_OPCODE_STORE;
wire to_ld = opcode == `VTA_OPCODE_LOAD && (mem_type == `VTA_MEM_INP || mem_type == `VTA_MEM_WGT);
wire to_cmp = !to_st && !to_ld;
wire bad_op = opcode > `VTA_OPCODE_ALU;
wire running = state_reg == STATE_RUN;
wire target_ready = to_st ? st_ready : to_ld ? ld_ready : cmp_ready;

assign insn_ready = running && !bad_op && target_ready;
wire dispatch = insn_valid && insn_ready;
assign ld_valid = running && insn_valid && !bad_op && to_ld;
assign cmp_valid = running && insn_valid && !bad_op && to_cmp;
assign st_valid = running && insn_valid && !bad_op && to_st;
assign cmd_data = {dispatched_reg, insn};

assign evt_valid = dispatch;
assign evt_index = dispatched_reg;
assign dispatched = dispatched_reg;
assign done = done_reg;
assign quiet = !running || (outstanding == 32'd0 && !req_valid);

wire [64:0] stream_end = {1'b0, base} + {29'd0, insn_count, 4'd0};
// the range check, registered: INSN_ADDR and INSN_COUNT are written before START, so
// last cycle's verdict holds in STATE_CHECK
reg         stream_bad_reg;

always @* begin
    state_next = state_reg;
    requested_next = requested_reg;
    dispatched_next = dispatched_reg;
    done_next = done_reg;
    err = 1'b0;
    err_code = `VTA_ERR_NONE;
    err_index = dispatched_reg;

    case (state_reg)
        STATE_IDLE: begin
            // waits for START
            if (start) begin
                requested_next = 32'd0;
                dispatched_next = 32'd0;
                done_next = 1'b0;
                state_next = STATE_CHECK;
            end
        end
        STATE_CHECK: begin
            // the whole stream must lie in device memory
            if (stream_bad_reg) begin
                err = 1'b1;
                err_code = `VTA_ERR_DRAM_RANGE;
                err_index = 32'hFFFFFFFF;
                state_next = STATE_IDLE;
            end else if (insn_count == 32'd0) begin
                done_next = 1'b1;
                state_next = STATE_IDLE;
            end else begin
                state_next = STATE_RUN;
            end
        end
        STATE_RUN: begin
            // requests chunks, dispatches instructions
            if (req_valid && req_ready) begin
                requested_next = requested_reg + req_n_reg;
            end
            if (insn_valid && bad_op) begin
                err = 1'b1;
                err_code = `VTA_ERR_BAD_OPCODE;
                state_next = STATE_IDLE;
            end else if (dispatch) begin
                dispatched_next = dispatched_reg + 32'd1;
                if (dispatched_reg == insn_count - 32'd1) begin
                    done_next = 1'b1;
                    state_next = STATE_IDLE;
                end
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
    stream_bad_reg <= stream_end > {1'b0, MEM_SIZE};
    fill_reg <= {{(33-QW){1'b0}}, max_count} + {1'b0, outstanding};
    go_reg <= req_n_reg != 32'd0 && room;
    req_n_reg <= req_n;
    took_reg <= req_valid && req_ready;
    took2_reg <= took_reg;
    // a new run's first request waits until every decision is from its own values
    // (not the last run's), so a run takes the same cycles whatever ran before
    if (state_reg == STATE_IDLE) begin
        took_reg <= 1'b1;
        took2_reg <= 1'b1;
    end
    state_reg <= state_next;
    requested_reg <= requested_next;
    dispatched_reg <= dispatched_next;
    done_reg <= done_next;
    if (rst) begin
        state_reg <= STATE_IDLE;
        requested_reg <= 32'd0;
        dispatched_reg <= 32'd0;
        done_reg <= 1'b0;
        took_reg <= 1'b0;
        took2_reg <= 1'b0;
    end
end

endmodule

`resetall

`resetall
`timescale 1ns / 1ps
`default_nettype none

/*
 * vta_store: the store engine.  Executes, in order, the STORE instructions:
 * takes the g2s token when pop_prev_dep is set, copies x_size * y_size
 * consecutive OUT entries from sram_base to DRAM rows of x_size elements
 * x_stride elements apart (one write request per row, or one for the whole
 * block when the rows are contiguous), waits until every write response is
 * back, and pushes an s2g token when push_prev_dep is set.
 *
 * Faults, checked before any token is taken (flags) or any byte is written
 * (the rest; two cycles, the range checks registered), in the golden model's
 * order: *_next flags -> BAD_DEP_FLAG; x_size == 0 is a no-op; memory_type !=
 * OUT -> BAD_MEMORY_TYPE; a non-zero pad -> STORE_PAD; OUT range ->
 * SRAM_RANGE; DRAM range -> DRAM_RANGE.
 *
 * The range checks and the row requests are vta_row_walk's (shared with
 * vta_loader); this module adds the OUT reads and the beats: OUT elements
 * narrower than the bus are packed into beats with byte strobes (a row may
 * start and end in the middle of a beat); wider ones are split into several
 * full beats.
 */
`include "vta_isa.vh"

module vta_store #(
    // log2 of the OUT element width in bits (= LOG_INP_WIDTH)
    parameter LOG_OUT_WIDTH = 3,
    // GEMM core shape: BATCH x BLOCK x BLOCK
    parameter LOG_BATCH = 0,
    parameter LOG_BLOCK = 4,
    // log2 of the OUT scratchpad size in bytes
    parameter LOG_OUT_BUFF_SIZE = 15,
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
    input  wire                  g2s_nonempty,
    output reg                   g2s_pop,
    input  wire                  s2g_full,
    output reg                   s2g_push,

    // OUT scratchpad read port
    output wire                  out_re,
    output wire [LOG_OUT_BUFF_SIZE-(LOG_BATCH+LOG_BLOCK+LOG_OUT_WIDTH-3)-1:0] out_raddr,
    input  wire [(1<<(LOG_BATCH+LOG_BLOCK+LOG_OUT_WIDTH))-1:0] out_rdata,

    // DMA write client
    output wire                  dma_req_valid,
    input  wire                  dma_req_ready,
    output wire [ADDR_WIDTH-1:0] dma_req_addr,
    output wire [BEATS_WIDTH-1:0] dma_req_beats,
    output wire                  dma_wr_valid,
    input  wire                  dma_wr_ready,
    output wire [(1<<LOG_BUS_WIDTH)-1:0]     dma_wr_data,
    output wire [(1<<(LOG_BUS_WIDTH-3))-1:0] dma_wr_strb,
    input  wire                  dma_idle,

    // faults, trace, status
    output reg                   err,
    output reg  [7:0]            err_code,
    output wire [31:0]           index,
    output reg                   evt_start,
    output reg                   evt_retire,
    output wire                  idle,
    output wire                  stall,
    output wire                  busy,
    output reg  [31:0]           out_bytes
);

`include "vta_regs.vh"

localparam LOG_EB = LOG_BATCH + LOG_BLOCK + LOG_OUT_WIDTH - 3;
localparam LOG_DEPTH = LOG_OUT_BUFF_SIZE - LOG_EB;
localparam integer EW = 8 << LOG_EB;
localparam integer DW = 1 << LOG_BUS_WIDTH;
localparam LOG_BUS_BYTES = LOG_BUS_WIDTH - 3;
localparam integer SW = 1 << LOG_BUS_BYTES;
localparam NARROW = LOG_EB < LOG_BUS_BYTES;
// elements per beat (narrow) / beats per element (wide), as logs
localparam LOG_K = NARROW ? LOG_BUS_BYTES - LOG_EB : 0;
localparam R_LOG = NARROW ? 0 : LOG_EB - LOG_BUS_BYTES;
localparam integer K = 1 << LOG_K;
localparam integer R = 1 << R_LOG;
localparam [R_LOG:0] R_LAST = R[R_LOG:0] - 1'b1;
// bits of a lane number (at least one)
localparam LW = NARROW ? LOG_K : 1;
// bits of an element count (x_size * y_size) and of an OUT index
localparam CW = `VTA_MEM_X_SIZE_W + `VTA_MEM_Y_SIZE_W;
localparam IW = `VTA_MEM_SRAM_BASE_W;

localparam STATE_IDLE   = 3'd0;
localparam STATE_POP    = 3'd1;
localparam STATE_CHECK  = 3'd2;
localparam STATE_RUN    = 3'd3;
localparam STATE_RETIRE = 3'd4;

reg [2:0]   state_reg, state_next;
reg [`VTA_INSN_W-1:0] insn_reg, insn_next;
reg [`VTA_CMD_INDEX_W-1:0] index_reg, index_next;

// the LOAD/STORE fields of insn_reg, one wire each (generated from vta/isa.py)
`include "vta_mem_fields.vh"
wire        pads      = |{y_pad_0, y_pad_1, x_pad_0, x_pad_1};

// ------------------------------------------------------------ range checks and requests
// vta_row_walk (shared with vta_loader): the products in STATE_POP (DSP outputs
// registered), the range checks in the first cycle of STATE_CHECK (the second
// gives the verdict), one write request per row (or one for the block) in STATE_RUN
wire [CW-1:0] total;                     // x_size * y_size
wire          checked;                   // STATE_CHECK: the range flags are valid
wire          sram_bad, dram_bad;
wire [CW-1:0] seg_n;                     // elements per request
wire          rq_valid;
wire [ADDR_WIDTH-1:0] rq_addr;           // byte address of the request

vta_row_walk #(
    .ADDR_WIDTH(ADDR_WIDTH), .MEM_SIZE(MEM_SIZE), .N(1),
    .LOG_ELEM_BYTES(LOG_EB[7:0]), .LOG_DEPTH(LOG_DEPTH[7:0]), .PADS(0)
) walk (
    .clk(clk), .rst(rst),
    .sel(1'b1), .sram_base(sram_base), .dram_base(dram_base),
    .y_size(y_size), .x_size(x_size), .x_stride(x_stride),
    .x_total({1'b0, x_size}), .y_total({1'b0, y_size}),
    .size(state_reg == STATE_POP), .check(state_reg == STATE_CHECK),
    .run(state_reg == STATE_RUN),
    .elems(total), .checked(checked), .sram_bad(sram_bad), .dram_bad(dram_bad),
    .req_valid(rq_valid), .req_ready(dma_req_ready), .req_addr(rq_addr), .req_n(seg_n)
);

// seg_n - 1, registered in STATE_CHECK (seg_n is final from its second cycle)
reg  [CW-1:0] seg_last_reg;

// ------------------------------------------------------------ requests
// a row's first element's lane in its first beat (narrow elements)
localparam [LOG_K:0] K_M1 = K[LOG_K:0] - 1'b1;
wire [LW-1:0] rq_lane = NARROW ? rq_addr[LW+LOG_EB-1:LOG_EB] : {LW{1'b0}};
wire [CW+1:0] rq_narrow_beats = ({2'b00, seg_n} + {{(CW+2-LW){1'b0}}, rq_lane}
                                 + {{(CW+1-LOG_K){1'b0}}, K_M1}) >> LOG_K;
// (the request address's element bits below the bus word are the lane)
wire _unused_addr = &{1'b0, rq_addr[LOG_BUS_BYTES-1:0], 1'b0};
assign dma_req_valid = rq_valid;
assign dma_req_addr = {rq_addr[ADDR_WIDTH-1:LOG_BUS_BYTES], {LOG_BUS_BYTES{1'b0}}};
assign dma_req_beats = NARROW ? {{(BEATS_WIDTH-CW-2){1'b0}}, rq_narrow_beats}
                              : {{(BEATS_WIDTH-CW){1'b0}}, seg_n} << R_LOG;

// ------------------------------------------------------------ SRAM reads
// reads are issued while the two-entry buffer has room for them
reg [CW-1:0] rd_cnt_reg, rd_cnt_next;    // elements read
reg [CW-1:0] rd_segx_reg, rd_segx_next;  // position in the current segment
reg [LW-1:0] rd_lane_reg, rd_lane_next;  // lane of the segment's first element (narrow)
reg [IW-1:0] rd_addr_reg, rd_addr_next;
reg        p_valid_reg;                  // a read in flight
reg [LW+1:0]    p_tag_reg;               // {first, last, lane0} of it
reg [LW+1:0]    rd_tag;

// two explicit entries (flip-flops straight after the OUT block RAM)
reg [EW-1:0]    b_data0_reg, b_data1_reg;
reg [LW+1:0]    b_tag0_reg, b_tag1_reg;
reg             b_wp_reg, b_rp_reg;
reg [1:0]       b_count_reg, b_count_next;

wire rd_more = rd_cnt_reg != total;
wire rd_issue = state_reg == STATE_RUN && rd_more
                && ({1'b0, b_count_reg} + {2'b0, p_valid_reg}) < 2;
assign out_re = rd_issue;
assign out_raddr = rd_addr_reg[LOG_DEPTH-1:0];

always @* begin
    rd_tag[LW+1] = rd_segx_reg == 0;
    rd_tag[LW] = rd_segx_reg == seg_last_reg;
    rd_tag[LW-1:0] = NARROW ? rd_lane_reg : {LW{1'b0}};
end

// ------------------------------------------------------------ packer
wire          h_valid = b_count_reg != 2'd0;
wire [EW-1:0] h_data = b_rp_reg ? b_data1_reg : b_data0_reg;
wire [LW+1:0] h_tag = b_rp_reg ? b_tag1_reg : b_tag0_reg;
wire          h_first = h_tag[LW+1];
wire          h_last = h_tag[LW];
wire          h_take;
reg  [CW-1:0] sent_reg, sent_next;       // elements packed

generate
if (NARROW) begin : pack_narrow
    reg [DW-1:0]    beat_reg;
    reg [SW-1:0]    strb_reg;
    reg [LOG_K-1:0] lane_reg;
    wire [LOG_K-1:0] cur_lane = h_first ? h_tag[LW-1:0] : lane_reg;
    wire emit = h_last || cur_lane == K[LOG_K-1:0] - 1'b1;
    wire [DW-1:0] merged_data = beat_reg | ({{(DW-EW){1'b0}}, h_data} << (cur_lane * EW));
    wire [SW-1:0] merged_strb = strb_reg
        | ({{(SW-(1<<LOG_EB)){1'b0}}, {(1<<LOG_EB){1'b1}}} << (cur_lane * (1 << LOG_EB)));
    assign dma_wr_valid = h_valid && emit;
    assign dma_wr_data = merged_data;
    assign dma_wr_strb = merged_strb;
    assign h_take = h_valid && (!emit || dma_wr_ready);
    always @(posedge clk) begin
        if (h_take) begin
            lane_reg <= cur_lane + 1'b1;
            if (emit) begin
                beat_reg <= {DW{1'b0}};
                strb_reg <= {SW{1'b0}};
            end else begin
                beat_reg <= merged_data;
                strb_reg <= merged_strb;
            end
        end
        if (rst || state_reg == STATE_CHECK) begin
            beat_reg <= {DW{1'b0}};
            strb_reg <= {SW{1'b0}};
        end
    end
end else begin : pack_wide
    reg [R_LOG:0] beat_i_reg;
    assign dma_wr_valid = h_valid;
    assign dma_wr_data = h_data[beat_i_reg * DW +: DW];
    assign dma_wr_strb = {SW{1'b1}};
    assign h_take = h_valid && dma_wr_ready && beat_i_reg == R_LAST;
    // wide elements need no segment tags
    wire _unused_tags = &{1'b0, h_first, h_last, 1'b0};
    always @(posedge clk) begin
        if (dma_wr_valid && dma_wr_ready) begin
            beat_i_reg <= (beat_i_reg == R_LAST) ? {(R_LOG+1){1'b0}} : beat_i_reg + 1'b1;
        end
        if (rst || state_reg == STATE_CHECK) begin
            beat_i_reg <= {(R_LOG+1){1'b0}};
        end
    end
end
endgenerate

// ------------------------------------------------------------ instruction FSM
assign cmd_ready = state_reg == STATE_IDLE && run;
assign index = index_reg;
assign idle = state_reg == STATE_IDLE;
assign stall = state_reg == STATE_POP && !(pop_next || push_next) && pop_prev && !g2s_nonempty;
assign busy = !idle && !stall;

always @* begin
    state_next = state_reg;
    insn_next = insn_reg;
    index_next = index_reg;
    g2s_pop = 1'b0;
    s2g_push = 1'b0;
    err = 1'b0;
    err_code = `VTA_ERR_NONE;
    evt_start = 1'b0;
    evt_retire = 1'b0;
    out_bytes = 32'd0;
    rd_cnt_next = rd_cnt_reg;
    rd_segx_next = rd_segx_reg;
    rd_lane_next = rd_lane_reg;
    rd_addr_next = rd_addr_reg;
    sent_next = sent_reg;

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
            // checks the flags, then waits for the g2s token
            if (pop_next || push_next) begin
                err = 1'b1;
                err_code = `VTA_ERR_BAD_DEP_FLAG;
                state_next = STATE_IDLE;
            end else if (!pop_prev || g2s_nonempty) begin
                g2s_pop = pop_prev;
                evt_start = 1'b1;
                state_next = STATE_CHECK;
            end
        end
        STATE_CHECK: begin
            // no-op, or the fault checks (first cycle: the range flags)
            rd_cnt_next = {CW{1'b0}};
            rd_segx_next = {CW{1'b0}};
            rd_lane_next = dram_base[LW-1:0];
            rd_addr_next = sram_base;
            sent_next = {CW{1'b0}};
            if (!checked) begin
                state_next = STATE_CHECK;
            end else if (x_size == 0) begin
                state_next = STATE_RETIRE;
            end else if (mem_type != `VTA_MEM_OUT) begin
                err = 1'b1;
                err_code = `VTA_ERR_BAD_MEMORY_TYPE;
                state_next = STATE_IDLE;
            end else if (pads) begin
                err = 1'b1;
                err_code = `VTA_ERR_STORE_PAD;
                state_next = STATE_IDLE;
            end else if (sram_bad) begin
                err = 1'b1;
                err_code = `VTA_ERR_SRAM_RANGE;
                state_next = STATE_IDLE;
            end else if (dram_bad) begin
                err = 1'b1;
                err_code = `VTA_ERR_DRAM_RANGE;
                state_next = STATE_IDLE;
            end else if (y_size == 0) begin
                state_next = STATE_RETIRE;
            end else begin
                state_next = STATE_RUN;
            end
        end
        STATE_RUN: begin
            // reads OUT, packs beats (vta_row_walk requests the rows); waits for the
            // last response
            if (rd_issue) begin
                rd_cnt_next = rd_cnt_reg + 1'b1;
                rd_addr_next = rd_addr_reg + 1'b1;
                if (rd_segx_reg == seg_last_reg) begin
                    rd_segx_next = {CW{1'b0}};
                    rd_lane_next = rd_lane_reg + x_stride[LW-1:0];
                end else begin
                    rd_segx_next = rd_segx_reg + 1'b1;
                end
            end
            if (h_take) begin
                sent_next = sent_reg + 1'b1;
            end
            if (!rq_valid && sent_reg == total && dma_idle) begin
                state_next = STATE_RETIRE;
            end
        end
        STATE_RETIRE: begin
            // pushes s2g and retires
            if (push_prev && s2g_full) begin
                err = 1'b1;
                err_code = `VTA_ERR_TOKEN_OVERFLOW;
                state_next = STATE_IDLE;
            end else begin
                s2g_push = push_prev;
                evt_retire = 1'b1;
                if (x_size != 0) begin
                    out_bytes = total << LOG_EB;
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

always @* begin
    b_count_next = b_count_reg + {1'b0, p_valid_reg} - {1'b0, h_take};
end

always @(posedge clk) begin
    if (p_valid_reg) begin
        if (b_wp_reg) begin
            b_data1_reg <= out_rdata;
            b_tag1_reg <= p_tag_reg;
        end else begin
            b_data0_reg <= out_rdata;
            b_tag0_reg <= p_tag_reg;
        end
    end
    if (state_reg == STATE_CHECK) begin
        seg_last_reg <= seg_n - 1'b1;
    end
end

always @(posedge clk) begin
    state_reg <= state_next;
    insn_reg <= insn_next;
    index_reg <= index_next;
    rd_cnt_reg <= rd_cnt_next;
    rd_segx_reg <= rd_segx_next;
    rd_lane_reg <= rd_lane_next;
    rd_addr_reg <= rd_addr_next;
    sent_reg <= sent_next;
    p_valid_reg <= rd_issue;
    p_tag_reg <= rd_tag;
    b_count_reg <= b_count_next;
    if (p_valid_reg) begin
        b_wp_reg <= !b_wp_reg;
    end
    if (h_take) begin
        b_rp_reg <= !b_rp_reg;
    end
    if (rst || halt || state_reg == STATE_CHECK) begin
        p_valid_reg <= 1'b0;
        b_count_reg <= 2'd0;
        b_wp_reg <= 1'b0;
        b_rp_reg <= 1'b0;
    end
    if (rst) begin
        state_reg <= STATE_IDLE;
        insn_reg <= {`VTA_INSN_W{1'b0}};
        index_reg <= {`VTA_CMD_INDEX_W{1'b0}};
    end
end

endmodule

`resetall

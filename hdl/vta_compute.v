`resetall
`timescale 1ns / 1ps
`default_nettype none

/*
 * vta_compute: the compute engine.  Executes, in order, the instructions
 * fetch dispatched to it (vta-reference 3.8): LOAD of UOP / ACC / ACC_8BIT
 * (2-D with padding, through vta_loader and one DMA stream per type), GEMM,
 * ALU and FINISH.  pop_prev / pop_next take l2g / s2g tokens before an
 * instruction starts; push_prev / push_next give g2l / g2s tokens after it
 * completed.  It owns the UOP and ACC scratchpads, reads INP and WGT and
 * writes OUT.
 *
 * GEMM and ALU run the loop nest "for o, for i, for u in uop_bgn..uop_end-1"
 * through a four-stage pipeline that takes one micro-op per cycle:
 *
 *   A  issue       micro-op address u, loop offsets
 *   B  index       dst/src/wgt = micro-op fields + offsets -> SRAM reads
 *   C  multiply    INP x WGT^T dot products (vta_gemm), operands registered
 *   D  accumulate  ACC + sum, or the ALU op (vta_alu); write ACC and OUT
 *
 * Read-after-write on ACC: a micro-op reads ACC in B, two cycles before it
 * writes in D, so the writes of the two cycles before its D are not yet in
 * the SRAM.  Stage D keeps the last two writes and forwards them (newest
 * first) to both ACC operands, so results equal the serial golden model for
 * any dst sequence, with no stall.
 *
 * Faults (decision 7) are found before any scratchpad is written: undefined
 * memory type / ALU opcode, uop_end beyond the UOP buffer, and every
 * micro-op index plus loop offset beyond its buffer.  For the last, the
 * micro-ops uop_bgn..uop_end-1 are scanned once for their largest fields
 * (cached for the last range until the next UOP load), and the largest
 * index of the nest is field maximum + (iter_out-1)*factor_out +
 * (iter_in-1)*factor_in.
 *
 * OUT: a non-reset GEMM and every ALU micro-op write the low OUT_WIDTH bits
 * of each new ACC lane to OUT at the same index (decision 2).
 */
module vta_compute #(
    // log2 of the lane widths in bits
    parameter LOG_INP_WIDTH = 3,
    parameter LOG_WGT_WIDTH = 3,
    parameter LOG_ACC_WIDTH = 5,
    // GEMM core shape: BATCH x BLOCK x BLOCK
    parameter LOG_BATCH = 0,
    parameter LOG_BLOCK = 4,
    // log2 of the scratchpad sizes in bytes
    parameter LOG_UOP_BUFF_SIZE = 15,
    parameter LOG_INP_BUFF_SIZE = 15,
    parameter LOG_WGT_BUFF_SIZE = 18,
    parameter LOG_ACC_BUFF_SIZE = 17,
    // log2 of the DRAM data-bus width in bits
    parameter LOG_BUS_WIDTH = 6,
    // AXI address width
    parameter ADDR_WIDTH = 32,
    // bits of a DMA beat count
    parameter BEATS_WIDTH = 40,
    // device-memory bytes (DRAM range check)
    parameter [63:0] MEM_SIZE = 64'h10000000
) (
    input  wire                  clk,
    input  wire                  rst,
    input  wire                  run,
    input  wire                  halt,

    // command queue: {index, instruction}
    input  wire                  cmd_valid,
    output wire                  cmd_ready,
    input  wire [159:0]          cmd_data,

    // tokens
    input  wire                  l2g_nonempty,
    output reg                   l2g_pop,
    input  wire                  s2g_nonempty,
    output reg                   s2g_pop,
    input  wire                  g2l_full,
    output reg                   g2l_push,
    input  wire                  g2s_full,
    output reg                   g2s_push,

    // DMA read clients: 0 UOP, 1 ACC, 2 ACC_8BIT
    output wire [2:0]            dma_req_valid,
    input  wire [2:0]            dma_req_ready,
    output wire [3*ADDR_WIDTH-1:0] dma_req_addr,
    output wire [3*BEATS_WIDTH-1:0] dma_req_beats,
    input  wire [2:0]            dma_rd_valid,
    output wire [2:0]            dma_rd_ready,
    input  wire [(1<<LOG_BUS_WIDTH)-1:0] dma_rd_data,

    // INP and WGT scratchpad read ports, OUT write port
    output wire                  inp_re,
    output wire [LOG_INP_BUFF_SIZE-(LOG_BATCH+LOG_BLOCK+LOG_INP_WIDTH-3)-1:0] inp_raddr,
    input  wire [(1<<(LOG_BATCH+LOG_BLOCK+LOG_INP_WIDTH))-1:0] inp_rdata,
    output wire                  wgt_re,
    output wire [LOG_WGT_BUFF_SIZE-(2*LOG_BLOCK+LOG_WGT_WIDTH-3)-1:0] wgt_raddr,
    input  wire [(1<<(2*LOG_BLOCK+LOG_WGT_WIDTH))-1:0] wgt_rdata,
    output wire                  out_we,
    output wire [LOG_ACC_BUFF_SIZE-(LOG_BATCH+LOG_BLOCK+LOG_ACC_WIDTH-3)-1:0] out_waddr,
    output wire [(1<<(LOG_BATCH+LOG_BLOCK+LOG_INP_WIDTH))-1:0] out_wdata,

    // faults, trace, status, counters (increments at retire)
    output reg                   err,
    output reg  [7:0]            err_code,
    output wire [31:0]           index,
    output reg                   evt_start,
    output reg                   evt_retire,
    output reg                   finish,
    output wire                  idle,
    output wire                  stall,
    output wire                  busy,
    output reg  [31:0]           uop_bytes,
    output reg  [31:0]           acc_bytes,
    output reg  [31:0]           acc8_bytes,
    output reg  [31:0]           gemm_uops,
    output reg  [31:0]           alu_uops
);

`include "vta_regs.vh"
`include "vta_isa.vh"

// ------------------------------------------------------------ derived sizes
localparam LOG_INP_BYTES = LOG_BATCH + LOG_BLOCK + LOG_INP_WIDTH - 3;
localparam LOG_WGT_BYTES = 2 * LOG_BLOCK + LOG_WGT_WIDTH - 3;
localparam LOG_ACC_BYTES = LOG_BATCH + LOG_BLOCK + LOG_ACC_WIDTH - 3;
localparam LOG_ACC8_BYTES = LOG_BATCH + LOG_BLOCK;
localparam LOG_UOP_BYTES = 2;
localparam LOG_UOP_DEPTH = LOG_UOP_BUFF_SIZE - LOG_UOP_BYTES;
localparam LOG_INP_DEPTH = LOG_INP_BUFF_SIZE - LOG_INP_BYTES;
localparam LOG_WGT_DEPTH = LOG_WGT_BUFF_SIZE - LOG_WGT_BYTES;
localparam LOG_ACC_DEPTH = LOG_ACC_BUFF_SIZE - LOG_ACC_BYTES;
localparam integer LANES = 1 << (LOG_BATCH + LOG_BLOCK);
localparam integer AL = 1 << LOG_ACC_WIDTH;           // ACC lane bits
localparam integer OL = 1 << LOG_INP_WIDTH;           // OUT lane bits
localparam ACC_W = LANES * AL;
localparam OUT_W = LANES * OL;
localparam UOP_W = 32;
localparam A = LOG_ACC_DEPTH;

initial begin
    if (LOG_ACC_WIDTH != 5 || LOG_INP_WIDTH != 3 || LOG_WGT_WIDTH != 3) begin
        $display("%m: only int8 inputs/weights and int32 accumulators are implemented");
        $finish;
    end
    if (`VTA_UOP_DST_IDX_W != LOG_ACC_DEPTH || `VTA_GEMM_UOP_BGN_W != LOG_UOP_DEPTH) begin
        $display("%m: vta_isa.vh was generated for another configuration");
        $finish;
    end
end

localparam STATE_IDLE   = 4'd0;
localparam STATE_POP    = 4'd1;
localparam STATE_DECODE = 4'd2;
localparam STATE_LOAD   = 4'd3;
localparam STATE_SCAN   = 4'd4;
localparam STATE_CHECK  = 4'd5;
localparam STATE_EXEC   = 4'd6;
localparam STATE_DRAIN  = 4'd7;
localparam STATE_RETIRE = 4'd8;

reg [3:0]   state_reg, state_next;
reg [127:0] insn_reg, insn_next;
reg [31:0]  index_reg, index_next;

// ------------------------------------------------------------ fields
wire [2:0]  opcode    = insn_reg[2:0];
wire        pop_prev  = insn_reg[3];
wire        pop_next  = insn_reg[4];
wire        push_prev = insn_reg[5];
wire        push_next = insn_reg[6];
wire [2:0]  mem_type  = insn_reg[`VTA_MEM_MEMORY_TYPE_LO +: `VTA_MEM_MEMORY_TYPE_W];
wire [15:0] x_size    = insn_reg[`VTA_MEM_X_SIZE_LO +: `VTA_MEM_X_SIZE_W];
wire [15:0] y_size    = insn_reg[`VTA_MEM_Y_SIZE_LO +: `VTA_MEM_Y_SIZE_W];

// a field of the instruction (or of a micro-op), zero-extended to 32 bits
function [31:0] field32(input [127:0] v, input [7:0] lo, input [5:0] w);
    reg [159:0] ext;
    begin
        ext = {32'd0, v};
        field32 = ext[lo +: 32] & ~(32'hFFFFFFFF << w);
    end
endfunction

wire        is_alu    = opcode == `VTA_OPCODE_ALU;
wire        reset_reg = insn_reg[`VTA_GEMM_RESET_REG_LO] && !is_alu;
wire [31:0] f_bgn     = field32(insn_reg, `VTA_GEMM_UOP_BGN_LO, `VTA_GEMM_UOP_BGN_W);
wire [31:0] f_end     = field32(insn_reg, `VTA_GEMM_UOP_END_LO, `VTA_GEMM_UOP_END_W);
wire [31:0] f_dst_o   = field32(insn_reg, `VTA_GEMM_DST_FACTOR_OUT_LO, `VTA_GEMM_DST_FACTOR_OUT_W);
wire [31:0] f_dst_i   = field32(insn_reg, `VTA_GEMM_DST_FACTOR_IN_LO, `VTA_GEMM_DST_FACTOR_IN_W);
wire [31:0] f_gsrc_o  = field32(insn_reg, `VTA_GEMM_SRC_FACTOR_OUT_LO, `VTA_GEMM_SRC_FACTOR_OUT_W);
wire [31:0] f_gsrc_i  = field32(insn_reg, `VTA_GEMM_SRC_FACTOR_IN_LO, `VTA_GEMM_SRC_FACTOR_IN_W);
wire [31:0] f_asrc_o  = field32(insn_reg, `VTA_ALU_SRC_FACTOR_OUT_LO, `VTA_ALU_SRC_FACTOR_OUT_W);
wire [31:0] f_asrc_i  = field32(insn_reg, `VTA_ALU_SRC_FACTOR_IN_LO, `VTA_ALU_SRC_FACTOR_IN_W);
wire [31:0] f_wgt_o   = field32(insn_reg, `VTA_GEMM_WGT_FACTOR_OUT_LO, `VTA_GEMM_WGT_FACTOR_OUT_W);
wire [31:0] f_wgt_i   = field32(insn_reg, `VTA_GEMM_WGT_FACTOR_IN_LO, `VTA_GEMM_WGT_FACTOR_IN_W);
wire [16:0] uop_bgn   = f_bgn[16:0];
wire [16:0] uop_end   = f_end[16:0];
wire [13:0] iter_out  = insn_reg[`VTA_GEMM_ITER_OUT_LO +: `VTA_GEMM_ITER_OUT_W];
wire [13:0] iter_in   = insn_reg[`VTA_GEMM_ITER_IN_LO +: `VTA_GEMM_ITER_IN_W];
wire [15:0] dst_f_out = f_dst_o[15:0];
wire [15:0] dst_f_in  = f_dst_i[15:0];
wire [15:0] src_f_out = is_alu ? f_asrc_o[15:0] : f_gsrc_o[15:0];
wire [15:0] src_f_in  = is_alu ? f_asrc_i[15:0] : f_gsrc_i[15:0];
wire [15:0] wgt_f_out = is_alu ? 16'd0 : f_wgt_o[15:0];
wire [15:0] wgt_f_in  = is_alu ? 16'd0 : f_wgt_i[15:0];
wire [2:0]  alu_op    = insn_reg[`VTA_ALU_ALU_OPCODE_LO +: `VTA_ALU_ALU_OPCODE_W];
wire        use_imm   = insn_reg[`VTA_ALU_USE_IMM_LO];
wire [15:0] imm       = insn_reg[`VTA_ALU_IMM_LO +: `VTA_ALU_IMM_W];

wire        mt_uop  = mem_type == `VTA_MEM_UOP;
wire        mt_acc  = mem_type == `VTA_MEM_ACC;
wire        mt_acc8 = mem_type == `VTA_MEM_ACC_8BIT;
wire [31:0] elems = {16'd0, x_size} * {16'd0, y_size};

// ------------------------------------------------------------ scratchpads
reg                     uop_re;
reg  [LOG_UOP_DEPTH-1:0] uop_raddr;
wire [UOP_W-1:0]        uop_rdata;
wire                    uop_we;
wire [LOG_UOP_DEPTH-1:0] uop_waddr;
wire [UOP_W-1:0]        uop_wdata;

vta_sram #(.WIDTH(UOP_W), .LOG_DEPTH(LOG_UOP_DEPTH)) uop_mem (
    .clk(clk),
    .we(uop_we), .waddr(uop_waddr), .wdata(uop_wdata),
    .re(uop_re), .raddr(uop_raddr), .rdata(uop_rdata)
);

// two copies of ACC: one read port for dst, one for the ALU's src
wire             acc_we;
wire [A-1:0]     acc_waddr;
wire [ACC_W-1:0] acc_wdata;
wire             acc_re;
wire [A-1:0]     acc_dst_raddr;
wire [A-1:0]     acc_src_raddr;
wire [ACC_W-1:0] acc_dst_rdata;
wire [ACC_W-1:0] acc_src_rdata;

vta_sram #(.WIDTH(ACC_W), .LOG_DEPTH(A)) acc_mem_dst (
    .clk(clk),
    .we(acc_we), .waddr(acc_waddr), .wdata(acc_wdata),
    .re(acc_re), .raddr(acc_dst_raddr), .rdata(acc_dst_rdata)
);

vta_sram #(.WIDTH(ACC_W), .LOG_DEPTH(A)) acc_mem_src (
    .clk(clk),
    .we(acc_we), .waddr(acc_waddr), .wdata(acc_wdata),
    .re(acc_re), .raddr(acc_src_raddr), .rdata(acc_src_rdata)
);

// ------------------------------------------------------------ loads
reg         ld_start;
wire        ld_done;
wire        ld_err;
wire [7:0]  ld_err_code;
wire        ld_req_valid;
wire        ld_req_ready;
wire [ADDR_WIDTH-1:0] ld_req_addr;
wire [31:0] ld_req_n;
wire        ld_data_valid;
wire        ld_data_ready;
wire        ld_wr_en;
wire [15:0] ld_wr_idx;
wire        ld_wr_pad;
wire        ld_busy;

vta_loader #(
    .ADDR_WIDTH(ADDR_WIDTH),
    .MEM_SIZE(MEM_SIZE)
) loader (
    .clk(clk),
    .rst(rst),
    .halt(halt),
    .start(ld_start),
    .sram_base(insn_reg[`VTA_MEM_SRAM_BASE_LO +: `VTA_MEM_SRAM_BASE_W]),
    .dram_base(insn_reg[`VTA_MEM_DRAM_BASE_LO +: `VTA_MEM_DRAM_BASE_W]),
    .y_size(y_size),
    .x_size(x_size),
    .x_stride(insn_reg[`VTA_MEM_X_STRIDE_LO +: `VTA_MEM_X_STRIDE_W]),
    .y_pad_0(insn_reg[`VTA_MEM_Y_PAD_0_LO +: `VTA_MEM_Y_PAD_0_W]),
    .y_pad_1(insn_reg[`VTA_MEM_Y_PAD_1_LO +: `VTA_MEM_Y_PAD_1_W]),
    .x_pad_0(insn_reg[`VTA_MEM_X_PAD_0_LO +: `VTA_MEM_X_PAD_0_W]),
    .x_pad_1(insn_reg[`VTA_MEM_X_PAD_1_LO +: `VTA_MEM_X_PAD_1_W]),
    .log_elem_bytes(mt_uop ? LOG_UOP_BYTES[3:0] : mt_acc ? LOG_ACC_BYTES[3:0] : LOG_ACC8_BYTES[3:0]),
    .log_depth(mt_uop ? LOG_UOP_DEPTH[4:0] : LOG_ACC_DEPTH[4:0]),
    .busy(ld_busy),
    .done(ld_done),
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

wire [2:0] port_sel = {mt_acc8, mt_acc, mt_uop};
wire [2:0] port_req_ready;
wire [2:0] port_elem_valid;
wire [UOP_W-1:0] uop_elem;
wire [ACC_W-1:0] acc_elem;
wire [OUT_W-1:0] acc8_elem;

vta_dma_rd_port #(
    .LOG_ELEM_BYTES(LOG_UOP_BYTES), .LOG_BUS_WIDTH(LOG_BUS_WIDTH),
    .ADDR_WIDTH(ADDR_WIDTH), .BEATS_WIDTH(BEATS_WIDTH)
) uop_port (
    .clk(clk), .rst(rst), .halt(halt),
    .req_valid(ld_req_valid && port_sel[0]), .req_ready(port_req_ready[0]),
    .req_addr(ld_req_addr), .req_n(ld_req_n),
    .dma_req_valid(dma_req_valid[0]), .dma_req_ready(dma_req_ready[0]),
    .dma_req_addr(dma_req_addr[0 +: ADDR_WIDTH]),
    .dma_req_beats(dma_req_beats[0 +: BEATS_WIDTH]),
    .beat_valid(dma_rd_valid[0]), .beat_ready(dma_rd_ready[0]), .beat_data(dma_rd_data),
    .elem_valid(port_elem_valid[0]), .elem_ready(ld_data_ready && port_sel[0]),
    .elem_data(uop_elem)
);

vta_dma_rd_port #(
    .LOG_ELEM_BYTES(LOG_ACC_BYTES), .LOG_BUS_WIDTH(LOG_BUS_WIDTH),
    .ADDR_WIDTH(ADDR_WIDTH), .BEATS_WIDTH(BEATS_WIDTH)
) acc_port (
    .clk(clk), .rst(rst), .halt(halt),
    .req_valid(ld_req_valid && port_sel[1]), .req_ready(port_req_ready[1]),
    .req_addr(ld_req_addr), .req_n(ld_req_n),
    .dma_req_valid(dma_req_valid[1]), .dma_req_ready(dma_req_ready[1]),
    .dma_req_addr(dma_req_addr[ADDR_WIDTH +: ADDR_WIDTH]),
    .dma_req_beats(dma_req_beats[BEATS_WIDTH +: BEATS_WIDTH]),
    .beat_valid(dma_rd_valid[1]), .beat_ready(dma_rd_ready[1]), .beat_data(dma_rd_data),
    .elem_valid(port_elem_valid[1]), .elem_ready(ld_data_ready && port_sel[1]),
    .elem_data(acc_elem)
);

vta_dma_rd_port #(
    .LOG_ELEM_BYTES(LOG_ACC8_BYTES), .LOG_BUS_WIDTH(LOG_BUS_WIDTH),
    .ADDR_WIDTH(ADDR_WIDTH), .BEATS_WIDTH(BEATS_WIDTH)
) acc8_port (
    .clk(clk), .rst(rst), .halt(halt),
    .req_valid(ld_req_valid && port_sel[2]), .req_ready(port_req_ready[2]),
    .req_addr(ld_req_addr), .req_n(ld_req_n),
    .dma_req_valid(dma_req_valid[2]), .dma_req_ready(dma_req_ready[2]),
    .dma_req_addr(dma_req_addr[2*ADDR_WIDTH +: ADDR_WIDTH]),
    .dma_req_beats(dma_req_beats[2*BEATS_WIDTH +: BEATS_WIDTH]),
    .beat_valid(dma_rd_valid[2]), .beat_ready(dma_rd_ready[2]), .beat_data(dma_rd_data),
    .elem_valid(port_elem_valid[2]), .elem_ready(ld_data_ready && port_sel[2]),
    .elem_data(acc8_elem)
);

assign ld_req_ready = |(port_req_ready & port_sel);
assign ld_data_valid = |(port_elem_valid & port_sel);

// ACC_8BIT: each int8 lane sign-extended into an int32 lane
reg [ACC_W-1:0] acc8_wide;
integer e;
always @* begin
    for (e = 0; e < LANES; e = e + 1) begin
        acc8_wide[e*AL +: AL] = {{(AL-8){acc8_elem[e*8+7]}}, acc8_elem[e*8 +: 8]};
    end
end

// ------------------------------------------------------------ range scan
reg [16:0] scan_u_reg, scan_u_next;
reg        scan_v_reg;                       // micro-op data valid this cycle
reg [15:0] max_dst_reg, max_dst_next;
reg [15:0] max_src_reg, max_src_next;
reg [15:0] max_wgt_reg, max_wgt_next;
reg        c_valid_reg, c_valid_next;        // cache of the last scanned range
reg [16:0] c_bgn_reg, c_bgn_next;
reg [16:0] c_end_reg, c_end_next;

wire [31:0] f_udst = field32({96'd0, uop_rdata}, `VTA_UOP_DST_IDX_LO, `VTA_UOP_DST_IDX_W);
wire [31:0] f_usrc = field32({96'd0, uop_rdata}, `VTA_UOP_SRC_IDX_LO, `VTA_UOP_SRC_IDX_W);
wire [31:0] f_uwgt = field32({96'd0, uop_rdata}, `VTA_UOP_WGT_IDX_LO, `VTA_UOP_WGT_IDX_W);
wire [15:0] u_dst = f_udst[15:0];
wire [15:0] u_src = f_usrc[15:0];
wire [15:0] u_wgt = f_uwgt[15:0];

wire [13:0] io_m1 = iter_out - 14'd1;
wire [13:0] ii_m1 = iter_in - 14'd1;
wire [29:0] io30 = {16'd0, io_m1};
wire [29:0] ii30 = {16'd0, ii_m1};
wire [29:0] span_dst_o = io30 * {14'd0, dst_f_out};
wire [29:0] span_dst_i = ii30 * {14'd0, dst_f_in};
wire [29:0] span_src_o = io30 * {14'd0, src_f_out};
wire [29:0] span_src_i = ii30 * {14'd0, src_f_in};
wire [29:0] span_wgt_o = io30 * {14'd0, wgt_f_out};
wire [29:0] span_wgt_i = ii30 * {14'd0, wgt_f_in};
wire [32:0] top_dst = {17'd0, max_dst_reg} + {3'd0, span_dst_o} + {3'd0, span_dst_i};
wire [32:0] top_src = {17'd0, max_src_reg} + {3'd0, span_src_o} + {3'd0, span_src_i};
wire [32:0] top_wgt = {17'd0, max_wgt_reg} + {3'd0, span_wgt_o} + {3'd0, span_wgt_i};
wire check_src = is_alu ? !use_imm : !reset_reg;
wire check_wgt = !is_alu && !reset_reg;
wire [32:0] src_depth = is_alu ? (33'd1 << LOG_ACC_DEPTH) : (33'd1 << LOG_INP_DEPTH);
wire range_bad = top_dst >= (33'd1 << LOG_ACC_DEPTH)
                 || (check_src && top_src >= src_depth)
                 || (check_wgt && top_wgt >= (33'd1 << LOG_WGT_DEPTH));

// ------------------------------------------------------------ loop nest
reg [16:0] u_reg, u_next;
reg [13:0] o_reg, o_next;
reg [13:0] i_reg, i_next;
reg [31:0] o_dst_reg, o_dst_next, i_dst_reg, i_dst_next;
reg [31:0] o_src_reg, o_src_next, i_src_reg, i_src_next;
reg [31:0] o_wgt_reg, o_wgt_next, i_wgt_reg, i_wgt_next;
reg [31:0] nuops_reg, nuops_next;            // micro-ops of this instruction
reg        issue;

// ------------------------------------------------------------ pipeline
reg              pb_valid_reg;
reg [31:0]       pb_dst_reg, pb_src_reg, pb_wgt_reg;   // loop offsets
reg              pc_valid_reg;
reg [A-1:0]      pc_dst_reg, pc_src_reg;
reg              pd_valid_reg;
reg [A-1:0]      pd_dst_reg, pd_src_reg;
reg [ACC_W-1:0]  pd_a_reg, pd_b_reg, pd_sum_reg;
// the last two ACC writes of the pipeline, for forwarding
reg              w1_valid_reg, w2_valid_reg;
reg [A-1:0]      w1_addr_reg, w2_addr_reg;
reg [ACC_W-1:0]  w1_data_reg, w2_data_reg;

wire [31:0] b_dst = {16'd0, u_dst} + pb_dst_reg;
wire [31:0] b_src = {16'd0, u_src} + pb_src_reg;
wire [31:0] b_wgt = {16'd0, u_wgt} + pb_wgt_reg;

assign acc_re = pb_valid_reg;
assign acc_dst_raddr = b_dst[A-1:0];
assign acc_src_raddr = b_src[A-1:0];
assign inp_re = pb_valid_reg && !is_alu;
assign inp_raddr = b_src[LOG_INP_DEPTH-1:0];
assign wgt_re = pb_valid_reg && !is_alu;
assign wgt_raddr = b_wgt[LOG_WGT_DEPTH-1:0];

wire [ACC_W-1:0] c_sum;
vta_gemm #(
    .LOG_BATCH(LOG_BATCH), .LOG_BLOCK(LOG_BLOCK),
    .LOG_INP_WIDTH(LOG_INP_WIDTH), .LOG_WGT_WIDTH(LOG_WGT_WIDTH), .LOG_ACC_WIDTH(LOG_ACC_WIDTH)
) gemm (
    .inp(inp_rdata),
    .wgt(wgt_rdata),
    .sum(c_sum)
);

// stage D: operands with forwarding, then the op
wire [ACC_W-1:0] d_a = (w1_valid_reg && w1_addr_reg == pd_dst_reg) ? w1_data_reg
                     : (w2_valid_reg && w2_addr_reg == pd_dst_reg) ? w2_data_reg : pd_a_reg;
wire [ACC_W-1:0] d_src = (w1_valid_reg && w1_addr_reg == pd_src_reg) ? w1_data_reg
                       : (w2_valid_reg && w2_addr_reg == pd_src_reg) ? w2_data_reg : pd_b_reg;
wire [ACC_W-1:0] d_b = use_imm ? {LANES{{(AL-16){imm[15]}}, imm}} : d_src;
wire [ACC_W-1:0] d_alu;

vta_alu #(.LANES(LANES)) alu (
    .op(alu_op),
    .a(d_a),
    .b(d_b),
    .r(d_alu)
);

reg [ACC_W-1:0] d_result;
reg [OUT_W-1:0] d_out;
integer n;
always @* begin
    for (n = 0; n < LANES; n = n + 1) begin
        d_result[n*AL +: AL] = d_a[n*AL +: AL] + pd_sum_reg[n*AL +: AL];
    end
    if (is_alu) begin
        d_result = d_alu;
    end else if (reset_reg) begin
        d_result = {ACC_W{1'b0}};
    end
    for (n = 0; n < LANES; n = n + 1) begin
        d_out[n*OL +: OL] = d_result[n*AL +: OL];
    end
end

wire d_write = pd_valid_reg;
assign acc_we = (state_reg == STATE_LOAD) ? (ld_wr_en && !mt_uop) : d_write;
assign acc_waddr = (state_reg == STATE_LOAD) ? ld_wr_idx[A-1:0] : pd_dst_reg;
assign acc_wdata = (state_reg == STATE_LOAD)
                 ? (ld_wr_pad ? {ACC_W{1'b0}} : (mt_acc ? acc_elem : acc8_wide))
                 : d_result;
assign out_we = d_write && !reset_reg;
assign out_waddr = pd_dst_reg;
assign out_wdata = d_out;
assign uop_we = state_reg == STATE_LOAD && ld_wr_en && mt_uop;
assign uop_waddr = ld_wr_idx[LOG_UOP_DEPTH-1:0];
assign uop_wdata = ld_wr_pad ? {UOP_W{1'b0}} : uop_elem;

wire pipe_empty = !pb_valid_reg && !pc_valid_reg && !pd_valid_reg;

// bits of the 32-bit field and index values above the buffer depths are zero
// or unused by construction (range-checked); gathered here for lint
wire _unused_ok = &{1'b0, f_bgn[31:17], f_end[31:17], f_dst_o[31:16], f_dst_i[31:16],
                    f_gsrc_o[31:16], f_gsrc_i[31:16], f_asrc_o[31:16], f_asrc_i[31:16],
                    f_wgt_o[31:16], f_wgt_i[31:16], f_udst[31:16], f_usrc[31:16],
                    f_uwgt[31:16], b_dst, b_src, b_wgt, ld_wr_idx, ld_busy, 1'b0};

// ------------------------------------------------------------ instruction FSM
wire tokens_ok = (!pop_prev || l2g_nonempty) && (!pop_next || s2g_nonempty);
assign cmd_ready = state_reg == STATE_IDLE && run;
assign index = index_reg;
assign idle = state_reg == STATE_IDLE;
assign stall = state_reg == STATE_POP && !tokens_ok;
assign busy = !idle && !stall;

wire last_u = u_reg == uop_end - 17'd1;
wire last_i = i_reg == iter_in - 14'd1;
wire last_o = o_reg == iter_out - 14'd1;

always @* begin
    state_next = state_reg;
    insn_next = insn_reg;
    index_next = index_reg;
    l2g_pop = 1'b0;
    s2g_pop = 1'b0;
    g2l_push = 1'b0;
    g2s_push = 1'b0;
    ld_start = 1'b0;
    err = 1'b0;
    err_code = `VTA_ERR_NONE;
    evt_start = 1'b0;
    evt_retire = 1'b0;
    finish = 1'b0;
    uop_bytes = 32'd0;
    acc_bytes = 32'd0;
    acc8_bytes = 32'd0;
    gemm_uops = 32'd0;
    alu_uops = 32'd0;
    uop_re = 1'b0;
    uop_raddr = u_reg[LOG_UOP_DEPTH-1:0];
    issue = 1'b0;

    scan_u_next = scan_u_reg;
    max_dst_next = max_dst_reg;
    max_src_next = max_src_reg;
    max_wgt_next = max_wgt_reg;
    c_valid_next = c_valid_reg;
    c_bgn_next = c_bgn_reg;
    c_end_next = c_end_reg;
    u_next = u_reg;
    o_next = o_reg;
    i_next = i_reg;
    o_dst_next = o_dst_reg;
    o_src_next = o_src_reg;
    o_wgt_next = o_wgt_reg;
    i_dst_next = i_dst_reg;
    i_src_next = i_src_reg;
    i_wgt_next = i_wgt_reg;
    nuops_next = nuops_reg;

    if (uop_we) begin
        c_valid_next = 1'b0;
    end

    case (state_reg)
        STATE_IDLE: begin
            // waits for an instruction
            if (cmd_valid && cmd_ready) begin
                insn_next = cmd_data[127:0];
                index_next = cmd_data[159:128];
                state_next = STATE_POP;
            end
        end
        STATE_POP: begin
            // waits for the l2g / s2g tokens
            if (tokens_ok) begin
                l2g_pop = pop_prev;
                s2g_pop = pop_next;
                evt_start = 1'b1;
                state_next = STATE_DECODE;
            end
        end
        STATE_DECODE: begin
            // fault checks on the fields, then dispatch by opcode
            scan_u_next = uop_bgn;
            u_next = uop_bgn;
            o_next = 14'd0;
            i_next = 14'd0;
            o_dst_next = 32'd0;
            o_src_next = 32'd0;
            o_wgt_next = 32'd0;
            i_dst_next = 32'd0;
            i_src_next = 32'd0;
            i_wgt_next = 32'd0;
            nuops_next = 32'd0;
            if (opcode == `VTA_OPCODE_LOAD) begin
                if (!(mt_uop || mt_acc || mt_acc8)) begin
                    err = 1'b1;
                    err_code = `VTA_ERR_BAD_MEMORY_TYPE;
                    state_next = STATE_IDLE;
                end else if (x_size == 16'd0) begin
                    state_next = STATE_RETIRE;
                end else begin
                    ld_start = 1'b1;
                    state_next = STATE_LOAD;
                end
            end else if (opcode == `VTA_OPCODE_GEMM || opcode == `VTA_OPCODE_ALU) begin
                if (is_alu && alu_op > `VTA_ALU_MUL) begin
                    err = 1'b1;
                    err_code = `VTA_ERR_BAD_ALU_OPCODE;
                    state_next = STATE_IDLE;
                end else if (uop_end > (17'd1 << LOG_UOP_DEPTH)) begin
                    err = 1'b1;
                    err_code = `VTA_ERR_SRAM_RANGE;
                    state_next = STATE_IDLE;
                end else if (uop_end <= uop_bgn || iter_out == 14'd0 || iter_in == 14'd0) begin
                    state_next = STATE_RETIRE;
                end else if (c_valid_reg && c_bgn_reg == uop_bgn && c_end_reg == uop_end) begin
                    state_next = STATE_CHECK;
                end else begin
                    max_dst_next = 16'd0;
                    max_src_next = 16'd0;
                    max_wgt_next = 16'd0;
                    state_next = STATE_SCAN;
                end
            end else begin
                // FINISH: tokens only
                state_next = STATE_RETIRE;
            end
        end
        STATE_LOAD: begin
            // waits for the UOP / ACC load
            if (ld_err) begin
                err = 1'b1;
                err_code = ld_err_code;
                state_next = STATE_IDLE;
            end else if (ld_done) begin
                state_next = STATE_RETIRE;
            end
        end
        STATE_SCAN: begin
            // reads the micro-ops once for their largest fields
            if (scan_u_reg != uop_end) begin
                uop_re = 1'b1;
                uop_raddr = scan_u_reg[LOG_UOP_DEPTH-1:0];
                scan_u_next = scan_u_reg + 17'd1;
            end
            if (scan_v_reg) begin
                if (u_dst > max_dst_reg) max_dst_next = u_dst;
                if (u_src > max_src_reg) max_src_next = u_src;
                if (u_wgt > max_wgt_reg) max_wgt_next = u_wgt;
            end
            if (scan_u_reg == uop_end && !scan_v_reg) begin
                c_valid_next = 1'b1;
                c_bgn_next = uop_bgn;
                c_end_next = uop_end;
                state_next = STATE_CHECK;
            end
        end
        STATE_CHECK: begin
            // largest index of the nest against each buffer
            if (range_bad) begin
                err = 1'b1;
                err_code = `VTA_ERR_SRAM_RANGE;
                state_next = STATE_IDLE;
            end else begin
                state_next = STATE_EXEC;
            end
        end
        STATE_EXEC: begin
            // issues one micro-op per cycle
            issue = 1'b1;
            uop_re = 1'b1;
            uop_raddr = u_reg[LOG_UOP_DEPTH-1:0];
            nuops_next = nuops_reg + 32'd1;
            if (!last_u) begin
                u_next = u_reg + 17'd1;
            end else begin
                u_next = uop_bgn;
                if (!last_i) begin
                    i_next = i_reg + 14'd1;
                    i_dst_next = i_dst_reg + {16'd0, dst_f_in};
                    i_src_next = i_src_reg + {16'd0, src_f_in};
                    i_wgt_next = i_wgt_reg + {16'd0, wgt_f_in};
                end else begin
                    i_next = 14'd0;
                    i_dst_next = 32'd0;
                    i_src_next = 32'd0;
                    i_wgt_next = 32'd0;
                    o_next = o_reg + 14'd1;
                    o_dst_next = o_dst_reg + {16'd0, dst_f_out};
                    o_src_next = o_src_reg + {16'd0, src_f_out};
                    o_wgt_next = o_wgt_reg + {16'd0, wgt_f_out};
                    if (last_o) begin
                        state_next = STATE_DRAIN;
                    end
                end
            end
        end
        STATE_DRAIN: begin
            // waits for the pipeline to empty
            if (pipe_empty) begin
                state_next = STATE_RETIRE;
            end
        end
        STATE_RETIRE: begin
            // pushes g2l / g2s and retires
            if ((push_prev && g2l_full) || (push_next && g2s_full)) begin
                err = 1'b1;
                err_code = `VTA_ERR_TOKEN_OVERFLOW;
                state_next = STATE_IDLE;
            end else begin
                g2l_push = push_prev;
                g2s_push = push_next;
                evt_retire = 1'b1;
                finish = opcode == `VTA_OPCODE_FINISH;
                if (opcode == `VTA_OPCODE_LOAD && x_size != 16'd0) begin
                    if (mt_uop) uop_bytes = elems << LOG_UOP_BYTES;
                    if (mt_acc) acc_bytes = elems << LOG_ACC_BYTES;
                    if (mt_acc8) acc8_bytes = elems << LOG_ACC8_BYTES;
                end
                if (opcode == `VTA_OPCODE_GEMM && !reset_reg) gemm_uops = nuops_reg;
                if (opcode == `VTA_OPCODE_ALU) alu_uops = nuops_reg;
                state_next = STATE_IDLE;
            end
        end
        default: begin
            state_next = STATE_IDLE;
        end
    endcase

    if (halt) begin
        state_next = STATE_IDLE;
        issue = 1'b0;
    end
end

always @(posedge clk) begin
    state_reg <= state_next;
    insn_reg <= insn_next;
    index_reg <= index_next;
    scan_u_reg <= scan_u_next;
    scan_v_reg <= state_reg == STATE_SCAN && uop_re;
    max_dst_reg <= max_dst_next;
    max_src_reg <= max_src_next;
    max_wgt_reg <= max_wgt_next;
    c_valid_reg <= c_valid_next;
    c_bgn_reg <= c_bgn_next;
    c_end_reg <= c_end_next;
    u_reg <= u_next;
    o_reg <= o_next;
    i_reg <= i_next;
    o_dst_reg <= o_dst_next;
    o_src_reg <= o_src_next;
    o_wgt_reg <= o_wgt_next;
    i_dst_reg <= i_dst_next;
    i_src_reg <= i_src_next;
    i_wgt_reg <= i_wgt_next;
    nuops_reg <= nuops_next;

    // pipeline
    pb_valid_reg <= issue;
    pb_dst_reg <= o_dst_reg + i_dst_reg;
    pb_src_reg <= o_src_reg + i_src_reg;
    pb_wgt_reg <= o_wgt_reg + i_wgt_reg;
    pc_valid_reg <= pb_valid_reg;
    pc_dst_reg <= b_dst[A-1:0];
    pc_src_reg <= b_src[A-1:0];
    pd_valid_reg <= pc_valid_reg;
    pd_dst_reg <= pc_dst_reg;
    pd_src_reg <= pc_src_reg;
    pd_a_reg <= acc_dst_rdata;
    pd_b_reg <= acc_src_rdata;
    pd_sum_reg <= c_sum;
    w1_valid_reg <= d_write;
    w1_addr_reg <= pd_dst_reg;
    w1_data_reg <= d_result;
    w2_valid_reg <= w1_valid_reg;
    w2_addr_reg <= w1_addr_reg;
    w2_data_reg <= w1_data_reg;

    if (rst || halt) begin
        pb_valid_reg <= 1'b0;
        pc_valid_reg <= 1'b0;
        pd_valid_reg <= 1'b0;
        w1_valid_reg <= 1'b0;
        w2_valid_reg <= 1'b0;
        scan_v_reg <= 1'b0;
    end
    if (rst) begin
        state_reg <= STATE_IDLE;
        insn_reg <= 128'd0;
        index_reg <= 32'd0;
        c_valid_reg <= 1'b0;
    end
end

endmodule

`resetall

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
 * here (one micro-op issued per cycle) through vta_compute_pipe (index,
 * scratchpad reads, vta_gemm / vta_alu, ACC and OUT writes, read-after-write
 * forwarding; see there).  An instruction retires when its last micro-op is
 * issued; one that pushes a token (or FINISH) first waits until every
 * micro-op has written, so the other engines see its results.  A LOAD waits
 * for the pipeline to empty too (it writes ACC / UOP).
 *
 * Faults (decision 7) are found before any scratchpad is written: undefined
 * memory type / ALU opcode, uop_end beyond the UOP buffer, and every
 * micro-op index plus loop offset beyond its buffer.  For the last, the
 * micro-ops uop_bgn..uop_end-1 are scanned once for their largest fields
 * (cached for the last range until the next UOP load), and the largest
 * index of the nest is field maximum + (iter_out-1)*factor_out +
 * (iter_in-1)*factor_in (the products registered in DECODE, the sums and
 * compares in CHECK).
 *
 * OUT: a non-reset GEMM and every ALU micro-op write the low OUT_WIDTH bits
 * of each new ACC lane to OUT at the same index (decision 2).
 */
`include "vta_isa.vh"

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
    input  wire                  l2g_nonempty,
    output wire                  l2g_pop,
    input  wire                  s2g_nonempty,
    output wire                  s2g_pop,
    input  wire                  g2l_full,
    output wire                  g2l_push,
    input  wire                  g2s_full,
    output wire                  g2s_push,

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
    output wire                  err,
    output wire [7:0]            err_code,
    output wire [31:0]           index,
    output wire                  evt_start,
    output wire                  evt_retire,
    // one pulse per GEMM/ALU micro-op issued (progress, for a watchdog)
    output wire                  evt_uop,
    output wire                  finish,
    output wire                  idle,
    output wire                  stall,
    output wire                  busy,
    output wire [31:0]           uop_bytes,
    output wire [31:0]           acc_bytes,
    output wire [31:0]           acc8_bytes,
    output wire [31:0]           gemm_uops,
    output wire [31:0]           alu_uops
);

`include "vta_regs.vh"

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
localparam UOP_W = `VTA_UOP_W;
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
localparam STATE_RETIRE = 4'd7;

reg [3:0]   state_reg;
reg [`VTA_INSN_W-1:0] insn_reg;
reg [31:0]  index_reg;

// ------------------------------------------------------------ fields
wire [`VTA_MEM_OPCODE_W-1:0]  opcode    = insn_reg[`VTA_MEM_OPCODE_LO +: `VTA_MEM_OPCODE_W];
// the LOAD/STORE fields of insn_reg, one wire each (generated from vta/isa.py)
`include "vta_mem_fields.vh"

// a field of the instruction (or of a micro-op), zero-extended to 32 bits
function [31:0] field32;
    input [`VTA_INSN_W-1:0] v;
    input [7:0]   lo;
    input [5:0]   w;
    reg [`VTA_INSN_W+31:0] ext;
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
wire [`VTA_GEMM_ITER_OUT_W-1:0] iter_out  = insn_reg[`VTA_GEMM_ITER_OUT_LO +: `VTA_GEMM_ITER_OUT_W];
wire [`VTA_GEMM_ITER_IN_W-1:0] iter_in   = insn_reg[`VTA_GEMM_ITER_IN_LO +: `VTA_GEMM_ITER_IN_W];
wire [15:0] dst_f_out = f_dst_o[15:0];
wire [15:0] dst_f_in  = f_dst_i[15:0];
wire [15:0] src_f_out = is_alu ? f_asrc_o[15:0] : f_gsrc_o[15:0];
wire [15:0] src_f_in  = is_alu ? f_asrc_i[15:0] : f_gsrc_i[15:0];
wire [15:0] wgt_f_out = is_alu ? 16'd0 : f_wgt_o[15:0];
wire [15:0] wgt_f_in  = is_alu ? 16'd0 : f_wgt_i[15:0];
wire [`VTA_ALU_ALU_OPCODE_W-1:0]  alu_op    = insn_reg[`VTA_ALU_ALU_OPCODE_LO +: `VTA_ALU_ALU_OPCODE_W];
wire        use_imm   = insn_reg[`VTA_ALU_USE_IMM_LO];
wire [`VTA_ALU_IMM_W-1:0] imm       = insn_reg[`VTA_ALU_IMM_LO +: `VTA_ALU_IMM_W];

wire        mt_uop  = mem_type == `VTA_MEM_UOP;
wire        mt_acc  = mem_type == `VTA_MEM_ACC;
wire        mt_acc8 = mem_type == `VTA_MEM_ACC_8BIT;

// ------------------------------------------------------------ scratchpads
wire                    uop_re;
wire [LOG_UOP_DEPTH-1:0] uop_raddr;
wire [UOP_W-1:0]        uop_rdata;
wire                    uop_we;
wire [LOG_UOP_DEPTH-1:0] uop_waddr;
wire [UOP_W-1:0]        uop_wdata;

vta_sram #(.WIDTH(UOP_W), .LOG_DEPTH(LOG_UOP_DEPTH), .OUTPUT_REG(1)) uop_mem (
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

vta_sram #(.WIDTH(ACC_W), .LOG_DEPTH(A), .OUTPUT_REG(1)) acc_mem_dst (
    .clk(clk),
    .we(acc_we), .waddr(acc_waddr), .wdata(acc_wdata),
    .re(acc_re), .raddr(acc_dst_raddr), .rdata(acc_dst_rdata)
);

vta_sram #(.WIDTH(ACC_W), .LOG_DEPTH(A), .OUTPUT_REG(1)) acc_mem_src (
    .clk(clk),
    .we(acc_we), .waddr(acc_waddr), .wdata(acc_wdata),
    .re(acc_re), .raddr(acc_src_raddr), .rdata(acc_src_rdata)
);

// ------------------------------------------------------------ loads
wire        ld_start;
wire        ld_done;
wire        ld_err;
wire [7:0]  ld_err_code;
wire        ld_req_valid;
wire        ld_req_ready;
wire [ADDR_WIDTH-1:0] ld_req_addr;
wire [`VTA_MEM_X_SIZE_W+`VTA_MEM_Y_SIZE_W-1:0] ld_req_n;
// x_size * y_size of a LOAD (the sequencer's registered product; byte counters)
wire [`VTA_MEM_X_SIZE_W+`VTA_MEM_Y_SIZE_W-1:0] ld_elems;
wire        ld_data_valid;
wire        ld_data_ready;
wire        ld_wr_en;
wire [`VTA_MEM_SRAM_BASE_W-1:0] ld_wr_idx;
wire        ld_wr_pad;
wire        ld_busy;

wire [2:0] port_sel = {mt_acc8, mt_acc, mt_uop};

vta_loader #(
    .ADDR_WIDTH(ADDR_WIDTH),
    .MEM_SIZE(MEM_SIZE),
    // memory types (port_sel): 0 UOP, 1 ACC, 2 ACC_8BIT
    .N(3),
    .LOG_ELEM_BYTES({LOG_ACC8_BYTES[7:0], LOG_ACC_BYTES[7:0], LOG_UOP_BYTES[7:0]}),
    .LOG_DEPTH({LOG_ACC_DEPTH[7:0], LOG_ACC_DEPTH[7:0], LOG_UOP_DEPTH[7:0]})
) loader (
    .clk(clk),
    .rst(rst),
    .halt(halt),
    .start(ld_start),
    .sel(port_sel),
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
reg [16:0] scan_u_reg;
reg        scan_v1_reg, scan_v2_reg;         // micro-op reads in flight (latency 2)
reg [15:0] max_dst_reg;
reg [15:0] max_src_reg;
reg [15:0] max_wgt_reg;
reg        c_valid_reg;        // cache of the last scanned range
reg [16:0] c_bgn_reg;
reg [16:0] c_end_reg;

// the micro-op's indices, zero-extended (the range scan's and the pipeline's)
wire [15:0] u_dst = {{(16-`VTA_UOP_DST_IDX_W){1'b0}}, uop_rdata[`VTA_UOP_DST_IDX_LO +: `VTA_UOP_DST_IDX_W]};
wire [15:0] u_src = {{(16-`VTA_UOP_SRC_IDX_W){1'b0}}, uop_rdata[`VTA_UOP_SRC_IDX_LO +: `VTA_UOP_SRC_IDX_W]};
wire [15:0] u_wgt = {{(16-`VTA_UOP_WGT_IDX_W){1'b0}}, uop_rdata[`VTA_UOP_WGT_IDX_LO +: `VTA_UOP_WGT_IDX_W]};

// spans of the loop offsets, registered in POP (multipliers); the range check is
// computed every cycle into range_bad_reg, which CHECK reads: entered from DECODE
// (micro-op maxima cached) or from SCAN's last cycle, both after the spans and
// maxima are final
wire [13:0] io_m1 = iter_out - 14'd1;
wire [13:0] ii_m1 = iter_in - 14'd1;
wire [29:0] io30 = {16'd0, io_m1};
wire [29:0] ii30 = {16'd0, ii_m1};
reg  [29:0] span_dst_o_reg, span_dst_i_reg, span_src_o_reg, span_src_i_reg;
reg  [29:0] span_wgt_o_reg, span_wgt_i_reg;
wire [32:0] top_dst = {17'd0, max_dst_reg} + {3'd0, span_dst_o_reg} + {3'd0, span_dst_i_reg};
wire [32:0] top_src = {17'd0, max_src_reg} + {3'd0, span_src_o_reg} + {3'd0, span_src_i_reg};
wire [32:0] top_wgt = {17'd0, max_wgt_reg} + {3'd0, span_wgt_o_reg} + {3'd0, span_wgt_i_reg};
wire check_src = is_alu ? !use_imm : !reset_reg;
wire check_wgt = !is_alu && !reset_reg;
wire [32:0] src_depth = is_alu ? (33'd1 << LOG_ACC_DEPTH) : (33'd1 << LOG_INP_DEPTH);
wire range_bad = top_dst >= (33'd1 << LOG_ACC_DEPTH)
                 || (check_src && top_src >= src_depth)
                 || (check_wgt && top_wgt >= (33'd1 << LOG_WGT_DEPTH));
reg  range_bad_reg;
// uop_end beyond the micro-op buffer, registered in POP for DECODE (a fault's compare
// then does not feed the fault report in the same cycle)
reg  bad_uop_end_reg;

// ------------------------------------------------------------ loop nest
// offsets are kept modulo 2**16: every index of a nest that passed CHECK is below 2**16
reg [16:0] u_reg;
reg [13:0] o_reg;
reg [13:0] i_reg;
reg [15:0] o_dst_reg, i_dst_reg;
reg [15:0] o_src_reg, i_src_reg;
reg [15:0] o_wgt_reg, i_wgt_reg;
reg [31:0] nuops_reg;            // micro-ops of this instruction
wire       issue;
assign evt_uop = issue;

// ------------------------------------------------------------ micro-op pipeline
wire             pipe_empty;
wire             p_acc_we;
wire [A-1:0]     p_acc_waddr;
wire [ACC_W-1:0] ld_acc_wdata;

vta_compute_pipe #(
    .LOG_INP_WIDTH(LOG_INP_WIDTH), .LOG_WGT_WIDTH(LOG_WGT_WIDTH), .LOG_ACC_WIDTH(LOG_ACC_WIDTH),
    .LOG_BATCH(LOG_BATCH), .LOG_BLOCK(LOG_BLOCK),
    .LOG_INP_DEPTH(LOG_INP_DEPTH), .LOG_WGT_DEPTH(LOG_WGT_DEPTH), .LOG_ACC_DEPTH(LOG_ACC_DEPTH)
) pipe (
    .clk(clk),
    .rst(rst),
    .issue(issue),
    .o_dst(o_dst_reg), .i_dst(i_dst_reg),
    .o_src(o_src_reg), .i_src(i_src_reg),
    .o_wgt(o_wgt_reg), .i_wgt(i_wgt_reg),
    .is_alu(is_alu), .reset(reset_reg), .alu_op(alu_op), .use_imm(use_imm), .imm(imm),
    .uop_idx({u_dst, u_src, u_wgt}),
    .inp_re(inp_re), .inp_raddr(inp_raddr), .inp_rdata(inp_rdata),
    .wgt_re(wgt_re), .wgt_raddr(wgt_raddr), .wgt_rdata(wgt_rdata),
    .acc_re(acc_re), .acc_dst_raddr(acc_dst_raddr), .acc_src_raddr(acc_src_raddr),
    .acc_dst_rdata(acc_dst_rdata), .acc_src_rdata(acc_src_rdata),
    .acc_we(p_acc_we), .acc_waddr(p_acc_waddr), .acc_wdata(acc_wdata),
    .ld_wdata(ld_acc_wdata),
    .out_we(out_we), .out_waddr(out_waddr), .out_wdata(out_wdata),
    .empty(pipe_empty)
);

// ACC writes: the loader's during a LOAD (the pipeline is empty then), else the
// pipeline's; the data merged in the pipeline (the loader's zero outside a LOAD:
// selected by registers only); UOP writes: the loader's
assign acc_we = (state_reg == STATE_LOAD) ? (ld_wr_en && !mt_uop) : p_acc_we;
assign acc_waddr = (state_reg == STATE_LOAD) ? ld_wr_idx[A-1:0] : p_acc_waddr;
assign ld_acc_wdata = (state_reg != STATE_LOAD || ld_wr_pad) ? {ACC_W{1'b0}}
                    : (mt_acc ? acc_elem : acc8_wide);
assign uop_we = state_reg == STATE_LOAD && ld_wr_en && mt_uop;
assign uop_waddr = ld_wr_idx[LOG_UOP_DEPTH-1:0];
assign uop_wdata = ld_wr_pad ? {UOP_W{1'b0}} : uop_elem;

// bits of the 32-bit field values above the buffer depths are zero or unused
// by construction (range-checked); gathered here for lint
wire _unused_ok = &{1'b0, f_bgn[31:17], f_end[31:17], f_dst_o[31:16], f_dst_i[31:16],
                    f_gsrc_o[31:16], f_gsrc_i[31:16], f_asrc_o[31:16], f_asrc_i[31:16],
                    f_wgt_o[31:16], f_wgt_i[31:16], uop_rdata, ld_wr_idx, ld_done, 1'b0};

// ------------------------------------------------------------ instruction FSM
// The state and loop registers are updated in one clocked block; the outputs of the
// cycle (token pops and pushes, faults, events, counter increments, micro-op reads) are
// continuous functions of the state and the inputs.  (A simulator such as Icarus runs a
// combinational `always @*` next-state block on every input change and pays for every
// variable it reads there; this form costs it a few reads per cycle.)
wire tokens_ok = (!pop_prev || l2g_nonempty) && (!pop_next || s2g_nonempty);
wire is_gemm_alu = opcode == `VTA_OPCODE_GEMM || opcode == `VTA_OPCODE_ALU;
// results other engines (or the host) may look at must be written before retiring
wire retire_drains = push_prev || push_next || !is_gemm_alu;
wire retire_wait = retire_drains && !pipe_empty;
wire token_overflow = (push_prev && g2l_full) || (push_next && g2s_full);
// retiring (tokens pushed, counters counted), even while halted
wire retire_ok = state_reg == STATE_RETIRE && !retire_wait && !token_overflow;
// retiring now and not halted: the next instruction is taken in the same cycle
wire retire_now = retire_ok && !halt;
assign cmd_ready = (state_reg == STATE_IDLE || retire_now) && run;
wire take_cmd = cmd_valid && cmd_ready;
assign index = index_reg;
assign idle = state_reg == STATE_IDLE && pipe_empty;
assign stall = state_reg == STATE_POP && !tokens_ok;
assign busy = !idle && !stall;

wire last_u = u_reg == uop_end - 17'd1;
wire last_i = i_reg == iter_in - 14'd1;
wire last_o = o_reg == iter_out - 14'd1;

// DECODE: fault checks on the fields
wire decode = state_reg == STATE_DECODE;
wire bad_mem_type = !(mt_uop || mt_acc || mt_acc8);
wire bad_alu_op = is_alu && alu_op > `VTA_ALU_MUL;
// a MUL result is written a cycle later than others (vta_compute_pipe): nothing issues
// in the cycle after a MUL micro-op
wire is_mul = is_alu && alu_op == `VTA_ALU_MUL;
reg  mul_gap_reg;
wire bad_uop_end = uop_end > (17'd1 << LOG_UOP_DEPTH);
wire empty_nest = uop_end <= uop_bgn || iter_out == 14'd0 || iter_in == 14'd0;
wire cached = c_valid_reg && c_bgn_reg == uop_bgn && c_end_reg == uop_end;
wire err_mem_type = decode && opcode == `VTA_OPCODE_LOAD && bad_mem_type;
wire err_alu_op = decode && is_gemm_alu && bad_alu_op;
wire err_range = (decode && is_gemm_alu && !bad_alu_op && bad_uop_end_reg)
                 || (state_reg == STATE_CHECK && range_bad_reg);
wire err_load = state_reg == STATE_LOAD && ld_err;
wire err_tokens = state_reg == STATE_RETIRE && !retire_wait && token_overflow;
// SCAN: a micro-op read this cycle
wire scan_read = state_reg == STATE_SCAN && scan_u_reg != uop_end;
wire scan_done = scan_u_reg == uop_end && !scan_v1_reg && !scan_v2_reg;
wire counted_load = retire_ok && opcode == `VTA_OPCODE_LOAD && x_size != 16'd0;

// (the ACC / UOP write ports are the pipeline's until it is empty)
assign ld_start = decode && opcode == `VTA_OPCODE_LOAD && !bad_mem_type && x_size != 16'd0
                  && pipe_empty;
// the run stopped (halt): no further micro-op issues (those issued complete)
assign issue = state_reg == STATE_EXEC && !halt && !mul_gap_reg;
assign uop_re = state_reg == STATE_EXEC || scan_read;
assign uop_raddr = scan_read ? scan_u_reg[LOG_UOP_DEPTH-1:0] : u_reg[LOG_UOP_DEPTH-1:0];
assign evt_start = state_reg == STATE_POP && tokens_ok;
assign l2g_pop = evt_start && pop_prev;
assign s2g_pop = evt_start && pop_next;
assign evt_retire = retire_ok;
assign g2l_push = retire_ok && push_prev;
assign g2s_push = retire_ok && push_next;
assign finish = retire_ok && opcode == `VTA_OPCODE_FINISH;
assign err = err_mem_type || err_alu_op || err_range || err_load || err_tokens;
assign err_code = err_mem_type ? `VTA_ERR_BAD_MEMORY_TYPE
                : err_alu_op ? `VTA_ERR_BAD_ALU_OPCODE
                : err_range ? `VTA_ERR_SRAM_RANGE
                : err_load ? ld_err_code
                : err_tokens ? `VTA_ERR_TOKEN_OVERFLOW
                : `VTA_ERR_NONE;
assign uop_bytes = (counted_load && mt_uop) ? ld_elems << LOG_UOP_BYTES : 32'd0;
assign acc_bytes = (counted_load && mt_acc) ? ld_elems << LOG_ACC_BYTES : 32'd0;
assign acc8_bytes = (counted_load && mt_acc8) ? ld_elems << LOG_ACC8_BYTES : 32'd0;
assign gemm_uops = (retire_ok && opcode == `VTA_OPCODE_GEMM && !reset_reg) ? nuops_reg : 32'd0;
assign alu_uops = (retire_ok && opcode == `VTA_OPCODE_ALU) ? nuops_reg : 32'd0;

always @(posedge clk) begin
    if (uop_we) begin
        c_valid_reg <= 1'b0;
    end

    case (state_reg)
        STATE_IDLE: begin
            // waits for an instruction
            if (take_cmd) begin
                insn_reg <= cmd_data[`VTA_INSN_W-1:0];
                index_reg <= cmd_data[`VTA_CMD_INDEX_LO +: `VTA_CMD_INDEX_W];
                state_reg <= STATE_POP;
            end
        end
        STATE_POP: begin
            // waits for the l2g / s2g tokens
            if (tokens_ok) begin
                state_reg <= STATE_DECODE;
            end
        end
        STATE_DECODE: begin
            // fault checks on the fields, then dispatch by opcode
            scan_u_reg <= uop_bgn;
            u_reg <= uop_bgn;
            o_reg <= 14'd0;
            i_reg <= 14'd0;
            o_dst_reg <= 16'd0;
            o_src_reg <= 16'd0;
            o_wgt_reg <= 16'd0;
            i_dst_reg <= 16'd0;
            i_src_reg <= 16'd0;
            i_wgt_reg <= 16'd0;
            nuops_reg <= 32'd0;
            if (opcode == `VTA_OPCODE_LOAD) begin
                if (bad_mem_type) begin
                    state_reg <= STATE_IDLE;
                end else if (x_size == 16'd0) begin
                    state_reg <= STATE_RETIRE;
                end else if (pipe_empty) begin
                    state_reg <= STATE_LOAD;
                end
            end else if (is_gemm_alu) begin
                if (bad_alu_op || bad_uop_end_reg) begin
                    state_reg <= STATE_IDLE;
                end else if (empty_nest) begin
                    state_reg <= STATE_RETIRE;
                end else if (cached) begin
                    state_reg <= STATE_CHECK;
                end else begin
                    max_dst_reg <= 16'd0;
                    max_src_reg <= 16'd0;
                    max_wgt_reg <= 16'd0;
                    state_reg <= STATE_SCAN;
                end
            end else begin
                // FINISH: tokens only
                state_reg <= STATE_RETIRE;
            end
        end
        STATE_LOAD: begin
            // waits for the UOP / ACC load
            if (ld_err) begin
                state_reg <= STATE_IDLE;
            end else if (!ld_busy) begin
                // (the sequencer is back in idle: done; a cycle after its last
                // write, so the read data's handshake does not reach this state)
                state_reg <= STATE_RETIRE;
            end
        end
        STATE_SCAN: begin
            // reads the micro-ops once for their largest fields
            if (scan_read) begin
                scan_u_reg <= scan_u_reg + 17'd1;
            end
            if (scan_v2_reg) begin
                if (u_dst > max_dst_reg) max_dst_reg <= u_dst;
                if (u_src > max_src_reg) max_src_reg <= u_src;
                if (u_wgt > max_wgt_reg) max_wgt_reg <= u_wgt;
            end
            if (scan_done) begin
                c_valid_reg <= 1'b1;
                c_bgn_reg <= uop_bgn;
                c_end_reg <= uop_end;
                state_reg <= STATE_CHECK;
            end
        end
        STATE_CHECK: begin
            // largest index of the nest against each buffer
            state_reg <= range_bad_reg ? STATE_IDLE : STATE_EXEC;
        end
        STATE_EXEC: begin
            // issues one micro-op per cycle (a MUL instruction one every other cycle)
            if (!mul_gap_reg) begin
                nuops_reg <= nuops_reg + 32'd1;
                if (!last_u) begin
                    u_reg <= u_reg + 17'd1;
                end else begin
                    u_reg <= uop_bgn;
                    if (!last_i) begin
                        i_reg <= i_reg + 14'd1;
                        i_dst_reg <= i_dst_reg + dst_f_in;
                        i_src_reg <= i_src_reg + src_f_in;
                        i_wgt_reg <= i_wgt_reg + wgt_f_in;
                    end else begin
                        i_reg <= 14'd0;
                        i_dst_reg <= 16'd0;
                        i_src_reg <= 16'd0;
                        i_wgt_reg <= 16'd0;
                        o_reg <= o_reg + 14'd1;
                        o_dst_reg <= o_dst_reg + dst_f_out;
                        o_src_reg <= o_src_reg + src_f_out;
                        o_wgt_reg <= o_wgt_reg + wgt_f_out;
                        if (last_o) begin
                            state_reg <= STATE_RETIRE;
                        end
                    end
                end
            end
        end
        STATE_RETIRE: begin
            // waits for the pipeline if the results must be visible, then pushes
            // g2l / g2s, retires, and takes the next instruction if there is one
            if (!retire_wait) begin
                state_reg <= STATE_IDLE;
                if (retire_now && take_cmd) begin
                    insn_reg <= cmd_data[`VTA_INSN_W-1:0];
                    index_reg <= cmd_data[`VTA_CMD_INDEX_LO +: `VTA_CMD_INDEX_W];
                    state_reg <= STATE_POP;
                end
            end
        end
        default: begin
            state_reg <= STATE_IDLE;
        end
    endcase
    if (halt) begin
        state_reg <= STATE_IDLE;
    end

    mul_gap_reg <= issue && is_mul;
    scan_v1_reg <= scan_read;
    scan_v2_reg <= scan_v1_reg;
    range_bad_reg <= range_bad;
    if (state_reg == STATE_POP) begin
        bad_uop_end_reg <= bad_uop_end;
        span_dst_o_reg <= io30 * {14'd0, dst_f_out};
        span_dst_i_reg <= ii30 * {14'd0, dst_f_in};
        span_src_o_reg <= io30 * {14'd0, src_f_out};
        span_src_i_reg <= ii30 * {14'd0, src_f_in};
        span_wgt_o_reg <= io30 * {14'd0, wgt_f_out};
        span_wgt_i_reg <= ii30 * {14'd0, wgt_f_in};
    end

    if (rst || halt) begin
        scan_v1_reg <= 1'b0;
        scan_v2_reg <= 1'b0;
    end
    if (rst) begin
        mul_gap_reg <= 1'b0;
        state_reg <= STATE_IDLE;
        insn_reg <= 128'd0;
        index_reg <= 32'd0;
        c_valid_reg <= 1'b0;
    end
end

endmodule

`resetall

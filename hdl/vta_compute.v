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
 * (iter_in-1)*factor_in (the products registered in POP, the sums and
 * compares registered every cycle, read in CHECK).
 *
 * The FSM is in two processes (next state, the loop nest and the range scan
 * each in an `always @*` of its own; one clocked block copies them); the
 * cycle's outputs (token pops and pushes, faults, events, counters) are
 * continuous.  Widths come from vta_isa.vh and the parameters.
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
// index widths: UOP, ACC (a destination), a source (INP for GEMM, ACC for ALU), WGT
localparam U = LOG_UOP_DEPTH;
localparam A = LOG_ACC_DEPTH;
localparam S = `VTA_UOP_SRC_IDX_W;
localparam W = LOG_WGT_DEPTH;
// loop counts
localparam OW = `VTA_GEMM_ITER_OUT_W;
localparam IW = `VTA_GEMM_ITER_IN_W;
// a nest's largest index: a micro-op field plus both loop spans
localparam XW = (S > W) ? S : W;
localparam TW = ((OW > IW) ? OW : IW) + XW + 2;
// an element count (x_size * y_size), a counter increment (vta_status lanes)
localparam NW = `VTA_MEM_X_SIZE_W + `VTA_MEM_Y_SIZE_W;
localparam CW = 32;

initial begin
    if (LOG_ACC_WIDTH != 5 || LOG_INP_WIDTH != 3 || LOG_WGT_WIDTH != 3) begin
        $display("%m: only int8 inputs/weights and int32 accumulators are implemented");
        $finish;
    end
    if (`VTA_UOP_DST_IDX_W != A || `VTA_UOP_WGT_IDX_W != W || `VTA_GEMM_UOP_BGN_W != U
        || `VTA_GEMM_UOP_END_W != U + 1 || S < LOG_INP_DEPTH || S < A
        || `VTA_ALU_UOP_BGN_LO != `VTA_GEMM_UOP_BGN_LO
        || `VTA_ALU_DST_FACTOR_IN_LO != `VTA_GEMM_DST_FACTOR_IN_LO) begin
        $display("%m: vta_isa.vh was generated for another configuration");
        $finish;
    end
    if (NW > CW) begin
        $display("%m: an element count (%0d bits) exceeds a counter increment", NW);
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

reg [3:0]   state_reg, state_next;
reg [`VTA_INSN_W-1:0] insn_reg, insn_next;
reg [`VTA_CMD_INDEX_W-1:0] index_reg, index_next;

// ------------------------------------------------------------ fields
wire [`VTA_MEM_OPCODE_W-1:0] opcode = insn_reg[`VTA_MEM_OPCODE_LO +: `VTA_MEM_OPCODE_W];
// the LOAD/STORE fields of insn_reg, one wire each (generated from vta/isa.py)
`include "vta_mem_fields.vh"

// GEMM and ALU share the fields up to dst_factor_in (vta.isa: compute_head)
wire          is_alu    = opcode == `VTA_OPCODE_ALU;
wire          reset_reg = insn_reg[`VTA_GEMM_RESET_REG_LO] && !is_alu;
wire [U-1:0]  uop_bgn   = insn_reg[`VTA_GEMM_UOP_BGN_LO +: `VTA_GEMM_UOP_BGN_W];
wire [U:0]    uop_end   = insn_reg[`VTA_GEMM_UOP_END_LO +: `VTA_GEMM_UOP_END_W];
wire [OW-1:0] iter_out  = insn_reg[`VTA_GEMM_ITER_OUT_LO +: `VTA_GEMM_ITER_OUT_W];
wire [IW-1:0] iter_in   = insn_reg[`VTA_GEMM_ITER_IN_LO +: `VTA_GEMM_ITER_IN_W];
wire [A-1:0]  dst_f_out = insn_reg[`VTA_GEMM_DST_FACTOR_OUT_LO +: `VTA_GEMM_DST_FACTOR_OUT_W];
wire [A-1:0]  dst_f_in  = insn_reg[`VTA_GEMM_DST_FACTOR_IN_LO +: `VTA_GEMM_DST_FACTOR_IN_W];
wire [`VTA_ALU_ALU_OPCODE_W-1:0] alu_op = insn_reg[`VTA_ALU_ALU_OPCODE_LO +: `VTA_ALU_ALU_OPCODE_W];
wire          use_imm   = insn_reg[`VTA_ALU_USE_IMM_LO];
wire [`VTA_ALU_IMM_W-1:0] imm = insn_reg[`VTA_ALU_IMM_LO +: `VTA_ALU_IMM_W];
// the source and WGT factors: GEMM's (INP, WGT) or ALU's (ACC; no WGT), zero-extended
reg  [S-1:0]  src_f_out, src_f_in;
reg  [W-1:0]  wgt_f_out, wgt_f_in;
always @* begin
    src_f_out = {S{1'b0}};
    src_f_in = {S{1'b0}};
    wgt_f_out = {W{1'b0}};
    wgt_f_in = {W{1'b0}};
    if (is_alu) begin
        src_f_out[`VTA_ALU_SRC_FACTOR_OUT_W-1:0] =
            insn_reg[`VTA_ALU_SRC_FACTOR_OUT_LO +: `VTA_ALU_SRC_FACTOR_OUT_W];
        src_f_in[`VTA_ALU_SRC_FACTOR_IN_W-1:0] =
            insn_reg[`VTA_ALU_SRC_FACTOR_IN_LO +: `VTA_ALU_SRC_FACTOR_IN_W];
    end else begin
        src_f_out[`VTA_GEMM_SRC_FACTOR_OUT_W-1:0] =
            insn_reg[`VTA_GEMM_SRC_FACTOR_OUT_LO +: `VTA_GEMM_SRC_FACTOR_OUT_W];
        src_f_in[`VTA_GEMM_SRC_FACTOR_IN_W-1:0] =
            insn_reg[`VTA_GEMM_SRC_FACTOR_IN_LO +: `VTA_GEMM_SRC_FACTOR_IN_W];
        wgt_f_out = insn_reg[`VTA_GEMM_WGT_FACTOR_OUT_LO +: `VTA_GEMM_WGT_FACTOR_OUT_W];
        wgt_f_in = insn_reg[`VTA_GEMM_WGT_FACTOR_IN_LO +: `VTA_GEMM_WGT_FACTOR_IN_W];
    end
end

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
        acc8_wide[e*AL +: AL] = {{(AL-OL){acc8_elem[e*OL+OL-1]}}, acc8_elem[e*OL +: OL]};
    end
end

// ------------------------------------------------------------ range scan
// the micro-op's indices (the range scan's and the pipeline's)
wire [A-1:0] u_dst = uop_rdata[`VTA_UOP_DST_IDX_LO +: `VTA_UOP_DST_IDX_W];
wire [S-1:0] u_src = uop_rdata[`VTA_UOP_SRC_IDX_LO +: `VTA_UOP_SRC_IDX_W];
wire [W-1:0] u_wgt = uop_rdata[`VTA_UOP_WGT_IDX_LO +: `VTA_UOP_WGT_IDX_W];

reg [U:0]   scan_u_reg, scan_u_next;     // the next micro-op to read
reg         scan_v1_reg, scan_v2_reg;    // micro-op reads in flight (latency 2)
reg [A-1:0] max_dst_reg;                 // the largest fields so far
reg [S-1:0] max_src_reg;
reg [W-1:0] max_wgt_reg;
reg         c_valid_reg, c_valid_next;   // cache of the last scanned range
reg [U-1:0] c_bgn_reg, c_bgn_next;
reg [U:0]   c_end_reg, c_end_next;

// spans of the loop offsets, registered in POP (multipliers); the range check is
// computed every cycle into range_bad_reg, which CHECK reads: entered from DECODE
// (micro-op maxima cached) or from SCAN's last cycle, both after the spans and
// maxima are final
wire [OW-1:0] io_m1 = iter_out - 1'b1;
wire [IW-1:0] ii_m1 = iter_in - 1'b1;
reg  [OW+A-1:0] span_dst_o_reg;
reg  [IW+A-1:0] span_dst_i_reg;
reg  [OW+S-1:0] span_src_o_reg;
reg  [IW+S-1:0] span_src_i_reg;
reg  [OW+W-1:0] span_wgt_o_reg;
reg  [IW+W-1:0] span_wgt_i_reg;
wire [TW-1:0] top_dst = {{(TW-A){1'b0}}, max_dst_reg} + {{(TW-OW-A){1'b0}}, span_dst_o_reg}
                        + {{(TW-IW-A){1'b0}}, span_dst_i_reg};
wire [TW-1:0] top_src = {{(TW-S){1'b0}}, max_src_reg} + {{(TW-OW-S){1'b0}}, span_src_o_reg}
                        + {{(TW-IW-S){1'b0}}, span_src_i_reg};
wire [TW-1:0] top_wgt = {{(TW-W){1'b0}}, max_wgt_reg} + {{(TW-OW-W){1'b0}}, span_wgt_o_reg}
                        + {{(TW-IW-W){1'b0}}, span_wgt_i_reg};
localparam [TW-1:0] ACC_DEPTH = {{(TW-1){1'b0}}, 1'b1} << A;
localparam [TW-1:0] INP_DEPTH = {{(TW-1){1'b0}}, 1'b1} << LOG_INP_DEPTH;
localparam [TW-1:0] WGT_DEPTH = {{(TW-1){1'b0}}, 1'b1} << W;
wire check_src = is_alu ? !use_imm : !reset_reg;
wire check_wgt = !is_alu && !reset_reg;
wire [TW-1:0] src_depth = is_alu ? ACC_DEPTH : INP_DEPTH;
wire range_bad = top_dst >= ACC_DEPTH
                 || (check_src && top_src >= src_depth)
                 || (check_wgt && top_wgt >= WGT_DEPTH);
reg  range_bad_reg;
// uop_end beyond the micro-op buffer, registered in POP for DECODE (a fault's compare
// then does not feed the fault report in the same cycle)
localparam [U:0] UOP_DEPTH = {1'b1, {U{1'b0}}};
reg  bad_uop_end_reg;

// ------------------------------------------------------------ loop nest
// offsets are kept modulo the buffer depths: every index of a nest that passed CHECK
// is below its depth
reg [U-1:0]  u_reg, u_next;
reg [OW-1:0] o_reg, o_next;
reg [IW-1:0] i_reg, i_next;
// {dst, src, wgt} offsets of the outer and of the inner loop, packed as the pipeline packs
// them (fewer variables for a simulator to copy every cycle of a nest)
localparam IX = A + S + W;
reg [IX-1:0] o_off_reg, o_off_next, i_off_reg, i_off_next;
reg [CW-1:0] nuops_reg, nuops_next;      // micro-ops of this instruction
wire         issue;
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
    .o_dst(o_off_reg[S+W +: A]), .i_dst(i_off_reg[S+W +: A]),
    .o_src(o_off_reg[W +: S]), .i_src(i_off_reg[W +: S]),
    .o_wgt(o_off_reg[0 +: W]), .i_wgt(i_off_reg[0 +: W]),
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
assign uop_waddr = ld_wr_idx[U-1:0];
assign uop_wdata = ld_wr_pad ? {UOP_W{1'b0}} : uop_elem;

// bits of the micro-op word beside its fields, and of a LOAD's index beyond the
// buffer depth (range-checked), are unused; gathered here for lint
wire _unused_ok = &{1'b0, uop_rdata, ld_wr_idx, ld_done, 1'b0};

// ------------------------------------------------------------ instruction FSM
// The cycle's outputs (token pops and pushes, faults, events, counter increments,
// micro-op reads) are continuous functions of the state and the inputs; the next
// state, the loop nest and the range scan each have a next-state block of their own,
// so a simulator evaluates each only when what it reads changes (Icarus runs an
// `always @*` block again on every change of anything it reads).
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

wire last_u = {1'b0, u_reg} == uop_end - 1'b1;
wire last_i = i_reg == iter_in - 1'b1;
wire last_o = o_reg == iter_out - 1'b1;
// EXEC: a micro-op goes out (or would: halt stops the issue, not the count); the last one
wire loop_step = state_reg == STATE_EXEC && !mul_gap_reg;
wire nest_done = loop_step && last_u && last_i && last_o;

// DECODE: fault checks on the fields
wire decode = state_reg == STATE_DECODE;
wire bad_mem_type = !(mt_uop || mt_acc || mt_acc8);
wire bad_alu_op = is_alu && alu_op > `VTA_ALU_MUL;
// a MUL result is written a cycle later than others (vta_compute_pipe): nothing issues
// in the cycle after a MUL micro-op
wire is_mul = is_alu && alu_op == `VTA_ALU_MUL;
reg  mul_gap_reg;
wire bad_uop_end = uop_end > UOP_DEPTH;
wire empty_nest = uop_end <= {1'b0, uop_bgn} || iter_out == 0 || iter_in == 0;
wire cached = c_valid_reg && c_bgn_reg == uop_bgn && c_end_reg == uop_end;
// DECODE of a GEMM / ALU whose micro-ops must be scanned (the cached maxima kept otherwise)
wire to_scan = decode && is_gemm_alu && !bad_alu_op && !bad_uop_end_reg && !empty_nest
               && !cached;
wire err_mem_type = decode && opcode == `VTA_OPCODE_LOAD && bad_mem_type;
wire err_alu_op = decode && is_gemm_alu && bad_alu_op;
wire err_range = (decode && is_gemm_alu && !bad_alu_op && bad_uop_end_reg)
                 || (state_reg == STATE_CHECK && range_bad_reg);
wire err_load = state_reg == STATE_LOAD && ld_err;
wire err_tokens = state_reg == STATE_RETIRE && !retire_wait && token_overflow;
// SCAN: a micro-op read this cycle
wire scan_read = state_reg == STATE_SCAN && scan_u_reg != uop_end;
wire scan_done = scan_u_reg == uop_end && !scan_v1_reg && !scan_v2_reg;
wire counted_load = retire_ok && opcode == `VTA_OPCODE_LOAD && x_size != 0;

// (the ACC / UOP write ports are the pipeline's until it is empty)
assign ld_start = decode && opcode == `VTA_OPCODE_LOAD && !bad_mem_type && x_size != 0
                  && pipe_empty;
// the run stopped (halt): no further micro-op issues (those issued complete)
assign issue = state_reg == STATE_EXEC && !halt && !mul_gap_reg;
assign uop_re = state_reg == STATE_EXEC || scan_read;
assign uop_raddr = scan_read ? scan_u_reg[U-1:0] : u_reg;
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
// counter increments at retire
wire [CW+NW-1:0] ld_elems_wide = {{CW{1'b0}}, ld_elems};
wire [CW-1:0] ld_elems_cw = ld_elems_wide[CW-1:0];
assign uop_bytes = (counted_load && mt_uop) ? ld_elems_cw << LOG_UOP_BYTES : {CW{1'b0}};
assign acc_bytes = (counted_load && mt_acc) ? ld_elems_cw << LOG_ACC_BYTES : {CW{1'b0}};
assign acc8_bytes = (counted_load && mt_acc8) ? ld_elems_cw << LOG_ACC8_BYTES : {CW{1'b0}};
assign gemm_uops = (retire_ok && opcode == `VTA_OPCODE_GEMM && !reset_reg) ? nuops_reg
                 : {CW{1'b0}};
assign alu_uops = (retire_ok && opcode == `VTA_OPCODE_ALU) ? nuops_reg : {CW{1'b0}};
wire _unused_elems = &{1'b0, ld_elems_wide[CW+NW-1:CW], 1'b0};

always @* begin
    state_next = state_reg;
    insn_next = insn_reg;
    index_next = index_reg;

    case (state_reg)
        STATE_IDLE: begin
            // waits for an instruction
            if (take_cmd) begin
                insn_next = cmd_data[`VTA_INSN_W-1:0];
                index_next = cmd_data[`VTA_CMD_INDEX_LO +: `VTA_CMD_INDEX_W];
                state_next = STATE_POP;
            end
        end
        STATE_POP: begin
            // waits for the l2g / s2g tokens
            if (tokens_ok) begin
                state_next = STATE_DECODE;
            end
        end
        STATE_DECODE: begin
            // fault checks on the fields, then dispatch by opcode (a LOAD waits for the
            // pipeline to empty: it writes ACC / UOP)
            if (opcode == `VTA_OPCODE_LOAD) begin
                if (bad_mem_type) begin
                    state_next = STATE_IDLE;
                end else if (x_size == 0) begin
                    state_next = STATE_RETIRE;
                end else if (pipe_empty) begin
                    state_next = STATE_LOAD;
                end
            end else if (is_gemm_alu) begin
                if (bad_alu_op || bad_uop_end_reg) begin
                    state_next = STATE_IDLE;
                end else if (empty_nest) begin
                    state_next = STATE_RETIRE;
                end else if (cached) begin
                    state_next = STATE_CHECK;
                end else begin
                    state_next = STATE_SCAN;
                end
            end else begin
                // FINISH: tokens only
                state_next = STATE_RETIRE;
            end
        end
        STATE_LOAD: begin
            // waits for the UOP / ACC load (the sequencer back in idle: done, a cycle
            // after its last write, so the read data's handshake does not reach here)
            if (ld_err) begin
                state_next = STATE_IDLE;
            end else if (!ld_busy) begin
                state_next = STATE_RETIRE;
            end
        end
        STATE_SCAN: begin
            // waits for the scan of the micro-ops' largest fields
            if (scan_done) begin
                state_next = STATE_CHECK;
            end
        end
        STATE_CHECK: begin
            // waits for nothing: the largest index of the nest against each buffer
            state_next = range_bad_reg ? STATE_IDLE : STATE_EXEC;
        end
        STATE_EXEC: begin
            // waits for the last micro-op to issue (one per cycle; a MUL every other)
            if (nest_done) begin
                state_next = STATE_RETIRE;
            end
        end
        STATE_RETIRE: begin
            // waits for the pipeline if the results must be visible, then pushes
            // g2l / g2s, retires, and takes the next instruction if there is one
            if (!retire_wait) begin
                state_next = STATE_IDLE;
                if (retire_now && take_cmd) begin
                    insn_next = cmd_data[`VTA_INSN_W-1:0];
                    index_next = cmd_data[`VTA_CMD_INDEX_LO +: `VTA_CMD_INDEX_W];
                    state_next = STATE_POP;
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

// the loop nest: set up in DECODE, one step per micro-op issued in EXEC
always @* begin
    u_next = u_reg;
    o_next = o_reg;
    i_next = i_reg;
    o_off_next = o_off_reg;
    i_off_next = i_off_reg;
    nuops_next = nuops_reg;
    if (decode) begin
        u_next = uop_bgn;
        o_next = {OW{1'b0}};
        i_next = {IW{1'b0}};
        o_off_next = {IX{1'b0}};
        i_off_next = {IX{1'b0}};
        nuops_next = {CW{1'b0}};
    end else if (loop_step) begin
        nuops_next = nuops_reg + 1'b1;
        if (!last_u) begin
            u_next = u_reg + 1'b1;
        end else begin
            u_next = uop_bgn;
            if (!last_i) begin
                i_next = i_reg + 1'b1;
                i_off_next = {i_off_reg[S+W +: A] + dst_f_in, i_off_reg[W +: S] + src_f_in,
                              i_off_reg[0 +: W] + wgt_f_in};
            end else begin
                i_next = {IW{1'b0}};
                i_off_next = {IX{1'b0}};
                o_next = o_reg + 1'b1;
                o_off_next = {o_off_reg[S+W +: A] + dst_f_out, o_off_reg[W +: S] + src_f_out,
                              o_off_reg[0 +: W] + wgt_f_out};
            end
        end
    end
end

// the range scan: the micro-ops uop_bgn..uop_end-1 read once (their largest fields
// kept below), cached for that range until a UOP load writes the buffer
always @* begin
    scan_u_next = scan_u_reg;
    c_valid_next = c_valid_reg && !uop_we;
    c_bgn_next = c_bgn_reg;
    c_end_next = c_end_reg;
    if (decode) begin
        scan_u_next = {1'b0, uop_bgn};
    end
    if (scan_read) begin
        scan_u_next = scan_u_reg + 1'b1;
    end
    if (state_reg == STATE_SCAN && scan_done) begin
        c_valid_next = 1'b1;
        c_bgn_next = uop_bgn;
        c_end_next = uop_end;
    end
end

// registers of the datapath around the FSM: the scan's reads in flight and running
// maxima (a micro-op's fields two cycles after its read), the range check, the
// products of POP, the MUL gap
always @(posedge clk) begin
    mul_gap_reg <= issue && is_mul;
    scan_v1_reg <= scan_read;
    scan_v2_reg <= scan_v1_reg;
    if (to_scan) begin
        max_dst_reg <= {A{1'b0}};
        max_src_reg <= {S{1'b0}};
        max_wgt_reg <= {W{1'b0}};
    end else if (scan_v2_reg) begin
        if (u_dst > max_dst_reg) max_dst_reg <= u_dst;
        if (u_src > max_src_reg) max_src_reg <= u_src;
        if (u_wgt > max_wgt_reg) max_wgt_reg <= u_wgt;
    end
    range_bad_reg <= range_bad;
    if (state_reg == STATE_POP) begin
        bad_uop_end_reg <= bad_uop_end;
        span_dst_o_reg <= {{A{1'b0}}, io_m1} * {{OW{1'b0}}, dst_f_out};
        span_dst_i_reg <= {{A{1'b0}}, ii_m1} * {{IW{1'b0}}, dst_f_in};
        span_src_o_reg <= {{S{1'b0}}, io_m1} * {{OW{1'b0}}, src_f_out};
        span_src_i_reg <= {{S{1'b0}}, ii_m1} * {{IW{1'b0}}, src_f_in};
        span_wgt_o_reg <= {{W{1'b0}}, io_m1} * {{OW{1'b0}}, wgt_f_out};
        span_wgt_i_reg <= {{W{1'b0}}, ii_m1} * {{IW{1'b0}}, wgt_f_in};
    end
    if (rst || halt) begin
        scan_v1_reg <= 1'b0;
        scan_v2_reg <= 1'b0;
    end
    if (rst) begin
        mul_gap_reg <= 1'b0;
    end
end

// (the instruction register, the loop nest and the scan change only on a command taken,
// in DECODE and on a loop step, in DECODE and SCAN: their copies are enabled then, as a
// clock enable would; their _next hold them otherwise, so the enables only spare a
// simulator copies)
always @(posedge clk) begin
    state_reg <= state_next;
    if (take_cmd) begin
        insn_reg <= insn_next;
        index_reg <= index_next;
    end
    if (decode || loop_step) begin
        u_reg <= u_next;
        o_reg <= o_next;
        i_reg <= i_next;
        o_off_reg <= o_off_next;
        i_off_reg <= i_off_next;
        nuops_reg <= nuops_next;
    end
    if (decode || state_reg == STATE_SCAN) begin
        scan_u_reg <= scan_u_next;
        c_bgn_reg <= c_bgn_next;
        c_end_reg <= c_end_next;
    end
    c_valid_reg <= c_valid_next;
    if (rst) begin
        state_reg <= STATE_IDLE;
        insn_reg <= {`VTA_INSN_W{1'b0}};
        index_reg <= {`VTA_CMD_INDEX_W{1'b0}};
        c_valid_reg <= 1'b0;
    end
end

endmodule

`resetall

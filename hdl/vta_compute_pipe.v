`resetall
`timescale 1ns / 1ps
`default_nettype none

/*
 * vta_compute_pipe: the GEMM/ALU micro-op pipeline of the compute engine.
 * One micro-op enters per cycle (`issue`, with its loop offsets and the
 * instruction's controls, which travel with it); every stage is a register
 * stage, and every scratchpad read comes from a registered address and
 * leaves its RAM through the RAM's output register:
 *
 *   cycle  stage
 *   t      issue      the engine reads UOP[u] (read latency 2)
 *   t+1    offsets    dst/src/wgt loop offsets o + i
 *   t+2    index      micro-op fields + offsets
 *   t+3    read       INP[src], WGT[wgt] (latency 2)
 *   t+5    GEMM       vta_gemm (latency 3)
 *   t+6    read       ACC[dst], ACC[src] (latency 2)
 *   t+7    forward    which of the last two results replaces each ACC operand
 *   t+8    D          ACC + sum, 0 (reset), or the ALU op (vta_alu); writes
 *                     ACC[dst] and OUT[dst], and keeps the result in w1;
 *                     MUL: the three 16x16 partial products are registered
 *   t+9    E          MUL only: the partial products summed; writes ACC[dst]
 *                     and OUT[dst], and keeps the result in w1
 *
 * Read-after-write on ACC: a micro-op reads ACC at t+6, and the writes made
 * at t+6 and t+7 are not in the RAM yet.  The results written in the last two
 * cycles sit in w1/w2 (newest first); at t+7 the micro-op's dst and src
 * indices are compared with the address written now (D, or E for a MUL) and
 * with w1's, and at t+8 a 3:1 mux with those registered selects picks each
 * operand.  A result is thus visible to every micro-op whose t+7 is not
 * before the cycle it is written in.  Results equal the serial golden model
 * for any dst sequence, with no stall, also across instructions, given the
 * sequencer's one rule for MUL (vta_compute): after a MUL micro-op it issues
 * nothing in the next cycle.  Then a MUL's write at t+9 meets no write of
 * the next micro-op (at t+10 or later) on the ACC / OUT write ports, and the
 * next micro-op (issued at t+2 or later, its t+7 at t+9 or later) sees it.
 *
 * Indices are computed modulo the buffer depths: the engine range-checks the
 * whole nest before it issues anything.  `empty` is low while any issued
 * micro-op has not written yet.  Only `rst` clears the pipeline: micro-ops
 * already issued always complete (at most 9 cycles).
 */
`include "vta_isa.vh"
`include "vta_cfg.vh"

module vta_compute_pipe #(
    // log2 of the lane widths in bits
    parameter LOG_INP_WIDTH = 3,
    parameter LOG_WGT_WIDTH = 3,
    parameter LOG_ACC_WIDTH = 5,
    // GEMM core shape: BATCH x BLOCK x BLOCK
    parameter LOG_BATCH = 0,
    parameter LOG_BLOCK = 4,
    // log2 of the INP / WGT / ACC buffer depths in entries
    parameter LOG_INP_DEPTH = 11,
    parameter LOG_WGT_DEPTH = 10,
    parameter LOG_ACC_DEPTH = 11
) (
    input  wire                  clk,
    input  wire                  rst,

    // one micro-op: loop offsets (modulo the buffer depths; a source is INP's for a
    // GEMM and ACC's for an ALU micro-op, as wide as the wider) and controls
    input  wire                  issue,
    input  wire [LOG_ACC_DEPTH-1:0] o_dst,
    input  wire [LOG_ACC_DEPTH-1:0] i_dst,
    input  wire [`VTA_UOP_SRC_IDX_W-1:0] o_src,
    input  wire [`VTA_UOP_SRC_IDX_W-1:0] i_src,
    input  wire [LOG_WGT_DEPTH-1:0] o_wgt,
    input  wire [LOG_WGT_DEPTH-1:0] i_wgt,
    input  wire                  is_alu,
    input  wire                  reset,
    input  wire [`VTA_ALU_ALU_OPCODE_W-1:0] alu_op,
    input  wire                  use_imm,
    input  wire [`VTA_ALU_IMM_W-1:0] imm,
    // the micro-op read at issue, two cycles later: its {dst, src, wgt} indices
    // (decoded by vta_compute)
    input  wire [LOG_ACC_DEPTH+`VTA_UOP_SRC_IDX_W+LOG_WGT_DEPTH-1:0] uop_idx,

    // INP and WGT scratchpad read ports (latency 2)
    output wire                  inp_re,
    output wire [LOG_INP_DEPTH-1:0] inp_raddr,
    input  wire [(1<<(LOG_BATCH+LOG_BLOCK+LOG_INP_WIDTH))-1:0] inp_rdata,
    output wire                  wgt_re,
    output wire [LOG_WGT_DEPTH-1:0] wgt_raddr,
    input  wire [(1<<(2*LOG_BLOCK+LOG_WGT_WIDTH))-1:0] wgt_rdata,

    // ACC: two read ports (dst, src; latency 2) and the write port
    output wire                  acc_re,
    output wire [LOG_ACC_DEPTH-1:0] acc_dst_raddr,
    output wire [LOG_ACC_DEPTH-1:0] acc_src_raddr,
    input  wire [(1<<(LOG_BATCH+LOG_BLOCK+LOG_ACC_WIDTH))-1:0] acc_dst_rdata,
    input  wire [(1<<(LOG_BATCH+LOG_BLOCK+LOG_ACC_WIDTH))-1:0] acc_src_rdata,
    output wire                  acc_we,
    output wire [LOG_ACC_DEPTH-1:0] acc_waddr,
    output wire [(1<<(LOG_BATCH+LOG_BLOCK+LOG_ACC_WIDTH))-1:0] acc_wdata,
    // a LOAD's ACC write data, merged into acc_wdata (zero but during a LOAD, while the
    // pipeline is empty; the engine muxes the write enable and address)
    input  wire [(1<<(LOG_BATCH+LOG_BLOCK+LOG_ACC_WIDTH))-1:0] ld_wdata,

    // OUT write port: the low OUT_WIDTH bits of each new ACC lane
    output wire                  out_we,
    output wire [LOG_ACC_DEPTH-1:0] out_waddr,
    output wire [(1<<(LOG_BATCH+LOG_BLOCK+LOG_INP_WIDTH))-1:0] out_wdata,

    output wire                  empty
);


localparam integer LANES = 1 << (LOG_BATCH + LOG_BLOCK);
localparam integer AL = 1 << LOG_ACC_WIDTH;           // ACC lane bits
localparam integer ACC_W = LANES * AL;
localparam integer OUT_W = LANES << LOG_INP_WIDTH;
localparam A = LOG_ACC_DEPTH;
localparam S = `VTA_UOP_SRC_IDX_W;       // a source index (INP for GEMM, ACC for ALU)
localparam W = LOG_WGT_DEPTH;
localparam IX = A + S + W;               // indices {dst, src, wgt}
// controls carried with a micro-op: {is_alu, reset, alu_op, use_imm, imm}
localparam IMM_W = `VTA_ALU_IMM_W;
localparam CTL_W = 3 + `VTA_ALU_ALU_OPCODE_W + IMM_W;

// one ALU operand: 0 the RAM, 1 w1, 2 w2, 3 zero
`define VTA_PIPE_OPERAND(q, sel, ram) \
    case (sel) \
        2'd0: q = ram; \
        2'd1: q = w1_data_reg; \
        2'd2: q = w2_data_reg; \
        default: q = {ACC_W{1'b0}}; \
    endcase

initial begin
    if (`VTA_UOP_DST_IDX_W != LOG_ACC_DEPTH || `VTA_UOP_WGT_IDX_W != LOG_WGT_DEPTH
        || S < LOG_INP_DEPTH || S < LOG_ACC_DEPTH || `VTA_CFG_LOG_BATCH != LOG_BATCH
        || `VTA_CFG_LOG_BLOCK != LOG_BLOCK || IMM_W > AL) begin
        $display("%m: vta_isa.vh / vta_cfg.vh were generated for another configuration");
        $finish;
    end
end

// ------------------------------------------------------------ stages t+1 .. t+8
// Each kind of stage register is one shift register (stage k in slice k of v_reg, in
// slice k-1 of c_reg, ...): one assignment per kind and cycle, as a simulator such
// as Icarus pays for every variable a clocked block reads.
reg [8:1]         v_reg;             // v_reg[k]: a micro-op is at stage t+k
reg [8*CTL_W-1:0] c_reg;             // its controls
reg [IX-1:0]      off1_reg, off2_reg; // loop offsets {dst, src, wgt} at t+1, t+2
reg [IX-1:0]      idx3_reg;          // indices {dst, src, wgt} at t+3
reg [5*A-1:0]     dst_reg;           // dst index at t+4 .. t+8
reg [4*A-1:0]     src_reg;           // src index at t+4 .. t+7
// forwarding selects for D: 0 the RAM, 1 w1, 2 w2; for the ALU's operands also 3,
// zero (no ALU micro-op at D, or the immediate replaces the source)
(* fsm_encoding = "none" *) reg [1:0] fa8_reg, fa_alu_reg, fb_alu_reg;
// the ALU's immediate operand at D (zero unless it replaces the source)
reg [AL-1:0] imm8_reg;
// at D: the ALU unit in use (MIN or MAX, ADD, SHR), MAX; a GEMM micro-op that is no reset
reg        mm8_reg, max8_reg, add8_reg, shr8_reg;
reg        gemm8_reg;
// a MUL at E (t+9) and its dst index
reg        e_valid_reg;
reg [A-1:0] e_dst_reg;
// a micro-op at t+2 .. t+8 (for `empty`: one flip-flop instead of seven)
reg        later_reg;
// results written one and two cycles ago
reg        w1_valid_reg;
reg [A-1:0] w1_addr_reg;
reg [ACC_W-1:0] w1_data_reg, w2_data_reg;

wire [CTL_W-1:0] c3 = c_reg[2*CTL_W +: CTL_W];
wire [CTL_W-1:0] c5 = c_reg[4*CTL_W +: CTL_W];
wire [CTL_W-1:0] c6 = c_reg[5*CTL_W +: CTL_W];
wire [CTL_W-1:0] c7 = c_reg[6*CTL_W +: CTL_W];
wire [CTL_W-1:0] c8 = c_reg[7*CTL_W +: CTL_W];
wire       c3_alu = c3[CTL_W-1];
wire       c5_alu = c5[CTL_W-1];
wire       c5_reset = c5[CTL_W-2];
wire       c6_reset = c6[CTL_W-2];
wire       c7_alu = c7[CTL_W-1];
wire       c7_reset = c7[CTL_W-2];
wire [`VTA_ALU_ALU_OPCODE_W-1:0] c7_op = c7[CTL_W-3 -: `VTA_ALU_ALU_OPCODE_W];
wire       c7_imm_on = c7[IMM_W];
wire [IMM_W-1:0] c7_imm = c7[IMM_W-1:0];
wire       c8_alu = c8[CTL_W-1];
wire       c8_reset = c8[CTL_W-2];
wire [`VTA_ALU_ALU_OPCODE_W-1:0] c8_op = c8[CTL_W-3 -: `VTA_ALU_ALU_OPCODE_W];
// a MUL micro-op at D: it writes at E, the cycle after
wire       mul8 = c8_alu && c8_op == `VTA_ALU_MUL;
wire [S-1:0] src3 = idx3_reg[W +: S];
wire [W-1:0] wgt3 = idx3_reg[0 +: W];
wire [A-1:0] dst6 = dst_reg[2*A +: A];
wire [A-1:0] dst7 = dst_reg[3*A +: A];
wire [A-1:0] dst8 = dst_reg[4*A +: A];
wire [A-1:0] src6 = src_reg[2*A +: A];
wire [A-1:0] src7 = src_reg[3*A +: A];

assign inp_re = v_reg[3] && !c3_alu;
assign inp_raddr = src3[LOG_INP_DEPTH-1:0];
assign wgt_re = v_reg[3] && !c3_alu;
assign wgt_raddr = wgt3;
assign acc_re = v_reg[6] && !c6_reset;
assign acc_dst_raddr = dst6;
assign acc_src_raddr = src6;

// the ACC / OUT write of this cycle: a MUL at E, else a micro-op at D that is no MUL
// (never both: the sequencer issues nothing in the cycle after a MUL)
wire       wr_valid = e_valid_reg || (v_reg[8] && !mul8);
wire [A-1:0] wr_addr = e_valid_reg ? e_dst_reg : dst8;

// t+7: which in-flight result an index read at t+6 missed, newest first: the one
// written now (in w1 next cycle), or the one in w1 (in w2 next cycle)
wire [1:0] fa7 = (wr_valid && wr_addr == dst7) ? 2'd1
               : (w1_valid_reg && w1_addr_reg == dst7) ? 2'd2 : 2'd0;
wire [1:0] fb7 = (wr_valid && wr_addr == src7) ? 2'd1
               : (w1_valid_reg && w1_addr_reg == src7) ? 2'd2 : 2'd0;

// an ALU micro-op at t+7
wire alu7 = v_reg[7] && c7_alu;

always @(posedge clk) begin
    v_reg <= {v_reg[7:1], issue};
    c_reg <= {c_reg[7*CTL_W-1:0], is_alu, reset, alu_op, use_imm, imm};
    // t+1: loop offsets
    off1_reg <= {o_dst + i_dst, o_src + i_src, o_wgt + i_wgt};
    off2_reg <= off1_reg;
    // t+2: indices (modulo the buffer depths)
    idx3_reg <= {uop_idx[S+W +: A] + off2_reg[S+W +: A], uop_idx[W +: S] + off2_reg[W +: S],
                 uop_idx[0 +: W] + off2_reg[0 +: W]};
    dst_reg <= {dst_reg[4*A-1:0], idx3_reg[S+W +: A]};
    src_reg <= {src_reg[3*A-1:0], src3[A-1:0]};
    fa8_reg <= fa7;
    fa_alu_reg <= alu7 ? fa7 : 2'd3;
    fb_alu_reg <= (alu7 && !c7_imm_on) ? fb7 : 2'd3;
    imm8_reg <= (alu7 && c7_imm_on) ? {{(AL-IMM_W){c7_imm[IMM_W-1]}}, c7_imm} : {AL{1'b0}};
    mm8_reg <= alu7 && (c7_op == `VTA_ALU_MIN || c7_op == `VTA_ALU_MAX);
    max8_reg <= c7_op == `VTA_ALU_MAX;
    add8_reg <= alu7 && c7_op == `VTA_ALU_ADD;
    shr8_reg <= alu7 && c7_op == `VTA_ALU_SHR;
    gemm8_reg <= v_reg[7] && !c7_alu && !c7_reset;
    // t+9: a MUL's partial products are summed
    e_valid_reg <= v_reg[8] && mul8;
    e_dst_reg <= dst8;
    later_reg <= v_reg[7:1] != 7'd0;
    // the result written, kept for forwarding
    w1_valid_reg <= wr_valid;
    w1_addr_reg <= wr_addr;
    w2_data_reg <= w1_data_reg;
    if (rst) begin
        v_reg <= 8'd0;
        e_valid_reg <= 1'b0;
        later_reg <= 1'b0;
        w1_valid_reg <= 1'b0;
    end
end

// ------------------------------------------------------------ GEMM (t+5 .. t+8)
wire [ACC_W-1:0] sum;

vta_gemm #(
    .LOG_BATCH(LOG_BATCH), .LOG_BLOCK(LOG_BLOCK),
    .LOG_INP_WIDTH(LOG_INP_WIDTH), .LOG_WGT_WIDTH(LOG_WGT_WIDTH), .LOG_ACC_WIDTH(LOG_ACC_WIDTH),
    .LATENCY(3)
) gemm (
    .clk(clk),
    .in_valid(v_reg[5] && !c5_alu && !c5_reset),
    .inp(inp_rdata),
    .wgt(wgt_rdata),
    .sum(sum)
);

// ------------------------------------------------------------ D (t+8)
// the operands: ACC as read, or a result the RAM does not hold yet (procedural, as the
// result below: one evaluation per cycle in a simulator).  The ALU sees operands only
// while an ALU micro-op is at D (else zero), its source or immediate as one
// multiplexer: every select was registered at t+7.
reg [ACC_W-1:0] a, alu_a, alu_b;
always @* begin
    case (fa8_reg)
        2'd1: a = w1_data_reg;
        2'd2: a = w2_data_reg;
        default: a = acc_dst_rdata;
    endcase
    `VTA_PIPE_OPERAND(alu_a, fa_alu_reg, acc_dst_rdata)
    `VTA_PIPE_OPERAND(alu_b, fb_alu_reg, acc_src_rdata)
    alu_b = alu_b | {LANES{imm8_reg}};
end
wire [ACC_W-1:0] alu_r;
wire [ACC_W-1:0] mul_r;

vta_alu #(.LANES(LANES)) alu (
    .clk(clk),
    .a(alu_a),
    .b(alu_b),
    .mm_on(mm8_reg),
    .max(max8_reg),
    .add_on(add8_reg),
    .shr_on(shr8_reg),
    .r(alu_r),
    .mul_en(v_reg[8] && mul8),
    .mul_r(mul_r)
);

// the result written this cycle and its OUT lanes (lane-wise expressions from
// vta_cfg.vh), computed by one procedural block: Icarus re-sends a continuous
// concatenation once per changed lane.  Each source is zero unless it is the one
// written (the ALU's result and E's product are zero unless used, a LOAD's element
// outside a LOAD, while the pipeline is empty; a reset writes zero), so the last step
// is one LUT after the ALU: the GEMM sum, or the OR of the others (the GEMM sum is
// not ORed in, so a simulator adds it only for a GEMM micro-op).
reg [ACC_W-1:0] result;
reg [OUT_W-1:0] out_lanes;
always @* begin
    if (gemm8_reg) begin
        result = `VTA_ACC_LANES_ADD(a, sum);
    end else begin
        result = alu_r | mul_r | ld_wdata;
    end
    out_lanes = `VTA_ACC_LANES_LOW(result);
end

always @(posedge clk) begin
    if (wr_valid) begin
        w1_data_reg <= result;
    end
end

// ------------------------------------------------------------ writes (t+8, MUL t+9)
assign acc_we = wr_valid;
assign acc_waddr = wr_addr;
assign acc_wdata = result;
assign out_we = e_valid_reg || (v_reg[8] && !mul8 && !c8_reset);
assign out_waddr = wr_addr;

assign out_wdata = out_lanes;

assign empty = !v_reg[1] && !later_reg && !e_valid_reg;

// a source index is as wide as the wider of INP's and ACC's; the controls' ALU fields
// are not needed before D
wire _unused_ok = &{1'b0, src3, c3[CTL_W-2:0], c5[CTL_W-3:0], c6[CTL_W-1], c6[CTL_W-3:0],
                    c8[IMM_W:0], 1'b0};

`undef VTA_PIPE_OPERAND

endmodule

`resetall

`resetall
`timescale 1ns / 1ps
`default_nettype none

/*
 * tb_compute: test wrapper for vta_compute: the engine with its three DMA
 * streams on vta_dma_rd, INP and WGT scratchpads with write ports exposed
 * (preloading), and the OUT scratchpad with its read port exposed.
 */
module tb_compute #(
`include "tb_params.vh"
) (
`include "tb_engine_ports.vh"
    input  wire l2g_nonempty,
    output wire l2g_pop,
    input  wire s2g_nonempty,
    output wire s2g_pop,
    input  wire g2l_full,
    output wire g2l_push,
    input  wire g2s_full,
    output wire g2s_push,
    output wire finish,
    output wire [31:0] gemm_uops,
    output wire [31:0] alu_uops,
    output wire rd_idle,
    input  wire inp_we,
    input  wire [LOG_INP_BUFF_SIZE-(LOG_BATCH+LOG_BLOCK+LOG_INP_WIDTH-3)-1:0] inp_waddr,
    input  wire [(1<<(LOG_BATCH+LOG_BLOCK+LOG_INP_WIDTH))-1:0] inp_wdata,
    input  wire wgt_we,
    input  wire [LOG_WGT_BUFF_SIZE-(2*LOG_BLOCK+LOG_WGT_WIDTH-3)-1:0] wgt_waddr,
    input  wire [(1<<(2*LOG_BLOCK+LOG_WGT_WIDTH))-1:0] wgt_wdata,
    input  wire [LOG_ACC_BUFF_SIZE-(LOG_BATCH+LOG_BLOCK+LOG_ACC_WIDTH-3)-1:0] out_raddr,
    output wire [(1<<(LOG_BATCH+LOG_BLOCK+LOG_INP_WIDTH))-1:0] out_rdata,
`include "tb_axi_ports.vh"
);

localparam NRD = 3;
localparam LOG_INP_DEPTH = LOG_INP_BUFF_SIZE - (LOG_BATCH + LOG_BLOCK + LOG_INP_WIDTH - 3);
localparam LOG_WGT_DEPTH = LOG_WGT_BUFF_SIZE - (2 * LOG_BLOCK + LOG_WGT_WIDTH - 3);
localparam LOG_ACC_DEPTH = LOG_ACC_BUFF_SIZE - (LOG_BATCH + LOG_BLOCK + LOG_ACC_WIDTH - 3);
localparam INP_W = 1 << (LOG_BATCH + LOG_BLOCK + LOG_INP_WIDTH);
localparam WGT_W = 1 << (2 * LOG_BLOCK + LOG_WGT_WIDTH);
`include "tb_axi_rd.vh"
`include "tb_axi_no_wr.vh"

wire inp_re, wgt_re, out_we;
wire [LOG_INP_DEPTH-1:0] inp_raddr;
wire [LOG_WGT_DEPTH-1:0] wgt_raddr;
wire [LOG_ACC_DEPTH-1:0] out_waddr;
wire [INP_W-1:0] inp_rdata, out_wdata;
wire [WGT_W-1:0] wgt_rdata;
wire [31:0] uop_bytes, acc_bytes, acc8_bytes;

vta_sram #(.WIDTH(INP_W), .LOG_DEPTH(LOG_INP_DEPTH), .OUTPUT_REG(1)) inp_mem (
    .clk(clk), .we(inp_we), .waddr(inp_waddr), .wdata(inp_wdata),
    .re(inp_re), .raddr(inp_raddr), .rdata(inp_rdata));
vta_sram #(.WIDTH(WGT_W), .LOG_DEPTH(LOG_WGT_DEPTH), .OUTPUT_REG(1)) wgt_mem (
    .clk(clk), .we(wgt_we), .waddr(wgt_waddr), .wdata(wgt_wdata),
    .re(wgt_re), .raddr(wgt_raddr), .rdata(wgt_rdata));
vta_sram #(.WIDTH(INP_W), .LOG_DEPTH(LOG_ACC_DEPTH)) out_mem (
    .clk(clk), .we(out_we), .waddr(out_waddr), .wdata(out_wdata),
    .re(1'b1), .raddr(out_raddr), .rdata(out_rdata));

vta_compute #(
    .LOG_INP_WIDTH(LOG_INP_WIDTH), .LOG_WGT_WIDTH(LOG_WGT_WIDTH), .LOG_ACC_WIDTH(LOG_ACC_WIDTH),
    .LOG_BATCH(LOG_BATCH), .LOG_BLOCK(LOG_BLOCK), .LOG_UOP_BUFF_SIZE(LOG_UOP_BUFF_SIZE),
    .LOG_INP_BUFF_SIZE(LOG_INP_BUFF_SIZE), .LOG_WGT_BUFF_SIZE(LOG_WGT_BUFF_SIZE),
    .LOG_ACC_BUFF_SIZE(LOG_ACC_BUFF_SIZE), .LOG_BUS_WIDTH(LOG_BUS_WIDTH),
    .ADDR_WIDTH(ADDR_WIDTH), .BEATS_WIDTH(48), .MEM_SIZE(MEM_SIZE)
) compute (
`include "tb_engine_conns.vh"
    .l2g_nonempty(l2g_nonempty), .l2g_pop(l2g_pop), .s2g_nonempty(s2g_nonempty),
    .s2g_pop(s2g_pop), .g2l_full(g2l_full), .g2l_push(g2l_push), .g2s_full(g2s_full),
    .g2s_push(g2s_push),
    .dma_req_valid(rd_req_valid), .dma_req_ready(rd_req_ready), .dma_req_addr(rd_req_addr),
    .dma_req_beats(rd_req_beats), .dma_rd_valid(rd_valid), .dma_rd_ready(rd_ready),
    .dma_rd_data(rd_data),
    .inp_re(inp_re), .inp_raddr(inp_raddr), .inp_rdata(inp_rdata),
    .wgt_re(wgt_re), .wgt_raddr(wgt_raddr), .wgt_rdata(wgt_rdata),
    .out_we(out_we), .out_waddr(out_waddr), .out_wdata(out_wdata),
    .finish(finish), .uop_bytes(uop_bytes), .acc_bytes(acc_bytes), .acc8_bytes(acc8_bytes),
    .gemm_uops(gemm_uops), .alu_uops(alu_uops)
);

wire _unused_ok = &{1'b0, uop_bytes, acc_bytes, acc8_bytes, 1'b0};

endmodule

`resetall

`resetall
`timescale 1ns / 1ps
`default_nettype none

/*
 * tb_compute: test wrapper for vta_compute: the engine with its three DMA
 * streams on vta_dma_rd, INP and WGT scratchpads with write ports exposed
 * (preloading), and the OUT scratchpad with its read port exposed.
 */
module tb_compute #(
    parameter LOG_INP_WIDTH = 3,
    parameter LOG_WGT_WIDTH = 3,
    parameter LOG_ACC_WIDTH = 5,
    parameter LOG_BATCH = 0,
    parameter LOG_BLOCK = 4,
    parameter LOG_UOP_BUFF_SIZE = 15,
    parameter LOG_INP_BUFF_SIZE = 15,
    parameter LOG_WGT_BUFF_SIZE = 18,
    parameter LOG_ACC_BUFF_SIZE = 17,
    parameter LOG_BUS_WIDTH = 6,
    parameter ADDR_WIDTH = 32,
    parameter ID_WIDTH = 4,
    parameter [63:0] MEM_SIZE = 64'h100000
) (
    input  wire clk,
    input  wire rst,
    input  wire run,
    input  wire halt,
    input  wire cmd_valid,
    output wire cmd_ready,
    input  wire [159:0] cmd_data,
    input  wire l2g_nonempty,
    output wire l2g_pop,
    input  wire s2g_nonempty,
    output wire s2g_pop,
    input  wire g2l_full,
    output wire g2l_push,
    input  wire g2s_full,
    output wire g2s_push,
    output wire err,
    output wire [7:0] err_code,
    output wire [31:0] index,
    output wire evt_start,
    output wire evt_retire,
    output wire finish,
    output wire idle,
    output wire stall,
    output wire busy,
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
wire [NRD-1:0] rd_req_valid, rd_req_ready, rd_valid, rd_ready;
wire [NRD*ADDR_WIDTH-1:0] rd_req_addr;
wire [NRD*48-1:0] rd_req_beats;
wire [(1<<LOG_BUS_WIDTH)-1:0] rd_data;
`include "tb_axi_rd.vh"

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
    .clk(clk), .rst(rst), .run(run), .halt(halt),
    .cmd_valid(cmd_valid), .cmd_ready(cmd_ready), .cmd_data(cmd_data),
    .l2g_nonempty(l2g_nonempty), .l2g_pop(l2g_pop), .s2g_nonempty(s2g_nonempty),
    .s2g_pop(s2g_pop), .g2l_full(g2l_full), .g2l_push(g2l_push), .g2s_full(g2s_full),
    .g2s_push(g2s_push),
    .dma_req_valid(rd_req_valid), .dma_req_ready(rd_req_ready), .dma_req_addr(rd_req_addr),
    .dma_req_beats(rd_req_beats), .dma_rd_valid(rd_valid), .dma_rd_ready(rd_ready),
    .dma_rd_data(rd_data),
    .inp_re(inp_re), .inp_raddr(inp_raddr), .inp_rdata(inp_rdata),
    .wgt_re(wgt_re), .wgt_raddr(wgt_raddr), .wgt_rdata(wgt_rdata),
    .out_we(out_we), .out_waddr(out_waddr), .out_wdata(out_wdata),
    .err(err), .err_code(err_code), .index(index), .evt_start(evt_start),
    .evt_retire(evt_retire), .finish(finish), .idle(idle), .stall(stall), .busy(busy),
    .uop_bytes(uop_bytes), .acc_bytes(acc_bytes), .acc8_bytes(acc8_bytes),
    .gemm_uops(gemm_uops), .alu_uops(alu_uops)
);

wire _unused_ok = &{1'b0, uop_bytes, acc_bytes, acc8_bytes, 1'b0};

endmodule

`resetall

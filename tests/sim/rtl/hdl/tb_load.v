`resetall
`timescale 1ns / 1ps
`default_nettype none

/*
 * tb_load: test wrapper for vta_load: the engine, its two DMA streams on
 * vta_dma_rd, and the INP and WGT scratchpads with their read ports exposed.
 */
module tb_load #(
`include "tb_params.vh"
) (
`include "tb_engine_ports.vh"
    input  wire g2l_nonempty,
    output wire g2l_pop,
    input  wire l2g_full,
    output wire l2g_push,
    output wire [31:0] inp_bytes,
    output wire [31:0] wgt_bytes,
    output wire rd_idle,
    input  wire [LOG_INP_BUFF_SIZE-(LOG_BATCH+LOG_BLOCK+LOG_INP_WIDTH-3)-1:0] inp_raddr,
    output wire [(1<<(LOG_BATCH+LOG_BLOCK+LOG_INP_WIDTH))-1:0] inp_rdata,
    input  wire [LOG_WGT_BUFF_SIZE-(2*LOG_BLOCK+LOG_WGT_WIDTH-3)-1:0] wgt_raddr,
    output wire [(1<<(2*LOG_BLOCK+LOG_WGT_WIDTH))-1:0] wgt_rdata,
`include "tb_axi_ports.vh"
);

localparam NRD = 2;
localparam LOG_INP_DEPTH = LOG_INP_BUFF_SIZE - (LOG_BATCH + LOG_BLOCK + LOG_INP_WIDTH - 3);
localparam LOG_WGT_DEPTH = LOG_WGT_BUFF_SIZE - (2 * LOG_BLOCK + LOG_WGT_WIDTH - 3);
localparam INP_W = 1 << (LOG_BATCH + LOG_BLOCK + LOG_INP_WIDTH);
localparam WGT_W = 1 << (2 * LOG_BLOCK + LOG_WGT_WIDTH);
`include "tb_axi_rd.vh"
`include "tb_axi_no_wr.vh"

wire inp_we, wgt_we;
wire [LOG_INP_DEPTH-1:0] inp_waddr;
wire [LOG_WGT_DEPTH-1:0] wgt_waddr;
wire [INP_W-1:0] inp_wdata;
wire [WGT_W-1:0] wgt_wdata;

vta_load #(
    .LOG_INP_WIDTH(LOG_INP_WIDTH), .LOG_WGT_WIDTH(LOG_WGT_WIDTH), .LOG_BATCH(LOG_BATCH),
    .LOG_BLOCK(LOG_BLOCK), .LOG_INP_BUFF_SIZE(LOG_INP_BUFF_SIZE),
    .LOG_WGT_BUFF_SIZE(LOG_WGT_BUFF_SIZE), .LOG_BUS_WIDTH(LOG_BUS_WIDTH),
    .ADDR_WIDTH(ADDR_WIDTH), .BEATS_WIDTH(48), .MEM_SIZE(MEM_SIZE)
) load (
`include "tb_engine_conns.vh"
    .g2l_nonempty(g2l_nonempty), .g2l_pop(g2l_pop), .l2g_full(l2g_full), .l2g_push(l2g_push),
    .dma_req_valid(rd_req_valid), .dma_req_ready(rd_req_ready), .dma_req_addr(rd_req_addr),
    .dma_req_beats(rd_req_beats), .dma_rd_valid(rd_valid), .dma_rd_ready(rd_ready),
    .dma_rd_data(rd_data),
    .inp_we(inp_we), .inp_waddr(inp_waddr), .inp_wdata(inp_wdata),
    .wgt_we(wgt_we), .wgt_waddr(wgt_waddr), .wgt_wdata(wgt_wdata),
    .inp_bytes(inp_bytes), .wgt_bytes(wgt_bytes)
);

vta_sram #(.WIDTH(INP_W), .LOG_DEPTH(LOG_INP_DEPTH)) inp_mem (
    .clk(clk), .we(inp_we), .waddr(inp_waddr), .wdata(inp_wdata),
    .re(1'b1), .raddr(inp_raddr), .rdata(inp_rdata)
);
vta_sram #(.WIDTH(WGT_W), .LOG_DEPTH(LOG_WGT_DEPTH)) wgt_mem (
    .clk(clk), .we(wgt_we), .waddr(wgt_waddr), .wdata(wgt_wdata),
    .re(1'b1), .raddr(wgt_raddr), .rdata(wgt_rdata)
);

endmodule

`resetall

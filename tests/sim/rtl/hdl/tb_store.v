`resetall
`timescale 1ns / 1ps
`default_nettype none

/*
 * tb_store: test wrapper for vta_store: the engine, vta_dma_wr, and the OUT
 * scratchpad with a write port exposed for preloading.
 */
module tb_store #(
`include "tb_params.vh"
) (
`include "tb_engine_ports.vh"
    input  wire g2s_nonempty,
    output wire g2s_pop,
    input  wire s2g_full,
    output wire s2g_push,
    output wire [31:0] out_bytes,
    output wire wr_idle,
    input  wire out_we,
    input  wire [LOG_ACC_BUFF_SIZE-(LOG_BATCH+LOG_BLOCK+LOG_ACC_WIDTH-3)-1:0] out_waddr,
    input  wire [(1<<(LOG_BATCH+LOG_BLOCK+LOG_INP_WIDTH))-1:0] out_wdata,
`include "tb_axi_ports.vh"
);

localparam LOG_DEPTH = LOG_ACC_BUFF_SIZE - (LOG_BATCH + LOG_BLOCK + LOG_ACC_WIDTH - 3);
localparam OUT_W = 1 << (LOG_BATCH + LOG_BLOCK + LOG_INP_WIDTH);

wire out_re;
wire [LOG_DEPTH-1:0] out_raddr;
wire [OUT_W-1:0] out_rdata;
wire wr_req_valid, wr_req_ready, wr_valid, wr_ready;
wire [ADDR_WIDTH-1:0] wr_req_addr;
wire [47:0] wr_req_beats;
wire [(1<<LOG_BUS_WIDTH)-1:0] wr_data;
wire [(1<<(LOG_BUS_WIDTH-3))-1:0] wr_strb;

vta_sram #(.WIDTH(OUT_W), .LOG_DEPTH(LOG_DEPTH)) out_mem (
    .clk(clk), .we(out_we), .waddr(out_waddr), .wdata(out_wdata),
    .re(out_re), .raddr(out_raddr), .rdata(out_rdata)
);

vta_store #(
    .LOG_OUT_WIDTH(LOG_INP_WIDTH), .LOG_BATCH(LOG_BATCH), .LOG_BLOCK(LOG_BLOCK),
    .LOG_OUT_BUFF_SIZE(LOG_ACC_BUFF_SIZE + LOG_INP_WIDTH - LOG_ACC_WIDTH),
    .LOG_BUS_WIDTH(LOG_BUS_WIDTH), .ADDR_WIDTH(ADDR_WIDTH), .BEATS_WIDTH(48),
    .MEM_SIZE(MEM_SIZE)
) store (
`include "tb_engine_conns.vh"
    .g2s_nonempty(g2s_nonempty), .g2s_pop(g2s_pop), .s2g_full(s2g_full), .s2g_push(s2g_push),
    .out_re(out_re), .out_raddr(out_raddr), .out_rdata(out_rdata),
    .dma_req_valid(wr_req_valid), .dma_req_ready(wr_req_ready), .dma_req_addr(wr_req_addr),
    .dma_req_beats(wr_req_beats), .dma_wr_valid(wr_valid), .dma_wr_ready(wr_ready),
    .dma_wr_data(wr_data), .dma_wr_strb(wr_strb), .dma_idle(wr_idle),
    .out_bytes(out_bytes)
);

`include "tb_axi_wr.vh"
`include "tb_axi_no_rd.vh"

endmodule

`resetall

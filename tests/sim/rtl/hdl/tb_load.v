`resetall
`timescale 1ns / 1ps
`default_nettype none

/*
 * tb_load: test wrapper for vta_load: the engine, its two DMA streams on
 * vta_dma_rd, and the INP and WGT scratchpads with their read ports exposed.
 */
module tb_load #(
    parameter LOG_INP_WIDTH = 3,
    parameter LOG_WGT_WIDTH = 3,
    parameter LOG_BATCH = 0,
    parameter LOG_BLOCK = 4,
    parameter LOG_INP_BUFF_SIZE = 15,
    parameter LOG_WGT_BUFF_SIZE = 18,
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
    input  wire g2l_nonempty,
    output wire g2l_pop,
    input  wire l2g_full,
    output wire l2g_push,
    output wire err,
    output wire [7:0] err_code,
    output wire [31:0] index,
    output wire evt_start,
    output wire evt_retire,
    output wire idle,
    output wire stall,
    output wire busy,
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
wire [NRD-1:0] rd_req_valid, rd_req_ready, rd_valid, rd_ready;
wire [NRD*ADDR_WIDTH-1:0] rd_req_addr;
wire [NRD*48-1:0] rd_req_beats;
wire [(1<<LOG_BUS_WIDTH)-1:0] rd_data;
`include "tb_axi_rd.vh"

wire inp_we, wgt_we;
wire [LOG_INP_DEPTH-1:0] inp_waddr;
wire [LOG_WGT_DEPTH-1:0] wgt_waddr;
wire [(1<<(LOG_BATCH+LOG_BLOCK+LOG_INP_WIDTH))-1:0] inp_wdata;
wire [(1<<(2*LOG_BLOCK+LOG_WGT_WIDTH))-1:0] wgt_wdata;

vta_load #(
    .LOG_INP_WIDTH(LOG_INP_WIDTH), .LOG_WGT_WIDTH(LOG_WGT_WIDTH), .LOG_BATCH(LOG_BATCH),
    .LOG_BLOCK(LOG_BLOCK), .LOG_INP_BUFF_SIZE(LOG_INP_BUFF_SIZE),
    .LOG_WGT_BUFF_SIZE(LOG_WGT_BUFF_SIZE), .LOG_BUS_WIDTH(LOG_BUS_WIDTH),
    .ADDR_WIDTH(ADDR_WIDTH), .BEATS_WIDTH(48), .MEM_SIZE(MEM_SIZE)
) load (
    .clk(clk), .rst(rst), .run(run), .halt(halt),
    .cmd_valid(cmd_valid), .cmd_ready(cmd_ready), .cmd_data(cmd_data),
    .g2l_nonempty(g2l_nonempty), .g2l_pop(g2l_pop), .l2g_full(l2g_full), .l2g_push(l2g_push),
    .dma_req_valid(rd_req_valid), .dma_req_ready(rd_req_ready), .dma_req_addr(rd_req_addr),
    .dma_req_beats(rd_req_beats), .dma_rd_valid(rd_valid), .dma_rd_ready(rd_ready),
    .dma_rd_data(rd_data),
    .inp_we(inp_we), .inp_waddr(inp_waddr), .inp_wdata(inp_wdata),
    .wgt_we(wgt_we), .wgt_waddr(wgt_waddr), .wgt_wdata(wgt_wdata),
    .err(err), .err_code(err_code), .index(index), .evt_start(evt_start),
    .evt_retire(evt_retire), .idle(idle), .stall(stall), .busy(busy),
    .inp_bytes(inp_bytes), .wgt_bytes(wgt_bytes)
);

vta_sram #(.WIDTH(1<<(LOG_BATCH+LOG_BLOCK+LOG_INP_WIDTH)), .LOG_DEPTH(LOG_INP_DEPTH)) inp_mem (
    .clk(clk), .we(inp_we), .waddr(inp_waddr), .wdata(inp_wdata),
    .re(1'b1), .raddr(inp_raddr), .rdata(inp_rdata)
);
vta_sram #(.WIDTH(1<<(2*LOG_BLOCK+LOG_WGT_WIDTH)), .LOG_DEPTH(LOG_WGT_DEPTH)) wgt_mem (
    .clk(clk), .we(wgt_we), .waddr(wgt_waddr), .wdata(wgt_wdata),
    .re(1'b1), .raddr(wgt_raddr), .rdata(wgt_rdata)
);

endmodule

`resetall

`resetall
`timescale 1ns / 1ps
`default_nettype none

/*
 * tb_store: test wrapper for vta_store: the engine, vta_dma_wr, and the OUT
 * scratchpad with a write port exposed for preloading.
 */
module tb_store #(
    parameter LOG_INP_WIDTH = 3,
    parameter LOG_BATCH = 0,
    parameter LOG_BLOCK = 4,
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
    input  wire g2s_nonempty,
    output wire g2s_pop,
    input  wire s2g_full,
    output wire s2g_push,
    output wire err,
    output wire [7:0] err_code,
    output wire [31:0] index,
    output wire evt_start,
    output wire evt_retire,
    output wire idle,
    output wire stall,
    output wire busy,
    output wire [31:0] out_bytes,
    output wire wr_idle,
    input  wire out_we,
    input  wire [LOG_ACC_BUFF_SIZE-(LOG_BATCH+LOG_BLOCK+5-3)-1:0] out_waddr,
    input  wire [(1<<(LOG_BATCH+LOG_BLOCK+LOG_INP_WIDTH))-1:0] out_wdata,
`include "tb_axi_ports.vh"
);

localparam LOG_DEPTH = LOG_ACC_BUFF_SIZE - (LOG_BATCH + LOG_BLOCK + 5 - 3);
localparam OUT_W = 1 << (LOG_BATCH + LOG_BLOCK + LOG_INP_WIDTH);

wire out_re;
wire [LOG_DEPTH-1:0] out_raddr;
wire [OUT_W-1:0] out_rdata;
wire req_valid, req_ready, wr_valid, wr_ready;
wire [ADDR_WIDTH-1:0] req_addr;
wire [47:0] req_beats;
wire [(1<<LOG_BUS_WIDTH)-1:0] wr_data;
wire [(1<<(LOG_BUS_WIDTH-3))-1:0] wr_strb;

vta_sram #(.WIDTH(OUT_W), .LOG_DEPTH(LOG_DEPTH)) out_mem (
    .clk(clk), .we(out_we), .waddr(out_waddr), .wdata(out_wdata),
    .re(out_re), .raddr(out_raddr), .rdata(out_rdata)
);

vta_store #(
    .LOG_OUT_WIDTH(LOG_INP_WIDTH), .LOG_BATCH(LOG_BATCH), .LOG_BLOCK(LOG_BLOCK),
    .LOG_OUT_BUFF_SIZE(LOG_ACC_BUFF_SIZE + LOG_INP_WIDTH - 5), .LOG_BUS_WIDTH(LOG_BUS_WIDTH),
    .ADDR_WIDTH(ADDR_WIDTH), .BEATS_WIDTH(48), .MEM_SIZE(MEM_SIZE)
) store (
    .clk(clk), .rst(rst), .run(run), .halt(halt),
    .cmd_valid(cmd_valid), .cmd_ready(cmd_ready), .cmd_data(cmd_data),
    .g2s_nonempty(g2s_nonempty), .g2s_pop(g2s_pop), .s2g_full(s2g_full), .s2g_push(s2g_push),
    .out_re(out_re), .out_raddr(out_raddr), .out_rdata(out_rdata),
    .dma_req_valid(req_valid), .dma_req_ready(req_ready), .dma_req_addr(req_addr),
    .dma_req_beats(req_beats), .dma_wr_valid(wr_valid), .dma_wr_ready(wr_ready),
    .dma_wr_data(wr_data), .dma_wr_strb(wr_strb), .dma_idle(wr_idle),
    .err(err), .err_code(err_code), .index(index), .evt_start(evt_start),
    .evt_retire(evt_retire), .idle(idle), .stall(stall), .busy(busy), .out_bytes(out_bytes)
);

vta_dma_wr #(.ADDR_WIDTH(ADDR_WIDTH), .ID_WIDTH(ID_WIDTH),
             .LOG_BUS_WIDTH(LOG_BUS_WIDTH), .BEATS_WIDTH(48)) dma_wr (
    .clk(clk), .rst(rst), .halt(halt), .idle(wr_idle),
    .req_valid(req_valid), .req_ready(req_ready), .req_addr(req_addr), .req_beats(req_beats),
    .wr_valid(wr_valid), .wr_ready(wr_ready), .wr_data(wr_data), .wr_strb(wr_strb),
    .m_axi_awid(m_axi_awid), .m_axi_awaddr(m_axi_awaddr), .m_axi_awlen(m_axi_awlen),
    .m_axi_awsize(m_axi_awsize), .m_axi_awburst(m_axi_awburst), .m_axi_awlock(m_axi_awlock),
    .m_axi_awcache(m_axi_awcache), .m_axi_awprot(m_axi_awprot), .m_axi_awvalid(m_axi_awvalid),
    .m_axi_awready(m_axi_awready), .m_axi_wdata(m_axi_wdata), .m_axi_wstrb(m_axi_wstrb),
    .m_axi_wlast(m_axi_wlast), .m_axi_wvalid(m_axi_wvalid), .m_axi_wready(m_axi_wready),
    .m_axi_bid(m_axi_bid), .m_axi_bresp(m_axi_bresp), .m_axi_bvalid(m_axi_bvalid),
    .m_axi_bready(m_axi_bready)
);

// no reads
assign m_axi_arid = {ID_WIDTH{1'b0}};
assign m_axi_araddr = {ADDR_WIDTH{1'b0}};
assign m_axi_arlen = 8'd0;
assign m_axi_arsize = 3'd0;
assign m_axi_arburst = 2'd1;
assign m_axi_arlock = 1'b0;
assign m_axi_arcache = 4'd0;
assign m_axi_arprot = 3'd0;
assign m_axi_arvalid = 1'b0;
assign m_axi_rready = 1'b1;

endmodule

`resetall

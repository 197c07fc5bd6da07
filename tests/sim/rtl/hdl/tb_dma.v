`resetall
`timescale 1ns / 1ps
`default_nettype none

/*
 * tb_dma: test wrapper for the DMA layer: vta_dma_rd with two element streams
 * (vta_dma_rd_port; element sizes 2**LOG_E0 and 2**LOG_E1 bytes, one narrower
 * and one wider than the bus) and vta_dma_wr, on one AXI4 master.
 */
module tb_dma #(
    parameter LOG_BUS_WIDTH = 6,
    parameter LOG_E0 = 2,
    parameter LOG_E1 = 5,
    parameter ADDR_WIDTH = 32,
    parameter ID_WIDTH = 4
) (
    input  wire clk,
    input  wire rst,
    input  wire halt,
    output wire rd_idle,
    output wire wr_idle,

    input  wire                  p0_req_valid,
    output wire                  p0_req_ready,
    input  wire [ADDR_WIDTH-1:0] p0_req_addr,
    input  wire [31:0]           p0_req_n,
    output wire                  p0_elem_valid,
    input  wire                  p0_elem_ready,
    output wire [(8<<LOG_E0)-1:0] p0_elem_data,
    input  wire                  p1_req_valid,
    output wire                  p1_req_ready,
    input  wire [ADDR_WIDTH-1:0] p1_req_addr,
    input  wire [31:0]           p1_req_n,
    output wire                  p1_elem_valid,
    input  wire                  p1_elem_ready,
    output wire [(8<<LOG_E1)-1:0] p1_elem_data,

    input  wire                  wr_req_valid,
    output wire                  wr_req_ready,
    input  wire [ADDR_WIDTH-1:0] wr_req_addr,
    input  wire [47:0]           wr_req_beats,
    input  wire                  wr_valid,
    output wire                  wr_ready,
    input  wire [(1<<LOG_BUS_WIDTH)-1:0]     wr_data,
    input  wire [(1<<(LOG_BUS_WIDTH-3))-1:0] wr_strb,

    output wire [ID_WIDTH-1:0]   m_axi_awid,
    output wire [ADDR_WIDTH-1:0] m_axi_awaddr,
    output wire [7:0]            m_axi_awlen,
    output wire [2:0]            m_axi_awsize,
    output wire [1:0]            m_axi_awburst,
    output wire                  m_axi_awlock,
    output wire [3:0]            m_axi_awcache,
    output wire [2:0]            m_axi_awprot,
    output wire                  m_axi_awvalid,
    input  wire                  m_axi_awready,
    output wire [(1<<LOG_BUS_WIDTH)-1:0]     m_axi_wdata,
    output wire [(1<<(LOG_BUS_WIDTH-3))-1:0] m_axi_wstrb,
    output wire                  m_axi_wlast,
    output wire                  m_axi_wvalid,
    input  wire                  m_axi_wready,
    input  wire [ID_WIDTH-1:0]   m_axi_bid,
    input  wire [1:0]            m_axi_bresp,
    input  wire                  m_axi_bvalid,
    output wire                  m_axi_bready,
    output wire [ID_WIDTH-1:0]   m_axi_arid,
    output wire [ADDR_WIDTH-1:0] m_axi_araddr,
    output wire [7:0]            m_axi_arlen,
    output wire [2:0]            m_axi_arsize,
    output wire [1:0]            m_axi_arburst,
    output wire                  m_axi_arlock,
    output wire [3:0]            m_axi_arcache,
    output wire [2:0]            m_axi_arprot,
    output wire                  m_axi_arvalid,
    input  wire                  m_axi_arready,
    input  wire [ID_WIDTH-1:0]   m_axi_rid,
    input  wire [(1<<LOG_BUS_WIDTH)-1:0] m_axi_rdata,
    input  wire [1:0]            m_axi_rresp,
    input  wire                  m_axi_rlast,
    input  wire                  m_axi_rvalid,
    output wire                  m_axi_rready
);

localparam BW = 48;

wire [1:0]            dreq_valid, dreq_ready, drd_valid, drd_ready;
wire [2*ADDR_WIDTH-1:0] dreq_addr;
wire [2*BW-1:0]       dreq_beats;
wire [(1<<LOG_BUS_WIDTH)-1:0] drd_data;

vta_dma_rd #(.N(2), .ADDR_WIDTH(ADDR_WIDTH), .ID_WIDTH(ID_WIDTH),
             .LOG_BUS_WIDTH(LOG_BUS_WIDTH), .BEATS_WIDTH(BW)) rd (
    .clk(clk), .rst(rst), .halt(halt), .idle(rd_idle),
    .req_valid(dreq_valid), .req_ready(dreq_ready), .req_addr(dreq_addr), .req_beats(dreq_beats),
    .rd_valid(drd_valid), .rd_ready(drd_ready), .rd_data(drd_data),
    .m_axi_arid(m_axi_arid), .m_axi_araddr(m_axi_araddr), .m_axi_arlen(m_axi_arlen),
    .m_axi_arsize(m_axi_arsize), .m_axi_arburst(m_axi_arburst), .m_axi_arlock(m_axi_arlock),
    .m_axi_arcache(m_axi_arcache), .m_axi_arprot(m_axi_arprot), .m_axi_arvalid(m_axi_arvalid),
    .m_axi_arready(m_axi_arready), .m_axi_rid(m_axi_rid), .m_axi_rdata(m_axi_rdata),
    .m_axi_rresp(m_axi_rresp), .m_axi_rlast(m_axi_rlast), .m_axi_rvalid(m_axi_rvalid),
    .m_axi_rready(m_axi_rready)
);

vta_dma_rd_port #(.LOG_ELEM_BYTES(LOG_E0), .LOG_BUS_WIDTH(LOG_BUS_WIDTH),
                  .ADDR_WIDTH(ADDR_WIDTH), .BEATS_WIDTH(BW)) p0 (
    .clk(clk), .rst(rst), .halt(halt),
    .req_valid(p0_req_valid), .req_ready(p0_req_ready), .req_addr(p0_req_addr), .req_n(p0_req_n),
    .dma_req_valid(dreq_valid[0]), .dma_req_ready(dreq_ready[0]),
    .dma_req_addr(dreq_addr[0 +: ADDR_WIDTH]), .dma_req_beats(dreq_beats[0 +: BW]),
    .beat_valid(drd_valid[0]), .beat_ready(drd_ready[0]), .beat_data(drd_data),
    .elem_valid(p0_elem_valid), .elem_ready(p0_elem_ready), .elem_data(p0_elem_data)
);

vta_dma_rd_port #(.LOG_ELEM_BYTES(LOG_E1), .LOG_BUS_WIDTH(LOG_BUS_WIDTH),
                  .ADDR_WIDTH(ADDR_WIDTH), .BEATS_WIDTH(BW)) p1 (
    .clk(clk), .rst(rst), .halt(halt),
    .req_valid(p1_req_valid), .req_ready(p1_req_ready), .req_addr(p1_req_addr), .req_n(p1_req_n),
    .dma_req_valid(dreq_valid[1]), .dma_req_ready(dreq_ready[1]),
    .dma_req_addr(dreq_addr[ADDR_WIDTH +: ADDR_WIDTH]), .dma_req_beats(dreq_beats[BW +: BW]),
    .beat_valid(drd_valid[1]), .beat_ready(drd_ready[1]), .beat_data(drd_data),
    .elem_valid(p1_elem_valid), .elem_ready(p1_elem_ready), .elem_data(p1_elem_data)
);

vta_dma_wr #(.ADDR_WIDTH(ADDR_WIDTH), .ID_WIDTH(ID_WIDTH),
             .LOG_BUS_WIDTH(LOG_BUS_WIDTH), .BEATS_WIDTH(BW)) wr (
    .clk(clk), .rst(rst), .halt(halt), .idle(wr_idle),
    .req_valid(wr_req_valid), .req_ready(wr_req_ready), .req_addr(wr_req_addr),
    .req_beats(wr_req_beats),
    .wr_valid(wr_valid), .wr_ready(wr_ready), .wr_data(wr_data), .wr_strb(wr_strb),
    .m_axi_awid(m_axi_awid), .m_axi_awaddr(m_axi_awaddr), .m_axi_awlen(m_axi_awlen),
    .m_axi_awsize(m_axi_awsize), .m_axi_awburst(m_axi_awburst), .m_axi_awlock(m_axi_awlock),
    .m_axi_awcache(m_axi_awcache), .m_axi_awprot(m_axi_awprot), .m_axi_awvalid(m_axi_awvalid),
    .m_axi_awready(m_axi_awready), .m_axi_wdata(m_axi_wdata), .m_axi_wstrb(m_axi_wstrb),
    .m_axi_wlast(m_axi_wlast), .m_axi_wvalid(m_axi_wvalid), .m_axi_wready(m_axi_wready),
    .m_axi_bid(m_axi_bid), .m_axi_bresp(m_axi_bresp), .m_axi_bvalid(m_axi_bvalid),
    .m_axi_bready(m_axi_bready)
);

endmodule

`resetall
